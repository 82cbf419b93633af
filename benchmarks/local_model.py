"""The small local model (``make local-model``: llama-cpp-python + Gemma 3 270M) playing every role.

Starts the server with the launcher, plays ``--turns`` turns of each ``--questions`` sample with the
local model as tutor, learner and extractor (the local model's default reply caps unless ``--caps``),
and reports:

* prompt and generation speed in tokens/s, per role, from the server's own timings
  (``llama_perf_context_print`` lines of its log: prompt eval, and eval = decoding only) and the
  *effective* generation speed (output tokens / (call time − prompt time)), which includes the
  sampling under a grammar;
* seconds per call per role, seconds per turn;
* prompt tokens per role (the server's count) against the context;
* the share of extractor replies that were schema-valid (labels for the turn) vs failed turns.

Writes a JSON log to ``benchmarks/logs/local_model-<UTC time>.json`` (a small helper here: there is
no shared benchmark-log module on main). Needs ``requirements-local.txt``.

Usage: ``python benchmarks/local_model.py [--questions sample_theatre_seats_series,sample_power_remainder_mod13]
[--turns 1] [--threads N] [--caps "assistant=160,user=120,extractor=1200"]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.engine.config import preset  # noqa: E402
from knowsim_core.engine.session import Simulation  # noqa: E402
from knowsim_core.errors import ProviderError  # noqa: E402
from knowsim_core.formats.samples import get_sample  # noqa: E402
from knowsim_core.llm import LLMSettings  # noqa: E402
from knowsim_core.llm.local_server import start  # noqa: E402

PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+)")
DEFAULT_QUESTIONS = "sample_theatre_seats_series,sample_power_remainder_mod13"


try:
    from benchmarks._log import write_log as _shared_write_log  # main's one-log-per-benchmark helper
except ImportError:  # a checkout from before benchmarks/_log.py
    _shared_write_log = None


def write_log(name: str, data: dict, extra: dict) -> Path:
    """``benchmarks/logs/<name>.json`` through ``benchmarks/_log.py`` when it exists, else a plain
    ``benchmarks/logs/<name>-<UTC time>.json``."""
    if _shared_write_log is not None:
        return _shared_write_log(name, data, seeds=[1], split="sample questions given by --questions", extra=extra)
    out = ROOT / "benchmarks" / "logs"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps({**data, "extra": extra}, indent=1), encoding="utf-8")
    return path


def perf_blocks(log: Path) -> list[dict[str, float]]:
    """One {prompt_ms, prompt_tokens, eval_ms, eval_tokens, total_ms} per completed generation, in order."""
    blocks, cur = [], {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = PERF.search(line)
        if not m:
            continue
        kind, ms, n = m.group(1), float(m.group(2)), int(m.group(3))
        if kind == "prompt eval":
            cur = {"prompt_ms": ms, "prompt_tokens": n}
        elif kind == "eval":
            cur.update(eval_ms=ms, eval_tokens=n)
        elif cur:
            cur["total_ms"] = ms
            blocks.append(cur)
            cur = {}
    return blocks


def rate(tokens: float, ms: float) -> float | None:
    return round(tokens / (ms / 1000.0), 2) if ms > 0 else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", default=DEFAULT_QUESTIONS)
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--caps", default="", help="KNOWSIM_LLM_MAX_TOKENS (default: the local model's caps)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="knowsim-local-bench-"))
    load_before = os.getloadavg()
    live = start(record=tmp / "local-model.json", threads=args.threads or None)
    env = {"KNOWSIM_LOCAL_MODEL_FILE": str(live.record), "KNOWSIM_LLM_CACHE": "0"}
    if args.caps:
        env["KNOWSIM_LLM_MAX_TOKENS"] = args.caps
    settings = LLMSettings.from_sources(env=env)
    ids = live.server.agent_ids()
    calls: list[dict] = []
    turns: list[dict] = []
    failures: list[str] = []
    try:
        for qid in args.questions.split(","):
            agents = {k: registry.resolve(k, v, settings=settings) for k, v in ids.items()}
            sim = Simulation(material=get_sample(qid).material, params=preset(max_turns=args.turns), **agents)
            sim.reset(seed=1)
            while not sim.done:
                t0 = time.perf_counter()
                try:
                    rec = sim.step()
                except ProviderError as exc:
                    failures.append(f"{qid}: {exc}")
                    break
                turns.append({"question": qid, "turn": rec.turn, "seconds": round(time.perf_counter() - t0, 1),
                              "extractor_valid": not rec.extractor_failed, "notes": list(rec.notes)})
                for u in rec.usage:
                    calls.append({"question": qid, "role": u.role, "seconds": round(u.latency_ms / 1000, 1),
                                  "input_tokens": u.input_tokens, "output_tokens": u.output_tokens})
    finally:
        live.stop()
    blocks = perf_blocks(live.log)
    by_role: dict[str, dict] = {}
    for role in ("user", "assistant", "extractor"):
        mine = [c for c in calls if c["role"] == role]
        if mine:
            by_role[role] = {
                "calls": len(mine),
                "seconds_mean": round(statistics.mean(c["seconds"] for c in mine), 1),
                "prompt_tokens_max": max(c["input_tokens"] for c in mine),
                "output_tokens_mean": round(statistics.mean(c["output_tokens"] for c in mine), 1),
            }
    prompt_ms = sum(b["prompt_ms"] for b in blocks)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_avg_before": [round(x, 2) for x in load_before],
                    "load_avg_after": [round(x, 2) for x in os.getloadavg()]},
        "server": {"threads": live.server.threads, "n_ctx": live.server.n_ctx, "model": live.server.model},
        "questions": args.questions.split(","), "turns_per_question": args.turns,
        "caps": settings.max_tokens or "local defaults",
        "prompt_tokens_per_s": rate(sum(b["prompt_tokens"] for b in blocks), prompt_ms),
        "decode_tokens_per_s": rate(sum(b.get("eval_tokens", 0) for b in blocks),
                                    sum(b.get("eval_ms", 0) for b in blocks)),
        "effective_generation_tokens_per_s": rate(
            sum(b.get("eval_tokens", 0) for b in blocks),
            sum(b["total_ms"] - b["prompt_ms"] for b in blocks)),
        "by_role": by_role,
        "seconds_per_turn": [t["seconds"] for t in turns],
        "extractor_schema_valid_share": (round(sum(t["extractor_valid"] for t in turns) / len(turns), 3)
                                         if turns else None),
        "provider_failures": failures,
    }
    path = write_log("local_model", result, {"generations": blocks, "turns": turns, "calls": calls})
    print(json.dumps(result, indent=1))
    print(f"log: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
