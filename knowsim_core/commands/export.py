"""``export RUN_ID --format studio-json|reference-json|csv``: a stored run on standard output."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from knowsim_core.formats import csv_export, jsonio, reference_export, studio
from knowsim_core.text.redact import redact_urls
from knowsim_core.commands.runs import add_db_argument, open_store

NAME = "export"
HELP = "print a stored run as Studio JSON, reference run-record JSON or CSV of turns"
RAW_OUTPUT = True  # data, not a message: kept byte for byte when redirected (cleaned on a terminal)
FORMATS = ("studio-json", "reference-json", "csv")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN_ID", help="a run id (see the runs command)")
    p.add_argument("--format", required=True, choices=FORMATS, help="output format")
    add_db_argument(p)


def render(store, run_id: str, fmt: str) -> str:
    """The stored run in ``fmt``: never a credential (ids of runs stored before redaction are
    redacted here), never NaN / Infinity (FormatError instead of invalid JSON)."""
    run = store.load_run(run_id)
    run = replace(run, adapters=tuple((role, redact_urls(agent)) for role, agent in run.adapters))
    if fmt == "studio-json":
        return studio.dumps(run, judgments=store.list_judgments(run_id)) + "\n"
    if fmt == "reference-json":
        domain = store.get_question(run.question_id).domain
        record = reference_export.to_reference(run, judgement=store.get_judgement(run_id), domain=domain)
        return jsonio.dumps([record], indent=2) + "\n"
    return csv_export.dumps(run)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render(open_store(args), args.run_id, args.format))
    return 0
