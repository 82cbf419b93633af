"""Reading JSON for every importer: one place that turns I/O and parse failures into FormatError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import FormatError


def parse_json(text: str, source: str = "the file") -> Any:
    """Parse JSON text; a parse error names the line and column and suggests truncation."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); was it truncated?"
        ) from None


def read_json(path: str | Path) -> Any:
    """Read and parse a UTF-8 JSON file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise FormatError(f"{path} is a folder, not a JSON file") from None
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not a UTF-8 text file; expected a JSON or JSONL export") from None
    return parse_json(text, str(path))
