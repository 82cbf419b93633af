"""Offline matrix speed: conversations per second and milliseconds per turn by component.

First, in one process without storage (``--repeat`` passes, each in a new process; the pass of
median wall time is reported): every sample question × 3 levels × 5 offline assistants (15 turns
each, virtual stop), timing the user, assistant, extractor and the rules (everything else in
``Simulation.step``). Then the headline figure: the same matrix through the
real batch command with storage (``python -m knowsim_core batch ... --workers 2`` on a temporary
database), conversations per second over the command's whole wall time, and over that time less
the start-up of the same command with ``--dry-run`` (imports, database creation, the sample
questions' import).

Usage: ``python benchmarks/offline.py [--seeds 1,2] [--workers 2] [--repeat 3] [--no-batch] [--baseline DIR]``
(``--baseline``: a checkout of another revision, e.g. ``git worktree add /tmp/base 9c98dce``; the
whole command runs there and here alternately, and ``batch.against`` logs both rates and their
ratio); writes
``benchmarks/logs/offline.json`` (``in_process`` and, without ``--no-batch``, ``batch``: the median rate
over the whole command, start-up included, is ``batch.conversations_per_s_median``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import compile_bytecode, write_log  # noqa: E402
from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.session import Simulation
from knowsim_core.vocab import RunStatus  # noqa: E402

ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")
LEVELS = ("novice", "intermediate", "advanced")


class Timed:
    """Wraps an agent's one method and adds its wall time to a shared counter."""

    def __init__(self, agent, method: str, bucket: str, totals: dict[str, float]):
        self._agent, self._method, self._bucket, self._totals = agent, method, bucket, totals
        self.id = agent.id
        self.reads_state = getattr(agent, "reads_state", False)
        setattr(self, method, self._call)

    def _call(self, ctx):
        start = time.perf_counter()
        try:
            return getattr(self._agent, self._method)(ctx)
        finally:
            self._totals[self._bucket] += time.perf_counter() - start


def _batch_command(n_seeds: int, workers: int, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "knowsim_core", "batch", "--questions", "all", "--levels", "all",
            "--assistants", "offline", "--seeds", str(n_seeds), "--workers", str(workers), "--db", str(db), *extra]


