"""``realism [--user ID …] [--start both|sampled|file] [--db PATH] [--json]``: score user simulators
against real people, turn by turn.

Every human run in the database (imported real conversations, ``import PATH``) is replayed turn
by turn: each simulator writes the person's next message from the real history (and, for KnowSim
users, the state read from it; LLM baselines get the person's level and initial state) and is
compared with what the person wrote (:mod:`knowsim_core.evaluation.realism`). Every table lists
the floors (copy-last, generic, most-common-act) and n, overall, per level and for both halves of
the stated split, with a line per simulator naming the floors it beats. The headline is the sampled
start (no state knows the whole conversation); by default the hindsight start (the file's states)
is scored too and printed beside it, labelled as hindsight. Conversations without a reading (no
concepts) are skipped and counted, never fatal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from knowsim_core import agents, evaluation, llm
from knowsim_core.commands.runs import add_db_argument, open_store
from knowsim_core.errors import StorageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", action="append", metavar="ID",
                   help="user simulator id, repeatable "
                        "(default: offline/person, offline/knowsim, baseline/copy-last, baseline/generic)")
    p.add_argument("--conversation", action="append", metavar="KEY",
                   help="only this conversation (problem_id:workerId, as in the output), repeatable")
    p.add_argument("--tagger", default="offline", metavar="ID",
                   help="dialogue-act tagger: offline (rules, default) or an LLM, e.g. openai/gpt-4o-mini")
    p.add_argument("--start", choices=("both", "sampled", "file"), default=None,
                   help="the people's initial states: sampled = drawn from each level's sampler and the "
                        "conversation re-read (no hindsight: the headline), file = as imported (the release's "
                        "knowledge_state.json, an analysis of the whole conversation: hindsight), both = the "
                        "sampled headline with the hindsight tables beside it (default; with a model user "
                        "the default is sampled, so the model is not called twice per turn)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the full report (turns, summary, by level) as JSON")


def _llm_settings(ids: list[str], store: Any) -> dict[str, Any] | None:
    if not any(agents.registry.spec_of(uid).needs_model for uid in ids):
        return None  # offline scoring never loads the LLM layer
    env = llm.LLMSettings.from_env()
    return {"settings": env, "cache": store.caches if env.cache_enabled else None}


def run(args: argparse.Namespace) -> int:
    realism, spec_of = evaluation.realism, agents.registry.spec_of
    store = open_store(args)
    ids = list(dict.fromkeys(args.user or realism.DEFAULT_USERS))
    users = realism.build_users(ids, _llm_settings(ids, store))
    tagger = None
    if args.tagger != "offline":
        tagger = agents.llm_acts.make_tagger(args.tagger, **(_llm_settings([args.tagger], store) or {})).tag
    rows = [r for r in store.search.list(limit=100_000) if spec_of(r.assistant).recorded]
    runs = [store.runs.load(r.id) for r in rows]
    if args.conversation:
        known = [dict(r.meta).get("conversation") for r in runs]
        missing = [c for c in dict.fromkeys(args.conversation) if c not in known]
        if runs and missing:  # say which key is unknown, not that there are no conversations at all
            sample = ", ".join(str(k) for k in known[:3])
            raise StorageError(f"no human conversation {missing[0]!r} in the database ({len(runs)} stored, e.g. "
                               f"{sample}); `realism` prints each conversation's key")
        runs = [r for r in runs if dict(r.meta).get("conversation") in set(args.conversation)]
    if not runs:
        raise StorageError("no human conversations in the database; import some first "
                           "(python -m knowsim_core import ANNOTATIONS.json)")
    start = time.perf_counter()
    kw = {"tagger": tagger} if tagger else {}
    paid = any(spec_of(uid).needs_model for uid in ids)
    which = args.start or ("sampled" if paid else "both")
    report = (realism.headline(runs, users, **kw) if which == "both"
              else realism.score(runs, users, start=which, **kw))
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"{len(runs)} conversation(s), {len(report['turns'])} real user turns scored in {elapsed:.1f} s")
    if report["skipped"]:
        print(f"skipped {len(report['skipped'])} conversation(s) without a reading: "
              + "; ".join(f"{s['conversation']} ({s['reason']})" for s in report["skipped"]))
    print(START_NOTE[report["start"]])
    for note in report.get("reader", {}).values():
        print(note["text"])
    if args.start is None and paid:
        print("(hindsight not scored: a model user would be called twice per turn; add --start both)")
    print(table(report["summary"], realism.METRICS))
    for level, by_user in report["by_level"].items():
        print(f"\n{level}")
        print(table(by_user, realism.METRICS))
    for part in realism.SPLITS:
        print(f"\n{part} half ({SPLIT_NOTE[part]})")
        print(table(report["by_split"][part], realism.METRICS))
    if "hindsight" in report:
        side = report["hindsight"]
        print(f"\nbeside it, not the headline — {START_NOTE[side['start']]}")
        print(table(side["summary"], realism.METRICS))
        for part in realism.SPLITS:
            print(f"\n{part} half, hindsight")
            print(table(side["by_split"][part], realism.METRICS))
    print("\nfloors: baseline/copy-last repeats the person's previous message, baseline/generic says one stock "
          "request, floor/most-common-act always has the table's most common real act (act agreement only); "
          "'> floor': better than that floor of the same table (length ratio: nearer 1)")
    print("\nanswer attempts: agreement with the person / share of the person's attempts also attempted")
    for uid, a in report["attempts"].items():
        print(f"  {uid}: {a['agreement']} / {a['recall']} ({a['n_real_attempts']} real attempts)")
    sys.stdout.flush()
    return 0


START_NOTE = {
    "sampled": "start: sampled — initial states drawn from each level's sampler, conversations re-read "
               "(no hindsight: the headline)",
    "file": "start: file — initial states from the release's knowledge_state.json (hindsight: an analysis "
            "of the whole conversation)",
}
SPLIT_NOTE = {"development": "crc32 of problem_id:workerId even; the offline learners' rules were chosen here",
              "held-out": "crc32 odd; never used to write rules"}


def table(summary: dict[str, dict[str, Any]], metrics: tuple[str, ...]) -> str:
    """One summary as a table, then a line per simulator naming the floors it beats."""
    width = max([len(u) for u in summary] + [4])
    lines = [f"{'user':<{width}}  " + "  ".join(f"{m:>13}" for m in metrics) + f"  {'n':>4}"]
    for uid, s in summary.items():
        cells = "  ".join(f"{'-' if s.get(m) is None else format(s[m], '.3f'):>13}" for m in metrics)
        lines.append(f"{uid:<{width}}  {cells}  {s['n']:>4}")
    for uid in summary:
        marks = evaluation.realism.beats_line(summary, uid)
        if marks:
            lines.append(f"  {uid} vs floors: {marks}")
    return "\n".join(lines)
