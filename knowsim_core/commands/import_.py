"""``import PATH``: Studio or reference run files, reference items + IU caches, the reference folder."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ..config import DEFAULT_PRESET, PRESETS, preset
from ..formats.importers import import_path
from .runs import add_db_argument, open_store

NAME = "import"
HELP = "import runs (Studio or reference JSON), reference items JSONL + IU caches, or the reference data folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="file or folder to import (its kind is detected from the content)")
    p.add_argument("--graphs", metavar="IU_CACHE.json",
                   help="IU cache for reference run / items files (default: an iu_cache/ folder beside or above)")
    p.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS),
                   help="rule preset used to replay reference runs (default paper-final, as the paper ran)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the import report as JSON")


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    report = import_path(store, args.path, graphs=args.graphs, params=preset(args.preset))
    print(json.dumps(asdict(report)) if args.json else report.summary())
    return 0
