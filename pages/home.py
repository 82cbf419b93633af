"""Home: what KnowSim Studio is, a one-click demo, and the most recent runs."""

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.storage import BatchGroup
from knowsim_core.storage.run_filter import RunFilter
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.resources import get_store
from ui.common.safe_text import inline_markdown
from ui.runs.run_list import counted
from ui.simulate import state
from ui.simulate.demo import DEMO_ASSISTANT, start_demo

ensure_frame(nav.HOME)  # a deep link as a fresh server's first request must still run app.py

store = get_store()
st.title("KnowSim Studio")
st.markdown(
    "KnowSim simulates a learner whose knowledge is an explicit state over a graph of information units (IUs), "
    "so you can watch what an assistant's answer actually does to it. "
    "Each turn, the assistant's reply is labelled per IU and simple rules — prerequisites, a load capacity, "
    "partial progress — decide which IUs the learner absorbs. "
    "Step through a conversation, see which IUs change colour and why, and compare assistants and learners "
    "with knowledge gain, delivery calibration and cognitive overload."
)

left, right = st.columns([2, 3])
with left:
    st.subheader("Try it")
    st.write(
        f"The same comprehensive assistant (`{DEMO_ASSISTANT}`) answers a lymphoma question for a novice and "
        "an advanced learner, side by side."
    )
    if st.button("Start the demo", type="primary", icon=":material/play_arrow:", key="start_demo"):
        try:
            live = start_demo(store)
        except KnowSimError as exc:
            st.error(f"The demo could not start: {exc}")
        else:
            p = state.open_runs(store, tuple(live), live=live)
            nav.show_in_simulate(p.run_ids, p.turn)
    nav.link(st, nav.SIMULATE, "Set up your own simulation", icon=":material/tune:")
    nav.link(st, nav.QUESTIONS, "Browse the questions", icon=":material/quiz:")

with right:
    st.subheader("Recent runs")
    entries = store.search.recent(limit=8)  # a batch's runs fold into one line, so singles stay visible
    if not entries:
        st.caption(f"No runs yet. {len(store.questions.list())} sample questions are ready — start the demo.")
    # A page link's label is one line cut with an ellipsis (Streamlit's own style); in this column
    # a run's line lost its status and KG. Inside this container the labels wrap instead.
    st.html("<style>.st-key-home_recent [data-testid='stPageLink-NavLink'] * "
            "{ white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }"
            "</style>")
    recent = st.container(key="home_recent")
    for e in entries:
        if isinstance(e, BatchGroup):
            metrics = "" if e.kg is None else f" · mean KG {e.kg:.2f}"
            nav.link(recent, nav.RUNS, f"batch {e.tag} · {counted(e.runs, 'run')} ({e.finished} finished){metrics}",
                     icon=":material/stacks:", params=nav.runs_params(RunFilter(batch_tag=e.tag)))
            continue
        metrics = "" if e.kg is None else f" · KG {e.kg:.2f}"
        nav.link(recent, nav.SIMULATE,
                 inline_markdown(f"{e.question_id} · {e.level} · {e.assistant} · {e.turns} turns · {e.status}{metrics}"),
                 icon=":material/chat:", params=nav.simulate_params((e.id,), e.turns))
