"""The turn card: messages, per-IU labels, transitions, failure modes, stop votes, running metrics.

Every text here is model or user text, so it is shown with Streamlit elements that escape HTML
(markdown without ``unsafe_allow_html``, dataframes, captions) — never raw HTML — and messages
go through :func:`~ui.common.safe_text.inline_markdown` first: no remote image loads, no heading or
table takes over the card.
"""

from __future__ import annotations

import streamlit as st

from knowsim_core.evaluation.explain import explain_turn, iu_history
from knowsim_core.engine.metrics import PROXY_DC_REASON, kg_line, summary
from knowsim_core.engine.records import recorded_proxy_dc
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.signals import AttemptType, TeachingQuality

from ui.common.safe_text import inline_markdown
from ui.common.theme import glossary_help, state_badge
from ui.common.tables import MISSING


def running_metrics(run: RunRecord, turn: int):
    """KG / DC / CO over the first ``turn`` turns."""
    turns = run.turns[:turn]
    final = turns[-1].state_after if turns else run.initial_state
    return summary(run.initial_state, final, [t.quantities for t in turns])


def render_metrics(run: RunRecord, turn: int) -> None:
    m = running_metrics(run, turn)
    turns = run.turns[:turn]
    now = turns[-1].state_after if turns else run.initial_state
    c1, c2, c3 = st.columns(3)
    # the glossary's words, and KG worked out for this run: "KG 14" beside "2 of 14 known well" reads
    # as 14 IUs learnt, where it counts state steps
    c1.metric("Knowledge gain (KG)", str(m.knowledge_gain),
              help=glossary_help("KG") + "\n\n**This run:** " + kg_line(run.initial_state, now) + ".")
    c2.metric("Delivery calibration (DC)", _fmt(m.delivery_calibration), help=glossary_help("DC"))
    c3.metric("Cognitive overload (CO)", _fmt(m.cognitive_overload), help=glossary_help("CO"))
    proxy = recorded_proxy_dc(run, turn)
    if proxy is not None:  # a replayed recording reports the proxy DC: show it beside the strict one
        st.caption(f"Recorded proxy DC: {proxy:.4f} — {PROXY_DC_REASON}.")


# The "why" sentences are the point of these tables: give them a wide column and rows tall enough
# for the grid to wrap them onto three lines instead of cutting them off.
WHY_ROW_HEIGHT = 72
# Tall rows wrap text, so a label column left at its default width broke "articulation" into
# "articulati on": the label columns are as wide as their longest value (~8 px a character at the
# table's 14 px font, plus the cell's padding), and never split inside a word.
LABEL_CHAR_PX, LABEL_PAD_PX = 8, 24


def label_width(values) -> int:
    """Pixels that hold the longest of ``values`` on one line."""
    return LABEL_PAD_PX + LABEL_CHAR_PX * max(len(str(v)) for v in values)


WHY_COLUMNS = {
    "why": st.column_config.TextColumn("why", width="large"),
    "mode": st.column_config.TextColumn("mode", width="medium"),
    "concept": st.column_config.TextColumn("concept", width="medium"),
    "teaching": st.column_config.TextColumn("teaching", width=label_width(TeachingQuality)),
    "attempt": st.column_config.TextColumn("attempt", width=label_width(AttemptType)),
}


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.2f}"


