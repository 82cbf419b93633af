"""Judgments on screen: the person's and researchers' 👍/👎 on a turn (Simulate), and the
Agreement page's charts (ROC curve, failure modes among 👍 vs 👎, metric vs rating).

The turn widget is one function, :func:`render_turn_judgments`, which Simulate's turn view calls
under the turn card; it shows every judgment of that turn and lets the researcher give (or
change, or withdraw) their own, stored with the run (who, when) and exported with it.
"""

from __future__ import annotations

import getpass

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.formats.judgments import Judgment

WHO_KEY = "judge_name"


def _default_name() -> str:
    try:
        return getpass.getuser() or "researcher"
    except (KeyError, OSError):  # no login name in a container
        return "researcher"


def judgment_line(j: Judgment) -> str:
    """One judgment in a line: thumb, whose, when, note, and how an imported thumb matched its reply."""
    thumb = "👍" if j.liked else "👎"
    whose = "the person in the conversation" if j.source == "person" else f"researcher **{j.who or '?'}**"
    when = f" ({j.created[:16].replace('T', ' ')})" if j.created and j.source == "researcher" else ""
    match = {"prefix": " — voted while the reply was still streaming (its text is a prefix of the reply)",
             "mismatch": " — ⚠ the voted text is not this reply's; left out of agreement"}.get(j.match, "")
    note = f": “{j.note}”" if j.note else ""
    return f"{thumb} {whose}{when}{note}{match}"


def render_turn_judgments(store, run_id: str, turn: int, *, key: str) -> None:
    """The judgments of ``turn`` of run ``run_id`` and the researcher's own 👍/👎 + note."""
    try:
        judgments = [j for j in store.list_judgments(run_id) if j.turn == turn]
    except KnowSimError as exc:
        st.caption(f"Judgments cannot be read: {exc}")
        return
    row = st.container(horizontal=True, vertical_alignment="center", key=f"{key}_judgments")
    if judgments:
        row.markdown("  \n".join(judgment_line(j) for j in judgments))
    else:
        row.caption("No one has judged this turn's reply yet.")
    if store.read_only:
        return
    who = st.session_state.get(WHO_KEY) or _default_name()
    mine = next((j for j in judgments if j.source == "researcher" and j.who == who), None)
    with row.popover("Judge this reply", icon=":material/thumbs_up_down:",
                     help="Your 👍/👎 on the tutor's reply in this turn; counted by Agreement beside the people's"):
        name = st.text_input("Your name", value=who, key=f"{key}_who", max_chars=200)
        note = st.text_input("Note (optional)", value=mine.note if mine else "", key=f"{key}_note", max_chars=2000)
        b = st.container(horizontal=True)
        verdict = None
        if b.button("👍 Good reply", key=f"{key}_up"):
            verdict = True
        if b.button("👎 Poor reply", key=f"{key}_down"):
            verdict = False
        if mine is not None and b.button("Withdraw mine", key=f"{key}_withdraw"):
            store.remove_judgment(run_id, turn, source="researcher", who=mine.who)
            st.rerun()
        if verdict is not None:
            name = name.strip() or _default_name()
            st.session_state[WHO_KEY] = name
            try:
                store.add_judgment(run_id, Judgment(turn=turn, liked=verdict, source="researcher", who=name,
                                                    note=note.strip()))
            except KnowSimError as exc:
                st.error(f"Not saved: {exc}")
                return
            st.rerun()
