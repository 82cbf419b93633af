"""Helpers of the Questions page (no streamlit): find the reference importer, describe its result."""

from __future__ import annotations

from typing import Any, Callable

# names the storage helper's importer module may expose for "a folder of reference data"
_IMPORTER_NAMES = ("import_path", "import_reference_folder", "import_reference_dir", "import_reference", "import_folder")


def find_importer() -> Callable[..., Any] | None:
    """``importer(store, folder)`` from knowsim_core.formats.importers, or None when not built yet."""
    try:
        from knowsim_core.formats import importers
    except ImportError:
        return None
    for name in _IMPORTER_NAMES:
        fn = getattr(importers, name, None)
        if callable(fn):
            return fn
    return None


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
