"""``diff RUN_A RUN_B [--turn N] [--json]``: why two stored runs differ.

Names the first turn where their states part and the rule that parted them (a teaching-quality
label, the prerequisite ceiling, overload, the carry), then one line per turn: which messages and
labels differ, η on each side, and which IUs came apart. ``--turn N`` prints every IU apart after
turn N with why. The same analysis as the Compare view (:func:`knowsim_core.evaluation.divergence.diff_runs`).
"""

from __future__ import annotations

import argparse
import json

from knowsim_core import evaluation
from knowsim_core.commands.runs import add_db_argument, int_in, open_store


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="a run id (see the runs command): A")
    p.add_argument("run_b", metavar="RUN_B", help="another run id: B (a fork, a what-if, the same question at another level)")
    p.add_argument("--turn", type=int_in(1, 10_000), metavar="N", help="also print every IU apart after turn N, with why")
    p.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    add_db_argument(p)


def _metrics(a, b) -> list[str]:
    ma, mb = a.metrics(), b.metrics()
    lines = []
    for name, attr, spec in (("KG", "knowledge_gain", ".0f"), ("DC", "delivery_calibration", ".4f"),
                             ("CO", "cognitive_overload", ".4f")):
        x, y = getattr(ma, attr), getattr(mb, attr)
        lines.append(f"{name} {format(x, spec)} → {format(y, spec)} (B − A {format(y - x, '+' + spec)})")
    return lines


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    a, b = store.runs.load(args.run_a), store.runs.load(args.run_b)
    d = evaluation.divergence.diff_runs(a, b)
    if args.json:
        print(json.dumps(d.to_data(), ensure_ascii=False, indent=2))
        return 0
    for side, r in (("A", a), ("B", b)):
        print(f"{side} {r.run_id}: {r.question_id} · {r.level} · {r.adapter.get('assistant', '?')} · seed {r.seed} · "
              f"{len(r.turns)} turns")
    print(d.headline())
    for note in d.notes if d.comparable else ():
        print(f"note: {note}")
    print("  ·  ".join(_metrics(a, b)))
    if not d.turns:
        return 0
    print(f"{'turn':>4}  {'η A':>6} {'η B':>6}  what differs")
    share = evaluation.explain.share
    for t in d.turns:
        print(f"{t.turn:>4}  {share(t.eta[0]):>6} {share(t.eta[1]):>6}  {t.summary()}")
    first = d.first
    shown = [first] if first is not None else []
    if args.turn is not None:
        if args.turn > len(d.turns):
            print(f"turn {args.turn}: the runs have {len(d.turns)} turn(s) in common")
        else:
            shown = [d.turns[args.turn - 1]]
    for t in shown:
        print(f"turn {t.turn}, IU by IU:" if t.ius else f"turn {t.turn}: no IU apart")
        for iu in t.ius:
            print(f"  {iu.id:<5} {iu.rule.value:<20} {iu.why}")
    return 0
