"""``python -m knowsim_core <command>``: the Studio's command line.

Each command lives in ``knowsim_core/commands/<name>.py`` and exposes ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. Errors that are ours (:class:`KnowSimError`)
print one line and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .errors import KnowSimError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m knowsim_core",
        description="KnowSim Studio: simulate, replay, store and export KnowSim conversations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KnowSimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
