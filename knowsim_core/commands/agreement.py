"""``agreement [--db PATH] [--extractor ID] [--json]``: how far KnowSim's reading agrees with people.

Per judged turn (people's and researchers' 👍/👎), per rated conversation (rating, correctness)
and across tutor-model pairs (the paper's sign agreement); see :mod:`knowsim_core.evaluation.agreement`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from knowsim_core.commands.runs import add_db_argument, open_store

NAME = "agreement"
HELP = "agreement of KnowSim's readings with people's judgments (thumbs, ratings, correctness)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--extractor", metavar="ID", help="only readings made by this extractor (e.g. offline/lexical)")
    p.add_argument("--reading", choices=("stored", "learner-evidence"), default="stored",
                   help="stored: the readings as imported (default); learner-evidence: human conversations read "
                        "again with the learner's-own-words rules (offline extractors only)")
    p.add_argument("--part", choices=("A", "B"),
                   help="only the human conversations of this protocol part (A: rules written on it, B: held out)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON (votes, conversations, pairs, plus the judged turns and runs)")


def run(args: argparse.Namespace) -> int:
    from knowsim_core.errors import StorageError
    from knowsim_core.evaluation.agreement import collect, to_json

    store = open_store(args)
    start = time.perf_counter()
    a = collect(store, extractor=args.extractor, reading=args.reading, part=args.part)
    elapsed = time.perf_counter() - start
    if not a.turns and not a.conversations:
        raise StorageError("nothing to compare: no judged turns and no rated human conversations in the database; "
                           "import some (python -m knowsim_core import ANNOTATIONS.json) or judge turns in Simulate")
    if args.json:
        print(json.dumps(to_json(a), ensure_ascii=False))
        return 0
    print(render(a.summary, elapsed))
    sys.stdout.flush()
    return 0


def _f(v: Any, digits: int = 2) -> str:
    return "-" if v is None else format(v, f".{digits}f")


def _ci(ci: list[float] | None) -> str:
    return "[-]" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def render(s: dict[str, Any], elapsed: float) -> str:
    v, c, p = s["votes"], s["conversations"], s["pairs"]
    out = [f"Judged turns: {v['n']} ({v['up']} 👍, {v['down']} 👎) in {v['conversations']} run(s); "
           f"person {v['sources']['person']}, researcher {v['sources']['researcher']}",
           "  score vs 👍/👎        AUC  95% CI          definition"]
    for name, sc in v["scores"].items():
        out.append(f"  {name:<18} {_f(sc['auc']):>5}  {_ci(sc['ci']):<14}  {sc['definition']}")
    out.append("  failure mode rate     among 👍  among 👎")
    for mode, r in v["modes"].items():
        out.append(f"  {mode:<20} {_f(r['up']):>8}  {_f(r['down']):>8}")
    out.append(f"Conversations: {c['n']} with a reading ({c['rated']} rated)")
    out.append("  metric  vs rating: Spearman  Kendall  95% CI (rho)     n   vs correct: AUC  95% CI          n")
    for m, r in c["rating"].items():
        k = c["correctness"].get(m, {})
        out.append(f"  {m:<6}  {_f(r['spearman']):>18}  {_f(r['kendall']):>7}  {_ci(r['ci']):<15}  {r['n']:>3}"
                   f"   {_f(k.get('auc')):>15}  {_ci(k.get('ci')):<14}  {k.get('n', 0):>2}")
    out.append(f"Tutor-model pairs within a level ({p['metric']}, |Cliff's δ| of ratings ≥ {p['cliffs_delta_min']}, "
               f"≥ {p['min_cell']} conversations per cell): {p['note']}; binomial p = {_f(p['p'], 3)}")
    out.append("  n per cell: " + ", ".join(f"{k} {n}" for k, n in p["cells"].items()))
    if s["excluded"]:
        out.append("Left out: " + ", ".join(f"{n} {k}" for k, n in s["excluded"].items()))
    out.append(f"(reading: {s['reading']}, conversations: {s['part']}; {s['notes']['ci']}; computed in {elapsed:.1f} s)")
    return "\n".join(out)
