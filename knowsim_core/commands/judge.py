"""``judge RUN_ID --model ID``: rate a stored run's interaction quality (IQ, 1–10) with an LLM judge."""

from __future__ import annotations

import argparse
import json

from knowsim_core import agents
from knowsim_core.commands.extract_graph import llm_settings
from knowsim_core.commands.runs import add_db_argument, open_store


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="stored run id(s)")
    p.add_argument("--model", required=True, metavar="ID", help="judge id, e.g. openai/gpt-4o-mini or compat/llama3.1")
    p.add_argument("--base-url", metavar="URL", help="endpoint of an OpenAI-compatible server (for compat/ ids)")
    p.add_argument("--json", action="store_true", help="print the judgements as JSON")
    add_db_argument(p)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    settings = llm_settings(args)
    judge = agents.registry.resolve("judge", args.model, settings=settings, cache=store.caches if settings.cache_enabled else None)
    out = []
    for run_id in args.run_ids:
        record = store.runs.load(run_id)
        j = judge.judge(record)
        store.caches.set_judgement(run_id, score=j.score, rationale=j.rationale, model=judge.id)
        cost = sum(u.cost_usd for u in j.usage)
        out.append({"run_id": run_id, "score": j.score, "rationale": j.rationale, "model": judge.id, "cost_usd": cost})
        if not args.json:
            print(f"{run_id}: IQ {j.score:g}/10 — {j.rationale}")
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0
