"""The saved-runs list: filters, full-text search, paging, row selection; and the run actions.

The list reads only ``RunRow`` summaries (one indexed query per page), so it stays fast with
tens of thousands of runs; a full record is loaded only for the runs the user selects.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from knowsim_core.config import LEVELS
from knowsim_core.errors import KnowSimError
from knowsim_core.formats import csv_export, reference_export, studio
from knowsim_core.formats.importers import read_runs
from knowsim_core.runner import resume_run
from knowsim_core.storage import LEASE_SECONDS

PAGE_SIZE = 200
ORDER_LABELS = {"newest first": "created_desc", "oldest first": "created_asc",
                "recently updated": "updated_desc", "highest KG": "kg_desc"}
BAD_STATUSES = ("failed", "interrupted")


def filters(store) -> dict[str, Any]:
    """The filter widgets; returns keyword arguments for ``Store.list_runs``/``count_runs``."""
    c1, c2, c3, c4 = st.columns([2, 1, 2, 2])
    questions = [q.id for q in store.list_questions()]
    q = c1.selectbox("Question", ["all", *questions], key="runs_q")
    lv = c2.selectbox("Level", ["all", *LEVELS], key="runs_level")
    asst = c3.text_input("Assistant id", key="runs_asst", placeholder="e.g. offline/adaptive")
    text = c4.text_input("Search transcripts", key="runs_text", placeholder="words in any message")
    c5, c6, c7 = st.columns([1, 1, 2])
    bad = c5.toggle("Failed / interrupted only", key="runs_bad")
    order = c6.selectbox("Order", list(ORDER_LABELS), key="runs_order")
    version = None
    if q != "all":  # graph versions belong to one question
        versions = {f"v{v.version}" + (f" · {v.note}" if v.note else ""): v.id for v in store.graph_versions(q)}
        picked = c7.selectbox("Graph version", ["all", *versions], key="runs_graph_version",
                              help="only runs simulated on this version of the question's IU graph")
        version = versions.get(picked)
    return {
        "question_id": None if q == "all" else q, "level": None if lv == "all" else lv,
        "assistant": asst.strip() or None, "text": text.strip() or None, "bad_only": bad,
        "graph_version_id": version, "order": ORDER_LABELS[order],
    }


def fetch(store, f: dict[str, Any], *, page: int) -> tuple[list, int]:
    """One page of rows and the total count for the filters."""
    base = {k: f.get(k) for k in ("question_id", "level", "assistant", "text", "graph_version_id")}
    if f["bad_only"]:  # one query: the statuses are filtered in SQL, before the page's LIMIT
        base["status"] = BAD_STATUSES
    return (store.list_runs(**base, order=f["order"], limit=PAGE_SIZE, offset=page * PAGE_SIZE),
            store.count_runs(**base))


def table_rows(rows, versions: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Table rows; ``versions`` maps graph version ids to their numbers (``Store.graph_version_numbers``)."""
    versions = versions or {}
    return [
        {
            "run": r.id[:12], "question": r.question_id,
            "graph": f"v{versions[r.graph_version_id]}" if r.graph_version_id in versions else "",
            "level": r.level, "assistant": r.assistant,
            "status": r.status, "turns": r.turns, "KG": r.kg, "DC": r.dc, "CO": r.co,
            "tokens in": r.tokens_in, "tokens out": r.tokens_out, "cost $": round(r.cost_usd or 0.0, 4),
            "created": r.created[:19], "stop": r.stop_reason or "", "error": r.error,
        }
        for r in rows
    ]


def selected_rows(key: str) -> list[int]:
    ev = st.session_state.get(key)
    try:
        return list(ev["selection"]["rows"])
    except (KeyError, TypeError):
        return []


def exports(store, run_id: str) -> None:
    """Download buttons for the three formats (built only when clicked)."""
    c1, c2, c3 = st.columns(3)
    c1.download_button("Studio JSON", data=lambda: studio.dumps(store.load_run(run_id)), file_name=f"{run_id}.json",
                       mime="application/json", on_click="ignore", key=f"dl_studio_{run_id}")
    c2.download_button("Reference JSON", data=lambda: reference_export.dumps(store.load_run(run_id)),
                       file_name=f"{run_id}_reference.json", mime="application/json", on_click="ignore",
                       key=f"dl_ref_{run_id}")
    c3.download_button("CSV (turns)", data=lambda: csv_export.dumps(store.load_run(run_id)), file_name=f"{run_id}.csv",
                       mime="text/csv", on_click="ignore", key=f"dl_csv_{run_id}")


def import_runs(store) -> None:
    """Upload a Studio or reference run file; every run is checked before any is stored."""
    up = st.file_uploader("Import runs (Studio JSON or reference run file)", type=["json"], key="runs_import")
    if up is None or st.session_state.get("runs_imported") == up.file_id:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(up.name).name
        path.write_bytes(up.getvalue())
        try:
            runs, skipped = read_runs(path)
        except KnowSimError as exc:
            st.error(f"{up.name}: {exc}")
            return
    if not runs:
        st.error(f"{up.name} holds no runs that can be imported" + (f" ({'; '.join(skipped[:3])})" if skipped else ""))
        return
    try:
        ids = [store.save_run(r) for r in runs]
    except KnowSimError as exc:
        st.error(f"{up.name}: {exc}")
        return
    st.session_state["runs_imported"] = up.file_id
    st.success(f"Imported {len(ids)} run(s) from {up.name}" + (f"; skipped {len(skipped)}" if skipped else ""))


CONFIRM_KEY = "runs_confirm_delete"


def _dismiss() -> None:
    st.session_state.pop(CONFIRM_KEY, None)


@st.dialog("Delete run?", on_dismiss=_dismiss)
def confirm_delete(store, run_id: str) -> None:
    """Asked while ``st.session_state[CONFIRM_KEY]`` names the run (closing the dialog clears it)."""
    st.write(f"Run {run_id} and all its turns will be deleted. This cannot be undone.")
    c1, c2 = st.columns(2)
    if c1.button("Delete", type="primary", key="del_yes"):
        _dismiss()
        try:
            store.delete_run(run_id)
        except KnowSimError as exc:
            st.error(str(exc))
            return
        st.session_state["runs_flash"] = f"Deleted run {run_id}."
        st.rerun()
    if c2.button("Cancel", key="del_no"):
        _dismiss()
        st.rerun()


def resume(store, run_id: str) -> None:
    """Continue an interrupted or failed run to its end with the adapters it was started with."""
    try:
        live = resume_run(store, run_id, lease_seconds=LEASE_SECONDS)  # held like any run the app plays
        bar = st.progress(0.0, text="resuming…")
        total = live.run.params.max_turns
        live.run_to_end(progress=lambda t: bar.progress(min(1.0, t.turn / total), text=f"turn {t.turn}"))
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state["runs_flash"] = f"Run {run_id} resumed and finished."
    st.rerun()
