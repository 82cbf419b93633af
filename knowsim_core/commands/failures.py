"""``failures [--batch TAG] [--graph-version N] [filters] [--status …] [--json | --latex] [--figure PATH]``: failure modes and KG / DC / CO per level.

``--figure PATH`` writes the per-level mode breakdown (the paper's Fig. 6 style) as SVG, PDF or PNG by
the suffix; ``--latex`` prints the per-level KG / DC / CO table with n and spread (booktabs) —
both drawn from the same summary ``--json`` prints (:mod:`knowsim_core.evaluation.figures`).

The same population and the same arithmetic as the Failure modes page's "Across runs" tab
(``store.search.facts`` + :func:`knowsim_core.evaluation.analysis.level_summary`), so a figure quoted from
either is the other's. Finished runs only unless ``--status`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from knowsim_core.evaluation.analysis import METRIC_KEYS, SPREAD, STATUS_CHOICES, level_summary
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.evaluation.figures import figure_format, latex_table, write_mode_figure
from knowsim_core.commands.runs import add_db_argument, open_store
from knowsim_core.storage.run_filter import RunFilter


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_db_argument(p)
    RunFilter.add_arguments(p)
    p.add_argument("--status", choices=STATUS_CHOICES, default="finished",
                   help="which runs count: finished (default), all, or unfinished (running, open, failed, interrupted)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the summary as JSON")
    out.add_argument("--latex", action="store_true",
                     help="print the per-level KG / DC / CO table with n and spread as LaTeX (booktabs)")
    p.add_argument("--figure", metavar="PATH",
                   help="also write the per-level failure-mode figure; the suffix picks the format: .svg, .pdf or .png")


def _range(spread: list[float] | None) -> str:
    return "" if spread is None else f" [{spread[0]:.3f}, {spread[1]:.3f}]"


def run(args: argparse.Namespace) -> int:
    if args.figure:
        figure_format(args.figure)  # a bad suffix fails before any work
    store = open_store(args)
    facts = store.search.facts(RunFilter.from_args(args), status=args.status)
    summary = level_summary(facts)
    if args.figure:
        size = write_mode_figure(summary, args.figure)
        print(f"wrote {args.figure} ({size:,} bytes)", file=sys.stderr)
    if args.latex:
        print(latex_table(summary), end="")
        return 0
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return 0
    which = "" if args.status == "all" else f"{args.status} "
    if not facts:
        print(f"no {which}runs with turns match these filters in {store.path}")
        return 0
    runs = "run" if summary["runs"] == 1 else "runs"  # never "1 runs"
    print(f"{summary['runs']} {which}{runs} · spread: {SPREAD} (25th–75th percentile), where n > 1")
    names = [m.title for m in FAILURE_ORDER]
    print(f"{'level':<13} {'runs':>4}  " + "  ".join(f"{n:>15}" for n in names))
    for level, row in summary["by_level"].items():
        print(f"{level:<13} {row['runs']:>4}  " + "  ".join(f"{row['modes'][n]:>15.1%}" for n in names))
    print()
    for level, row in summary["by_level"].items():
        parts = [f"{short} {row[key]:.3f}{_range(row['spread'][key])}" for short, key in METRIC_KEYS.items()]
        print(f"{level:<13} n={row['runs']:<4} " + " · ".join(parts))
    return 0
