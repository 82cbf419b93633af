"""LLM batch throughput: conversations per minute against a model that takes 0.25 s per call.

Starts the local wire-format server (``tests/fakes/llm_server.py``) with an injected latency and
runs ``python -m knowsim_core batch`` (compat user, assistant and extractor; 3 turns, so 9 calls
per conversation) at several ``--concurrency`` values. For each it prints:

* conversations per minute, timed at the server (first request in → last answer out), so the
  interpreter's start-up is not counted;
* the most requests the server saw in flight at once;
* the ratio to the latency bound: ``ceil(n / c) × calls per conversation × latency`` (what an
  infinitely fast Studio would take) over the measured time — 1.0 is ideal;
* the process's CPU per turn (user + sys of the batch process over the turns it played,
  start-up and imports included, so it falls as batches grow).

Then the Studio's own CPU per turn, apart from any waiting: conversations played one after the other
in this process against the server at no latency, timed with ``time.thread_time()`` on the playing
thread (the server's threads are not counted), after one warm-up conversation (imports, clients).

Usage: ``python benchmarks/llm_batch.py [--latency 0.25] [--turns 3] [--concurrency 1,8,12,32,64]``.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.formats.samples import load_samples  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.storage.run_filter import RunFilter  # noqa: E402
from knowsim_core.vocab import RunStatus  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer, KnowSimReplies  # noqa: E402

LEVELS = ("novice", "intermediate", "advanced")
CALLS_PER_TURN = 3  # user, assistant, extractor


class Clocked:
    """The reply function, noting when each answer was made (the server sleeps the latency first)."""

    def __init__(self):
        self.inner, self.lock, self.times = KnowSimReplies(), threading.Lock(), []

    def __call__(self, req):
        with self.lock:
            self.times.append(time.monotonic())
            return self.inner(req)


def matrix(n: int) -> list[str]:
    """Batch arguments for at least ``n`` conversations (sample questions × levels × seeds)."""
    ids = [s.id for s in load_samples()]
    per_seed = len(ids) * len(LEVELS)
    seeds = math.ceil(n / per_seed)
    questions = ids[: math.ceil(n / (len(LEVELS) * seeds))]
    return ["--questions", ",".join(questions), "--levels", ",".join(LEVELS), "--seeds", str(seeds)]


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_batch(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run one batch command; returns (its CPU seconds, its stdout)."""
    before = child_cpu()
    done = subprocess.run([sys.executable, "-m", "knowsim_core", "batch", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"batch failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return child_cpu() - before, done.stdout


def own_cpu_per_turn(conversations: int, turns: int) -> float:
    """CPU ms per turn of the playing thread alone (see the module docstring)."""
    from knowsim_core.batch.schedule import LLMSetup
    from knowsim_core.services.runner import start_run

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(reply=KnowSimReplies()) as srv:
        saved = {k: os.environ.get(k) for k in ("KNOWSIM_COMPAT_BASE_URL", "KNOWSIM_LLM_CACHE")}
        os.environ.update(KNOWSIM_COMPAT_BASE_URL=srv.openai_url, KNOWSIM_LLM_CACHE="0")
        try:
            store, setup = Store(str(Path(tmp) / "cpu.db")), LLMSetup(1)
            store.questions.seed_samples()

            def play(seed: int) -> None:
                live = start_run(store, question_id=load_samples()[0].id, level="novice", seed=seed,
                                 assistant_id="compat/bench:adaptive", user_id="compat/bench",
                                 extractor_id="compat/bench", max_turns=turns, settings=setup(store, seed))
                while not live.done:
                    live.step()

            play(0)  # imports, clients, connections
            started = time.thread_time()
            for seed in range(1, conversations + 1):
                play(seed)
            return (time.thread_time() - started) / (conversations * turns) * 1000
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.25, help="seconds per model call (default 0.25)")
    ap.add_argument("--turns", type=int, default=3, help="turns per conversation (default 3)")
    ap.add_argument("--conversations", type=int, default=12, help="conversations (at least; default 12, "
                    "raised to the concurrency so every slot is used)")
    ap.add_argument("--concurrency", default="1,8,12,32,64", help="comma list (default 1,8,12,32,64)")
    args = ap.parse_args()

    print(f"local server, {args.latency:.2f} s per call; {args.turns}-turn conversations, "
          f"{CALLS_PER_TURN} calls per turn (compat user, assistant, extractor)")
    print(f"{'concurrency':>11}  {'convs':>5}  {'conv/min':>8}  {'max in flight':>13}  {'ideal s':>7}  "
          f"{'actual s':>8}  {'ratio':>5}  {'process CPU ms/turn':>19}")
    rows: dict[str, dict] = {}
    for c in (int(x) for x in args.concurrency.split(",")):
        n_wanted = max(args.conversations, c)
        with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(latency=args.latency) as srv:
            clock = Clocked()
            srv.reply = clock
            db = str(Path(tmp) / "bench.db")
            Store(db).questions.seed_samples()
            env = {**os.environ, "PYTHONPATH": str(ROOT), "KNOWSIM_COMPAT_BASE_URL": srv.openai_url,
                   "KNOWSIM_LLM_CACHE": "0"}
            env.pop("KNOWSIM_LLM_MAX_CONCURRENCY", None)
            argv = [*matrix(n_wanted), "--assistants", "compat/bench:adaptive", "--user", "compat/bench",
                    "--extractor", "compat/bench", "--max-turns", str(args.turns), "--concurrency", str(c),
                    "--db", db]
            cpu, _ = run_batch(argv, env)
            n = Store(db).search.count(RunFilter(status=RunStatus.FINISHED))
            actual = (max(clock.times) - min(clock.times)) + args.latency
            ideal = math.ceil(n / c) * args.turns * CALLS_PER_TURN * args.latency
            print(f"{c:>11}  {n:>5}  {n / actual * 60:>8.0f}  {srv.peak_in_flight:>13}  {ideal:>7.2f}  "
                  f"{actual:>8.2f}  {ideal / actual:>5.2f}  {cpu / (n * args.turns) * 1000:>19.1f}")
            rows[str(c)] = {"conversations": n, "per_minute": round(n / actual * 60, 1), "peak_in_flight": srv.peak_in_flight,
                            "ideal_s": round(ideal, 2), "actual_s": round(actual, 2), "ratio": round(ideal / actual, 2),
                            "process_cpu_ms_per_turn": round(cpu / (n * args.turns) * 1000, 1)}
    own = own_cpu_per_turn(10, args.turns)
    print(f"Studio's own CPU per turn (3 calls, one thread, no waiting): {own:.1f} ms")
    # latency_s is the server's configured delay per call (a setting of this run, not a measurement)
    write_log("llm_batch", {"latency_s": args.latency, "turns": args.turns, "calls_per_turn": CALLS_PER_TURN,
                            "by_concurrency": rows, "own_cpu_ms_per_turn": round(own, 1)}, seeds=None,
              split=f"local server at {args.latency} s per call; at least {args.conversations} {args.turns}-turn "
                    "conversations per concurrency",
              extra={"concurrency": args.concurrency})


if __name__ == "__main__":
    main()
