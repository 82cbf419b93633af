"""Batches on a Dask cluster (``batch --cluster``) against the same batches played locally, on one machine.

``offline``: the offline matrix (every sample question × 3 levels × the 5 offline assistants × seeds
1..N) through the real ``batch`` command on a ``LocalCluster`` of 2 one-thread worker processes, and
with ``--workers 2`` (the process lanes), alternately for ``--repeat`` rounds. Each fresh cluster
batch runs on a new cluster, so both pay for fresh processes (the offline agents'
per-question caches; their modules are preloaded when they start, as a forked worker inherits them);
a second cluster batch on the same, warm, workers is timed too. Printed and
logged: conversations per second over each command's wall time (start-up included, as a user waits
for it), their medians and ratio (the cluster's cost per conversation), and the CPU seconds of the
command, of the workers and of the process hosting the scheduler. ``--ablations`` adds the same
cluster batch with one offline conversation per task (the ablation of the tasks' chunks).

``llm``: at least 1,000 conversations (3 turns, 3 calls a turn: compat user, assistant and extractor)
against the stand-in server of ``tests/fakes/llm_server.py`` answering after a fixed latency, through
the cluster and through this machine's threads at the same ``--concurrency``. Printed and logged, as
``benchmarks/llm_batch.py`` does: the most requests the server saw in flight, the time from the first
request in to the last answer out, and the latency bound over it — ``ceil(n / c) × 9 calls × latency``
(what an infinitely fast Studio would take) / measured; 1.0 is ideal.

The cluster (scheduler and workers) runs in a child process of this one, with the stand-in server's
URL in its environment (the workers' keys and endpoints are their own); the server runs here.

Usage: ``python benchmarks/cluster.py offline [--seeds 2] [--repeat 5] [--ablations]``;
``python benchmarks/cluster.py llm [--conversations 1000] [--concurrency 16] [--latency 0.25]``.
Writes ``benchmarks/logs/cluster_offline.json`` / ``cluster_llm.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import compile_bytecode, write_log  # noqa: E402
from benchmarks.llm_batch import CALLS_PER_TURN, Clocked, matrix  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.storage.run_filter import RunFilter  # noqa: E402
from knowsim_core.vocab import RunStatus  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer  # noqa: E402

WORKERS = 2
SETTLE_S = 3.0
# the child hosting the cluster: a LocalCluster of WORKERS one-thread worker processes on loopback, started
# as the README's `dask worker` command starts them (the Studio's modules preloaded), its address on stdout,
# until its stdin closes
HOST = f"""
import sys
from distributed import LocalCluster
with LocalCluster(n_workers={WORKERS}, threads_per_worker=1, processes=True, host="127.0.0.1",
                  dashboard_address=None, preload=["knowsim_core.batch.remote"]) as cluster:
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
"""
# the ablation: the same command with one offline conversation per task
ABLATIONS = {"cluster_one_per_task": "c.CHUNK_MAX = 1"}
PATCHED = ("import sys; import knowsim_core.batch.cluster as c; {}\n"
           "from knowsim_core.cli import main; sys.exit(main(sys.argv[1:]))")


@contextmanager
def local_cluster(**environ: str) -> Iterator[tuple[str, subprocess.Popen]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **environ}
    proc = subprocess.Popen([sys.executable, "-c", HOST], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().strip()
        if not address.startswith("tcp://"):
            sys.exit("the LocalCluster did not start")
        yield address, proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def settle(client) -> None:  # noqa: ANN001 — a Dask client
    """Wait until the workers have joined and finished starting (a cluster is started before its
    batches, not with them): the first seconds of a new worker process still load and connect."""
    client.wait_for_workers(WORKERS, timeout=120)
    time.sleep(SETTLE_S)


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of a live process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def batch(argv: list[str], env: dict[str, str], *, program: list[str] | None = None) -> tuple[float, float, int]:
    """Run one ``batch`` command on a fresh seeded database; (wall s, its CPU s, runs finished)."""
    with tempfile.TemporaryDirectory(prefix="knowsim-cluster-") as tmp:
        db = Path(tmp) / "bench.db"
        Store(db).questions.seed_samples()
        before, start = children_cpu(), time.perf_counter()
        done = subprocess.run([*(program or [sys.executable, "-m", "knowsim_core"]), "batch", *argv, "--db", str(db)],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        wall, cpu = time.perf_counter() - start, children_cpu() - before
        if done.returncode != 0:
            sys.exit(f"batch failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return wall, cpu, Store(db).search.count(RunFilter(status=RunStatus.FINISHED))


# ---------------------------------------------------------------------- offline
def offline(args: argparse.Namespace) -> None:
    from distributed import Client

    matrix_argv = ["--questions", "all", "--levels", "all", "--assistants", "offline", "--seeds", str(args.seeds)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bytecode = compile_bytecode(ROOT)
    bytecode["compiled"] = ["."]  # this checkout; the log names no machine path
    kinds = ["cluster", "cluster_warm", "process_lanes", *(ABLATIONS if args.ablations else [])]
    rounds: dict[str, list[dict]] = {k: [] for k in kinds}

    def timed(kind: str, argv: list[str], client: Client | None = None, host: subprocess.Popen | None = None,
              program: list[str] | None = None) -> None:
        workers = client.run(os.getpid) if client is not None else {}
        before = {w: cpu_of(pid) for w, pid in workers.items()}
        host_before, load = cpu_of(host.pid) if host is not None else 0.0, os.getloadavg()[0]
        wall, cpu, n = batch(argv, env, program=program)
        row = {"conversations": n, "wall_s": round(wall, 2), "conversations_per_s": round(n / wall, 1),
               "command_cpu_s": round(cpu, 2), "load_before": round(load, 2)}
        if host is not None:
            row["workers_cpu_s"] = round(sum(cpu_of(pid) - before[w] for w, pid in workers.items()), 2)
            row["scheduler_host_cpu_s"] = round(cpu_of(host.pid) - host_before, 2)
        rounds[kind].append(row)
        print(f"{kind:>20}: {n} conversations in {wall:.2f} s = {n / wall:.1f}/s; CPU: command {cpu:.2f} s"
              + (f", workers {row['workers_cpu_s']:.2f} s, scheduler's process {row['scheduler_host_cpu_s']:.2f} s"
                 if "workers_cpu_s" in row else " (workers included)") + f"; load before {load:.1f}", flush=True)

    for _ in range(args.repeat):
        # a new cluster for each fresh batch: new worker processes pay the agents' per-question caches, as
        # --workers does (their modules are preloaded when they start, as a forked worker inherits them)
        with local_cluster() as (address, host), Client(address) as client:
            settle(client)
            timed("cluster", [*matrix_argv, "--cluster", address], client, host)
            timed("cluster_warm", [*matrix_argv, "--cluster", address], client, host)
        timed("process_lanes", [*matrix_argv, "--workers", str(WORKERS)])
        for kind, patch in ABLATIONS.items() if args.ablations else ():
            with local_cluster() as (address, host), Client(address) as client:
                settle(client)
                timed(kind, [*matrix_argv, "--cluster", address], client, host,
                      program=[sys.executable, "-c", PATCHED.format(patch)])
    medians = {k: statistics.median(r["conversations_per_s"] for r in v) for k, v in rounds.items()}
    ratio = medians["cluster"] / medians["process_lanes"]
    print(f"medians over {args.repeat} rounds: " + ", ".join(f"{k} {v:.1f}/s" for k, v in medians.items()))
    warm = medians["cluster_warm"] / medians["process_lanes"]
    print(f"cluster / process lanes: {ratio:.2f} (fresh workers), {warm:.2f} (warm workers)")
    figures = {"workers": WORKERS, "seeds": args.seeds, "repeat": args.repeat,
               "conversations_per_s_median": {k: round(v, 1) for k, v in medians.items()},
               "ratio_cluster_to_process_lanes": round(ratio, 2),
               "ratio_warm_cluster_to_process_lanes": round(warm, 2),
               "rounds": rounds}
    for kind in ABLATIONS if args.ablations else ():
        figures[f"ratio_{kind}_to_process_lanes"] = round(medians[kind] / medians["process_lanes"], 2)
    write_log("cluster_offline", figures, seeds=list(range(1, args.seeds + 1)),
              split=f"every sample question x 3 levels x 5 offline assistants x seeds 1..{args.seeds}",
              extra={"bytecode": bytecode, "cluster": f"LocalCluster, {WORKERS} worker processes x 1 thread"})


# ---------------------------------------------------------------------- LLM
def llm(args: argparse.Namespace) -> None:
    c = args.concurrency
    base = [*matrix(args.conversations), "--assistants", "compat/bench:adaptive", "--user", "compat/bench",
            "--extractor", "compat/bench", "--max-turns", str(args.turns), "--concurrency", str(c)]
    rows: dict[str, dict] = {}
    with FakeLLMServer(latency=args.latency) as srv:
        workers_env = {"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_CACHE": "0"}
        with local_cluster(**workers_env) as (address, host):
            for kind, argv, env in (
                    ("cluster", [*base, "--cluster", address], {**os.environ, "PYTHONPATH": str(ROOT)}),
                    ("threads", base, {**os.environ, "PYTHONPATH": str(ROOT), **workers_env})):
                env.pop("KNOWSIM_LLM_MAX_CONCURRENCY", None)
                clock = Clocked()
                srv.reply = clock
                srv.clear()
                srv.peak_in_flight = 0
                host_before = cpu_of(host.pid)
                wall, cpu, n = batch(argv, env)
                actual = (max(clock.times) - min(clock.times)) + args.latency
                ideal = math.ceil(n / c) * args.turns * CALLS_PER_TURN * args.latency
                rows[kind] = {"conversations": n, "requests": len(clock.times), "peak_in_flight": srv.peak_in_flight,
                              "ideal_s": round(ideal, 2), "actual_s": round(actual, 2),
                              "share_of_bound": round(ideal / actual, 3),
                              "conversations_per_minute": round(n / actual * 60, 1),
                              "command_wall_s": round(wall, 2), "command_cpu_s": round(cpu, 2),
                              **({"cluster_process_cpu_s": round(cpu_of(host.pid) - host_before, 2)}
                                 if kind == "cluster" else {})}
                print(f"{kind:>8}: {n} conversations, {len(clock.times)} requests, at most {srv.peak_in_flight} in "
                      f"flight; {actual:.1f} s against a bound of {ideal:.1f} s = {ideal / actual:.3f} of it; "
                      f"command CPU {cpu:.1f} s", flush=True)
    write_log("cluster_llm", {"latency_s": args.latency, "turns": args.turns, "calls_per_turn": CALLS_PER_TURN,
                              "concurrency": c, **rows}, seeds=None,
              split=f"stand-in server at {args.latency} s per call; at least {args.conversations} "
                    f"{args.turns}-turn conversations",
              extra={"cluster": f"LocalCluster, {WORKERS} worker processes x 1 thread"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("offline", help="the offline matrix: the cluster against the process lanes")
    o.add_argument("--seeds", type=int, default=2, help="seeds 1..N (default 2: 240 conversations)")
    o.add_argument("--repeat", type=int, default=5, help="alternating rounds (default 5; medians reported)")
    o.add_argument("--ablations", action="store_true", help="also one offline conversation per task")
    m = sub.add_parser("llm", help="a model-bound batch against a fixed-latency server: the cluster and threads")
    m.add_argument("--conversations", type=int, default=1000, help="at least this many (default 1000)")
    m.add_argument("--concurrency", type=int, default=16, help="conversations in flight (default 16)")
    m.add_argument("--latency", type=float, default=0.25, help="seconds per call (default 0.25)")
    m.add_argument("--turns", type=int, default=3, help="turns per conversation (default 3)")
    args = ap.parse_args()
    offline(args) if args.what == "offline" else llm(args)


if __name__ == "__main__":
    main()