def _git_commit(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def against_baseline(baseline: Path, n_seeds: int, workers: int, rounds: int) -> dict:
    """The same whole command (start-up included, a fresh database each) in another checkout and in
    this one, alternately for ``rounds`` rounds, with this interpreter and packages: the ratio of the
    two conversations-per-second medians is measured here, not quoted. ``python -m knowsim_core``
    run from a checkout imports that checkout's package."""
    rates: dict[str, list[float]] = {"baseline": [], "this_tree": []}
    counts: dict[str, int] = {}
    for _ in range(rounds):
        for name, tree in (("baseline", baseline), ("this_tree", ROOT)):
            with tempfile.TemporaryDirectory(prefix="knowsim-ab-") as tmp:
                start = time.perf_counter()
                done = subprocess.run(_batch_command(n_seeds, workers, Path(tmp) / "ab.db", "--json"),
                                      capture_output=True, text=True, cwd=tree, check=True)
                wall = time.perf_counter() - start
            finished = sum(1 for r in json.loads(done.stdout) if r["status"] == RunStatus.FINISHED)
            counts[name] = finished
            rates[name].append(round(finished / wall, 1))
    base, this = statistics.median(rates["baseline"]), statistics.median(rates["this_tree"])
    print(f"against {baseline} ({_git_commit(baseline)[:7]}), {rounds} alternating rounds: {this:.1f} vs {base:.1f} "
          f"conversations/s ({counts['this_tree']} vs {counts['baseline']} conversations) = {this / base:.2f}x")
    return {"baseline_tree": str(baseline), "baseline_commit": _git_commit(baseline), "rounds": rounds,
            "conversations": counts, "conversations_per_s": rates,
            "conversations_per_s_median": {"baseline": base, "this_tree": this}, "ratio": round(this / base, 2)}


def batch_figure(n_seeds: int, workers: int, repeat: int = 1) -> dict:
    """Time the real ``batch`` command over the whole offline matrix (seeds 1..n) with storage,
    ``repeat`` times (each on a new database); with more than one, the median is printed last."""

    def timed(*extra: str) -> tuple[float, float, str]:
        """(wall s, CPU s of the command and its workers, stdout)."""
        with tempfile.TemporaryDirectory(prefix="knowsim-bench-") as tmp:
            cmd = _batch_command(n_seeds, workers, Path(tmp) / "bench.db", *extra)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return wall, cpu, done.stdout

    batches = [_one_batch(timed, workers) for _ in range(repeat)]
    rates = [b["conversations_per_s"] for b in batches]
    if repeat > 1:
        print(f"median of {repeat} batches: {statistics.median(rates):.1f} conversations per second over the whole "
              f"command (each: {', '.join(f'{r:.1f}' for r in rates)})")
    return {"workers": workers, "seeds": n_seeds, "repeat": repeat,
            "conversations_per_s_median": round(statistics.median(rates), 1),
            "startup_s_median": round(statistics.median(b["startup_s"] for b in batches), 2),
            "batches": batches}


def _one_batch(timed, workers: int) -> dict:
    load = os.getloadavg()[0]
    startup, startup_cpu, _ = timed("--dry-run")
    wall, cpu, out = timed("--json")
    rows = json.loads(out)
    finished = sum(1 for r in rows if r["status"] == RunStatus.FINISHED)
    turns = sum(r["turns"] for r in rows)
    print(f"batch with storage (--workers {workers}, temporary database): {finished} of {len(rows)} conversations "
          f"finished, {turns} turns in {wall:.2f} s (start-up alone, --dry-run: {startup:.2f} s)")
    print(f"conversations per second with storage: {finished / wall:.1f} over the whole command, "
          f"{finished / max(1e-9, wall - startup):.1f} after start-up")
    # CPU time does not depend on what else the machine is doing; wall time does (compare the two
    # when the figure looks low: a busy machine shows as wall > start-up + CPU after start-up / workers)
    print(f"CPU (user + sys, the command and its workers): {cpu:.2f} s, {1000 * (cpu - startup_cpu) / max(1, turns):.2f} "
          f"ms per turn after start-up ({startup_cpu:.2f} s); load average before the run: "
          f"{load:.2f}")
    return {"conversations": len(rows), "finished": finished, "turns": turns, "wall_s": round(wall, 2),
            "startup_s": round(startup, 2), "conversations_per_s": round(finished / wall, 1),
            "conversations_per_s_after_startup": round(finished / max(1e-9, wall - startup), 1),
            "cpu_s": round(cpu, 2), "load_before": round(load, 2)}


def in_process(seeds: list[int]) -> dict:
    """One pass of the matrix in this process without storage, timing each agent."""
    totals: dict[str, float] = defaultdict(float)
    runs = turns = 0
    start = time.perf_counter()
    for sample in load_samples():
        for level in LEVELS:
            for a in ASSISTANTS:
                for seed in seeds:
                    sim = Simulation(
                        material=sample.material,
                        assistant=Timed(registry.resolve("assistant", a), "reply", "assistant", totals),
                        user=Timed(registry.resolve("user", "offline/knowsim"), "respond", "user", totals),
                        extractor=Timed(registry.resolve("extractor", "offline/lexical"), "extract", "extractor", totals),
                        level=level,
                    )
                    sim.reset(seed=seed)
                    run = sim.run_to_end()
                    runs += 1
                    turns += len(run.turns)
    wall = time.perf_counter() - start
    agents = totals["user"] + totals["assistant"] + totals["extractor"]
    rules = wall - agents
    print(f"offline matrix: {len(load_samples())} samples x {len(LEVELS)} levels x {len(ASSISTANTS)} assistants "
          f"x {len(seeds)} seed(s) = {runs} conversations, {turns} turns in {wall:.2f} s")
    print(f"conversations per second: {runs / wall:.1f}")
    parts = (("user", totals["user"]), ("assistant", totals["assistant"]), ("extractor", totals["extractor"]),
             ("rules_records", rules), ("total", wall))
    print("ms per turn: " + ", ".join(f"{k} {1000 * v / turns:.3f}" for k, v in parts))
    return {"conversations": runs, "turns": turns, "wall_s": round(wall, 2), "conversations_per_s": round(runs / wall, 1),
            "ms_per_turn": {k: round(1000 * v / turns, 3) for k, v in parts}}


def _one_pass(seeds: list[int]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--one-pass", "--seeds", ",".join(map(str, seeds))],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    sys.stdout.write(done.stderr)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="1", help="comma-separated seeds (default 1); the batch runs seeds 1..N")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the batch (default 2)")
    ap.add_argument("--no-batch", action="store_true", help="skip the batch with storage")
    ap.add_argument("--baseline", type=Path, help="a checkout of another revision (git worktree add DIR REV): "
                                                  "the whole batch command there and here, alternately, --repeat rounds")
    ap.add_argument("--repeat", type=int, default=3, help="batches to time (default 3; the median is printed: this "
                                                          "kind of machine varies by ±15%% from run to run)")
    ap.add_argument("--one-pass", action="store_true", help=argparse.SUPPRESS)  # a child: one in-process pass, JSON out
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one_pass:
        with contextlib.redirect_stdout(sys.stderr):
            figures = in_process(seeds)
        print(json.dumps(figures))
        return
    # the in-process pass, --repeat times, each in a new process (a second pass in the same one
    # would find every reading of the matrix's messages memoised; one pass moved by ±12% between
    # two sittings with no code change): the pass of median wall time is reported, every one logged
    passes = sorted((_one_pass(seeds) for _ in range(max(1, args.repeat))), key=lambda p: p["wall_s"])
    figures: dict = {"in_process": {**passes[len(passes) // 2],
                                    "wall_s_each": [p["wall_s"] for p in passes], "passes": len(passes)}}
    bytecode = None
    if not args.no_batch:  # the command as the README's set-up leaves it: this tree's (and the baseline's) bytecode written
        bytecode = compile_bytecode(ROOT, *([args.baseline.resolve()] if args.baseline else []))
        figures["batch"] = batch_figure(len(seeds), args.workers, max(1, args.repeat))
        if args.baseline:
            figures["batch"]["against"] = against_baseline(args.baseline.resolve(), len(seeds), args.workers,
                                                           max(1, args.repeat))
    write_log("offline", figures, seeds=seeds,
              split=f"every sample question x {len(LEVELS)} levels x {len(ASSISTANTS)} offline assistants",
              extra={"assistants": list(ASSISTANTS), "workers": args.workers, "repeat": args.repeat,
                     "bytecode": bytecode})


if __name__ == "__main__":
    main()
