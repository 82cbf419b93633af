"""Helpers of the Questions page (no streamlit): describe what the reference importer did."""

from __future__ import annotations

from typing import Any


def import_summary(result: Any) -> str:
    """One line from whatever the importer returns (a count, a mapping of counts, or a report)."""
    summary = getattr(result, "summary", None)
    if callable(summary):
        return str(summary())
    if isinstance(result, int):
        return f"Imported {result} item(s)."
    if isinstance(result, dict):
        return "Imported " + ", ".join(f"{v} {k}" for k, v in result.items()) + "."
    return f"Imported: {result}"