def render_turn_card(run: RunRecord, rec: TurnRecord, *, key: str, messages: bool = True) -> None:
    """The card for one played turn of ``run``; without ``messages`` where the page shows the two
    messages elsewhere. Turn 0 has no card: the page names the question in its header and says what
    plays the first turn (``ui.simulate.view.first_turn_hint``)."""
    if messages:
        with st.chat_message("user"):
            st.markdown(inline_markdown(rec.user_message))
        with st.chat_message("assistant"):
            st.markdown(inline_markdown(rec.assistant_message))
    if rec.extractor_failed:
        st.warning("The extractor returned no usable labels this turn; every IU was treated as not mentioned.")
    for note in rec.notes:
        st.caption(note)
    graph = run.graph
    whys = explain_turn(rec, graph, ceiling_source=run.params.ceiling_source)  # node order, like rec.nodes
    rows = [
        {
            "IU": n.id,
            "concept": graph.node(n.id).concept,
            "teaching": n.quality or "not_mentioned",
            "attempt": n.attempt.value,
            "before": state_badge(n.pre),
            "after": state_badge(n.post),
            "mode": w.mode_name or "",
            "why": w.why,
        }
        for n, w in zip(rec.nodes, whys)
    ]
    mentioned = [r for r in rows if r["teaching"] != "not_mentioned" or r["attempt"] != "none"]
    tab_sig, tab_modes = st.tabs(["Signals this turn", "Failure modes & stop votes"])
    with tab_sig:
        if mentioned:
            st.dataframe(mentioned, hide_index=True, key=f"{key}_signals",
                         column_config=WHY_COLUMNS, row_height=WHY_ROW_HEIGHT, placeholder=MISSING)
        else:
            st.caption("No IU was mentioned or attempted this turn.")
        moves = [f"{i}: {state_badge(a)} → {state_badge(b)}" for i, a, b in rec.transitions]
        st.markdown("**Transitions:** " + ("; ".join(moves) if moves else "none"))
        # every IU is a larger table re-sent on each step: only on request
        if st.toggle("Show every IU", key=f"{key}_show_all"):
            st.dataframe(rows, hide_index=True, key=f"{key}_all",
                         column_config=WHY_COLUMNS, row_height=WHY_ROW_HEIGHT, placeholder=MISSING)
    with tab_modes:
        explained = {w.id: w for w in whys if w.mode is not None}
        if explained:
            for iu, _ in rec.modes:  # first-mention order, like the paper's lists
                st.markdown(f"- **{explained[iu].mode_name}** {iu}: {explained[iu].why}")
        else:
            st.caption("No IU was explained this turn, so no failure mode applies.")
        st.markdown("**Termination votes:** " + rec.votes.explain())
        if rec.votes.fired:
            st.markdown(stop_text(run, rec))


def stop_text(run: RunRecord, rec: TurnRecord) -> str:
    """What a fired stop rule means for this run: in the paper's virtual mode the run plays on to
    its max turns and only records where it would have stopped (as ``run`` prints); in real mode
    it ended here."""
    first, reason = run.virtual_stop
    if dict(run.meta).get("stop_mode", "virtual") == "real":
        return f"The stop rule fired this turn (**{rec.votes.fired}**) and the run ended here (real stop mode)."
    when = "this turn" if first is not None and first + 1 == rec.turn else f"turn {first + 1} ({reason})"
    return (f"The stop rule fires this turn (**{rec.votes.fired}**). The stop is **virtual**, as in the paper: the "
            f"run plays on to its max turns ({run.params.max_turns}) and records that it would have stopped after "
            f"{when}.")


def render_iu_panel(run: RunRecord, node_id: str, *, turn: int, key: str) -> None:
    """The selected IU: description, state over time, labels per turn, why it moved or not."""
    node = run.graph.node(node_id)
    st.markdown(inline_markdown(f"**{node.id} — {node.concept}**"))  # graph text: nothing fetched
    st.caption(inline_markdown(node.description))
    prereqs = run.graph.index.prereqs.get(node_id, ())
    st.caption(inline_markdown("Prerequisites: " + (", ".join(prereqs) if prereqs else "none (a root IU)")))
    rows = iu_history(run, node_id, upto=turn)
    current = rows[-1]
    st.markdown(f"**Turn {current.turn}:** {current.reason}")
    st.dataframe(
        [
            # mode and why first: the panel is narrow, and they are what it is for (teaching and
            # attempt, cut off at the right before, are in the turn's signal table too)
            {"turn": r.turn, "state": state_badge(r.state), "mode": r.mode, "why": r.reason,
             "teaching": r.teaching, "attempt": r.attempt}
            for r in rows
        ],
        hide_index=True,
        key=f"{key}_history",
        column_config=WHY_COLUMNS,
        row_height=WHY_ROW_HEIGHT,
        placeholder=MISSING,
    )
