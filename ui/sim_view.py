"""The Simulate page's player: transport controls, graph(s), gauge, IU panel and turn card.

Everything that changes on a step lives in one fragment, so a step (or an auto-play tick)
redraws only this part of the page. Auto-play uses ``st.fragment(run_every=…)`` and steps on
elapsed time (:meth:`Playback.due`), so a full rerun in the middle never plays an extra turn.
Play/Pause and the speed sit in a fragment of their own that does not tick: a button the ticking
fragment redraws every second can swallow a click that lands while it is being replaced.
"""

from __future__ import annotations

import streamlit as st

from . import state
from .gauge import render_gauge, render_load_chart
from .graph_view import render_graph, render_legend
from .player import Player
from .turn_card import render_iu_panel, render_metrics, render_turn_card

GRAPH_KEY = "sim_graph_{}"
SCRUB_KEY = "sim_scrub"


def _forward(p: Player) -> None:
    p.forward()
    state.playback().mark()


def _back(p: Player) -> None:
    p.back()
    state.playback().playing = False


def _rewind(p: Player) -> None:
    p.goto(0)
    state.playback().playing = False


def _scrub(p: Player) -> None:
    p.goto(st.session_state[SCRUB_KEY])
    state.playback().playing = False


@st.fragment
def _play_controls(p: Player) -> None:
    """Play/Pause (space) and the speed: any change restarts the page so the timer is re-read."""
    pb = state.playback()
    c = st.columns([1.4, 2.4, 6.2])
    label, icon = ("Pause", ":material/pause:") if pb.playing else ("Play", ":material/play_arrow:")
    if c[0].button(label, key="sim_play", icon=icon, help="play / pause (space)", shortcut="Space",
                   disabled=not pb.playing and not p.can_forward):
        pb.playing = not pb.playing
        pb.mark()
        st.rerun(scope="app")  # run_every is read when the ticking fragment is defined
    names = list(state.SPEEDS)
    current = next((n for n, v in state.SPEEDS.items() if v == pb.speed), state.DEFAULT_SPEED)
    choice = c[1].selectbox("speed", names, index=names.index(current), key="sim_speed",
                            label_visibility="collapsed")
    if state.SPEEDS[choice] != pb.speed:
        pb.speed = state.SPEEDS[choice]
        if pb.playing:
            st.rerun(scope="app")


def _transport(p: Player) -> None:
    c = st.columns([1.1, 1.1, 1.1, 6.7])
    c[0].button("Start", key="sim_rewind", icon=":material/first_page:", help="back to the starting state",
                on_click=_rewind, args=(p,), disabled=p.turn == 0)
    c[1].button("Back", key="sim_back", icon=":material/chevron_left:", help="step back (←)", on_click=_back,
                args=(p,), shortcut="Left", disabled=p.turn == 0)
    c[2].button("Step", key="sim_step", icon=":material/chevron_right:", help="step forward (→)", on_click=_forward,
                args=(p,), shortcut="Right", disabled=not p.can_forward, type="primary")
    if p.stored_turns > 0:
        st.session_state[SCRUB_KEY] = p.turn
        c[3].slider("turn", 0, p.stored_turns, key=SCRUB_KEY, on_change=_scrub, args=(p,), label_visibility="collapsed")
    else:
        c[3].caption("No turn played yet.")


def _status(p: Player) -> str:
    run = p.primary
    parts = [f"Turn **{p.turn}** of {p.stored_turns} played (max {run.params.max_turns})"]
    if p.all_finished:
        reasons = {p.runs[r].stop_reason for r in p.run_ids}
        parts.append("finished: " + ", ".join(sorted(str(x) for x in reasons)))
    return " · ".join(parts)


def _panel(p: Player, index: int, rid: str, *, compact: bool) -> None:
    run = p.runs[rid]
    adapters = run.adapter
    st.markdown(f"**{run.level.capitalize()} learner** · {adapters.get('assistant', '?')} · τ = {run.tau}")
    key = GRAPH_KEY.format(index)
    selected = render_graph(run.graph, states=p.states(rid), changed=p.changed(rid), key=key, height=440 if compact else 520,
                            descriptions=False)
    rec = p.record(rid)
    prev = p.record(rid, p.turn - 1) if p.turn > 1 else None
    if rec is None and p.turn > len(run.turns) and p.turn > 0:
        st.caption(f"This run ended after turn {len(run.turns)}.")
    render_gauge(rec, tau=run.tau, previous=prev, key=f"sim_gauge_{index}")
    render_load_chart(run.turns[: max(p.turn, 0)], tau=run.tau, current=p.turn, key=f"sim_load_{index}")
    if selected:
        with st.container(border=True):
            render_iu_panel(run, selected, turn=min(p.turn, len(run.turns)), key=f"sim_iu_{index}")
    else:
        st.caption("Click an IU in the graph to see why it did or did not advance.")


def render_player(p: Player) -> None:
    """The fragment with everything a step changes."""
    pb = state.playback()
    _play_controls(p)

    @st.fragment(run_every=pb.speed if pb.playing else None)
    def player_fragment() -> None:
        if pb.due():
            moved = p.forward()
            pb.mark()
            if not moved or not p.can_forward:
                pb.playing = False
                st.rerun(scope="app")  # stop the timer
        _transport(p)
        st.markdown(_status(p))
        if p.error:
            st.error(f"{p.error} — the turns played so far are saved; step again to retry.")
        render_legend()
        cols = st.columns(len(p.run_ids))
        for i, (col, rid) in enumerate(zip(cols, p.run_ids)):
            with col:
                _panel(p, i, rid, compact=len(p.run_ids) > 1)
        tabs = st.tabs([f"{p.runs[r].level} learner" for r in p.run_ids]) if len(p.run_ids) > 1 else [st.container()]
        for i, (tab, rid) in enumerate(zip(tabs, p.run_ids)):
            with tab:
                run = p.runs[rid]
                render_metrics(run, min(p.turn, len(run.turns)))
                render_turn_card(run, p.record(rid), key=f"sim_card_{i}")
        state.sync_url(p)

    player_fragment()
