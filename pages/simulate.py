"""Simulate: set up a run, then step, play, rewind and deep-link through it."""

import streamlit as st

from knowsim_core.errors import KnowSimError
from ui import state
from ui.resources import get_store
from ui.sim_setup import render_setup
from ui.sim_view import render_player
from ui.frame import ensure_frame

ensure_frame()  # a deep link as a fresh server's first request must still run app.py

store = get_store()
st.title("Simulate")
try:
    player = state.player(store)
except KnowSimError as exc:
    st.error(f"The run in the link cannot be opened: {exc}")
    state.close_runs()
    player = None

with st.expander("New simulation", expanded=player is None):
    render_setup(store)

if player is not None:
    run = player.primary
    st.caption(f"Question `{run.question_id}` · run `{', '.join(player.run_ids)}`")
    st.markdown("> " + run.question.replace("\n", " "))
    if st.button("Close this run", key="sim_close", icon=":material/close:"):
        state.close_runs()
        st.rerun()
    render_player(player)
