"""Custom starting states for the Simulate setup: sample from your own ratios, then adjust IUs.

Two ways to set a starting state, both editing one ``{IU id: state}`` dict in session state:
click an IU in the graph and pick its state, or edit the table. Edits are "set this IU to that
state", so re-applying the table's delta is harmless; a click-edit bumps the table's key so the
table is rebuilt from the dict instead of replaying an older delta over it.
"""

from __future__ import annotations

import random

import streamlit as st

from knowsim_core.engine.config import LevelRatios, RuleParams
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.state import STATE_NAMES, IUState, KnowledgeState, sample_initial_state

from ui.common.graph_view import render_graph
from ui.common.theme import state_name
from ui.simulate import keys


def _states(graph: IUGraph, scope: str, params: RuleParams, seed: int) -> dict[str, IUState]:
    store = st.session_state.setdefault(keys.CUSTOM_STATES, {})
    if scope not in store:
        base = sample_initial_state(graph, params.init_ratios["novice"], random.Random(seed))
        store[scope] = {v: base.state_of(graph.index.label_of[v]) for v in graph.index.ids}
    return store[scope]


def _bump() -> None:
    st.session_state[keys.CUSTOM_EPOCH] = st.session_state.get(keys.CUSTOM_EPOCH, 0) + 1


def render_custom_start(graph: IUGraph, *, scope: str, params: RuleParams, seed: int) -> KnowledgeState:
    """The custom-start editor; returns the starting state it describes."""
    states = _states(graph, scope, params, seed)
    with st.popover("Sample from ratios", icon=":material/casino:"):
        novice = params.init_ratios["novice"]
        k = st.slider("known well", 0.0, 1.0, novice.known, 0.05, key="setup_ratio_known")
        p = st.slider("partial", 0.0, 1.0, novice.partial, 0.05, key="setup_ratio_partial")
        s = st.slider("struggling", 0.0, 1.0, novice.struggling, 0.05, key="setup_ratio_struggling")
        if st.button("Sample", key="setup_ratio_sample"):
            drawn = sample_initial_state(graph, LevelRatios(known=k, partial=p, struggling=s), random.Random(seed))
            states.update({v: drawn.state_of(graph.index.label_of[v]) for v in graph.index.ids})
            _bump()
    left, right = st.columns([3, 2])
    with left:
        st.caption("Click an IU, then choose its starting state.")
        picked = render_graph(graph, states=states, key=keys.CUSTOM_GRAPH, height=360, descriptions=False)
        if picked:
            names = [state_name(x) for x in IUState]
            choice = st.segmented_control(
                f"{picked} starts as", names, default=state_name(states[picked]), key=f"setup_pick_{picked}"
            )
            if choice and IUState(names.index(choice)) != states[picked]:
                states[picked] = IUState(names.index(choice))
                _bump()
                st.rerun()
    with right:
        rows = [{"IU": n.id, "concept": n.concept, "state": states[n.id].key} for n in graph.nodes]
        edited = st.data_editor(
            rows,
            key=keys.custom_table(st.session_state.get(keys.CUSTOM_EPOCH, 0)),
            hide_index=True,
            disabled=["IU", "concept"],
            column_config={"state": st.column_config.SelectboxColumn("starting state", options=list(STATE_NAMES), required=True)},
        )
        for r in edited:
            states[r["IU"]] = IUState.parse(r["state"])
    return KnowledgeState.from_ids(graph, states)
