"""What a click selected: the rows of a table, the point of a chart (read from the widget's value in
session state, dict-style: AppTest's values have no attributes)."""

from __future__ import annotations

from typing import Any

import streamlit as st


def selected_rows(key: str) -> list[int]:
    """The positions of the rows selected in the dataframe with this key ([] before any click)."""
    ev = st.session_state.get(key)
    try:
        return list(ev["selection"]["rows"])
    except (KeyError, TypeError):
        return []


def selected_point(key: str) -> dict[str, Any] | None:
    """The first clicked point of the plotly chart with this key (None before any click)."""
    ev = st.session_state.get(key)
    try:
        points = ev["selection"]["points"]
    except (KeyError, TypeError):
        return None
    return points[0] if points else None
