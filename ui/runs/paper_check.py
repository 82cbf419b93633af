"""The Failure modes page's "Paper check" tab: one population's per-level figures beside the paper's.

The same table as ``python benchmarks/paper_check.py`` (both use
:mod:`knowsim_core.evaluation.paper`), for whichever runs the database holds — so the distance of
the offline demo world (or of a batch of LLM tutors) from what the paper measured is shown, not
claimed. Like with like: Fig. 6 and Table 4 describe the simple-prompt benchmark, so
one assistant's runs are compared with them (``offline/simple`` when present); every assistant's
own rows are shown beside, never pooled. Each row names its source and the population that source
describes. Finished runs only; the stop column counts the overload stop rule, read from the stored
per-turn columns (mastery stops need the records and are not counted here). The adaptive × novice
cell is set beside the paper's recordings per run, and per turn from up to :data:`RECORD_LIMIT`
of its stored records.
"""

from __future__ import annotations

import streamlit as st
from ui.common.tables import static_table
from knowsim_core.vocab import Population

from dataclasses import replace

from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.evaluation.paper import (
    BENCHMARK, CO_TOLERANCE, DC_TOLERANCE, KG_TOLERANCE, KG_TOLERANCE_ABS, PAPER_POPULATION, SHARE_TOLERANCE,
    VALIDATION, check_rows, level_checks, outcome_from_facts, outcome_of, population, recording_rows, strategy_rows,
    task_of,
)

LIMIT = 5000  # newest finished runs read (a 60-question × 3-level × 4-strategy matrix is 720)
RECORD_LIMIT = 60  # adaptive × novice records read for the per-turn comparison
DC_PROXY_WHY = (f"the paper's DC (the legacy proxy) is computed from each turn's record, which this tab reads only "
                f"for the adaptive × novice cell below (up to {RECORD_LIMIT} runs); the stored run summaries it reads "
                "for the rest carry strict DC only. Every cell with the proxy: `python benchmarks/paper_check.py`.")
# the failure modes' columns headed by the badge letters the graphs and the legend use
MODE_LABELS = {m.title: f"{m.letter} %" for m in FAILURE_ORDER}


