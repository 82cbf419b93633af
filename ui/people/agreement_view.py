"""Judgments on screen: the person's and researchers' 👍/👎 on a turn (Simulate), and the
Agreement page's charts (ROC curve, failure modes among 👍 vs 👎, metric vs rating).

The turn widget is one function, :func:`render_turn_judgments`, which Simulate's turn view calls
under the turn card; it shows every judgment of that turn and lets the researcher give (or
change, or withdraw) their own, stored with the run (who, when) and exported with it.
"""

from __future__ import annotations

import getpass
import random
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from knowsim_core import evaluation
from knowsim_core.errors import KnowSimError
from knowsim_core.evaluation.agreement_words import AGAINST
from knowsim_core.evaluation.scoring import roc_points
from knowsim_core.formats.judgments import Judgment
from ui.common.safe_text import inline_markdown
from ui.people import keys

UP_COLOUR, DOWN_COLOUR = "#009E73", "#D55E00"  # Okabe–Ito bluish green / vermillion
SCORE_COLOURS = {"knowsim": "#0072B2", "reply_length": "#8C8C8C", "upward": "#CC79A7"}


def _default_name() -> str:
    try:
        return getpass.getuser() or "researcher"
    except (KeyError, OSError):  # no login name in a container
        return "researcher"


def judgment_line(j: Judgment) -> str:
    """One judgment in a line: thumb, whose, when, note, and how an imported thumb matched its reply.

    The name and the note are stored text (a Studio JSON import brings them from anywhere), so they
    go through :func:`~ui.common.safe_text.inline_markdown`: a ``![](http://tracker)`` note must not load."""
    # Streamlit's material icons ship with the app; Debian's chromium has no emoji font
    thumb = ":material/thumb_up: up ·" if j.liked else ":material/thumb_down: down ·"
    who = inline_markdown(" ".join((j.who or "?").split()))
    whose = "the person in the conversation" if j.source == "person" else f"researcher **{who}**"
    when = f" ({j.created[:16].replace('T', ' ')})" if j.created and j.source == "researcher" else ""
    match = {"prefix": " — voted while the reply was still streaming (its text is a prefix of the reply)",
             "mismatch": " — :material/warning: the voted text is not this reply's; left out of agreement"}.get(j.match, "")
    note = f": “{inline_markdown(' '.join(j.note.split()))}”" if j.note else ""
    return f"{thumb} {whose}{when}{note}{match}"


def render_turn_judgments(store, run_id: str, turn: int, *, key: str) -> None:
    """The judgments of ``turn`` of run ``run_id`` and the researcher's own 👍/👎 + note."""
    try:
        judgments = [j for j in store.judgments.list(run_id) if j.turn == turn]
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
    who = st.session_state.get(keys.JUDGE_NAME) or _default_name()
    mine = next((j for j in judgments if j.source == "researcher" and j.who == who), None)
    with row.popover("Judge this reply", icon=":material/thumbs_up_down:",
                     help="Your thumb up or down on the tutor's reply in this turn; counted by Agreement beside the people's"):
        # keyed by run and turn: one key per side let a note typed on turn 2 stay in the box on
        # turn 3 and be saved with turn 3's vote, and a turn's own stored note was never shown
        name = st.text_input("Your name", value=who, key=f"{key}_who_{run_id}_{turn}", max_chars=200)
        note = st.text_input("Note (optional)", value=mine.note if mine else "", key=f"{key}_note_{run_id}_{turn}",
                             max_chars=2000)
        b = st.container(horizontal=True)
        verdict = None
        if b.button("Good reply", icon=":material/thumb_up:", key=f"{key}_up"):
            verdict = True
        if b.button("Poor reply", icon=":material/thumb_down:", key=f"{key}_down"):
            verdict = False
        if mine is not None and b.button("Withdraw mine", key=f"{key}_withdraw"):
            store.judgments.remove(run_id, turn, source="researcher", who=mine.who)
            st.rerun()
        if verdict is not None:
            name = name.strip() or _default_name()
            st.session_state[keys.JUDGE_NAME] = name
            try:
                store.judgments.add(run_id, Judgment(turn=turn, liked=verdict, source="researcher", who=name,
                                                    note=note.strip()))
            except KnowSimError as exc:
                st.error(f"Not saved: {exc}")
                return
            st.rerun()


