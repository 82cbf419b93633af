"""The Simulate page's setup form: question, graph version, level or custom start, agents, rules."""

from __future__ import annotations

import streamlit as st

from knowsim_core.agents.registry import HUMAN_ID as HUMAN, spec_of
from knowsim_core.engine.config import LEVELS, PRESETS, preset as get_preset
from knowsim_core.errors import KnowSimError
from knowsim_core.services.runner import start_run

from ui.common import nav
from ui.simulate import state
from ui.simulate.custom_start import render_custom_start
from ui.common.questions import question_label
from ui.common.resources import agent_ids, agent_label_func, agent_settings

CUSTOM = "custom"
DEFAULTS = {"assistant": "offline/adaptive", "user": "offline/knowsim", "extractor": "offline/lexical"}
WRITERS = {
    "agents": "Agents write both sides",
    "assistant": "I'll write the assistant's replies",
    "user": "I'll write the user's messages",
}


def _pick(label: str, kind: str, key: str) -> str | None:
    try:
        ids = [i for i in agent_ids(kind) if i != HUMAN]  # typing is chosen with "Who writes"
    except KnowSimError as exc:
        st.error(f"No {kind} is available: {exc}")
        return None
    if not ids:
        st.error(f"No {kind} is registered; the offline agents module is missing.")
        return None
    default = DEFAULTS[kind]
    return st.selectbox(label, ids, index=ids.index(default) if default in ids else 0, key=key,
                        format_func=agent_label_func())


def render_setup(store) -> None:
    """The form; "Start" creates a stored run and opens it in the player."""
    questions = store.questions.list()
    if not questions:
        st.info("There are no questions yet; add one on the Questions page.")
        return
    ids = [q.id for q in questions]
    wanted = st.query_params.get(nav.QUESTION)
    label_of = {q.id: question_label(q) for q in questions}  # grouped by kind, samples first
    c1, c2 = st.columns([3, 1])
    qid = c1.selectbox(
        "Question", ids, index=ids.index(wanted) if wanted in ids else 0, key="setup_question",
        format_func=label_of.get,
    )
    versions = store.questions.graph_versions(qid)
    if not versions:
        st.warning("This question has no IU graph yet; open it in the Graph editor to add or extract one.")
        return
    newest_first = versions[::-1]
    numbers = [v.version for v in newest_first]
    asked = st.query_params.get(nav.VERSION)  # the Graph editor's "Simulate on vN"
    gv = c2.selectbox(
        "Graph version", newest_first, key=f"setup_graph_{qid}",
        index=numbers.index(int(asked)) if qid == wanted and asked and asked.isdigit() and int(asked) in numbers else 0,
        format_func=lambda v: f"v{v.version} ({v.author}{', ' + v.note[:30] if v.note else ''})",
    )
    c1, c2, c3, c4 = st.columns(4)
    level = c1.radio("Learner level", [*LEVELS, CUSTOM], key="setup_level", horizontal=False)
    preset_name = c2.selectbox("Rule preset", sorted(PRESETS), key="setup_preset")
    seed = int(c3.number_input("Seed", min_value=0, value=1, step=1, key="setup_seed"))
    max_turns = int(
        c4.number_input("Max turns", min_value=1, max_value=200, value=get_preset(preset_name).max_turns, key="setup_max_turns")
    )
    writer = st.radio("Who writes", list(WRITERS), format_func=WRITERS.get, key="setup_writer", horizontal=True,
                      help="Type one side yourself: your text goes through the same extractor and rules, and the "
                           "run is stored with the agent id 'human'.")
    c1, c2, c3 = st.columns(3)
    with c1:
        assistant = HUMAN if writer == "assistant" else _pick("Assistant", "assistant", "setup_assistant")
        if writer == "assistant":
            st.caption("Assistant: **you** (typed)")
    with c2:
        user = HUMAN if writer == "user" else _pick("Simulated user", "user", "setup_user")
        if writer == "user":
            st.caption("User: **you** (typed)")
    with c3:
        extractor = _pick("Signal extractor", "extractor", "setup_extractor")
    initial = None
    if level == CUSTOM:
        st.caption("Set each IU's starting state (prefilled with a sampled novice).")
        initial = render_custom_start(gv.graph, scope=f"{qid}:{gv.id}", params=get_preset(preset_name), seed=seed)
    if st.button("Start", type="primary", icon=":material/play_arrow:", key="setup_start",
                 disabled=None in (assistant, user, extractor)):
        llm = any(spec_of(a).needs_model for a in (assistant, user, extractor))
        try:
            live = start_run(
                store, question_id=qid, level=level, assistant_id=assistant,
                user_id=user, extractor_id=extractor, seed=seed, preset=preset_name, max_turns=max_turns,
                graph_version_id=gv.id, initial_state=initial,
                settings=agent_settings(store) if llm else None,
            )
        except KnowSimError as exc:
            st.error(f"The run could not start: {exc}")
            return
        state.open_runs(store, (live.run_id,), live={live.run_id: live})
        st.rerun()
