"""Reading JSON for every importer: one place that turns I/O and parse failures into FormatError.

Hostile files are refused here, before any model or store sees them: more than
:data:`MAX_FILE_BYTES`, nesting deeper than :data:`MAX_DEPTH` (the parser's own
recursion guard refuses a 100 000-deep ``[[[…``; an iterative walk refuses anything between,
before a recursive validator or ``json.dumps`` could overflow), ``NaN`` / ``Infinity``
(valid Python, invalid JSON; they would poison metrics and make exports unreadable) and integers
longer than :data:`MAX_INT_DIGITS` digits.
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path
from typing import Any

from knowsim_core.errors import FormatError

MAX_FILE_BYTES = 256 * 1024 * 1024  # far above the paper's largest file (2.5 MB)
MAX_DEPTH = 64  # the deepest real file (a Studio run) nests 6 levels
MAX_INT_DIGITS = 19  # a signed 64-bit integer; SQLite stores nothing larger


def nesting_depth(data: Any, limit: int = MAX_DEPTH) -> int:
    """The deepest list/object nesting of parsed JSON, walked iteratively (stops early past ``limit``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def _refuse_constant(name: str) -> Any:
    raise FormatError(
        f"the value {name} is not valid JSON (JSON numbers are finite); replace it with a number or null"
    )


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        _refuse_constant(text)
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise FormatError(
            f"the number {text[:12]}… has {len(text.lstrip('-'))} digits; integers here fit in 64 bits "
            f"(at most {MAX_INT_DIGITS} digits)"
        )
    return int(text)


def parse_json(text: str, source: str = "the file") -> Any:
    """Parse JSON text strictly (see the module docstring).

    Raises:
        FormatError: naming ``source``, what is wrong (with line and column for syntax errors) and
            the fix.
    """
    if len(text) > MAX_FILE_BYTES:
        raise FormatError(f"{source} is larger than {MAX_FILE_BYTES // 2**20} MB; split it into smaller files")
    too_deep = FormatError(
        f"{source} nests arrays/objects more than {MAX_DEPTH} levels deep; no KnowSim format does — "
        "the file is damaged or not a KnowSim file"
    )
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except FormatError as exc:
        raise FormatError(f"{source}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); was it truncated?"
        ) from None
    except RecursionError:  # the C parser's own guard, far past MAX_DEPTH
        raise too_deep from None
    except ValueError as exc:
        raise FormatError(f"{source} cannot be read as JSON ({exc}); the file is damaged") from None
    if nesting_depth(data) > MAX_DEPTH:
        raise too_deep
    return data


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file, refusing folders, devices, missing, binary and oversized files.

    The size is bounded by what is read, not by what ``stat`` says: ``/dev/zero`` and a pipe report
    size 0 and never end (17.8 GB were read before the OOM killer). A device is refused outright; a
    pipe (``<(…)``) is read up to :data:`MAX_FILE_BYTES`. A leading UTF-8 byte-order mark, which some
    editors write, is not part of the text (JSON and JSONL files alike).
    """
    path = Path(path)
    too_large = FormatError(f"{path} is larger than {MAX_FILE_BYTES // 2**20} MB; split it into smaller files")
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise FormatError(f"{path} is a folder, not a JSON file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise FormatError(f"{path} is a device, not a file; pass a JSON or JSONL file")
        if stat.S_ISREG(mode) and path.stat().st_size > MAX_FILE_BYTES:
            raise too_large
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise too_large
        return data.decode("utf-8-sig")
    except FileNotFoundError:
        raise FormatError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise FormatError(f"{path} is a folder, not a JSON file") from None
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not a UTF-8 text file; expected a JSON or JSONL export") from None
    except OSError as exc:
        raise FormatError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_json(path: str | Path) -> Any:
    """Read and parse a UTF-8 JSON file."""
    return parse_json(read_text(path), str(path))


def dumps(data: Any, **kw: Any) -> str:
    """``json.dumps`` that refuses NaN / Infinity instead of writing invalid JSON."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, **kw)
    except ValueError as exc:
        raise FormatError(
            f"cannot export: the data holds a non-finite number ({exc}); the stored run is damaged — re-run or "
            "re-import it"
        ) from None
