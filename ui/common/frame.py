"""Make every page run inside the app's frame (``app.py``), even when a deep link is the first
request a fresh server sees.

Streamlit decides at its first script run whether an app uses the legacy ``pages/`` directory:
until some session has run ``st.navigation`` (in ``app.py``), a first request for ``/simulate?run=…``
runs ``pages/simulate.py`` on its own — no sidebar, no static vendor files, the wrong layout. A page
that finds itself run that way switches the legacy mode off and reruns; the rerun executes
``app.py``, whose ``st.Page(..., url_path=...)`` has the same page hash, so the same page opens, now
framed, with its query parameters intact.

Every page starts with :func:`ensure_frame`, naming itself by its entry in :mod:`ui.common.nav`:
it also notes which page this script run shows, so a page can tell that it was just entered
(:func:`ui.common.nav.entered`).
"""

from __future__ import annotations

import streamlit as st

from ui.common import nav
from ui.common.keys import FRAME_SEEN

try:  # Streamlit's own (internal) switch of the legacy pages/ mode, where this Streamlit has one
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx
except ImportError:  # a Streamlit without the legacy-pages mode: nothing to switch off
    PagesManager = get_script_run_ctx = None  # type: ignore[assignment,misc]


def mark_framed() -> None:
    """``app.py`` calls this on every run: this session has been through the frame."""
    st.session_state[FRAME_SEEN] = True


def ensure_frame(page: nav.Page) -> None:
    """Call first thing in every page script, with the page's entry in :mod:`ui.common.nav`: rerun
    through ``app.py`` if this session never ran it, then note that this run shows ``page``."""
    if not st.session_state.get(FRAME_SEEN):
        _leave_legacy_pages()
    nav.arrive(page)


def _leave_legacy_pages() -> None:
    if PagesManager is None or get_script_run_ctx is None:
        return
    ctx = get_script_run_ctx()
    main = getattr(getattr(ctx, "pages_manager", None), "main_script_path", "") or ""
    # only when the app's entry point was skipped (a page run on its own, e.g. by AppTest, is fine)
    if str(main).endswith("app.py") and PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
