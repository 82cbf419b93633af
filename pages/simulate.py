"""Simulate: set up a run (or type one side yourself), then step, play, rewind, fork and deep-link."""

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.services.fork import parent_of
from knowsim_core.services.reading import is_human_reading
from knowsim_core.services.whatif import describe as describe_whatif
from knowsim_core.text.titles import clip
from ui.common import nav, share
from ui.common.frame import ensure_frame
from ui.common.questions import reading_heading
from ui.common.resources import get_store
from ui.common.safe_text import inline_markdown
from ui.simulate import state
from ui.simulate.setup import render_setup
from ui.simulate.view import PAGE_STYLE, render_player

ensure_frame(nav.SIMULATE)  # a deep link as a fresh server's first request must still run app.py

store = get_store()
st.html(PAGE_STYLE)  # the whole turn fits a 1400×900 window: little blank space above, a compact title
try:
    player, problem = state.player(store), ""
except KnowSimError as exc:
    player, problem = None, f"The run in the link cannot be opened: {exc}"
    state.close_runs()
# with a run open, the title and the folded set-up share one row (the turn must fit the window);
# with none, the title stands above the open set-up form (beside it, it floated by the form's middle)
top = st.container(horizontal=player is not None, vertical_alignment="center", key="sim_top")
with top.container(key="sim_title", width="content"):
    st.title("Simulate")
if problem:
    top.error(problem)

# keyed by the runs shown: a new run (after Start) gets a new expander, drawn collapsed, so the run
# lands where the form was (the browser would otherwise keep the form open)
with top.expander("New simulation", expanded=player is None,
                 key="sim_new_" + ("_".join(player.run_ids) if player is not None else "none")):
    render_setup(store)

if player is not None:
    run = player.primary
    row = st.container(horizontal=True, vertical_alignment="center")
    head = row.container()
    # the question once, here (the turn card does not repeat it); its run ids beside it
    # clipped to keep the header within two lines at 1400 px (the turn must fit below it); all of it on hover
    text = " ".join(run.question.split())
    short = clip(text, 110)
    if is_human_reading(run):  # a real conversation: its title, level, tutor, rating and answer, not its "hello"
        head.markdown(reading_heading(store.questions.get(run.question_id), store.search.get_row(player.run_ids[0]), run)
                      + "  \nFirst message: " + inline_markdown(short),
                      help=inline_markdown(text) + f" (question `{run.question_id}`, run `{player.run_ids[0]}`)")
    else:
        head.markdown(f"**Question** `{run.question_id}` — " + inline_markdown(short) + f" · run `{', '.join(player.run_ids)}`",
                      help=inline_markdown(text) if short != text else None)
    for rid in player.run_ids:
        parent = parent_of(store, player.runs[rid])
        if parent is not None:  # a deleted parent is named so, never linked
            if what := describe_whatif(player.runs[rid], source=parent.words()):  # labels edited, the messages as recorded
                head.caption(inline_markdown(f"Run {rid} is a {what}."))
            else:
                head.caption(f"Run `{rid}` is a fork of {parent.words()} at turn {parent.turn} (your reply replaces "
                             "the assistant's).")
            if parent.stored and parent.run_id not in player.run_ids:
                nav.link(head, nav.SIMULATE, f"Open run {parent.run_id} at turn {parent.turn}",
                         icon=":material/call_split:", params=nav.simulate_params((parent.run_id,), parent.turn))
    share.replay_button(store, player.run_ids, key="sim_replay", container=row)  # one file that replays it anywhere
    if row.button("Close", key="sim_close", icon=":material/close:",
                  help="Close this run (it stays saved once it has a turn)"):
        state.close_runs(store)
        st.rerun()
    render_player(player)
