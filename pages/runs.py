"""Saved runs: filter and search, group by batch, open at any turn, compare two, what-if, export / import, delete, resume.

Select one row for its actions, two rows to compare them side by side, any number to export (one zip or
one JSONL) or delete them together.
"""

import streamlit as st

from knowsim_core.agents.registry import spec_of
from knowsim_core.errors import KnowSimError
from knowsim_core.services.fork import parent_of
from knowsim_core.services.whatif import describe as describe_whatif
from knowsim_core.vocab import RunStatus
from ui.common import nav, share
from ui.common.frame import ensure_frame
from ui.common.resources import get_store
from ui.common.safe_text import inline_markdown
from ui.common.selection import selected_rows
from ui.common.tables import MISSING
from ui.runs import keys, run_list
from ui.runs.compare import render_compare
from ui.runs.whatif import render_whatif

ensure_frame(nav.RUNS)  # a deep link as a fresh server's first request must still run app.py

st.title("Saved runs")
db = get_store()
if flash := st.session_state.pop(keys.FLASH, None):
    st.success(flash)

db.runs.mark_dead()  # a process that died leaves its run interrupted; a closed tab leaves its run open
f = run_list.filters(db)
if f["group"]:  # one line per batch tag; picking one lists its runs
    groups = db.search.batch_groups(run_list.query(f), unbatched=True)  # runs of no batch are a group too
    if not groups:
        st.info("No batch runs match these filters: `python -m knowsim_core batch --tag NAME` makes some.")
    st.dataframe(run_list.batch_rows(groups), key=keys.BATCHES, on_select="rerun", selection_mode="single-row",
                 hide_index=True, placeholder=MISSING)
    picked = [groups[i].tag for i in selected_rows(keys.BATCHES) if i < len(groups)]
    if picked:
        st.button(f"Show the runs of batch {picked[0]}" if picked[0] else "Show the runs made one by one",
                  key="runs_show_batch", on_click=run_list.show_batch, args=(picked[0],))
    st.stop()
page = st.number_input("Page", 1, value=1, key="runs_page", width=140) - 1  # a number box, not a full-width bar
try:
    rows, total = run_list.fetch(db, f, page=page)
except KnowSimError as exc:
    st.error(str(exc))
    st.stop()
caption = f"{run_list.counted(total, 'run')} match · showing {len(rows)}"
if run_list.spends(rows):  # offline runs spend nothing: no token or cost figures for them
    caption += (f" · tokens on this page: {sum(r.tokens_in for r in rows):,} in / "
                f"{sum(r.tokens_out for r in rows):,} out · cost ${sum(r.cost_usd or 0.0 for r in rows):.4f}")
st.caption(caption)
if any(spec_of(r.assistant).recorded for r in rows):
    st.caption("Runs whose assistant is **recorded/…** (user **human**) are readings of human conversations: the "
               "messages are what a real person and tutor wrote; KnowSim's extractor and rules only read them.")
versions = db.questions.graph_version_numbers([r.graph_version_id for r in rows])
tags = db.search.tags_of([r.id for r in rows])
table = run_list.table_key(f, page=page)
st.dataframe(run_list.table_rows(rows, versions, tags), key=table, on_select="rerun", selection_mode="multi-row", hide_index=True, placeholder=MISSING)
chosen = [rows[i] for i in selected_rows(table) if i < len(rows)]

if chosen:
    ids = [r.id for r in chosen]
    with st.container(border=True):
        st.markdown(f"**{len(ids)} selected** · export or delete them together")
        run_list.export_many(db, ids)
        if st.button(f"Delete {len(ids)} selected…", key="runs_delete_many"):
            run_list.ask_delete(ids)
if len(chosen) == 1:
    r = chosen[0]
    st.subheader(inline_markdown(f"Run {r.id[:12]} · {r.question_id} · {r.level} · {r.assistant} · {r.status}"))
    if r.error:
        st.error(r.error)
    record = db.runs.load(r.id)
    parent = parent_of(db, record)
    if what := describe_whatif(record, source=parent.words() if parent else None):  # a saved what-if: its source, its edits
        st.caption(inline_markdown(what[0].upper() + what[1:]))
    if r.status == RunStatus.OPEN:
        st.info(run_list.open_note(r), icon=":material/pending:")
    run_list.lineage(db, r.id)
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1])
    turn = c1.number_input("Turn", 0, max(r.turns, 0), r.turns, key="runs_open_turn")
    if c2.button("Open in Simulate", key="runs_open"):
        nav.open_in_simulate(r.id, int(turn))
    if r.status in run_list.BAD_STATUSES and c3.button("Resume", key="runs_resume"):
        run_list.resume(db, r.id)
    if c4.button("Delete…", key="runs_delete"):
        run_list.ask_delete([r.id])
    run_list.tag_editor(db, r.id)
    run_list.exports(db, r.id)
    share.replay_button(db, [r.id], key="runs_replay")
    with st.expander("What-if: relabel a turn or use another graph version"):
        render_whatif(db, record, key="wi")
elif len(chosen) == 2:
    st.subheader("Compare")
    share.replay_button(db, [c.id for c in chosen], key="runs_replay_pair")
    render_compare(db.runs.load(chosen[0].id), db.runs.load(chosen[1].id), key="cmp")
elif len(chosen) > 2:
    st.info("Select one run for its actions or two runs to compare them; any number to export or delete them.")
if chosen and run_list.delete_asked([r.id for r in chosen]):
    run_list.confirm_delete(db, [r.id for r in chosen])

with st.expander("Import runs"):
    run_list.import_runs(db)
