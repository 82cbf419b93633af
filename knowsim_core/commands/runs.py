"""``runs [--db PATH] [--json]``: list stored runs (newest first), with filters and search.

``--json`` prints one object: ``runs`` (the listed runs), ``total`` (how many match the filters) and
``more`` (how many of those ``--limit`` left out), so a consumer of the JSON sees a cut list.

Also home of the ``--db`` option every storage command shares (a module here is a command, so
the helper lives with the command that lists what the database holds).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Callable

from knowsim_core import storage
from knowsim_core.text.redact import redact_urls
from knowsim_core.text.titles import question_title

if TYPE_CHECKING:
    from knowsim_core.storage import Store
    from knowsim_core.storage.run_filter import RunFilter

# Every command imports this module (for --db): it reaches the storage layer through its lazy
# package, so ``<command> --help`` loads no storage to print its options.
DB_ENV = "KNOWSIM_DB"  # storage.ENV_DB, spelled here so --help imports no storage (a test keeps them equal)


def add_db_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db", metavar="PATH", default=None,
        help=f"database file (default: ${DB_ENV} or ~/.knowsim/studio.db)",
    )


MAX_SEED = 2**63 - 1  # SQLite's largest integer: a seed must be storable with its run


def int_in(low: int | None, high: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer in ``[low, high]``: a clear usage error, never an
    OverflowError deep in the database or process layer (``--seed 99999999999999999999999``).
    ``low=None`` bounds only from above (the command checks small values with its own message)."""
    expected = f"a whole number from {low} to {high}" if low is not None else f"a whole number up to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip()) if len(text.strip()) <= 40 else None
        except ValueError:
            value = None
        if value is None or value > high or (low is not None and value < low):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:40]!r}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def open_store(args: argparse.Namespace) -> Store:
    return storage.Store(args.db)


def add_arguments(p: argparse.ArgumentParser) -> None:
    run_filter = storage.run_filter  # the filter options are the filter's own (its SQL module)
    add_db_argument(p)
    p.add_argument("--json", action="store_true",
                   help='print {"runs": [run objects], "total": runs matching, "more": runs not listed (see --limit)}')
    p.add_argument("--status", choices=run_filter.RUN_STATUSES, help="only this status")
    run_filter.RunFilter.add_arguments(p)
    p.add_argument("--limit", type=int_in(1, 1_000_000), default=200, metavar="N", help="at most N runs (default 200)")


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    run_filter = storage.run_filter.RunFilter.from_args(args, status=args.status or ())
    rows = store.search.list(run_filter, limit=args.limit)
    rows = [replace(r, assistant=redact_urls(r.assistant)) for r in rows]  # ids stored before redaction existed
    if args.json:
        # graph_version_id is the version's row id; graph_version is the number --graph-version takes
        numbers = store.questions.graph_version_numbers([r.graph_version_id for r in rows if r.graph_version_id is not None])
        # one JSON object: the runs, and how many match — a consumer sees that the list was cut
        total = store.search.count(run_filter) if len(rows) >= args.limit else len(rows)
        print(json.dumps({"runs": [{**asdict(r), "title": r.title, "graph_version": numbers.get(r.graph_version_id)}
                                   for r in rows],
                          "total": total, "more": total - len(rows)}, ensure_ascii=False, indent=2))
        _say_more(store, run_filter, len(rows), total=total, file=sys.stderr)
        return 0
    if not rows:
        print(f"no runs in {store.path}")
        return 0
    # the assistant column as wide as its longest id on this page (a long compat/… id pushed the rest)
    aw = max(22, *(len(r.assistant) for r in rows))
    print(f"{'id':<12}  {'status':<11}  {'turns':>5}  {'level':<12}  {'assistant':<{aw}}  {'KG':>4}  {'DC':>6}  {'CO':>6}  question")
    for r in rows:
        q = question_title(r.question, r.question_title, limit=50)  # as the app titles it
        print(
            f"{r.id:<12}  {r.status:<11}  {r.turns:>5}  {r.level:<12}  {r.assistant:<{aw}}  {_fmt(r.kg, '.0f'):>4}  "
            f"{_fmt(r.dc, '.3f'):>6}  {_fmt(r.co, '.3f'):>6}  {q}"
        )
    _say_more(store, run_filter, len(rows))
    return 0


def _say_more(store: Store, run_filter: RunFilter, shown: int, *, total: int | None = None, file=None) -> None:
    """"… N more (use --limit)" when the page holds fewer runs than match (text and --json alike)."""
    total = store.search.count(run_filter) if total is None else total
    if total > shown:
        print(f"… {total - shown} more (use --limit)", file=file)
