"""Shared by the Graph, Failure Modes and Runs pages: the store and "open this run at this turn".

Opening a run hands over to the Simulate page through its deep link (``?run=…&turn=…``), so the
part-1 player shows exactly that view (:func:`ui.simulate.state.player` goes to the link's turn even when
the run is already open there). A page that cannot switch (run on its own) says where it would go.
"""

from __future__ import annotations

import streamlit as st

from ui.common.resources import get_store

SIMULATE_PAGE = "pages/simulate.py"


def store():
    """The shared store (the cached one of :mod:`ui.common.resources`, for the current ``$KNOWSIM_DB``)."""
    return get_store()


def open_in_simulate(run_id: str, turn: int) -> None:
    """Switch to the Simulate page at ``run_id``, turn ``turn`` (0 = the initial state)."""
    try:
        st.switch_page(SIMULATE_PAGE, query_params={"run": run_id, "turn": str(int(turn))})
    except st.errors.StreamlitAPIException:
        st.info(f"Open run {run_id} at turn {turn} on the Simulate page (it is not registered in this view).")



def simulate_on_version(question_id: str, version: int) -> None:
    """Switch to Simulate's setup with ``question_id`` and its graph version number ``version`` chosen."""
    try:
        st.switch_page(SIMULATE_PAGE, query_params={"question": question_id, "version": str(int(version))})
    except st.errors.StreamlitAPIException:
        st.info(f"Set up a run of {question_id} on graph v{version} on the Simulate page "
                "(it is not registered in this view).")
