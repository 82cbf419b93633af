"""Make every page run inside the app's frame (``app.py``), even when a deep link is the first
request a fresh server sees.

Streamlit decides at its first script run whether an app uses the legacy ``pages/`` directory:
until some session has run ``st.navigation`` (in ``app.py``), a first request for ``/simulate?run=…``
runs ``pages/simulate.py`` on its own — no sidebar, no static vendor files, the wrong layout. A page
that finds itself run that way switches the legacy mode off and reruns; the rerun executes
``app.py``, whose ``st.Page(..., url_path=...)`` has the same page hash, so the same page opens, now
framed, with its query parameters intact.
"""

from __future__ import annotations

import streamlit as st

FRAME_SEEN = "_knowsim_frame_seen"  # session_state key set by app.py on every run


def mark_framed() -> None:
    """``app.py`` calls this on every run: this session has been through the frame."""
    st.session_state[FRAME_SEEN] = True


def ensure_frame() -> None:
    """Call first thing in every page script: rerun through ``app.py`` if this session never ran it."""
    if st.session_state.get(FRAME_SEEN):
        return
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # a Streamlit without the legacy-pages mode: nothing to do
        return
    ctx = get_script_run_ctx()
    main = getattr(getattr(ctx, "pages_manager", None), "main_script_path", "") or ""
    # only when the app's entry point was skipped (a page run on its own, e.g. by AppTest, is fine)
    if str(main).endswith("app.py") and PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
