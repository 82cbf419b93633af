"""Agreement: does KnowSim's reading agree with what people said? (issue 21)

Per judged turn (the people's thumbs imported with their conversations and researchers' given in
Simulate): KnowSim's turn score against 👍/👎 as a ROC curve with its AUC and interval, beside the
reply-length baseline, and each failure mode's rate among 👍 vs 👎 turns. Per conversation: KG /
DC / CO against the person's rating and correctness. Across tutor models: the paper's sign
agreement. Clicking a turn or a conversation opens it on the Simulate page. The same figures as
``python -m knowsim_core agreement`` (both call :mod:`knowsim_core.evaluation.agreement`).
"""

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.evaluation.agreement import collect, to_json
from ui import agreement_view as av
from ui.failure_views import selected_point
from ui.frame import ensure_frame
from ui.nav import open_in_simulate
from ui.resources import db_path, get_store

ensure_frame()  # a deep link as a fresh server's first request must still run app.py


@st.cache_data(show_spinner="Computing agreement (bootstrap intervals)…", max_entries=8)
def _report(path: str, extractor: str | None, fingerprint: tuple) -> dict:
    """The agreement report; recomputed when runs or judgments change (``fingerprint``)."""
    return to_json(collect(get_store(), extractor=extractor))


store = get_store()
st.title("Agreement")
st.caption("How far KnowSim's reading of conversations agrees with people's judgments — the thumbs people "
           "gave tutor replies, their ratings and whether they solved the problem — with 95% intervals "
           "(bootstrap over conversations) and a baseline beside each figure. Disagreement is a finding: "
           "KnowSim models absorption from teaching, people judge helpfulness.")
try:
    extractors = sorted({r.extractor for r in store.list_runs(user="human", limit=100_000)} - {"", "none"})
    judged = store.all_judgments()
    # any new, changed or withdrawn judgment or run recomputes; an unchanged database reuses the answer
    stamp = hash(tuple((rid, j.turn, j.liked, j.source, j.who, j.created) for rid in sorted(judged) for j in judged[rid]))
    extractor = st.selectbox("Readings by extractor", [None, *extractors], key="agr_extractor",
                             format_func=lambda v: v or "all")
    fingerprint = (store.count_runs(), stamp)
    report = _report(str(db_path()), extractor, fingerprint)
except KnowSimError as exc:
    st.error(f"Agreement cannot be computed: {exc}")
    st.stop()

votes, convs, pairs = report["votes"], report["conversations"], report["pairs"]
if not votes["n"] and not convs["n"]:
    st.info("Nothing to compare yet: import real conversations with judgments (Home → Import, or "
            "`python -m knowsim_core import ANNOTATIONS.json`), or judge turns yourself in Simulate.")
    st.stop()

st.subheader("Per turn: KnowSim's reading vs 👍 / 👎")
st.caption(f"{votes['n']} judged turns ({votes['up']} 👍, {votes['down']} 👎) in {votes['conversations']} runs — "
           f"{votes['sources']['person']} from the people, {votes['sources']['researcher']} from researchers. "
           f"KnowSim score: {votes['scores']['knowsim']['definition']}.")
cols = st.columns(len(votes["scores"]))
for col, (name, entry) in zip(cols, votes["scores"].items()):
    col.metric(f"AUC · {name.replace('_', ' ')}", av.fmt(entry["auc"]), help=entry["definition"])
    col.caption(f"95% CI and n: {av.ci_text(entry)}")
left, right = st.columns(2)
with left:
    st.plotly_chart(av.roc_figure(report["turns"], votes["scores"]), key="agr_roc")
with right:
    st.plotly_chart(av.modes_figure(votes["modes"]), key="agr_modes")
st.caption("Click a turn to open it in Simulate at that turn.")
st.plotly_chart(av.turns_figure(report["turns"]), key="agr_turns", on_select="rerun", selection_mode="points")

st.subheader("Per conversation: KnowSim metrics vs the person's rating and correctness")
rows = [{"metric": m.upper(), "Spearman ρ": r["spearman"], "Kendall τ": r["kendall"],
         "ρ 95% CI": av.ci_text(r, "spearman"), "AUC for a correct answer": convs["correctness"].get(m, {}).get("auc"),
         "AUC 95% CI": av.ci_text(convs["correctness"].get(m, {}))} for m, r in convs["rating"].items()]
st.dataframe(rows, hide_index=True, key="agr_rating_table")
metric = st.radio("Metric", [m for m in convs["rating"]], horizontal=True, key="agr_metric",
                  format_func=str.upper) or "kg"
st.caption("Green: solved correctly; orange: not. Click a conversation to open it in Simulate.")
st.plotly_chart(av.rating_figure(report["runs"], metric), key="agr_scatter", on_select="rerun", selection_mode="points")

st.subheader("Tutor models: the paper's sign agreement")
st.markdown(f"Within an expertise level, pairs of tutor models with at least {pairs['min_cell']} conversations each "
            f"whose ratings differ clearly (|Cliff's δ| ≥ {pairs['cliffs_delta_min']}): does the sign of the difference "
            f"in mean {pairs['metric'].upper()} match the sign of the difference in mean rating? "
            f"**{pairs['note']}** (one-sided binomial p = {av.fmt(pairs['p'], 3)}).")
st.caption("Conversations per cell: " + ", ".join(f"{k}: {n}" for k, n in pairs["cells"].items()))
if report.get("excluded"):
    st.caption("Left out: " + ", ".join(f"{n} {k}" for k, n in report["excluded"].items()))

for key in ("agr_turns", "agr_scatter"):
    point = selected_point(key)
    if point and point.get("customdata"):
        open_in_simulate(str(point["customdata"][0]), int(point["customdata"][1]))
