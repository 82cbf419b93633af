"""Deep links for filters: every filter widget mirrors its value in the URL, and a URL sets it.

A reload, a bookmark or a link from another page (``/failures?batch=TAG``, ``/runs?tag=baseline``)
opens the page with the same filters. The URL is applied when its value is new to this session
or when the widget has no value (the page was left, which drops it; so the widget stays the user's to
change while it lives) and rewritten from the widget after it is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from ui.common.keys import link_seen


def from_url(key: str, param: str, options: Sequence[Any] | None = None, *,
             cast: Callable[[str], Any] = str) -> bool:
    """Set widget ``key`` from ``?param=…`` when the URL holds a value this session has not applied
    yet, or the widget has no value, and it is one of ``options`` (any value when None). True when
    the URL named the filter."""
    raw = st.query_params.get(param)
    if raw is None:
        return False
    # also when the widget is gone: leaving the page drops a widget's value but not the "seen" mark,
    # so the same link followed again would count as applied and show "all" (then to_url erased it)
    if key not in st.session_state or st.session_state.get(link_seen(key)) != raw:
        st.session_state[link_seen(key)] = raw
        try:
            value = cast(raw)
        except (TypeError, ValueError):
            return True
        if options is None or value in options:
            st.session_state[key] = value
    return True


def to_url(key: str, param: str, value: Any, *, default: Any = None) -> None:
    """Write the widget's value into the URL (or drop the parameter when it is the default)."""
    want = None if value is None or value == default or value == "" else (
        ("1" if value else None) if isinstance(value, bool) else str(value))
    if want is None:
        if param in st.query_params:
            del st.query_params[param]
    elif st.query_params.get(param) != want:
        st.query_params[param] = want
    st.session_state[link_seen(key)] = want


def flag(raw: str) -> bool:
    """A boolean URL value: "1", "true", "yes" (anything else is false)."""
    return raw.strip().lower() in ("1", "true", "yes")