def paper_check_tab(db) -> None:
    """Draw the tab for ``db`` (a :class:`~knowsim_core.storage.Store`)."""
    st.caption(
        "What the paper measured with real LLM tutors (Fig. 6 failure-mode shares and Table 4 KG / DC / CO: "
        "nine LLM tutors with the simple strategy prompt, 15 turns, no early stop; Table 12 stop turn: the "
        "validation study; \"—\" where the paper's figure is not at hand) beside one assistant's finished runs "
        f"stored here, and the distance. Tolerances: shares ±{SHARE_TOLERANCE:.0f} points, CO ±{CO_TOLERANCE:.2f}, "
        f"KG ±{KG_TOLERANCE:.0%} or ±{KG_TOLERANCE_ABS:.1f}, DC ±{DC_TOLERANCE:.2f} (DC as the paper's code "
        "computes it: the legacy proxy; strict DC beside). Stop turns are 1-based. The paper's 60 questions with "
        "all four offline strategies: `python benchmarks/paper_check.py`."
    )
    c1, c2 = st.columns(2)
    batch = c1.selectbox("Batch", [None, *db.search.values("batch_tag")], key="pc_batch",
                         format_func=lambda v: v or "all", help="only the runs of one `batch --tag NAME`")
    paper_only = c2.toggle("Only the paper's questions", value=True, key="pc_paper_only",
                           help="runs on the paper's 60 questions (math_…, expertqa_…), imported with "
                                "`python -m knowsim_core import <the paper's data folder>`")
    facts = db.search.facts(RunFilter(batch_tag=batch), status=Population.FINISHED, limit=LIMIT)
    if paper_only:
        facts = [f for f in facts if task_of(f.question_id)]
    if not facts:
        st.info("No finished runs on the paper's questions yet. Import the paper's data folder and run a batch "
                "on its questions, or switch off “Only the paper's questions”." if paper_only
                else "No finished runs yet.")
        return
    if not paper_only:  # all questions: say what is pooled, as Across runs does
        _, forks, typed = db.search.population_mix(RunFilter(batch_tag=batch), status=Population.FINISHED)
        several = db.search.mixed_versions(RunFilter(batch_tag=batch), status=Population.FINISHED)
        pooled = [f"{n} {what if n != 1 else one}" for n, what, one in (
            (forks, "forks of other runs", "fork of another run"), (typed, "runs with a typed side", "run with a typed side"))
                  if n] + [f"graph versions {', '.join(f'v{v}' for v in vs)} of {q}" for q, vs in several.items()]
        if pooled:
            st.warning("These figures pool " + "; ".join(pooled[:4]) + ("; …" if len(pooled) > 4 else "")
                       + ". Narrow them on the Across runs tab's filters.", icon=":material/merge_type:")
    series = db.search.overload_series([f.run_id for f in facts])
    outcomes = [outcome_from_facts(f, series.get(f.run_id, [])) for f in facts]
    st.caption(f"{len(outcomes)} finished runs")
    assistants = sorted({o.assistant for o in outcomes})
    chosen = st.selectbox("Compared with Fig. 6 / Table 4", assistants, key="pc_population",
                          index=assistants.index(PAPER_POPULATION) if PAPER_POPULATION in assistants else 0,
                          help="the paper's benchmark ran one strategy prompt (simple) for every tutor: compare "
                               "one assistant's runs, not a pool of strategies")
    st.subheader(f"Per level: {chosen} beside the paper")
    # the paper's population is the same for every row of a source: said once here, not in a column
    table(check_rows(level_checks(population(outcomes, chosen)), population_name=chosen), key="pc_table",
          hide=("paper population",))
    st.caption(f"The paper's populations: Fig. 6 and Table 4 — {BENCHMARK}; Table 12 — {VALIDATION}. "
               f"DC (proxy) “—”: {DC_PROXY_WHY}")
    st.subheader("Each assistant (beside, not pooled)")
    table(strategy_rows(outcomes), key="pc_strategies", labels=MODE_LABELS)
    st.caption(f"{', '.join(m.letter for m in FAILURE_ORDER)} %: the share (%) of explained IU-turns in "
               + ", ".join(m.title for m in FAILURE_ORDER)
               + f" (the graphs' badges). DC (proxy) “—”: {DC_PROXY_WHY}")
    cell = [f for f in facts if f.level == "novice" and f.assistant.endswith("adaptive")]
    if cell:
        by_id = {f.run_id: o for f, o in zip(facts, outcomes)}
        # the per-turn figures need the records: read up to RECORD_LIMIT of the cell's runs
        for f in cell[:RECORD_LIMIT]:
            full = outcome_of(db.runs.load(f.run_id), assistant=f.assistant)
            by_id[f.run_id] = replace(by_id[f.run_id], dc_proxy=full.dc_proxy, turn_sums=full.turn_sums,
                                      turns=full.turns)
        st.subheader("Adaptive × novice beside the paper's four recorded conversations")
        st.caption("Recordings: gpt-4.1 tutor, adaptive strategy, novice (strategy arm). Per run: all four "
                   "(expertqa_001/002, math_003/004); per turn: the two the shared data ships (math_003/004), "
                   f"over up to {RECORD_LIMIT} stored runs of the cell.")
        table(recording_rows(list(by_id.values())), key="pc_recordings")


def table(rows: list[dict], *, key: str, **shown) -> None:
    """Every row and every cell whole, within the page's width: long texts wrap between words in
    taller rows ("1/1 (100 %, 1 ov…", "Studio (sp…" and a cut-off last row in a grid before; then
    a table that ran off the page's right edge at 1400 px)."""
    static_table(rows, key=key, **shown)
