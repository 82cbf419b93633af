"""The Studio's own CPU per model call: what the request path costs apart from the model.

Plays ``--calls`` structured calls (the extractor's schema, a 10-IU prompt, a ~3 KB JSON reply)
one after the other against the local wire-format server at no latency, cache off, and reports
this process's CPU (``time.process_time()``, every thread: older versions ran each request in a
thread of its own; the server runs in a child process, so its CPU is not counted) and wall time per call, after
a warm-up (imports, client, connection). It uses only ``ChatModel.complete``,
so the same script measures any version of the request path (run it from another checkout to
compare: ``git worktree add /tmp/old <commit>; python /tmp/old/benchmarks/llm_call.py``).

Usage: ``python benchmarks/llm_call.py [--calls 300] [--providers compat,anthropic]``; writes
``benchmarks/logs/llm_call.json`` (``<provider>.cpu_ms`` / ``wall_ms``: medians per call).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.llm import ChatModel, LLMSettings, ModelRef, as_messages  # noqa: E402
from knowsim_core.llm.schemas import ExtractorOut  # noqa: E402
SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer
srv = FakeLLMServer(reply=lambda req: {reply!r}).start()
print(srv.url, flush=True)
time.sleep(3600)
"""

IDS = [f"IU{i}" for i in range(1, 11)]
REPLY = json.dumps({"iu_analysis": [
    {"id": i, "concept": f"concept {i}", "teaching_quality_reasoning": "explained with an example " * 3,
     "teaching_quality": "well_explained", "user_attempt_reasoning": "none given", "user_attempt_type": "none",
     "assistant_response_role": "not_applicable"} for i in IDS]})
PROMPT = "Graph:\n" + "\n".join(f'{{"id": "{i}", "description": "what {i} means, in two sentences."}}' for i in IDS)


def measure(provider: str, url: str, calls: int) -> tuple[float, float]:
    env = {"KNOWSIM_LLM_CACHE": "0", "KNOWSIM_COMPAT_BASE_URL": url + "/v1",
           "ANTHROPIC_API_KEY": "sk-ant-bench-0000000000", "ANTHROPIC_BASE_URL": url}
    m = ChatModel(ModelRef.parse(provider, "bench"), settings=LLMSettings.from_env(env))
    msgs = as_messages("You are the extractor.", user=PROMPT)
    for _ in range(5):  # warm-up: imports, client, connection, schema caches
        m.complete(msgs, json_schema=ExtractorOut)
    cpu, wall = [], []
    for _ in range(calls):
        c0, w0 = time.process_time(), time.perf_counter()
        m.complete(msgs, json_schema=ExtractorOut)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--providers", default="compat,anthropic")
    args = ap.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), reply=REPLY)],
                              stdout=subprocess.PIPE, text=True)
    figures: dict = {}
    try:
        url = server.stdout.readline().strip()
        for provider in args.providers.split(","):
            cpu, wall = measure(provider, url, args.calls)
            figures[provider] = {"cpu_ms": round(cpu, 3), "wall_ms": round(wall, 3)}
            print(f"{provider:10s} median per call: {cpu:.2f} ms CPU (this process), {wall:.2f} ms wall "
                  f"({args.calls} calls, reply {len(REPLY):,} bytes)")
    finally:
        server.kill()
        server.wait()
    write_log("llm_call", figures, seeds=None,
              split=f"{args.calls} structured calls per provider after 5 warm-up calls, local server, no latency, cache off",
              extra={"calls": args.calls, "reply_bytes": len(REPLY), "timer": "time.process_time (this process), medians"})


if __name__ == "__main__":
    main()
