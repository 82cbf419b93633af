"""``python -m knowsim_core <command>``: the Studio's command line.

The commands are declared in :data:`knowsim_core.commands.COMMANDS` (name, help, module); each
module exposes ``add_arguments(parser)`` and ``run(args) -> int``. Errors that are ours (:class:`KnowSimError`)
print one line (credentials redacted) and exit 2; so do the operating system's answers a user can
cause and fix — a full disk or ``/dev/full`` as stdout (ENOSPC), a file name too long
(ENAMETOOLONG), a read-only or missing place — and Ctrl-C (exit 130, what is stored is kept).
Anything else is a bug and keeps its traceback.
Everything printed is stripped of escape sequences, control characters and the invisible
characters that reorder or hide text on a terminal (bidi overrides such as U+202E, zero-width
spaces; text comes from imported files and model replies); a command declared ``raw_output`` (export) writes its data
unchanged when it goes to a file or pipe.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from typing import TextIO

from knowsim_core import commands
from knowsim_core.errors import KnowSimError
from knowsim_core.text.redact import redact


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: the command it names gets its real sub-parser, every other command a
    placeholder with its help (argparse never reads it). Only that command's module is imported —
    importing all of them for one command was most of a short command's start-up — and help, a
    missing or an unknown command import none (the listing comes from the declared table)."""
    chosen = argv[0] if argv and argv[0] in commands.BY_NAME else None
    return _parser({chosen} if chosen else set())


def full_parser() -> argparse.ArgumentParser:
    """The parser with every command's real sub-parser, options and all (imports every command
    module): what the command-line reference is generated from."""
    return _parser({c.name for c in commands.COMMANDS})


def _parser(real: set[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m knowsim_core",
        description="KnowSim Studio: simulate, replay, store and export KnowSim conversations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands.COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        if command.name in real:
            mod = importlib.import_module(f"{commands.__name__}.{command.module}")
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


# ANSI / VT escape sequences (CSI, OSC, single-character) and every other C0/C1 control character
# except newline and tab: text from imported files or model replies must not drive the terminal.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    # bidi embeddings/overrides/isolates and marks, zero-width characters, the BOM used as ZWNBSP
    r"|[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
# OS errors a user causes and can fix: one line, not a traceback
_USER_OS_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.ENAMETOOLONG, errno.EROFS, errno.EACCES, errno.EPERM,
                   errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EFBIG, errno.EIO}


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
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    raw = commands.BY_NAME[args.command].raw_output and not sys.stdout.isatty()
    saved = sys.stdout, sys.stderr
    if not raw:  # data piped to a file (export) stays byte for byte; everything else is cleaned
        sys.stdout = _SafeStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _SafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a full disk or /dev/full shows here, inside the try, not at exit
        return code
    except KnowSimError as exc:
        # one line, and never a credential (a base URL or key quoted by a provider or a path)
        print(f"error: {redact(' '.join(str(exc).split()))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        print("stopped (Ctrl-C); everything stored before it is kept", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in _USER_OS_ERRORS:
            raise
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EIO):
            _silence_stdout()  # a full stdout: the interpreter's last flush must not fail again
        return 2
    finally:
        sys.stdout, sys.stderr = saved


def os_error_line(exc: OSError) -> str:
    """An OS error as one short line: what failed and the file (shortened: a name can be 100 KB)."""
    what = exc.strerror or str(exc)
    name = exc.filename if exc.filename is not None else ""
    name = str(name)
    if len(name) > 80:
        name = f"{name[:40]}…{name[-20:]} ({len(name):,} characters)"
    where = f": {name}" if name else (" (writing the output)" if exc.errno == errno.ENOSPC else "")
    hint = {errno.ENOSPC: "; free some space (or write the output elsewhere)",
            errno.ENAMETOOLONG: "; use a shorter path"}.get(exc.errno, "")
    return f"{what}{where}{hint}"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the data still buffered cannot fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass
