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
from knowsim_core.storage.questions import KIND_LABELS, QUESTION_KINDS
from knowsim_core.storage.run_filter import NO_BATCH_URL, RunFilter
from ui import links
from ui.questions import question_label
from ui.safe_text import inline_markdown
from knowsim_core.vocab import UNFINISHED_STATUSES, Population, RunStatus

PAGE_SIZE = 200
ORDER_LABELS = {"newest first": "created_desc", "oldest first": "created_asc",
                "recently updated": "updated_desc", "highest KG": "kg_desc",
                "highest rating (human runs)": "rating_desc", "lowest rating (human runs)": "rating_asc"}
BAD_STATUSES = UNFINISHED_STATUSES


ALL = None  # the "all" choice of every dropdown
NO_BATCH = ""  # the group of runs made one by one (no batch tag), as "Group by batch" lists it
FIND_COLUMNS = ("assistant", "user", "extractor", "preset", "batch_tag", "question_id")


def _pick(col, label: str, options: list, *, key: str, help: str | None = None, labels: dict | None = None):
    return col.selectbox(label, [ALL, *options], key=key, help=help,
                         format_func=lambda v: "all" if v is None else (labels or {}).get(v, str(v)))


ORIGIN_LABELS = {"forked": "forks of a run", "typed": "a side typed by a person", "recorded": "recorded conversations",
                 "agents": "agents only"}
RATED_LABELS = {"rated": "rated by a person", "unrated": "no rating"}


def _linked(col, label: str, options: list, *, key: str, param: str, cast=str, help: str | None = None,
            labels: dict | None = None, url=None):
    """A dropdown filter whose value is also ``?param=`` in the URL (a deep link that survives a reload);
    ``url`` writes a value as the URL text that ``cast`` reads back (when ``str`` of it would not do)."""
    links.from_url(key, param, [ALL, *options], cast=cast)
    value = _pick(col, label, options, key=key, help=help, labels=labels)
    links.to_url(key, param, url(value) if url and value is not ALL else value)
    return value


def _linked_text(col, label: str, *, key: str, param: str, placeholder: str, help: str) -> str:
    links.from_url(key, param)
    value = col.text_input(label, key=key, placeholder=placeholder, help=help)
    links.to_url(key, param, value.strip())
    return value


def _linked_toggle(col, label: str, *, key: str, param: str, help: str | None = None) -> bool:
    links.from_url(key, param, cast=links.flag)
    value = col.toggle(label, key=key, help=help)
    links.to_url(key, param, value, default=False)
    return value


# The filters a bar can show, in this order, with their widget key suffix and label: the widget key is
# f"{prefix}_{suffix}" (runs_q, fm_q …) and the URL parameter is RunFilter's (one owner: run_filter.py).
BAR_FIELDS = {
    "question_id": ("q", "Question"), "level": ("level", "Level"), "assistant": ("asst", "Assistant"),
    "user": ("user", "User"), "extractor": ("extractor", "Extractor"), "preset": ("preset", "Preset"),
    "batch_tag": ("batch", "Batch"), "seed": ("seed", "Seed"), "find": ("find", "Find in ids"),
    "text": ("text", "Search transcripts"), "tag": ("tag", "Tag"), "kind": ("kind", "Source"),
    "origin": ("origin", "Origin"), "graph_version": ("gv", "Graph version"), "rated": ("rated", "Rating"),
    "correctness": ("correctness", "Person's answer"),
}
_HELP = {
    "batch_tag": "runs made by `python -m knowsim_core batch --tag NAME`; (no batch): runs made one by one",
    "find": "part of a run id, or of an assistant, user, extractor, preset, batch or question id",
    "text": "every word must occur in the run's messages",
    "tag": "your tags (add them below, or `run --tag`); a batch's tag works too",
    "kind": "the kind of question: samples, the paper's set, real conversations, yours",
    "origin": "forks of another run, runs where a person typed one side, or agents only",
    "rated": "the rating a run's metadata holds (a person's rating of a real conversation)",
    "correctness": "the correctness of the person's final answer, as their conversation file states it",
}


def filter_bar(store, *, prefix: str, fields: tuple[str, ...] = tuple(BAR_FIELDS), per_row: int = 5) -> RunFilter:
    """The run filters as widgets, each a deep link, five to a row; returns the :class:`RunFilter`.

    Used by Saved runs (``prefix="runs"``, every field) and Failure modes (``prefix="fm"``). The URL
    parameters, their parsing (``?batch=-``: the runs of no batch) and the SQL are
    :class:`RunFilter`'s. Each dropdown offers the values the database holds (``SELECT DISTINCT``);
    "Find in ids" is a contains-search over the run id and the agent, preset, batch and question ids.
    With one question chosen, Graph version picks among that question's versions by name
    (``question=Q&version=2``); otherwise it is a version number across questions (``gv=2``).
    The Person's answer filter shows only when some run holds one.
    """
    values: dict[str, Any] = {}
    shown = [f for f in fields if f != "correctness" or store.search.values("correctness")]
    cols: list = []
    for name in shown:
        if not cols:
            cols = list(st.columns(per_row))
        col = cols.pop(0)
        values[name] = _bar_widget(store, col, name, prefix, values)
    version_id = values.pop("graph_version_id", None)
    batch = values.pop("batch_tag", None)
    text_values = {k: (v.strip() or None) if isinstance(v, str) else v for k, v in values.items()}
    return RunFilter(**text_values, batch_tag=batch if batch not in (None, NO_BATCH) else None,
                     no_batch=batch == NO_BATCH, graph_version_id=version_id)


def _bar_widget(store, col, name: str, prefix: str, values: dict[str, Any]) -> Any:
    suffix, label = BAR_FIELDS[name]
    key, param, help_text = f"{prefix}_{suffix}", RunFilter.param(name), _HELP.get(name)

    def cast(raw: str) -> Any:
        return RunFilter.parse_param(name, raw)

    if name in ("find", "text"):
        return _linked_text(col, label, key=key, param=param, help=help_text,
                            placeholder="e.g. 938e or comprehensive" if name == "find" else "words in any message")
    if name == "question_id":
        questions = store.questions.list()  # grouped by kind, samples first
        return _linked(col, label, [q.id for q in questions], key=key, param=param,
                       labels={q.id: question_label(q) for q in questions})
    if name == "batch_tag":
        return _linked(col, label, [NO_BATCH, *store.search.values("batch_tag")], key=key, param=param,
                       labels={NO_BATCH: "(no batch)"}, help=help_text,
                       cast=lambda raw: NO_BATCH if raw.strip() == NO_BATCH_URL else raw,
                       url=lambda v: NO_BATCH_URL if v == NO_BATCH else v)
    if name == "graph_version" and values.get("question_id") is not None:
        found = {v.version: v for v in store.questions.graph_versions(values["question_id"])}
        picked = _linked(col, label, list(found), key=f"{prefix}_graph_version", param="version", cast=int,
                         labels={n: f"v{n}" + (f" · {v.note}" if v.note else "") for n, v in found.items()},
                         help="only runs simulated on this version of the question's IU graph")
        values["graph_version_id"] = found[picked].id if picked in found else None
        return None
    if name == "graph_version":
        if "version" in st.query_params:  # the per-question choice leaves with its question
            del st.query_params["version"]
        numbers = store.search.graph_version_numbers()
        return _linked(col, label, numbers, key=key, param=param, cast=cast, labels={n: f"v{n}" for n in numbers},
                       help="the version number of each run's question graph: do not pool v1 with v3")
    options, labels = {
        "level": (list(LEVELS), None), "kind": (list(QUESTION_KINDS), KIND_LABELS),
        "origin": (list(ORIGIN_LABELS), ORIGIN_LABELS), "rated": (list(RATED_LABELS), RATED_LABELS),
        "tag": (store.search.all_tags(), None),
    }.get(name) or (store.search.values(name), None)
    return _linked(col, label, options, key=key, param=param, cast=cast, labels=labels, help=help_text)


