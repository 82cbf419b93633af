"""``import PATH``: Studio or reference run files, reference items + IU caches, the reference folder, and
real conversations (SimulatorArena release, conversations JSONL), read with ``--extractor``."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from knowsim_core import services
from knowsim_core.commands.runs import add_db_argument, open_store
from knowsim_core.engine.config import DEFAULT_PRESET, PRESETS, preset


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="file or folder to import (its kind is detected from the content)")
    p.add_argument("--graphs", metavar="IU_CACHE.json",
                   help="IU cache for reference run / items files (default: an iu_cache/ folder beside or above)")
    p.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS),
                   help="rule preset used to replay reference runs (default paper-final, as the paper ran)")
    p.add_argument("--extractor", metavar="ID",
                   help="extractor that reads real conversations (default offline/lexical; e.g. openai/<model>); "
                        "other files keep their recorded labels")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the import report as JSON")


def run(args: argparse.Namespace) -> int:
    if args.extractor is not None:  # a typo is refused (with its "did you mean") before the database is opened
        services.realworld_import.make_extractor(args.extractor)
    store = open_store(args)
    report = services.importing.import_path(store, args.path, graphs=args.graphs, params=preset(args.preset),
                         extractor_id=args.extractor)
    print(json.dumps(asdict(report)) if args.json else report.summary())
    return 0
