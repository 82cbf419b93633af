"""What-if: relabel a turn (or swap the graph version), recompute the rest with the rules, and keep
the result as a run of its own.

No model is called: a table edit becomes a :class:`~knowsim_core.engine.whatif.LabelEdit` (the
``whatif --set`` syntax) and :func:`knowsim_core.engine.whatif.apply_edits` re-applies the rules to
the stored signals from the edited turn on — the command line's path. The original and the what-if
are shown side by side, turn by turn, with why they differ (the Compare view's first divergence),
so the effect of a single label (e.g. ``shallow`` → ``well_explained``) is visible. Another graph
version re-plays the whole run on it (:func:`knowsim_core.engine.whatif.what_if_version`): the view
says how IUs were matched (by id), what became of each and how τ changed. **Save as a run** stores
it (:func:`knowsim_core.services.whatif.save`): linked to its source, its edits recorded, tagged.
"""

from __future__ import annotations

from typing import Any, Mapping

import streamlit as st

from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.whatif import (
    ATTEMPT_VALUES, NEW_IU_START, QUALITY_VALUES, REMOVED_IU_RULE, LabelEdit, RemapReport, apply_edits,
    what_if_version,
)
from knowsim_core.errors import KnowSimError
from knowsim_core.evaluation.divergence import diff_runs
from knowsim_core.services import whatif as whatif_service
from ui.common.safe_text import inline_markdown
from ui.common.tables import MISSING
from ui.runs import keys
from ui.runs.compare import metric_deltas
from ui.runs.run_list import forget_selection

QUALITIES: tuple[str, ...] = QUALITY_VALUES
NO_ID = "(no id)"


def signal_rows(run: RunRecord, turn: int) -> list[dict[str, Any]]:
    """The labels of ``turn`` as editable rows (one per stored signal, in order)."""
    return [
        {"IU": s.id or NO_ID, "teaching_quality": s.teaching_quality, "attempt": s.attempt.value}
        for s in run.turns[turn - 1].signals
    ]


def table_edits(run: RunRecord, turn: int, delta: Mapping[str, Any] | None) -> list[LabelEdit]:
    """The table's changes as label edits of ``turn`` (a row whose values did not change is none)."""
    edited = {int(k): v for k, v in ((delta or {}).get("edited_rows") or {}).items()}
    signals = run.turns[turn - 1].signals
    out = []
    for i, change in sorted(edited.items()):
        if not 0 <= i < len(signals) or signals[i].id is None:
            continue
        s = signals[i]
        q = change.get("teaching_quality")
        a = change.get("attempt")
        quality = q if q in QUALITIES and q != s.teaching_quality else None
        attempt = a if a in ATTEMPT_VALUES and a != s.attempt.value else None
        if quality or attempt:
            out.append(LabelEdit(turn, s.id, quality, attempt))
    return out


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
    turn = int(st.number_input("Edit turn", 1, len(run.turns), 1, key=f"{key}_turn"))
    st.caption("Change a teaching-quality or user-attempt label below; every later turn is recomputed with the rules "
               "(the messages stay as recorded).")
    tkey = f"{key}_signals_{run.run_id}_{turn}"
    st.data_editor(
        signal_rows(run, turn), key=tkey, hide_index=True, disabled=("IU",),
        column_config={"teaching_quality": st.column_config.SelectboxColumn("teaching quality", options=QUALITIES),
                       "attempt": st.column_config.SelectboxColumn("user attempt", options=ATTEMPT_VALUES)},
    )
    edits = table_edits(run, turn, st.session_state.get(tkey))
    graph, version_number = None, None
    versions = store.questions.graph_versions(run.question_id) if run.question_id else []
    if versions:
        labels = ["(the run's own graph)"] + [f"v{v.version} · {v.note or '—'}" for v in versions]
        pick = st.selectbox("Graph", labels, key=f"{key}_graph")
        if pick != labels[0]:
            chosen = versions[labels.index(pick) - 1]
            graph, version_number = chosen.graph, chosen.version
    if not edits and graph is None:
        return None
    try:
        alt = apply_edits(run, edits).run
        remap = None
        if graph is not None:
            res = what_if_version(alt, graph)
            alt, remap = res.run, res.remap
    except KnowSimError as exc:
        st.error(str(exc))
        return None
    if remap is not None:
        render_remap(remap)
    if edits:
        st.caption("Edits: " + inline_markdown("; ".join(e.spec() for e in edits)))
    st.markdown("**Original (A) vs what-if (B)**")
    st.info(inline_markdown(diff_runs(run, alt).headline()), icon=":material/call_split:")
    st.dataframe(metric_deltas(run, alt), hide_index=True, key=f"{key}_metrics", placeholder=MISSING)
    st.dataframe(side_by_side(run, alt), hide_index=True, key=f"{key}_table", placeholder=MISSING)
    _save_form(store, run, edits, version_number, key=key)
    return alt


def _save_form(store, run: RunRecord, edits: list[LabelEdit], version_number: int | None, *, key: str) -> None:
    """Store the what-if as a run of its own (linked to ``run``, its edits recorded, tagged)."""
    with st.form(f"{key}_save_{run.run_id}", border=False):
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        tags = c1.text_input("Tags for the saved what-if", value=whatif_service.DEFAULT_TAG, key=keys.WHATIF_TAGS,
                             help="comma-separated; Saved runs and `failures --tag TAG` filter by them")
        if not c2.form_submit_button("Save as a run", icon=":material/save:"):
            return
    try:
        rid, _ = whatif_service.save(store, str(run.run_id), edits, graph_version=version_number,
                                     tags=[t for t in tags.split(",") if t.strip()])
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state[keys.FLASH] = (f"Saved the what-if as run {rid}, a what-if of run {run.run_id}; "
                                    "it heads the list (newest first).")
    forget_selection()  # the new run takes row 0: the old selection would point at another run
    st.rerun()


def render_remap(remap: RemapReport) -> None:
    """What the graph version changed, and the rules used to carry the run over to it."""
    st.markdown("**Re-played on this graph version from turn 1** — IUs matched by id:")
    st.text("\n".join(remap.lines()))  # concept names are user text: shown as plain text
    st.caption(f"States, carry and evidence follow the IU id, so rewording a concept changes nothing; "
               f"{NEW_IU_START}; {REMOVED_IU_RULE}.")
