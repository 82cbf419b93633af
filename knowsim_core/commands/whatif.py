"""``whatif RUN_ID --set EDIT [--save]`` / ``whatif --batch TAG --set EDIT [--as TAG]``: change labels, recompute.

An edit is ``turn=N,iu=ID,quality=Q`` and/or ``attempt=A`` (``turn=all``: every turn); repeat
``--set`` for more. The rules recompute every turn from the first edited one, with no model call.

One run: prints why the what-if differs from its source (``diff``'s analysis) and the metrics
before and after; ``--save`` stores it as a run of its own, linked to its source and filed under
``--tag``. ``--batch TAG``: the what-if of every run of batch (or tag) TAG, stored under one tag
(``--as``, or ``what-if <hash>`` from the source and the edits), then the failure modes and
KG / DC / CO per level before and after — the figures ``failures --tag`` prints for each side.
"""

from __future__ import annotations

import argparse
import json

from knowsim_core import engine, evaluation, services, storage
from knowsim_core.commands.runs import add_db_argument, int_in, open_store
from knowsim_core.errors import ConfigError
from knowsim_core.vocab import POPULATIONS, Population


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN_ID", nargs="?", help="the run to edit (or --batch TAG for many)")
    p.add_argument("--set", dest="edits", action="append", default=[], metavar="EDIT",
                   help="turn=N|all,iu=ID,quality=well_explained|shallow|not_mentioned and/or "
                        "attempt=reasoning|articulation|none (repeat for more edits)")
    p.add_argument("--batch", metavar="TAG", help="edit every run of batch TAG (or filed under tag TAG) and store them")
    p.add_argument("--as", dest="as_tag", metavar="TAG",
                   help="with --batch: the tag the what-if runs are filed under (default: what-if <hash of source and edits>)")
    p.add_argument("--graph-version", type=int_in(1, 1_000_000), metavar="N",
                   help="one run: re-play it on version N of its question's graph (IUs matched by id)")
    p.add_argument("--save", action="store_true", help="one run: store the what-if as a run linked to its source")
    p.add_argument("--tag", dest="tags", action="append", default=[], metavar="TAG",
                   help="with --save: file the what-if under TAG (repeat for more; default 'what-if')")
    p.add_argument("--status", choices=POPULATIONS, default=Population.FINISHED,
                   help="with --batch: which runs the before/after figures count (as failures --status)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_db_argument(p)


def _edits(args: argparse.Namespace):
    return [engine.whatif.parse_edit(e) for e in args.edits]


def _one(args: argparse.Namespace) -> int:
    whatif = services.whatif
    edits = _edits(args)
    store = open_store(args)
    if args.save:
        rid, w = whatif.save(store, args.run_id, edits, tags=args.tags or (whatif.DEFAULT_TAG,),
                             graph_version=args.graph_version)
    else:
        rid, w = None, whatif.compute(store, args.run_id, edits, graph_version=args.graph_version)
    source = store.runs.load(args.run_id)
    d = evaluation.divergence.diff_runs(source, w.run)
    if args.json:
        print(json.dumps({"source": args.run_id, "stored": rid, "first_turn": w.first_turn, "skipped": list(w.skipped),
                          "metrics": {"before": source.metrics().to_data(), "after": w.run.metrics().to_data()},
                          "diff": d.to_data()}, ensure_ascii=False, indent=2))
        return 0
    for note in w.skipped:
        print(f"not applied: {note}")
    if w.first_turn is None:
        print("the edits change no label of this run")
    print(d.headline())
    ma, mb = source.metrics(), w.run.metrics()
    print(f"KG {ma.knowledge_gain} → {mb.knowledge_gain} · DC {ma.delivery_calibration:.4f} → "
          f"{mb.delivery_calibration:.4f} · CO {ma.cognitive_overload:.4f} → {mb.cognitive_overload:.4f}")
    for t in d.turns:
        if t.ius or t.labels:
            print(f"turn {t.turn:>2}: {t.summary()}")
    if rid:
        print(f"stored as run {rid}, a what-if of run {args.run_id} (tags: {', '.join(args.tags or [whatif.DEFAULT_TAG])})")
    return 0


def _batch(args: argparse.Namespace) -> int:
    RunFilter, cell = storage.run_filter.RunFilter, evaluation.before_after.cell
    edits = _edits(args)
    store = open_store(args)
    report = services.whatif.save_batch(store, args.batch, edits, tag=args.as_tag)
    before = store.search.facts(RunFilter(tag=args.batch), status=args.status)
    after = store.search.facts(RunFilter(tag=report.tag), status=args.status)
    rows = evaluation.before_after.before_after(before, after)
    if args.json:
        print(json.dumps({"source": args.batch, "tag": report.tag, "edits": report.spec, "stored": report.stored,
                          "already": report.already, "unchanged": report.unchanged,
                          "not_applied": {k: list(v) for k, v in report.not_applied.items()},
                          "left_out": report.left_out, "status": args.status, "rows": rows},
                         ensure_ascii=False, indent=2))
        return 0
    print(report.summary())
    print(f"before: {len(before)} {args.status} run(s) of {args.batch!r} · after: {len(after)} of {report.tag!r}")
    print(f"{'level':<13} {'measure':<16} {'before':>8} {'after':>8} {'change':>8}")
    for r in rows:
        print(f"{r['level']:<13} {r['measure']:<16} {cell(r['before'], r['kind']):>8} {cell(r['after'], r['kind']):>8} "
              f"{cell(r['change'], r['kind'], signed=True):>8}")
    print("shares in per cent of explained IU-turns, change in points; the same figures: "
          f"failures --tag {args.batch!r} and failures --tag {report.tag!r}")
    return 0


def run(args: argparse.Namespace) -> int:
    if not args.edits and args.graph_version is None:
        raise ConfigError("say what to change: --set turn=1,iu=IU10,quality=well_explained (repeat for more)")
    if args.batch:
        if args.run_id or args.save or args.tags or args.graph_version is not None:
            raise ConfigError("--batch edits every run of a tag and always stores them: drop RUN_ID, --save, --tag "
                              "and --graph-version (name the what-if runs' tag with --as)")
        return _batch(args)
    if not args.run_id:
        raise ConfigError("name the run to edit (RUN_ID) or a batch (--batch TAG)")
    if args.as_tag:
        raise ConfigError("--as names a batch what-if's tag; for one run use --save --tag TAG")
    return _one(args)
