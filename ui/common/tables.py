"""What every table of the Studio shares: how a missing value reads, and columns wide enough for
their text.

Streamlit draws a missing cell as "None" (Python's word) unless told otherwise: a run with no turns
showed KG "None" on Saved runs (issue 34). Its grid also cuts a text cell at the column's width with
no way to read the rest but to widen the column by hand ("1/1 (100 %, 1 ov…", "Studio (sp…" on the
Paper check tab): :func:`fitted_columns` sizes each text column to its longest entry.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import streamlit as st

MISSING = "—"  # a missing value in every table (never "None")
CHAR_PX, PAD_PX = 7.5, 18  # Source Sans at the grid's 14 px, and a cell's two paddings
MAX_TEXT_PX = 520  # a longer text wraps in no grid cell: past this the column scrolls sideways


def text_width(values: Iterable[Any], header: str = "") -> int:
    """Pixels that hold the longest of ``values`` (and the header) on one line."""
    longest = max([len(header), *(len(str(v)) for v in values if v is not None)])
    return int(PAD_PX + CHAR_PX * longest)


def fitted_columns(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """A ``column_config`` giving each text column of ``rows`` the width of its longest entry
    (numbers keep Streamlit's own width: they are short and right-aligned)."""
    if not rows:
        return {}
    config: dict[str, Any] = {}
    for name in rows[0]:
        values = [r.get(name) for r in rows]
        if any(isinstance(v, str) for v in values):
            config[name] = st.column_config.TextColumn(name, width=min(MAX_TEXT_PX, text_width(values, name)))
    return config


def full_height(n_rows: int) -> int:
    """A table height that shows ``n_rows`` rows and the header without scrolling inside it."""
    return 38 + 35 * max(1, n_rows)