# ---------------------------------------------------------------------- the Agreement page's charts
def fmt(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def ci_text(entry: dict[str, Any], key: str = "auc") -> str:
    """"0.70 [0.57, 0.82], n 57" (an undefined interval as "no interval")."""
    ci = entry.get("ci")
    interval = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "no interval"
    return f"{fmt(entry.get(key))} {interval}, n {entry.get('n', 0)}"


# Words, not emoji, on the Agreement page: chromium without an emoji font draws 👍 as an empty box.
# Markdown gets Streamlit's material icons (their font ships with Streamlit);
# Plotly text, which cannot draw them, gets words.
UP_MD, DOWN_MD = ":material/thumb_up: up", ":material/thumb_down: down"
UP_WORD, DOWN_WORD = "thumb up", "thumb down"
VERDICT_ICONS = {"replicates": ":material/check_circle:", "does not replicate": ":material/warning:"}
AGAINST_ICON = ":material/south_west:"  # a figure whose interval runs against its stated direction


def verdict_icon(verdict: str) -> str:
    if AGAINST in verdict:
        return AGAINST_ICON
    return VERDICT_ICONS.get(verdict, ":material/info:")


def ci_only(entry: dict[str, Any] | None) -> str:
    ci = (entry or {}).get("ci")
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "no interval"


def replication_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per score, pooled and within conversations: the score with its stated direction, the
    AUC and interval on the whole and on each part, and the verdict in words."""
    rows = []
    parts, rep = report["parts"], report["replication"]
    for kind, get, verdicts in (("pooled", lambda t, s: t["votes"]["scores"][s], rep["scores"]),
                                ("within a conversation", lambda t, s: t["within_conversation"][s],
                                 rep["within_conversation"])):
        for name in report["votes"]["scores"]:
            whole, a, b = get(report, name), get(parts["A"], name), get(parts["B"], name)
            rows.append({"score (direction stated before scoring)":
                         f"{name.replace('_', ' ')} · {report['votes']['scores'][name]['direction']}",
                         "pairs": kind, "whole": auc_text(whole), "part A": auc_text(a), "part B": auc_text(b),
                         "both parts": verdicts[name]["verdict"]})
    return rows


def auc_text(entry: dict[str, Any], key: str = "auc") -> str:
    return f"{fmt(entry.get(key))} {ci_only(entry)}"


def conversation_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """KG / DC / CO against the rating and a correct answer, and whether each holds on both parts
    (the plain readings are :func:`conversation_readings`)."""
    convs, rep = report["conversations"], report["replication"]
    rows = []
    for m, r in convs["rating"].items():
        k = convs["correctness"].get(m, {})
        rows.append({"metric": m.upper(), "Spearman ρ vs rating": auc_text(r, "spearman"), "Kendall τ": fmt(r["kendall"]),
                     "ρ on both parts": rep["rating"][m]["verdict"], "AUC for a correct answer": auc_text(k),
                     "AUC on both parts": rep["correctness"].get(m, {}).get("verdict", ""), "n": r["n"]})
    return rows


def conversation_readings(report: dict[str, Any]) -> str:
    """Each per-conversation figure in plain words, as a markdown list."""
    convs = report["conversations"]
    lines = []
    def flagged(reading: str) -> str:  # a figure running against its stated direction is marked, not stated flatly
        return f"{AGAINST_ICON} {reading}" if AGAINST in reading else reading

    for m, r in convs["rating"].items():
        lines.append(f"- **{m.upper()} vs rating** ({r.get('direction', '')}) — {flagged(r.get('reading', ''))}")
        k = convs["correctness"].get(m)
        if k:
            lines.append(f"- **{m.upper()} vs a correct answer** — {flagged(k.get('reading', ''))}")
    return "\n".join(lines)


def unread_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"conversation": u["conversation"], "part": u["part"], "thumbs up": u["up"], "thumbs down": u["down"],
             "rating": u["rating"], "why no reading": u["reason"]} for u in report["unread"]["conversations"]]


def simulated_rows(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells of one user simulator against the people (n per cell on both sides)."""
    metrics = list(entry.get("sign", {}))
    return [{"arm": c["arm"], "level": c["level"], "tutor": c["condition"], "people": c["n_people"],
             "people's mean rating": c["rating"], "people correct": c["correct"], "simulated runs": c["n_sim"],
             **{f"sim {m.upper()}": c["sim"][m] for m in metrics}} for c in entry["cells"]]


def roc_figure(turns: list[dict[str, Any]], scores: dict[str, dict[str, Any]]) -> go.Figure:
    """ROC curves of each per-turn score for 👍 (positive) vs 👎, each in its stated direction (the
    AUC the table shows), with the chance diagonal."""
    # through the lazy package: Simulate imports this module for a turn's judgments, not these figures
    oriented = evaluation.agreement.oriented
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#BBBBBB", dash="dot"), name="chance",
                    hoverinfo="skip")
    for name, entry in scores.items():
        fpr, tpr = roc_points([oriented(name, t[name]) for t in turns if t["liked"]],
                              [oriented(name, t[name]) for t in turns if not t["liked"]])
        fig.add_scatter(x=fpr, y=tpr, mode="lines+markers", name=f"{name} (AUC {fmt(entry.get('auc'))})",
                        line=dict(color=SCORE_COLOURS.get(name), shape="hv"), marker=dict(size=4))
    fig.update_layout(height=360, margin=dict(t=30, b=40, l=50, r=10),
                      xaxis_title=f"share of {DOWN_WORD} turns above threshold",
                      yaxis_title=f"share of {UP_WORD} turns above threshold", legend=dict(orientation="h", y=-0.25))
    return fig


