"""What-if: relabel one turn (or swap the graph version) and recompute the rest with the rules.

No model is called: :func:`knowsim_core.engine.whatif.what_if` re-applies the rules to the stored
signals from the edited turn on. The original and the what-if are shown side by side, turn by
turn, so the effect of a single label (e.g. ``shallow`` → ``well_explained``) is visible.
Another graph version re-plays the whole run on it (:func:`knowsim_core.engine.whatif.what_if_version`):
the view says how IUs were matched (by id), what became of each and how τ changed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import streamlit as st
from ui.common.tables import MISSING

from knowsim_core.errors import KnowSimError
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.whatif import what_if
from knowsim_core.engine.signals import IUSignal, TeachingQuality
from knowsim_core.engine.whatif import NEW_IU_START, REMOVED_IU_RULE, RemapReport, what_if_version

QUALITIES: tuple[str, ...] = tuple(q.value for q in TeachingQuality)


def signal_rows(run: RunRecord, turn: int) -> list[dict[str, Any]]:
    """The labels of ``turn`` as editable rows (one per stored signal, in order)."""
    return [
        {"IU": s.id or "(no id)", "teaching_quality": s.teaching_quality, "attempt": s.attempt.value}
        for s in run.turns[turn - 1].signals
    ]


def edited_signals(run: RunRecord, turn: int, delta: Mapping[str, Any] | None) -> tuple[IUSignal, ...] | None:
    """The turn's signals with the table's teaching-quality edits, or None if nothing changed."""
    edited = {int(k): v for k, v in ((delta or {}).get("edited_rows") or {}).items()}
    signals = list(run.turns[turn - 1].signals)
    changed = False
    for i, change in edited.items():
        q = change.get("teaching_quality")
        if 0 <= i < len(signals) and q in QUALITIES and q != signals[i].teaching_quality:
            signals[i] = replace(signals[i], teaching_quality=q, reasoning=f"what-if: set to {q}")
            changed = True
    return tuple(signals) if changed else None


def side_by_side(orig: RunRecord, alt: RunRecord) -> list[dict[str, Any]]:
    """Per turn: IUs known well / partial+ in each, load, and whether the state differs."""
    rows = []
    for a, b in zip(orig.turns, alt.turns):
        def count(rec, lo):
            return sum(1 for e in rec.state_after.values() if int(e.state) >= lo)

        rows.append({
            "turn": a.turn,
            "original known": count(a, 3), "what-if known": count(b, 3),
            "original ≥ partial": count(a, 2), "what-if ≥ partial": count(b, 2),
            "original load": round(a.quantities.effective_load, 2), "what-if load": round(b.quantities.effective_load, 2),
            "changed": a.state_after != b.state_after or a.quantities != b.quantities,
        })
    return rows


def render_whatif(store, run: RunRecord, *, key: str = "wi") -> RunRecord | None:
    """The what-if controls and result; returns the recomputed run (None before an edit)."""
    if not run.turns:
        st.caption("This run has no turns to edit.")
        return None
    turn = st.number_input("Edit turn", 1, len(run.turns), 1, key=f"{key}_turn")
    st.caption("Change a teaching-quality label below; every later turn is recomputed with the rules.")
    tkey = f"{key}_signals_{run.run_id}_{turn}"
    st.data_editor(
        signal_rows(run, int(turn)), key=tkey, hide_index=True, disabled=("IU", "attempt"),
        column_config={"teaching_quality": st.column_config.SelectboxColumn("teaching quality", options=QUALITIES)},
    )
    signals = edited_signals(run, int(turn), st.session_state.get(tkey))
    graph = None
    versions = store.questions.graph_versions(run.question_id) if run.question_id else []
    if versions:
        labels = ["(the run's own graph)"] + [f"v{v.version} · {v.note or '—'}" for v in versions]
        pick = st.selectbox("Graph", labels, key=f"{key}_graph")
        if pick != labels[0]:
            graph = versions[labels.index(pick) - 1].graph
    if signals is None and graph is None:
        return None
    try:
        if graph is None:
            alt, remap = what_if(run, int(turn), signals=signals), None
        else:
            res = what_if_version(run, graph, turn=int(turn), signals=signals)
            alt, remap = res.run, res.remap
    except KnowSimError as exc:
        st.error(str(exc))
        return None
    from ui.runs.compare import metric_deltas

    if remap is not None:
        render_remap(remap)
    st.markdown("**Original (A) vs what-if (B)**")
    st.dataframe(metric_deltas(run, alt), hide_index=True, key=f"{key}_metrics", placeholder=MISSING)
    st.dataframe(side_by_side(run, alt), hide_index=True, key=f"{key}_table", placeholder=MISSING)
    return alt


def render_remap(remap: RemapReport) -> None:
    """What the graph version changed, and the rules used to carry the run over to it."""
    st.markdown("**Re-played on this graph version from turn 1** — IUs matched by id:")
    st.text("\n".join(remap.lines()))  # concept names are user text: shown as plain text
    st.caption(f"States, carry and evidence follow the IU id, so rewording a concept changes nothing; "
               f"{NEW_IU_START}; {REMOVED_IU_RULE}.")
