"""Several model servers behind one URL: a 1,000-conversation LLM batch through nginx and through vLLM's
router, against one server reached directly, in the same run.

Each setup runs ``python -m knowsim_core batch`` (compat tutor, learner and extractor; 3 turns, so 9 calls
per conversation; ``--concurrency`` conversations in flight) against stand-in servers
(``tests/fakes/stand_in.py``: a fixed ``--latency`` per call, in processes of their own):

* ``direct``: one stand-in server, its own URL — what a batch did before a router (the baseline);
* ``nginx``: ``--servers`` stand-ins behind nginx as ``knowsim_core.llm.router`` configures it;
* ``vllm-router``: the same stand-ins behind ``vllm-router`` (PyPI), policy ``--vllm-policy``, if installed.

For each: the time from the first request in to the last answer out (read from the servers' own logs, so
start-up is not counted), the bound the latency sets (``ceil(n / c) × calls per conversation × latency``:
an infinitely fast Studio and router) and the share of it reached; the requests in flight (peak, and mean
over the run, from each call's interval at the servers); how the calls were shared between servers; and
the batch process's CPU per turn. Writes ``benchmarks/logs/router.json``.

Usage: ``python benchmarks/router.py [--conversations 1000] [--latency 0.5] [--concurrency 16] [--servers 2]
[--setups direct,nginx,vllm-router]``.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from benchmarks.llm_batch import CALLS_PER_TURN, matrix  # noqa: E402
from knowsim_core.llm import router as nginx_router  # noqa: E402
from knowsim_core.llm.children import free_port  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.storage.run_filter import RunFilter  # noqa: E402
from knowsim_core.vocab import RunStatus  # noqa: E402


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    e.update(PYTHONPATH=str(ROOT), **extra)
    return e


def stand_ins(n: int, latency: float, folder: Path) -> list[tuple[subprocess.Popen, str, Path]]:
    out = []
    for k in range(n):
        log = folder / f"server-{k + 1}.log"
        proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.stand_in", "--latency", str(latency), "--log",
                                 str(log), "--ttl", "3600"], cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        out.append((proc, proc.stdout.readline().strip(), log))
    return out


def vllm_router(urls: list[str], folder: Path, policy: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "vllm_router.launch_router", "--host", "127.0.0.1", "--port",
                             str(port), "--worker-urls", *urls, "--policy", policy, "--prometheus-port",
                             str(free_port()), "--worker-startup-check-interval", "1", "--log-level", "warning"],
                            cwd=ROOT, stdout=open(folder / "vllm-router.log", "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.3)
    proc.kill()
    sys.exit(f"vllm-router did not start; its log: {folder / 'vllm-router.log'}")


def in_flight(ends: list[float], latency: float) -> int:
    """The most calls in progress at once (each call is the ``latency`` before its answer)."""
    events = sorted([(t - latency, 1) for t in ends] + [(t, -1) for t in ends], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_setup(name: str, args: argparse.Namespace, folder: Path) -> dict:
    folder.mkdir(parents=True)
    servers = stand_ins(1 if name == "direct" else args.servers, args.latency, folder)
    stop = None
    try:
        if name == "direct":
            url = servers[0][1] + "/v1"
        elif name == "nginx":
            live = nginx_router.start([u + "/v1" for _, u, _ in servers], workdir=folder / "nginx")
            url, stop = live.url, live.stop
        else:
            proc, url = vllm_router([u for _, u, _ in servers], folder, args.vllm_policy)
            stop = lambda: (proc.terminate(), proc.wait(10))  # noqa: E731
        db = str(folder / "bench.db")
        Store(db).questions.seed_samples()
        argv = [*matrix(args.conversations), "--assistants", "compat/bench:adaptive", "--user", "compat/bench",
                "--extractor", "compat/bench", "--max-turns", str(args.turns), "--concurrency", str(args.concurrency),
                "--db", db]
        before = child_cpu()
        done = subprocess.run([sys.executable, "-m", "knowsim_core", "batch", *argv], cwd=ROOT,
                              env=env(KNOWSIM_COMPAT_BASE_URL=url, KNOWSIM_LLM_CACHE="0"), capture_output=True,
                              text=True, check=False)
        cpu = child_cpu() - before
        if done.returncode != 0:
            sys.exit(f"{name}: batch failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    finally:
        if stop is not None:
            stop()
        for proc, _, _ in servers:
            proc.kill()
            proc.wait()
    n = Store(db).search.count(RunFilter(status=RunStatus.FINISHED))
    per_server = [[float(line.split()[1]) for line in log.read_text().splitlines()] for _, _, log in servers]
    ends = sorted(t for times in per_server for t in times)
    actual = ends[-1] - ends[0] + args.latency
    ideal = math.ceil(n / args.concurrency) * args.turns * CALLS_PER_TURN * args.latency
    calls = len(ends)
    return {"conversations": n, "calls": calls, "ideal_s": round(ideal, 1), "actual_s": round(actual, 1),
            "share_of_bound": round(ideal / actual, 3), "conversations_per_minute": round(n / actual * 60, 1),
            "peak_in_flight": in_flight(ends, args.latency),
            "mean_in_flight": round(calls * args.latency / actual, 2),
            "calls_per_server": [len(t) for t in per_server],
            "process_cpu_ms_per_turn": round(cpu / (n * args.turns) * 1000, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=1000, help="at least this many (default 1000)")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per call at each server (default 0.5)")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16, help="conversations in flight (default 16)")
    ap.add_argument("--servers", type=int, default=2, help="stand-in servers behind a router (default 2)")
    ap.add_argument("--setups", default="direct,nginx,vllm-router")
    ap.add_argument("--vllm-policy", default="power_of_two",
                    help="vllm-router's --policy (default power_of_two: the less busy of two)")
    args = ap.parse_args()
    setups = args.setups.split(",")
    if "vllm-router" in setups:
        import importlib.util

        if importlib.util.find_spec("vllm_router") is None:
            print("vllm-router is not installed (pip install vllm-router): left out")
            setups.remove("vllm-router")
    load_start = round(os.getloadavg()[0], 2)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="knowsim-router-bench-") as tmp:
        for name in setups:
            rows[name] = run_setup(name, args, Path(tmp) / name)
            r = rows[name]
            print(f"{name:<12} {r['conversations']:>5} conversations  {r['actual_s']:>7.1f} s (bound "
                  f"{r['ideal_s']:.1f} s)  share {r['share_of_bound']:.3f}  in flight peak {r['peak_in_flight']} "
                  f"mean {r['mean_in_flight']}  calls per server {r['calls_per_server']}  "
                  f"CPU {r['process_cpu_ms_per_turn']} ms/turn", flush=True)
    write_log("router", {"latency_s": args.latency, "turns": args.turns, "calls_per_turn": CALLS_PER_TURN,
                         "concurrency": args.concurrency, "servers": args.servers,
                         "load_average_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
                         "by_setup": rows},
              seeds=None, split=f"stand-in servers at {args.latency} s per call; at least {args.conversations} "
                                f"{args.turns}-turn conversations per setup, setups one after the other",
              extra={"setups": setups, "vllm_policy": args.vllm_policy})


if __name__ == "__main__":
    main()