def filters(store) -> dict[str, Any]:
    """Saved runs' filters: the :func:`filter_bar` (every field) and the list's own choices —
    failed / interrupted only, group by batch, order. Returns ``{"filter": RunFilter, ...}``."""
    run_filter = filter_bar(store, prefix="runs")
    c16, c17, c18 = st.columns([1, 1, 1])
    bad = _linked_toggle(c16, "Failed / interrupted only", key="runs_bad", param="bad")
    group = _linked_toggle(c17, "Group by batch", key="runs_group", param="group",
                           help="one line per batch tag (runs of no batch on a line of their own), with its means")
    links.from_url("runs_order", "order", list(ORDER_LABELS))
    order = c18.selectbox("Order", list(ORDER_LABELS), key="runs_order")
    links.to_url("runs_order", "order", order, default=next(iter(ORDER_LABELS)))
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

    view = repr((query(f), f.get("order"), page,  # a frozen dataclass: its repr names every condition
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
    c1.download_button("Studio JSON", data=lambda: studio.dumps(store.runs.load(run_id), judgments=store.judgments.list(run_id)), file_name=f"{run_id}.json",
                       mime="application/json", on_click="ignore", key=f"dl_studio_{run_id}")
    c2.download_button("Reference JSON", data=lambda: reference_export.dumps(store.runs.load(run_id)),
                       file_name=f"{run_id}_reference.json", mime="application/json", on_click="ignore",
                       key=f"dl_ref_{run_id}")
    c3.download_button("CSV (turns)", data=lambda: csv_export.dumps(store.runs.load(run_id)), file_name=f"{run_id}.csv",
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
            zf.writestr(f"{rid}.json", studio.dumps(store.runs.load(rid), judgments=store.judgments.list(rid)))
    return buf.getvalue()


def jsonl_of_runs(store, run_ids: list[str]) -> str:
    """One Studio run per line (the same records as the zip, for pandas / jq)."""
    return "".join(studio.dumps(store.runs.load(rid), indent=None, judgments=store.judgments.list(rid)) + "\n"
                   for rid in run_ids)


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
            store.runs.delete(ids)
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
    """Continue an interrupted or failed run to its end with the adapters it was started with.

    A run with a typed side cannot play to its end here: the next message is the researcher's. It
    opens in Simulate at its last turn, where Send continues it. (Resuming it here claimed it as
    ``running``, then stopped on the missing message: the run stayed ``running`` and left the
    "failed / interrupted" filter, issue 34.)"""
    from knowsim_core.agents import registry
    from ui.nav import open_in_simulate

    row = store.search.get_row(run_id)
    if any(registry.spec_of(agent).human for agent in (row.assistant, row.user)):
        open_in_simulate(run_id, row.turns)
        return
    try:
        live = resume_run(store, run_id, lease_seconds=LEASE_SECONDS)  # held like any run the app plays
        bar = st.progress(0.0, text="resuming…")
        total = live.run.params.max_turns
        live.run_to_end(progress=lambda t: bar.progress(min(1.0, t.turn / total), text=f"turn {t.turn}"))
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state["runs_flash"] = f"Run {run_id} resumed and finished."
    forget_selection()  # under "Failed / interrupted only" its row leaves the list: no other run takes its place
    st.rerun()


def show_batch(tag: str) -> None:
    """Leave the batch groups for the runs of one batch (a button callback: runs before the widgets);
    ``""`` (:data:`NO_BATCH`) lists the runs made one by one."""
    st.session_state["runs_batch"] = tag
    st.session_state["runs_group"] = False


def tag_editor(store, run_id: str) -> None:
    """The run's tags, each removable, and a box to add more (comma-separated)."""
    from knowsim_core.errors import KnowSimError

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
            st.session_state["runs_flash"] = f"Tagged run {run_id[:12]}: {', '.join(added) or 'no new tag'}."
            st.rerun()
