"""The saved-runs list: filters, full-text search, paging, batch groups, row selection; and the run actions.

The list reads only ``RunRow`` summaries (one indexed query per page), so it stays fast with
tens of thousands of runs; a full record is loaded only for the runs the user selects.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import streamlit as st

from knowsim_core.engine.config import LEVELS
from knowsim_core.errors import KnowSimError
from knowsim_core.formats import csv_export, reference_export, studio
from knowsim_core.services.runner import resume_run
from knowsim_core.storage import LEASE_SECONDS
from ui.questions import question_label

PAGE_SIZE = 200
ORDER_LABELS = {"newest first": "created_desc", "oldest first": "created_asc",
                "recently updated": "updated_desc", "highest KG": "kg_desc"}
BAD_STATUSES = ("failed", "interrupted")


ALL = None  # the "all" choice of every dropdown
FIND_COLUMNS = ("assistant", "user", "extractor", "preset", "batch_tag", "question_id")


def _pick(col, label: str, options: list, *, key: str, help: str | None = None, labels: dict | None = None):
    return col.selectbox(label, [ALL, *options], key=key, help=help,
                         format_func=lambda v: "all" if v is None else (labels or {}).get(v, str(v)))


def filters(store) -> dict[str, Any]:
    """The filter widgets; returns keyword arguments for ``Store.list_runs``/``count_runs``.

    Each dropdown offers the values the database holds (``SELECT DISTINCT`` in SQL); "Find in
    ids" is a contains-search over the agent, preset, batch and question ids, so typing
    "comprehensive" finds ``offline/comprehensive`` without knowing its prefix.
    """
    c1, c2, c3, c4, c5 = st.columns([2, 1, 2, 2, 2])
    questions = store.list_questions()  # grouped by kind, samples first
    q = _pick(c1, "Question", [q.id for q in questions], key="runs_q", labels={q.id: question_label(q) for q in questions})
    lv = _pick(c2, "Level", list(LEVELS), key="runs_level")
    asst = _pick(c3, "Assistant", store.run_values("assistant"), key="runs_asst")
    user = _pick(c4, "User", store.run_values("user"), key="runs_user")
    extractor = _pick(c5, "Extractor", store.run_values("extractor"), key="runs_extractor")
    c6, c7, c8, c9, c10 = st.columns([2, 2, 1, 2, 2])
    pre = _pick(c6, "Preset", store.run_values("preset"), key="runs_preset")
    batches = store.run_values("batch_tag")
    wanted = st.query_params.get("batch")  # Home links a batch's line here as ?batch=TAG (applied once)
    if wanted in batches and st.session_state.get("runs_batch_link") != wanted:
        st.session_state["runs_batch"] = st.session_state["runs_batch_link"] = wanted
    batch = _pick(c7, "Batch", batches, key="runs_batch",
                  help="runs made by `python -m knowsim_core batch --tag NAME`")
    seed = _pick(c8, "Seed", store.run_values("seed"), key="runs_seed")
    find = c9.text_input("Find in ids", key="runs_find", placeholder="e.g. comprehensive",
                         help="part of an assistant, user, extractor, preset, batch or question id")
    text = c10.text_input("Search transcripts", key="runs_text", placeholder="words in any message")
    c11, c12, c13, c14 = st.columns([1, 1, 1, 2])
    bad = c11.toggle("Failed / interrupted only", key="runs_bad")
    group = c12.toggle("Group by batch", key="runs_group", help="one line per batch tag, with its means")
    order = c13.selectbox("Order", list(ORDER_LABELS), key="runs_order")
    version = None
    if q is not None:  # graph versions belong to one question
        versions = {f"v{v.version}" + (f" · {v.note}" if v.note else ""): v.id for v in store.graph_versions(q)}
        picked = c14.selectbox("Graph version", ["all", *versions], key="runs_graph_version",
                               help="only runs simulated on this version of the question's IU graph")
        version = versions.get(picked)
    return {
        "question_id": q, "level": lv, "assistant": asst, "user": user, "extractor": extractor, "preset": pre,
        "batch_tag": batch, "seed": seed, "find": find.strip() or None, "text": text.strip() or None,
        "bad_only": bad, "group": group, "graph_version_id": version, "order": ORDER_LABELS[order],
    }


def query(f: dict[str, Any]) -> dict[str, Any]:
    """The filters as ``Store.list_runs`` keywords (every one applied in SQL, before the page's LIMIT)."""
    base = {k: f.get(k) for k in ("question_id", "level", "assistant", "user", "extractor", "preset", "batch_tag",
                                  "seed", "text", "graph_version_id")}
    if f.get("find"):
        base["find"] = f["find"]
    if f.get("bad_only"):
        base["status"] = BAD_STATUSES
    return base


def fetch(store, f: dict[str, Any], *, page: int) -> tuple[list, int]:
    """One page of rows and the total count for the filters."""
    base = query(f)
    return (store.list_runs(**base, order=f["order"], limit=PAGE_SIZE, offset=page * PAGE_SIZE),
            store.count_runs(**base))


def spends(rows) -> bool:
    """Whether any run on the page used tokens (offline runs never do: no cost is shown for them)."""
    return any(r.tokens_in or r.tokens_out or r.cost_usd for r in rows)


def table_rows(rows, versions: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Table rows; ``versions`` maps graph version ids to their numbers (``Store.graph_version_numbers``).

    Token and cost columns appear only when some run on the page spent tokens.
    """
    versions = versions or {}
    cost = spends(rows)
    return [
        {
            "run": r.id[:12], "question": r.question_id,
            "graph": f"v{versions[r.graph_version_id]}" if r.graph_version_id in versions else "",
            "level": r.level, "assistant": r.assistant, "user": r.user, "extractor": r.extractor,
            "preset": r.preset, "seed": r.seed, "batch": r.batch_tag or "",
            "status": r.status, "turns": r.turns, "KG": r.kg, "DC": r.dc, "CO": r.co,
            **({"tokens in": r.tokens_in, "tokens out": r.tokens_out, "cost $": round(r.cost_usd or 0.0, 4)}
               if cost else {}),
            "created": r.created[:19], "stop": r.stop_reason or "", "error": r.error,
        }
        for r in rows
    ]


def batch_rows(groups) -> list[dict[str, Any]]:
    """One table row per batch tag (``Store.batch_groups``)."""
    def mean(v):
        return None if v is None else round(v, 3)
    return [
        {"batch": g.tag, "runs": g.runs, "finished": g.finished, "unfinished": g.unfinished, "turns": g.turns,
         "mean KG": mean(g.kg), "mean DC": mean(g.dc), "mean CO": mean(g.co),
         "first": g.first[:19], "last": g.last[:19]}
        for g in groups
    ]


TABLE_KEY = "runs_table"
TABLE_GEN = "runs_table_gen"  # bumped when rows vanish (a delete), so no old selection carries over


def table_key(f: dict[str, Any], *, page: int) -> str:
    """The run table's widget key: one per list shown (filters, order, page, deletions).

    A dataframe's selection is a list of row *positions* that the browser keeps while the widget
    lives; when the rows under those positions change (a run deleted, a filter changed), the same
    positions would tick runs nobody chose ("Delete 2 selected…" after deleting one, issue 24).
    A new key per list starts every list with nothing selected.
    """
    import hashlib

    view = repr((sorted((k, repr(v)) for k, v in query(f).items()), f.get("order"), page,
                 st.session_state.get(TABLE_GEN, 0)))
    return f"{TABLE_KEY}_{hashlib.sha1(view.encode()).hexdigest()[:10]}"


def forget_selection() -> None:
    """After rows vanished: the next table is a new widget with nothing selected."""
    st.session_state[TABLE_GEN] = st.session_state.get(TABLE_GEN, 0) + 1


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
    """Upload a Studio or reference run file: imported whole or not at all.

    It goes through the command line's :func:`~knowsim_core.services.importing.import_path` (every
    run checked, then all saved in one transaction), so a failure part-way stores nothing.
    """
    from knowsim_core.errors import FormatError
    from knowsim_core.formats import realworld
    from knowsim_core.services.importing import detect, import_path

    up = st.file_uploader("Import runs (Studio JSON or reference run file)", type=["json"], key="runs_import")
    if up is None or st.session_state.get("runs_imported") == up.file_id:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(up.name).name
        path.write_bytes(up.getvalue())
        try:
            kind = detect(path)
            if kind not in ("studio-run", "reference-runs") or realworld.detect(path):
                what = "real conversations" if realworld.detect(path) else kind.replace("-", " ")
                raise FormatError(f"{up.name} holds {what}, not runs; import it with `python -m knowsim_core import`")
            report = import_path(store, path)
        except KnowSimError as exc:
            msg = str(exc).replace(str(path), up.name)  # the upload's name, not a temporary path
            st.error(msg if msg.startswith(up.name) else f"{up.name}: {msg}")
            return
    st.session_state["runs_imported"] = up.file_id
    skipped = f"; skipped {len(report.skipped)}" if report.skipped else ""
    st.success(f"Imported {len(report.runs)} run(s) from {up.name}{skipped}")


def zip_of_studio_files(store, run_ids: list[str]) -> bytes:
    """One zip holding ``<run id>.json`` (Studio JSON, re-importable) per run."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rid in run_ids:
            zf.writestr(f"{rid}.json", studio.dumps(store.load_run(rid)))
    return buf.getvalue()


def jsonl_of_runs(store, run_ids: list[str]) -> str:
    """One Studio run per line (the same records as the zip, for pandas / jq)."""
    return "".join(studio.dumps(store.load_run(rid), indent=None) + "\n" for rid in run_ids)


def export_many(store, run_ids: list[str]) -> None:
    """Download buttons for the selected runs (built only when clicked)."""
    ids = list(run_ids)
    c1, c2 = st.columns(2)
    c1.download_button(f"Zip of {len(ids)} Studio JSON files", data=lambda: zip_of_studio_files(store, ids),
                       file_name=f"knowsim_runs_{len(ids)}.zip", mime="application/zip", on_click="ignore",
                       key="dl_many_zip")
    c2.download_button(f"JSONL ({len(ids)} runs)", data=lambda: jsonl_of_runs(store, ids),
                       file_name=f"knowsim_runs_{len(ids)}.jsonl", mime="application/jsonl", on_click="ignore",
                       key="dl_many_jsonl")


CONFIRM_KEY = "runs_confirm_delete"


def _dismiss() -> None:
    st.session_state.pop(CONFIRM_KEY, None)


def ask_delete(run_ids: list[str]) -> None:
    """Open the confirmation for these runs (the dialog shows while the key names them)."""
    st.session_state[CONFIRM_KEY] = tuple(run_ids)


def delete_asked(run_ids: list[str]) -> bool:
    return st.session_state.get(CONFIRM_KEY) == tuple(run_ids)


@st.dialog("Delete runs?", on_dismiss=_dismiss)
def confirm_delete(store, run_ids: list[str]) -> None:
    """Asked while ``st.session_state[CONFIRM_KEY]`` names the runs (closing the dialog clears it)."""
    ids = list(run_ids)
    what = f"Run {ids[0]}" if len(ids) == 1 else f"These {len(ids)} runs ({', '.join(i[:12] for i in ids[:5])}" + (
        ", …)" if len(ids) > 5 else ")")
    st.write(f"{what} and all their turns will be deleted. This cannot be undone.")
    c1, c2 = st.columns(2)
    if c1.button("Delete", type="primary", key="del_yes"):
        _dismiss()
        try:
            store.delete_runs(ids)
        except KnowSimError as exc:
            st.error(str(exc))
            return
        st.session_state["runs_flash"] = f"Deleted run {ids[0]}." if len(ids) == 1 else f"Deleted {len(ids)} runs."
        forget_selection()  # the old selection would point at other rows
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


def show_batch(tag: str) -> None:
    """Leave the batch groups for the runs of one batch (a button callback: runs before the widgets)."""
    st.session_state["runs_batch"] = tag
    st.session_state["runs_group"] = False
