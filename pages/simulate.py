"""Simulate: set up a run (or type one side yourself), then step, play, rewind, fork and deep-link."""

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.services.fork import fork_link
from ui import state
from ui.frame import ensure_frame
from ui.resources import get_store
from ui.sim_setup import render_setup
from ui.sim_view import render_player

ensure_frame()  # a deep link as a fresh server's first request must still run app.py

store = get_store()
# less blank space above the title, so the graph and the IU panel fit a 900 px high window
st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 2.5rem; }</style>")
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
    row = st.container(horizontal=True, vertical_alignment="center")
    head = row.container()
    # the question once, here (the turn card no longer repeats it at turn 0)
    head.markdown(f"**Question** `{run.question_id}` — " + run.question.replace("\n", " "))
    head.caption(f"Run `{', '.join(player.run_ids)}`")
    for rid in player.run_ids:
        link = fork_link(player.runs[rid])
        if link:
            head.caption(f"Run `{rid}` is a fork of run `{link[0]}` at turn {link[1]} (your reply replaces the assistant's).")
    if row.button("Close", key="sim_close", icon=":material/close:", help="Close this run (it stays saved)"):
        state.close_runs()
        st.rerun()
    render_player(player)
