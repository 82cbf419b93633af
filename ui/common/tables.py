"""What every table of the Studio shares: how a missing value reads, text tables that stay inside
the page, and tables coloured cell by cell (:func:`styled`).

Streamlit draws a missing cell as "None" (Python's word) unless told otherwise: a run with no turns
would show KG "None" on Saved runs. Its grid (``st.dataframe``) cuts a text cell at the column's
width, and a table of many long text columns runs off the right edge of the page at 1400 px
(Realism, Paper check). Where nobody sorts or selects, :func:`static_table` draws such a
table within the page's width, every cell wrapped between words in a row as tall as it needs.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import streamlit as st

from ui.common.safe_text import inline_markdown

MISSING = "—"  # a missing value in every table (never "None")


def static_table(rows: list[Mapping[str, Any]], *, key: str, hide: Iterable[str] = (),
                 labels: Mapping[str, str] | None = None) -> None:
    """``rows`` as a table drawn whole within the page's width (``st.table``), for tables nobody
    sorts or selects in. ``hide``: columns left out (a caption says once what they held for every
    row); ``labels``: a shorter header for a column. ``key`` names the table's container
    (``st-key-…``). Cells are markdown: the text goes through
    :func:`~ui.common.safe_text.inline_markdown`, so nothing in it loads or lays out a block."""
    hidden, labels = set(hide), dict(labels or {})
    names = [n for n in (rows[0] if rows else {}) if n not in hidden]
    shown = [{inline_markdown(labels.get(n, n)): inline_markdown(MISSING if r.get(n) is None else str(r.get(n)))
              for n in names} for r in rows]
    with st.container(key=key):
        st.table(shown, hide_index=True)


def styled(rows: list[dict[str, Any]], columns: tuple[str, ...], cells: dict[str, tuple[str, str]]):
    """``rows`` as a table whose ``columns`` are filled with the colour their text names: a pandas
    Styler, the one kind of table here that needs pandas. pandas (~0.45 s) is imported on the first
    such table, so a page that draws none (Simulate without a pair) never loads it."""
    import pandas as pd

    def paint(value: Any) -> str:
        colours = cells.get(value)
        return f"background-color: {colours[0]}; color: {colours[1]}" if colours else ""

    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.style.map(paint, subset=[c for c in columns if c in frame.columns])
