"""``python -m knowsim_core <command>``: the Studio's command line.

Each command lives in ``knowsim_core/commands/<name>.py`` and exposes ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. Errors that are ours (:class:`KnowSimError`)
print one line (credentials redacted) and exit 2; anything else is a bug and keeps its traceback.
Everything printed is stripped of escape sequences and control characters (text comes from
imported files and model replies); a command declaring ``RAW_OUTPUT`` (export) writes its data
unchanged when it goes to a file or pipe.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from typing import TextIO

from knowsim_core import commands
from knowsim_core.errors import KnowSimError
from knowsim_core.text.redact import redact


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


# ANSI / VT escape sequences (CSI, OSC, single-character) and every other C0/C1 control character
# except newline and tab: text from imported files or model replies must not drive the terminal.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences and control characters (newline and tab kept)."""
    return _CONTROL.sub("", text)


class _SafeStream:
    """A text stream that writes :func:`terminal_safe` text to the stream it wraps."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_safe(text))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    raw = getattr(sys.modules[args._run.__module__], "RAW_OUTPUT", False) and not sys.stdout.isatty()
    saved = sys.stdout, sys.stderr
    if not raw:  # data piped to a file (export) stays byte for byte; everything else is cleaned
        sys.stdout = _SafeStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _SafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        return int(args._run(args) or 0)
    except KnowSimError as exc:
        # one line, and never a credential (a base URL or key quoted by a provider or a path)
        print(f"error: {redact(' '.join(str(exc).split()))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    finally:
        sys.stdout, sys.stderr = saved
