"""``extract-graph --question ID --model ID``: build an IU graph with an LLM and store it as a new version."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from knowsim_core import agents, llm, services
from knowsim_core.commands.runs import add_db_argument, open_store

if TYPE_CHECKING:
    from knowsim_core.llm.settings import LLMSettings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--question", required=True, metavar="ID", help="question id (stored, or a sample id)")
    p.add_argument("--model", required=True, metavar="ID",
                   help="graph extractor id, e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, compat/llama3.1")
    p.add_argument("--base-url", metavar="URL", help="endpoint of an OpenAI-compatible server (for compat/ ids)")
    p.add_argument("--no-save", action="store_true", help="print the graph without storing it")
    p.add_argument("--json", action="store_true", help="print the graph as JSON")
    add_db_argument(p)


def llm_settings(args: argparse.Namespace) -> LLMSettings:
    """Settings from the environment, with ``--base-url`` for compatible servers."""
    settings = llm.LLMSettings.from_env(os.environ)
    if getattr(args, "base_url", None):
        settings = settings.with_overrides(compat_base_url=args.base_url)
    return settings


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    services.runner.ensure_question(store, args.question)
    q = store.questions.get(args.question)
    settings = llm_settings(args)
    gx = agents.registry.resolve("graph_extractor", args.model, settings=settings,
                          cache=store.caches if settings.cache_enabled else None)
    graph = gx.extract_graph(q.text, q.reference_answer)
    tokens = sum(u.input_tokens + u.output_tokens for u in gx.last_usage)
    cost = sum(u.cost_usd for u in gx.last_usage)
    if args.json:
        print(json.dumps(graph.to_data(), ensure_ascii=False, indent=2))
    summary = (f"{len(graph.nodes)} IUs, {len(graph.edges)} edges from {gx.id} "
               f"({tokens} tokens, ${cost:.4f})")
    for note in gx.last_notes:
        summary += f"\n  note: {note}"
    if not args.no_save:
        parent = store.questions.latest_graph_version(q.id)
        vid = store.questions.add_graph_version(q.id, graph, note=f"extracted by {gx.id} ({gx.prompt_version})",
                                      author=gx.id, parent_id=parent.id if parent else None)
        summary += f"\nsaved as graph version id {vid} of {q.id}"
    print(summary, file=sys.stderr if args.json else sys.stdout)
    return 0
