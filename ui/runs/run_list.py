"""The saved-runs list: its filters, paging, batch groups and table; and the run actions (export,
import, delete, resume, tags). The filter bar is :mod:`ui.runs.filter_bar`; the keys :mod:`ui.runs.keys`.

The list reads only ``RunRow`` summaries (one indexed query per page), so it stays fast with
tens of thousands of runs; a full record is loaded only for the runs the user selects.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import streamlit as st

from knowsim_core import formats, services
from knowsim_core.agents import registry
from knowsim_core.errors import FormatError, KnowSimError
from knowsim_core.formats import csv_export, reference_export
from knowsim_core.services.exporting import studio_json
from knowsim_core.services.runner import resume_run
from knowsim_core.storage import LEASE_SECONDS
from knowsim_core.storage.run_filter import RunFilter
from ui.common import links, nav
from ui.runs import keys
from ui.runs.filter_bar import filter_bar, linked_toggle
from ui.common.safe_text import inline_markdown
from knowsim_core.vocab import UNFINISHED_STATUSES, Population, RunStatus

PAGE_SIZE = 200
ORDER_LABELS = {"newest first": "created_desc", "oldest first": "created_asc",
                "recently updated": "updated_desc", "highest KG": "kg_desc",
                "highest rating (human runs)": "rating_desc", "lowest rating (human runs)": "rating_asc"}
BAD_STATUSES = UNFINISHED_STATUSES


def filters(store) -> dict[str, Any]:
    """Saved runs' filters: the :func:`~ui.runs.filter_bar.filter_bar` (every field) and the list's own
    choices — failed / interrupted only, group by batch, order. Returns ``{"filter": RunFilter, ...}``."""
    run_filter = filter_bar(store, keys.RUN_FILTERS)
    c16, c17, c18 = st.columns([1, 1, 1])
    bad = linked_toggle(c16, "Failed / interrupted only", key=keys.BAD_ONLY, param=nav.BAD_ONLY)
    group = linked_toggle(c17, "Group by batch", key=keys.GROUP, param=nav.GROUP,
                          help="one line per batch tag (runs of no batch on a line of their own), with its means")
    links.from_url(keys.ORDER, nav.ORDER, list(ORDER_LABELS))
    order = c18.selectbox("Order", list(ORDER_LABELS), key=keys.ORDER)
    links.to_url(keys.ORDER, nav.ORDER, order, default=next(iter(ORDER_LABELS)))
    return {"filter": run_filter, "bad_only": bad, "group": group, "order": ORDER_LABELS[order]}


def query(f: dict[str, Any]) -> RunFilter:
    """The runs the page's choices select: the bar's filter, narrowed to failed / interrupted runs
    when asked (every condition is applied in SQL, before the page's LIMIT)."""
    run_filter: RunFilter = f["filter"]
    if f.get("bad_only"):
        run_filter = run_filter.replace(status=BAD_STATUSES)
    return run_filter


def fetch(store, f: dict[str, Any], *, page: int) -> tuple[list, int]:
    """One page of rows and the total count for the filters."""
    run_filter = query(f)
    return (store.search.list(run_filter, order=f["order"], limit=PAGE_SIZE, offset=page * PAGE_SIZE),
            store.search.count(run_filter))


def spends(rows) -> bool:
    """Whether any run on the page used tokens (offline runs never do: no cost is shown for them)."""
    return any(r.tokens_in or r.tokens_out or r.cost_usd for r in rows)


def table_rows(rows, versions: dict[int, int] | None = None, tags: dict[str, list[str]] | None = None
               ) -> list[dict[str, Any]]:
    """Table rows; ``versions`` maps graph version ids to their numbers (``store.questions.graph_version_numbers``),
    ``tags`` run ids to their tags (``store.search.tags_of``).

    Status and the three metrics come right after the id, so they are in view at 1400 px without
    scrolling the table sideways. Token and cost columns appear only when some run on the page
    spent tokens.
    """
    versions, tags = versions or {}, tags or {}
    cost = spends(rows)
    judged = any(r.rating is not None or r.correctness for r in rows)  # human runs: the person's judgments
    return [
        {
            "run": r.id[:12], "status": r.status, "turns": r.turns, "KG": r.kg, "DC": r.dc, "CO": r.co,
            "level": r.level, "question": r.question_id,
            "graph": f"v{versions[r.graph_version_id]}" if r.graph_version_id in versions else "",
            "assistant": r.assistant, "tags": ", ".join(tags.get(r.id, [])), "batch": r.batch_tag or "",
            "user": r.user, "extractor": r.extractor, "preset": r.preset, "seed": r.seed,
            **({"rating": r.rating, "answer": r.correctness or ""} if judged else {}),
            **({"tokens in": r.tokens_in, "tokens out": r.tokens_out, "cost $": round(r.cost_usd or 0.0, 4)}
               if cost else {}),
            "created": r.created[:19], "stop": r.stop_reason or "", "error": r.error,
        }
        for r in rows
    ]


def batch_rows(groups) -> list[dict[str, Any]]:
    """One table row per batch tag (``store.search.batch_groups``)."""
    def mean(v):
        return None if v is None else round(v, 3)
    return [
        {"batch": g.tag or "(no batch: runs made one by one)", "runs": g.runs,
         RunStatus.FINISHED: g.finished, Population.UNFINISHED: g.unfinished, "turns": g.turns,
         "mean KG": mean(g.kg), "mean DC": mean(g.dc), "mean CO": mean(g.co),
         "first": g.first[:19], "last": g.last[:19]}
        for g in groups
    ]



def table_key(f: dict[str, Any], *, page: int) -> str:
    """The run table's widget key: one per list shown (filters, order, page, deletions).

    A dataframe's selection is a list of row *positions* that the browser keeps while the widget
    lives; when the rows under those positions change (a run deleted, a filter changed), the same
    positions would tick runs nobody chose ("Delete 2 selected…" after deleting one).
    A new key per list starts every list with nothing selected.
    """
    view = repr((query(f), f.get("order"), page,  # a frozen dataclass: its repr names every condition
                 st.session_state.get(keys.TABLE_GEN, 0)))
    return keys.table(hashlib.sha1(view.encode()).hexdigest()[:10])


def forget_selection() -> None:
    """After rows vanished: the next table is a new widget with nothing selected."""
    st.session_state[keys.TABLE_GEN] = st.session_state.get(keys.TABLE_GEN, 0) + 1


def exports(store, run_id: str) -> None:
    """Download buttons for the three formats (built only when clicked)."""
    c1, c2, c3 = st.columns(3)
    c1.download_button("Studio JSON", data=lambda: studio_json(store, run_id), file_name=f"{run_id}.json",
                       mime="application/json", on_click="ignore", key=f"dl_studio_{run_id}")
    c2.download_button("Reference JSON", data=lambda: reference_export.dumps(store.runs.load(run_id)),
                       file_name=f"{run_id}_reference.json", mime="application/json", on_click="ignore",
                       key=f"dl_ref_{run_id}")
    c3.download_button("CSV (turns)", data=lambda: csv_export.dumps(store.runs.load(run_id)), file_name=f"{run_id}.csv",
                       mime="text/csv", on_click="ignore", key=f"dl_csv_{run_id}")


def import_runs(store) -> None:
    """Upload a Studio or reference run file: imported whole or not at all.

    It goes through the command line's :func:`~knowsim_core.services.importing.import_path` (every
    run checked, then all saved in one transaction), so a failure part-way stores nothing. The
    importers load when a file comes (through their lazy packages): the list itself needs none.
    """
    up = st.file_uploader("Import runs (Studio JSON or reference run file)", type=["json"], key="runs_import")
    if up is None or st.session_state.get(keys.IMPORTED) == up.file_id:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(up.name).name
        path.write_bytes(up.getvalue())
        try:
            kind = services.importing.detect(path)
            real = formats.realworld.detect(path)
            if kind not in ("studio-run", "reference-runs") or real:
                what = "real conversations" if real else kind.replace("-", " ")
                raise FormatError(f"{up.name} holds {what}, not runs; import it with `python -m knowsim_core import`")
            report = services.importing.import_path(store, path)
        except KnowSimError as exc:
            msg = str(exc).replace(str(path), up.name)  # the upload's name, not a temporary path
            st.error(msg if msg.startswith(up.name) else f"{up.name}: {msg}")
            return
    st.session_state[keys.IMPORTED] = up.file_id
    skipped = f"; skipped {len(report.skipped)}" if report.skipped else ""
    st.success(f"Imported {len(report.runs)} run(s) from {up.name}{skipped}")


def zip_of_studio_files(store, run_ids: list[str]) -> bytes:
    """One zip holding ``<run id>.json`` (Studio JSON, re-importable) per run."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rid in run_ids:
            zf.writestr(f"{rid}.json", studio_json(store, rid))
    return buf.getvalue()


def jsonl_of_runs(store, run_ids: list[str]) -> str:
    """One Studio run per line (the same records as the zip, for pandas / jq)."""
    return "".join(studio_json(store, rid, indent=None) + "\n" for rid in run_ids)


def counted(n: int, noun: str) -> str:
    """``1 run``, ``2 runs`` (never "1 runs")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def export_many(store, run_ids: list[str]) -> None:
    """Download buttons for the selected runs (built only when clicked)."""
    ids = list(run_ids)
    c1, c2 = st.columns(2)
    c1.download_button(f"Zip of {counted(len(ids), 'Studio JSON file')}", data=lambda: zip_of_studio_files(store, ids),
                       file_name=f"knowsim_runs_{len(ids)}.zip", mime="application/zip", on_click="ignore",
                       key="dl_many_zip")
    c2.download_button(f"JSONL ({counted(len(ids), 'run')})", data=lambda: jsonl_of_runs(store, ids),
                       file_name=f"knowsim_runs_{len(ids)}.jsonl", mime="application/jsonl", on_click="ignore",
                       key="dl_many_jsonl")


def _dismiss() -> None:
    st.session_state.pop(keys.CONFIRM_DELETE, None)


def ask_delete(run_ids: list[str]) -> None:
    """Open the confirmation for these runs (the dialog shows while the key names them)."""
    st.session_state[keys.CONFIRM_DELETE] = tuple(run_ids)


def delete_asked(run_ids: list[str]) -> bool:
    return st.session_state.get(keys.CONFIRM_DELETE) == tuple(run_ids)


@st.dialog("Delete runs?", on_dismiss=_dismiss)
def confirm_delete(store, run_ids: list[str]) -> None:
    """Asked while ``keys.CONFIRM_DELETE`` names the runs (closing the dialog clears it)."""
    ids = list(run_ids)
    what = f"Run {ids[0]}" if len(ids) == 1 else f"These {len(ids)} runs ({', '.join(i[:12] for i in ids[:5])}" + (
        ", …)" if len(ids) > 5 else ")")
    st.write(f"{what} and all their turns will be deleted. This cannot be undone.")
    warn_forks(store, ids)
    c1, c2 = st.columns(2)
    if c1.button("Delete", type="primary", key="del_yes"):
        _dismiss()
        try:
            store.runs.delete(ids)
        except KnowSimError as exc:
            st.error(str(exc))
            return
        st.session_state[keys.FLASH] = f"Deleted run {ids[0]}." if len(ids) == 1 else f"Deleted {len(ids)} runs."
        forget_selection()  # the old selection would point at other rows
        st.rerun()
    if c2.button("Cancel", key="del_no"):
        _dismiss()
        st.rerun()


def kept_forks(store, run_ids: list[str]) -> dict[str, list[str]]:
    """``{run: its forks that stay}`` for the runs about to be deleted (forks deleted with them left out)."""
    gone = set(run_ids)
    forks = store.runs.forks_of(run_ids)
    return {p: kids for p in run_ids if (kids := [k for k in forks.get(p, []) if k not in gone])}


def warn_forks(store, run_ids: list[str]) -> None:
    """Before deleting: the forks of these runs that stay, listed, and what they will say of their parent."""
    kept = kept_forks(store, run_ids)
    if not kept:
        return
    lines = [f"- run `{p}`: {len(kids)} fork{'s' if len(kids) != 1 else ''} — "
             + ", ".join(f"`{k}`" for k in kids[:10]) + (f" and {len(kids) - 10} more" if len(kids) > 10 else "")
             for p, kids in kept.items()]
    st.warning("Other runs were forked from " + ("this run" if len(run_ids) == 1 else "runs you are deleting")
               + ". The forks stay, with their turns; each will name its parent as a **deleted run** (its id "
               "is kept for that):\n" + "\n".join(lines), icon=":material/call_split:")


def lineage(store, run_id: str) -> None:
    """A fork's line: the run and turn it came from — a link while that run is stored, "deleted
    run …" once it is not — and the forks made from this run."""
    parent = services.fork.parent_of(store, store.runs.load(run_id))
    if parent is not None:
        row = st.container(horizontal=True, vertical_alignment="center")
        row.markdown(f":material/call_split: A fork of {parent.words()} at turn {parent.turn}.")
        if parent.stored:
            nav.link(row, nav.SIMULATE, "Open the original", params=nav.simulate_params((parent.run_id,), parent.turn))
    kids = store.runs.forks_of([run_id]).get(run_id, [])
    if kids:
        st.caption(f"Forked {len(kids)} time{'s' if len(kids) != 1 else ''}: " + ", ".join(f"`{k}`" for k in kids[:10])
                   + (f" and {len(kids) - 10} more" if len(kids) > 10 else ""))


def open_note(row) -> str:
    """What an ``open`` run is, said where it is selected."""
    return (f"Open: played in the Studio and not ended (its tab may be closed). KG / DC / CO are its {row.turns} "
            f"turn{'s' if row.turns != 1 else ''} so far; Open in Simulate plays on from turn {row.turns}.")


def resume(store, run_id: str) -> None:
    """Continue an interrupted or failed run to its end with the adapters it was started with.

    A run with a typed side cannot play to its end here: the next message is the researcher's. It
    opens in Simulate at its last turn, where Send continues it (resumed here, it would be claimed
    as ``running`` and stop on the missing message, left ``running`` and out of the "failed /
    interrupted" filter)."""
    row = store.search.get_row(run_id)
    if any(registry.spec_of(agent).human for agent in (row.assistant, row.user)):
        nav.open_in_simulate(run_id, row.turns)
        return
    try:
        live = resume_run(store, run_id, lease_seconds=LEASE_SECONDS)  # held like any run the app plays
        bar = st.progress(0.0, text="resuming…")
        total = live.run.params.max_turns
        live.run_to_end(progress=lambda t: bar.progress(min(1.0, t.turn / total), text=f"turn {t.turn}"))
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state[keys.FLASH] = f"Run {run_id} resumed and finished."
    forget_selection()  # under "Failed / interrupted only" its row leaves the list: no other run takes its place
    st.rerun()


def show_batch(tag: str) -> None:
    """Leave the batch groups for the runs of one batch (a button callback: runs before the widgets);
    ``""`` (:data:`~ui.runs.filter_bar.NO_BATCH`) lists the runs made one by one."""
    st.session_state[keys.RUN_FILTERS.of("batch_tag")] = tag
    st.session_state[keys.GROUP] = False


def tag_editor(store, run_id: str) -> None:
    """The run's tags, each removable, and a box to add more (comma-separated)."""
    have = store.search.tags_of([run_id]).get(run_id, [])
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.markdown("**Tags:**" + ("" if have else " none yet"))
    for t in have:
        if row.button(inline_markdown(t), key=f"runs_untag_{run_id}_{t}", icon=":material/close:", help=inline_markdown(f"remove the tag {t!r}")):
            store.runs.remove_tag(run_id, t)
            forget_selection()  # under that tag's filter its row leaves the list: no other run takes its place
            st.rerun()
    with st.form(f"runs_tag_form_{run_id}", clear_on_submit=True, border=False):
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        new = c1.text_input("Add tags", key=f"runs_new_tag_{run_id}", placeholder="e.g. baseline, ablation-2",
                            help="comma-separated; filter by a tag above or with `failures --tag TAG`")
        if c2.form_submit_button("Add", icon=":material/sell:"):
            try:
                added = store.runs.add_tags(run_id, [t for t in new.split(",") if t.strip()] or [""])
            except KnowSimError as exc:
                st.error(str(exc))
                return
            st.session_state[keys.FLASH] = f"Tagged run {run_id[:12]}: {', '.join(added) or 'no new tag'}."
            st.rerun()