def modes_figure(modes: dict[str, dict[str, float | None]]) -> go.Figure:
    """Each failure mode's rate among 👍 and among 👎 turns (share of turns with ≥ 1 IU in it)."""
    names = list(modes)
    fig = go.Figure()
    for side, colour, label in (("up", UP_COLOUR, f"{UP_WORD} turns"), ("down", DOWN_COLOUR, f"{DOWN_WORD} turns")):
        fig.add_bar(x=[n.replace("_", " ") for n in names], y=[modes[n][side] or 0 for n in names],
                    name=label, marker_color=colour, hovertemplate="%{x}: %{y:.0%} of " + label + "<extra></extra>")
    fig.update_layout(barmode="group", height=320, margin=dict(t=30, b=40, l=50, r=10), yaxis_tickformat=".0%",
                      yaxis_title="share of judged turns", legend=dict(orientation="h", y=1.12))
    return fig


def turns_figure(turns: list[dict[str, Any]], score: str = "knowsim") -> go.Figure:
    """One dot per judged turn: its score (x) and its verdict (y, jittered); click opens the turn."""
    rng = random.Random(0)  # fixed jitter: the chart does not move between reruns
    fig = go.Figure()
    for liked, colour, label in ((True, UP_COLOUR, UP_WORD), (False, DOWN_COLOUR, DOWN_WORD)):
        sel = [t for t in turns if t["liked"] == liked]
        fig.add_scatter(
            x=[t[score] for t in sel], y=[(1 if liked else 0) + rng.uniform(-0.25, 0.25) for t in sel],
            mode="markers", name=label, marker=dict(color=colour, size=9, opacity=0.75),
            customdata=[[t["run"], t["turn"], t["source"]] for t in sel],
            hovertemplate="run %{customdata[0]} turn %{customdata[1]} (%{customdata[2]}): " + score
                          + " %{x:.2f}<extra>click to open</extra>")
    fig.update_layout(height=300, margin=dict(t=30, b=40, l=50, r=10), xaxis_title=f"{score} score of the turn",
                      yaxis=dict(tickvals=[0, 1], ticktext=[DOWN_WORD, UP_WORD], range=[-0.5, 1.5]), showlegend=False)
    return fig


def rating_figure(runs: list[dict[str, Any]], metric: str) -> go.Figure:
    """One dot per rated conversation: KnowSim metric (x) vs the person's rating (y); click opens it."""
    sel = [r for r in runs if r.get("rating") is not None and r.get(metric) is not None]
    colours = [UP_COLOUR if r["correct"] else DOWN_COLOUR if r["correct"] is False else "#8C8C8C" for r in sel]
    fig = go.Figure()
    fig.add_scatter(
        x=[r[metric] for r in sel], y=[r["rating"] for r in sel], mode="markers",
        marker=dict(color=colours, size=10, opacity=0.8, line=dict(color="#333333", width=0.5)),
        customdata=[[r["run"], r["turns"], r["conversation"], r["model"], r["level"]] for r in sel],
        hovertemplate="%{customdata[2]} · %{customdata[3]} · %{customdata[4]}<br>" + metric.upper()
                      + " %{x:.2f}, rating %{y}<extra>click to open</extra>")
    fig.update_layout(height=340, margin=dict(t=30, b=40, l=50, r=10), xaxis_title=metric.upper(),
                      yaxis_title="the person's rating (1–10)", showlegend=False)
    return fig
