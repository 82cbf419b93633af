"""Failure modes: why calibration failed — per turn and per IU for one run, per level across runs,
and before / after a batch what-if (the same label edits applied to every run of a batch or tag).

The five modes (spec §7): REDUNDANT, PREREQ-BLOCKED, EFFECTIVE, OVERLOAD-WASTED, UNDER-ABSORBED.
Across runs counts finished runs unless the Runs filter says otherwise, shows n per cell and the
interquartile range where a cell has more than one run — the same figures as ``python -m
knowsim_core failures`` (both call ``store.search.facts`` and ``knowsim_core.evaluation.analysis``).
Clicking a bar, a heatmap cell or a table cell opens that run and turn on the Simulate page.
"""

import streamlit as st

from knowsim_core.evaluation.analysis import SPREAD_TEXT, STATUS_CHOICES, metric_rows
from knowsim_core.errors import KnowSimError
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import Population
from ui.common import links, nav, share
from ui.common.frame import ensure_frame
from ui.common.resources import get_store
from ui.common.selection import selected_point
from ui.common.tables import MISSING
from ui.runs import failure_views as fv
from ui.runs import keys
from ui.runs.before_after import before_after_tab
from ui.runs.filter_bar import filter_bar
from ui.runs.paper_check import paper_check_tab

STATUS_LABELS = {Population.FINISHED: "Finished runs", Population.ALL: "All runs",
                 Population.UNFINISHED: "Unfinished runs"}


def _cell(v):
    """A table value: a (q1, q3) spread as "q1 – q3", a mean to three places."""
    if isinstance(v, tuple):
        return f"{v[0]:.3f} – {v[1]:.3f}"
    return round(v, 3) if isinstance(v, float) else v


ensure_frame(nav.FAILURES)  # a deep link as a fresh server's first request must still run app.py

st.title("Failure modes")
db = get_store()
# a link with any cross-run filter (/failures?batch=TAG, the Batch page's "Failure modes of this
# batch") opens on "Across runs"; ?run=ID on "One run"
ACROSS_PARAMS = (nav.STATUS, nav.VERSION, *(RunFilter.param(f) for f in keys.FAILURE_FILTERS.fields))
across = any(k in st.query_params for k in ACROSS_PARAMS) and nav.RUN not in st.query_params
compared = nav.BEFORE in st.query_params  # ?before=TAG&after=TAG2: a batch what-if beside its runs
one, many, paper, whatif = st.tabs(["One run", "Across runs", "Paper check", "Before / after"],
                                   default="Before / after" if compared else "Across runs" if across else "One run")

with one:
    recent = db.search.list(limit=200)
    if not recent:
        st.info("No saved runs yet: start one on the Simulate page or open the demo on Home.")
    else:
        ids = [r.id for r in recent]
        wanted = st.query_params.get(nav.RUN)
        if wanted and wanted not in ids:
            try:
                recent.insert(0, db.search.get_row(wanted))
                ids.insert(0, wanted)
            except KnowSimError as exc:
                st.error(str(exc))
        rows = {r.id: r for r in recent}
        label = {i: f"{i[:12]} · {rows[i].question_id} · {rows[i].level} · {rows[i].assistant} · {rows[i].turns} turns" for i in ids}
        back = {v: k for k, v in label.items()}
        picked = st.selectbox("Run", [label[i] for i in ids], index=ids.index(wanted) if wanted in ids else 0, key="fm_run")
        rid = back[picked]
        run = db.runs.load(rid)
        st.subheader("Modes per turn")
        st.plotly_chart(fv.turn_bars_figure(run), key=keys.FAILURE_BARS, on_select="rerun", selection_mode="points")
        st.subheader("IU × turn")
        st.caption("Hover a cell for the reason; blank cells: the IU was not explained that turn. Click a cell "
                   "to open that turn in Simulate with the IU's story over the run.")
        st.plotly_chart(fv.heatmap_figure(run), key=keys.FAILURE_HEAT, on_select="rerun", selection_mode="points")
        for key in (keys.FAILURE_BARS, keys.FAILURE_HEAT):
            p = selected_point(key)
            if p is not None and p.get("x") is not None:
                iu = fv.heatmap_iu(p, run) if key == keys.FAILURE_HEAT else None
                nav.open_in_simulate(rid, int(p["x"]), iu)

