"""The Failure modes page's "Paper check" tab: the stored runs' per-level figures beside the paper's.

The same table as ``python benchmarks/paper_check.py`` (both use
:mod:`knowsim_core.evaluation.paper`), for whichever runs the database holds — so the distance of
the offline demo world (or of a batch of LLM tutors) from what the paper measured is shown, not
claimed. Finished runs only; the stop column counts the overload stop rule, read from the stored
per-turn columns (mastery stops need the records and are not counted here).
"""

from __future__ import annotations

import streamlit as st

from knowsim_core.evaluation.paper import (
    CO_TOLERANCE, KG_TOLERANCE, SHARE_TOLERANCE, check_rows, level_checks, outcome_from_facts, recording_rows,
    strategy_rows, task_of,
)

LIMIT = 5000  # newest finished runs read (a 60-question × 3-level × 4-strategy matrix is 720)


def paper_check_tab(db) -> None:
    """Draw the tab for ``db`` (a :class:`~knowsim_core.storage.Store`)."""
    st.caption(
        "What the paper measured with real LLM tutors (Fig. 6 failure-mode shares, Table 4 KG and CO, "
        "Table 12 stop turn; \"—\" where the paper gives no figure) beside the finished runs stored here, "
        f"and the distance. Tolerances: shares ±{SHARE_TOLERANCE:.0f} points, CO ±{CO_TOLERANCE:.2f}, "
        f"KG ±{KG_TOLERANCE:.0%}. Early stops: the overload rule from the stored turns. The paper's "
        "60 questions with all four offline strategies: `python benchmarks/paper_check.py`."
    )
    c1, c2 = st.columns(2)
    batch = c1.selectbox("Batch", [None, *db.run_values("batch_tag")], key="pc_batch",
                         format_func=lambda v: v or "all", help="only the runs of one `batch --tag NAME`")
    paper_only = c2.toggle("Only the paper's questions", value=True, key="pc_paper_only",
                           help="runs on the paper's 60 questions (math_…, expertqa_…), imported with "
                                "`python -m knowsim_core import <the paper's data folder>`")
    facts = db.run_facts(status="finished", batch_tag=batch, limit=LIMIT)
    if paper_only:
        facts = [f for f in facts if task_of(f.question_id)]
    if not facts:
        st.info("No finished runs on the paper's questions yet. Import the paper's data folder and run a batch "
                "on its questions, or switch off “Only the paper's questions”." if paper_only
                else "No finished runs yet.")
        return
    if not paper_only:  # all questions: say what is pooled, as Across runs does (issue 34)
        _, forks, typed = db.population_mix(status="finished", batch_tag=batch)
        several = db.mixed_graph_versions(status="finished", batch_tag=batch)
        pooled = [f"{n} {what if n != 1 else one}" for n, what, one in (
            (forks, "forks of other runs", "fork of another run"), (typed, "runs with a typed side", "run with a typed side"))
                  if n] + [f"graph versions {', '.join(f'v{v}' for v in vs)} of {q}" for q, vs in several.items()]
        if pooled:
            st.warning("These figures pool " + "; ".join(pooled[:4]) + ("; …" if len(pooled) > 4 else "")
                       + ". Narrow them on the Across runs tab's filters.", icon=":material/merge_type:")
    series = db.overload_series([f.run_id for f in facts])
    outcomes = [outcome_from_facts(f, series.get(f.run_id, [])) for f in facts]
    st.caption(f"{len(outcomes)} finished runs")
    st.subheader("Per level, beside the paper")
    st.dataframe(check_rows(level_checks(outcomes)), hide_index=True, key="pc_table")
    st.subheader("Each assistant")
    st.dataframe(strategy_rows(outcomes), hide_index=True, key="pc_strategies")
    rec = recording_rows(outcomes)
    if rec:
        st.subheader("Adaptive × novice beside the paper's four recorded conversations")
        st.dataframe(rec, hide_index=True, key="pc_recordings")
