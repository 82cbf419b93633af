"""The Simulate page's session: its player, auto-play, and the runs it opens and closes (keys in
:mod:`ui.simulate.keys`).

The Simulate view keeps one :class:`~ui.simulate.player.Player` per session; the URL (``?run=…&pair=…
&turn=…``, parameters of :mod:`ui.common.nav`) is the source of truth when the page is entered, so a
deep link or a reload shows the same run and turn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import streamlit as st

from knowsim_core.errors import KnowSimError
from ui.common import nav
from ui.common.resources import agent_settings
from ui.simulate import keys
from ui.simulate.player import Player

SPEEDS = {"slow (2 s)": 2.0, "normal (1 s)": 1.0, "fast (0.5 s)": 0.5}
DEFAULT_SPEED = "normal (1 s)"
LEASE_RENEW_SECONDS = 60  # the open Simulate page renews its runs' leases (storage.LEASE_SECONDS) this often


@dataclass
class Playback:
    """Auto-play settings; ``last_step`` is a clock time so only elapsed time makes a step."""

    playing: bool = False
    speed: float = SPEEDS[DEFAULT_SPEED]
    last_step: float = field(default_factory=time.monotonic)

    def due(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        # a little slack: the fragment timer and the clock are not perfectly in phase
        return self.playing and now - self.last_step >= self.speed * 0.8

    def mark(self) -> None:
        self.last_step = time.monotonic()


def playback() -> Playback:
    if keys.PLAYBACK not in st.session_state:
        st.session_state[keys.PLAYBACK] = Playback()
    return st.session_state[keys.PLAYBACK]


def url_run_ids() -> tuple[str, ...]:
    qp = st.query_params
    ids = [qp.get(nav.RUN, ""), qp.get(nav.PAIR, "")]
    return tuple(i for i in ids if i)


def url_turn() -> int | None:
    raw = st.query_params.get(nav.TURN)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def player(store) -> Player | None:
    """The session's player, (re)built from the URL when the URL names other runs, and moved to
    the URL's turn when the page has just been entered (:func:`ui.common.nav.entered`) with a link
    to another turn of the open runs: a link to turn 5 of the run already open at turn 3 (from
    Home, Failure modes, Agreement or Saved runs) showed turn 3 and rewrote the link to it.

    Only on entering: while the page is shown, the player's own moves (Step, the slider, Play)
    run before the URL is rewritten, and a rerun the browser sent with an older URL must not
    move it back."""
    current: Player | None = st.session_state.get(keys.PLAYER)
    wanted = url_run_ids()
    turn = url_turn()
    if wanted and (current is None or current.run_ids != wanted):
        current = Player(store, wanted, turn=0 if turn is None else turn, settings=agent_settings(store))
        if turn is None and current.all_finished:  # a link to a finished run opens on its outcome
            current.goto(current.stored_turns)
        st.session_state[keys.PLAYER] = current
    elif current is not None and not wanted:
        sync_url(current)
    elif current is not None and turn is not None and turn != current.turn and nav.entered(nav.SIMULATE):
        playback().playing = False
        current.goto(turn)
    return current


def discard_unplayed(store, p: Player | None, *, keep: tuple[str, ...] = ()) -> list[str]:
    """Delete the runs this session started in ``p`` that never got a turn (Start, then Close or
    another Start), so none lingers as a 0-turn "interrupted" run. A run with a turn stays,
    resumable; a run this session only opened (a link, Saved runs) is not this session's to delete."""
    gone = []
    for rid, live in list((p.live if p is not None else {}).items()):
        if rid in keep or live.run.turns:
            continue
        try:
            if store.search.get_row(rid).turns == 0:
                store.runs.delete([rid])
                gone.append(rid)
        except KnowSimError:  # already gone (its lease lapsed) or the database is read-only
            pass
    return gone


def open_runs(store, run_ids: tuple[str, ...], *, turn: int = 0, live: dict | None = None) -> Player:
    """Make ``run_ids`` the session's runs (e.g. after "Start") and point the URL at them; a run
    started before and never played is deleted (:func:`discard_unplayed`)."""
    discard_unplayed(store, st.session_state.get(keys.PLAYER), keep=run_ids)
    p = Player(store, run_ids, turn=turn, live=live, settings=agent_settings(store))
    p.hold_leases()  # a run started here is abandoned if this session goes away before it ends
    st.session_state[keys.PLAYER] = p
    st.session_state.pop(keys.COMPARE_OPEN, None)
    playback().playing = False
    sync_url(p)
    return p


def close_runs(store=None) -> None:
    """Close the session's runs (they stay saved); with ``store``, one it started and never played
    is deleted (:func:`discard_unplayed`)."""
    if store is not None:
        discard_unplayed(store, st.session_state.get(keys.PLAYER))
    st.session_state.pop(keys.PLAYER, None)
    st.session_state.pop(keys.COMPARE_OPEN, None)
    playback().playing = False
    for k in nav.SIMULATE_PARAMS:
        if k in st.query_params:
            del st.query_params[k]


def url_params(p: Player) -> dict[str, str]:
    """The deep-link parameters of what ``p`` shows."""
    return nav.simulate_params(p.run_ids, p.turn)


def sync_url(p: Player) -> None:
    """Write the shown runs and turn into the URL (only the keys that changed)."""
    want = url_params(p)
    if nav.PAIR not in want and nav.PAIR in st.query_params:
        del st.query_params[nav.PAIR]
    for k, v in want.items():
        if st.query_params.get(k) != v:
            st.query_params[k] = v
