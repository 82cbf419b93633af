"""``explain RUN_ID [--turn N] [--db PATH] [--json]``: each IU's failure mode and why, per turn.

The text is :func:`knowsim_core.evaluation.explain.explain_turn`'s — the same words the Simulate page, the
failure views and the compare view show for that run and turn.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from knowsim_core import evaluation
from knowsim_core.commands.runs import add_db_argument, int_in, open_store
from knowsim_core.errors import ConfigError

if TYPE_CHECKING:
    from knowsim_core.storage import Store


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN_ID", help="a stored run id (`python -m knowsim_core runs` lists them)")
    p.add_argument("--turn", type=int_in(1, 10_000), default=None, metavar="N", help="only this turn (1-based)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def explain_data(store: Store, run_id: str, turn: int | None = None) -> dict:
    """``{"run": id, "turns": [{"turn": n, "ius": [{id, label, mode, why, before, after}]}]}``.

    Raises:
        StorageError: unknown run id.
        ConfigError: ``turn`` beyond the run's last turn.
    """
    run = store.runs.load(run_id)
    if turn is not None and turn > len(run.turns):
        raise ConfigError(f"run {run_id} has {len(run.turns)} turn(s); pick --turn from 1 to {len(run.turns)}")
    turns = evaluation.explain.explain_run(run, turn=turn)
    return {"run": run_id, "turns": [{"turn": t, "ius": [w.to_data() for w in ws]} for t, ws in turns]}


def run(args: argparse.Namespace) -> int:
    data = explain_data(open_store(args), args.run_id, args.turn)
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
        return 0
    if not data["turns"]:
        print(f"run {data['run']} has no turns yet")
    # columns as wide as the run's longest entry, the same for every turn: a fixed width lets an id
    # like "Factorial" or a long state pair push the rest of its row out of line, and widths per
    # turn set one turn's table out of line with the next
    tables = [(t["turn"], [(iu["id"], iu["mode"] or "–", f"{iu['before']} → {iu['after']}", iu["why"])
                           for iu in t["ius"]]) for t in data["turns"]]
    every = [r for _, rows in tables for r in rows]
    w = [max([len(h), *(len(r[i]) for r in every)]) for i, h in enumerate(("IU", "mode", "before → after"))]
    for turn, rows in tables:
        print(f"\nturn {turn}")
        print(f"{'IU':<{w[0]}}  {'mode':<{w[1]}}  {'before → after':<{w[2]}}  why")
        for r in rows:
            print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")
    return 0
