"""KnowSim Studio — the Streamlit frame: page config, navigation by task, the shared sidebar.

Run with ``make app`` (or ``python -m streamlit run app.py``). Pages live in ``pages/``; they are
thin and call into ``ui/`` and ``knowsim_core``. The navigation is ``ui.common.nav``'s table of pages.
"""

from __future__ import annotations

import streamlit as st

from knowsim_core.errors import KnowSimError
from ui.common import nav
from ui.common.frame import mark_framed
from ui.common.resources import LOGO, db_path, ensure_vendor, get_store, llm_session_settings, provider_lines

# a local file: an emoji or material icon as page_icon makes the browser fetch it from a CDN
st.set_page_config(page_title="KnowSim Studio", page_icon=str(LOGO), layout="wide")


def sidebar() -> None:
    with st.sidebar:
        st.caption(f"Database: `{db_path()}`")
        lines = [
            f"{':material/check_circle:' if ok else ':material/radio_button_unchecked:'} **{name}**"
            + (f" — {note}" if note else "")
            for name, ok, note in provider_lines()
        ]
        st.caption("Providers:  \n" + "  \n".join(lines))
        llm_session_settings()


ensure_vendor()
try:
    get_store()
except KnowSimError as exc:
    st.error(f"The database at {db_path()} cannot be opened: {exc}")
    st.info("Set KNOWSIM_DB to another file (e.g. `KNOWSIM_DB=/tmp/studio.db make app`) or move the damaged file away.")
    st.stop()

page = st.navigation(nav.navigation())
mark_framed()
sidebar()
page.run()
