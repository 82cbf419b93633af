"""``export RUN_ID --format studio-json|reference-json|csv|html [--pair RUN_B] [-o PATH]``: a stored run as a file.

``html`` is the single-file replay (:func:`knowsim_core.evaluation.replay.replay_html`): graph, load
gauge, messages, each IU's mode and why, turn by turn, opening from disk with no network; with
``--pair`` two runs side by side. Standard output unless ``-o`` names a file.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from knowsim_core import evaluation, formats, services
from knowsim_core.commands.runs import add_db_argument, open_store
from knowsim_core.errors import ConfigError
from knowsim_core.text.redact import redact_urls

FORMATS = ("studio-json", "reference-json", "csv", "html")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN_ID", help="a run id (see the runs command)")
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="output format (html: a self-contained replay that opens from disk in any browser)")
    p.add_argument("--pair", metavar="RUN_B", help="html only: a second run shown side by side (a fork, another level)")
    p.add_argument("-o", "--output", metavar="PATH", type=Path, help="write to this file instead of standard output")
    add_db_argument(p)


def render(store, run_id: str, fmt: str) -> str:
    """The stored run in ``fmt``: never a credential (ids of runs stored before redaction are
    redacted here), never NaN / Infinity (FormatError instead of invalid JSON)."""
    if fmt == "html":
        return evaluation.replay.replay_html(store, [run_id])
    run = store.runs.load(run_id)
    run = replace(run, adapters=tuple((role, redact_urls(agent)) for role, agent in run.adapters))
    if fmt == "studio-json":
        return services.exporting.studio_json(store, run_id) + "\n"
    if fmt == "reference-json":
        domain = store.questions.get(run.question_id).domain
        record = formats.reference_export.to_reference(run, judgement=store.caches.get_judgement(run_id),
                                                       domain=domain)
        return formats.jsonio.dumps([record], indent=2) + "\n"
    return formats.csv_export.dumps(run)


def run(args: argparse.Namespace) -> int:
    if args.pair and args.format != "html":
        raise ConfigError("--pair needs --format html (a side-by-side replay)")
    store = open_store(args)
    text = (evaluation.replay.replay_html(store, [args.run_id, args.pair]) if args.pair
            else render(store, args.run_id, args.format))
    if args.output is None:
        sys.stdout.write(text)
        return 0
    # a FIFO, device or symlink is written through
    size = formats.output.write_output(args.output, text.encode("utf-8"))
    print(f"wrote {args.output} ({size:,} bytes)", file=sys.stderr)
    return 0