with many:
    # the bar Saved runs uses (one RunFilter, its URL and SQL), with the fields a cross-run figure is
    # cut by; every filter is applied in the query, before the limit
    run_filter = filter_bar(db, keys.FAILURE_FILTERS)
    c_status = st.columns(5)[0]
    links.from_url(keys.FAILURE_STATUS, nav.STATUS, list(STATUS_CHOICES))
    status = c_status.selectbox("Runs", STATUS_CHOICES, key=keys.FAILURE_STATUS, format_func=STATUS_LABELS.get,
                                help="Which runs count. Figures meant to be cited use finished runs: a run stopped "
                                     "at turn 1 would pull every mean down.")
    links.to_url(keys.FAILURE_STATUS, nav.STATUS, status, default=Population.FINISHED)
    facts = db.search.facts(run_filter, status=status, limit=fv.FACTS_LIMIT + 1)
    capped, facts = len(facts) > fv.FACTS_LIMIT, facts[: fv.FACTS_LIMIT]
    _, forks, typed = db.search.population_mix(run_filter, status=status)
    mixed = []
    if several := db.search.mixed_versions(run_filter, status=status):  # per question: v1 of one and v3 of another do not mix
        mixed.append("; ".join("graph versions " + ", ".join(f"v{v}" for v in vs) + f" of {qid}"
                               for qid, vs in list(several.items())[:3])
                     + (f" and {len(several) - 3} more questions" if len(several) > 3 else "")
                     + " (choose one under Graph version)")
    if forks:
        mixed.append(f"{forks} fork{'s' if forks != 1 else ''} of other runs")
    if typed:
        mixed.append(f"{typed} run{'s' if typed != 1 else ''} with a side typed by a person")
    if mixed:  # never pool these silently
        st.warning("These figures pool " + "; ".join(mixed) + ". Narrow them with Graph version and Origin.",
                   icon=":material/merge_type:")
    which = STATUS_LABELS[status].lower()
    if not facts:
        st.info(f"No runs with turns match these filters ({which})."
                + (" Choose “all runs” under Runs to include unfinished ones." if status == Population.FINISHED else ""))
    else:
        st.caption(f"{len(facts)} runs · {which}" + (" · the newest shown; narrow the filters" if capped else "")
                   + f" · {SPREAD_TEXT}")
        st.subheader("Shares by knowledge level")
        st.plotly_chart(fv.shares_figure(facts), key=keys.FAILURE_SHARES, on_select="rerun", selection_mode="points")
        share.paper_downloads(facts, key="fm_paper")  # the same files as `failures --figure / --latex`
        st.subheader("KG / DC / CO by level")
        by = st.radio("Rows", ["assistant", "question_id", "preset", "batch"], horizontal=True, key="fm_rows",
                      help="batch: one row per batch tag (runs started one by one are the row without a tag)")
        fig, _ = fv.table_figure(facts, row=by)
        st.plotly_chart(fig, key=keys.FAILURE_TABLE, on_select="rerun", selection_mode="points")
        st.dataframe([{k: _cell(v) for k, v in r.items()} for r in metric_rows(facts, row=by)],
                     hide_index=True, key="fm_table_df", placeholder=MISSING)
        p = selected_point(keys.FAILURE_SHARES)
        target = fv.target_from_shares(p, facts) if p else None
        p = selected_point(keys.FAILURE_TABLE)
        target = target or (fv.target_from_table(p, facts, row=by) if p else None)
        if target:
            nav.open_in_simulate(*target)

with paper:
    paper_check_tab(db)

with whatif:
    before_after_tab(db)
