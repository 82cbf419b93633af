"""Agreement: does KnowSim's reading agree with what people said, and does that replicate?

Per judged turn (the people's thumbs; researchers' given in Simulate are their own series): each
score in the direction it states before scoring, pooled and within conversations, on the whole and
on two fixed parts, with the verdict in words; the ROC curves and each failure mode's rate among
liked vs disliked turns. Per conversation: KG / DC / CO against the person's rating and
correctness, each with a plain reading. Conversations without a reading are counted with their
thumbs. Across tutor models: the paper's sign agreement; and, for a chosen batch, the paper's own
validation cell by cell. Where the reading and the people disagree, turn by turn, IU by IU and against
the answers. Clicking a turn or a conversation opens it on the Simulate page. The same
figures as ``python -m knowsim_core agreement`` (both call :mod:`knowsim_core.evaluation`).
No emoji on this page (chromium without an emoji font draws boxes): material icons and words.
"""

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.evaluation.agreement import collect, to_json
from knowsim_core.evaluation.agreement_words import with_baselines
from knowsim_core.evaluation.simulated_agreement import NoMatch, validate
from knowsim_core.storage.run_filter import RunFilter
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.resources import db_path, get_store
from ui.common.selection import selected_point
from ui.common.tables import MISSING
from ui.people import agreement_view as av
from ui.people import disagreement_view as dv
from ui.people import keys

ensure_frame(nav.AGREEMENT)  # a deep link as a fresh server's first request must still run app.py


@st.cache_data(show_spinner="Computing agreement (bootstrap intervals)…", max_entries=8)
def _report(path: str, extractor: str | None, split: tuple[str, ...], simulated: tuple[str, ...],
            fingerprint: tuple) -> dict:
    """The agreement report; recomputed when runs or judgments change (``fingerprint``)."""
    a = collect(get_store(), extractor=extractor, split=frozenset(split) or None)
    report = to_json(a)
    if simulated:
        try:
            report["simulated"] = validate(get_store(), a, list(simulated))
        except NoMatch as exc:
            report["simulated"] = {"refused": str(exc)}
    return report


store = get_store()
st.title("Agreement")
st.caption("How far KnowSim's reading of conversations agrees with people's judgments — the thumbs people "
           "gave tutor replies, their ratings and whether they solved the problem — with 95% intervals "
           "(bootstrap over conversations), a baseline beside each figure, and the same figures on two fixed "
           "parts of the conversations: a finding that holds on one part only does not replicate. "
           "AUC 0.5 means no better than a coin; ρ 0 means no relation.")
try:
    extractors = sorted({r.extractor for r in store.search.list(RunFilter(user="human"), limit=100_000)} - {"", "none"})
    batches = [g.tag for g in store.search.batch_groups() if g.tag]
    judged = store.judgments.all()
    # any new, changed or withdrawn judgment or run recomputes; an unchanged database reuses the answer
    stamp = hash(tuple((rid, j.turn, j.liked, j.source, j.who, j.created) for rid in sorted(judged) for j in judged[rid]))
    c1, c2 = st.columns(2)
    extractor = c1.selectbox("Readings by extractor", [None, *extractors], key="agr_extractor",
                             format_func=lambda v: v or "all")
    simulated = c2.multiselect("Validate simulated batches against the people", batches, key="agr_simulated",
                               help="The paper's validation: a batch that plays the people's questions, levels "
                                    "and tutors (matched by model id), compared cell by cell")
    with st.expander("Parts: the stated hash split, or name your own", icon=":material/call_split:"):
        named = st.text_area("Part A's conversations (keys like 331:8f7a… or run ids, one a line); empty: the "
                             "hash split", key="agr_split", height=80)
    split = tuple(sorted({ln.strip() for ln in named.splitlines() if ln.strip()}))
    fingerprint = (store.search.count(), stamp)
    report = _report(str(db_path()), extractor, split, tuple(simulated), fingerprint)
except KnowSimError as exc:
    st.error(f"Agreement cannot be computed: {exc}")
    st.stop()

votes, convs, pairs, rep = report["votes"], report["conversations"], report["pairs"], report["replication"]
if not votes["n"] and not votes["researcher"]["n"] and not convs["n"] and not report["unread"]["n"]:
    st.info("Nothing to compare yet: import real conversations with judgments (Home → Import, or "
            "`python -m knowsim_core import ANNOTATIONS.json`), or judge turns yourself in Simulate.")
    st.stop()

st.subheader("Per turn: KnowSim's reading vs the people's thumbs")
down = votes["down_from"]
st.caption(f"{votes['n']} judged turns ({votes['up']} {av.UP_MD}, {votes['down']} {av.DOWN_MD}) in "
           f"{votes['conversations']} runs, from the people in the conversations. The thumbs down come from "
           f"{down['conversations']} conversation(s) and {down['tutors']} tutor(s)"
           + (": " + ", ".join(f"{k} {n}" for k, n in down["by_tutor"].items()) if down["by_tutor"] else "")
           + f". KnowSim score: {votes['scores']['knowsim']['definition']}. {report['split']['note']}."
           + (f" Not scored: {report['unread']['up']} up and {report['unread']['down']} down on "
              f"{report['unread']['n']} conversation(s) without a reading (below)." if report["unread"]["n"] else ""))
cols = st.columns(len(votes["scores"]))
for col, (name, entry) in zip(cols, votes["scores"].items()):
    col.metric(f"AUC · {name.replace('_', ' ')}", av.fmt(entry["auc"]), help=f"{entry['definition']}; "
               f"direction stated before scoring: {entry['direction']}")
    col.caption(f"{entry['direction']} · 95% CI and n: {av.ci_text(entry)}")
verdict = rep["scores"]["knowsim"]["verdict"]
beaten = [b for b, where in rep["versus_baselines"].items() if where["whole"] != "above the baseline"]
# green only when the score holds on both parts *and* stands above every baseline
(st.success if verdict == "replicates" and not beaten else st.warning)(
    f"KnowSim's turn score on the two parts: **{with_baselines(verdict, [b.replace('_', ' ') for b in beaten])}**. "
    f"{votes['scores']['knowsim']['reading']}.",
    icon=av.verdict_icon(verdict) if not beaten else ":material/warning:")
for b, where in rep["versus_baselines"].items():
    st.markdown(f":material/compare_arrows: Against the {b.replace('_', ' ')} baseline "
                f"({report['baselines'][b]['direction']}): whole **{where['whole']}**; part A {where['A']}; "
                f"part B {where['B']}.")
st.dataframe(av.replication_rows(report), hide_index=True, key="agr_replication", placeholder=MISSING)
for reader_note in report.get("reader", {}).values():
    st.caption(f"{reader_note['verdicts_rest_on']} {reader_note['text']}")
researcher = votes["researcher"]
if researcher["n"]:
    st.caption(f"Researchers' own thumbs (their own series, not in the figures above): {researcher['n']} "
               f"({researcher['up']} up, {researcher['down']} down); KnowSim score AUC "
               f"{av.ci_text(researcher['scores']['knowsim'])}.")
people_turns = [t for t in report["turns"] if t["source"] == "person"]
left, right = st.columns(2)
with left:
    st.plotly_chart(av.roc_figure(people_turns, votes["scores"]), key="agr_roc")
with right:
    st.plotly_chart(av.modes_figure(votes["modes"]), key="agr_modes")
st.caption("Click a turn to open it in Simulate at that turn.")
st.plotly_chart(av.turns_figure(report["turns"]), key=keys.AGREEMENT_TURNS, on_select="rerun", selection_mode="points")

st.subheader("Per conversation: KnowSim metrics vs the person's rating and correctness")
st.dataframe(av.conversation_rows(report), hide_index=True, key="agr_rating_table", placeholder=MISSING)
st.markdown(av.conversation_readings(report))
unread = report["unread"]
st.caption(f"Without a reading: {unread['n']} conversation(s) with {unread['up']} thumbs up and {unread['down']} "
           f"down, {unread['rated']} rated — {unread['note']}.")
if unread["n"]:
    st.dataframe(av.unread_rows(report), hide_index=True, key="agr_unread", placeholder=MISSING)
metric = st.radio("Metric", [m for m in convs["rating"]], horizontal=True, key="agr_metric",
                  format_func=str.upper) or "kg"
st.caption("Green: solved correctly; orange: not. Click a conversation to open it in Simulate.")
st.plotly_chart(av.rating_figure(report["runs"], metric), key=keys.AGREEMENT_SCATTER, on_select="rerun", selection_mode="points")

dv.render_disagreement(report)  # where the reading and the people part: per turn, per IU, per answer

st.subheader("Tutor models: the paper's sign agreement on the people's conversations")
st.markdown(f"Within an expertise level, pairs of tutor models with at least {pairs['min_cell']} conversations each "
            f"whose ratings differ clearly (|Cliff's δ| ≥ {pairs['cliffs_delta_min']}): does the sign of the difference "
            f"in mean {pairs['metric'].upper()} match the people's? **{pairs['note']}** "
            f"(one-sided binomial p = {av.fmt(pairs['p'], 3)}; conclusive: {'yes' if pairs['conclusive'] else 'no'}).")
st.caption("Conversations per cell: " + ", ".join(f"{k}: {n}" for k, n in pairs["cells"].items())
           + (f"; {pairs['unread_rated']} rated conversation(s) without a reading are in no cell (no KG)"
              if pairs.get("unread_rated") else ""))
if report.get("excluded"):
    st.caption("Left out: " + ", ".join(f"{n} {k}" for k, n in report["excluded"].items()))

if "simulated" in report:
    sim = report["simulated"]
    st.subheader("Simulated batches against the people, cell by cell (the paper's validation)")
    if "refused" in sim:
        st.error(sim["refused"], icon=":material/block:")
    else:
        t = sim["threshold"]
        st.caption(f"Cells: {sim['note']}. Sign agreement over pairs of tutors within a level whose people's "
                   f"ratings differ by |Cliff's δ| ≥ {t['cliffs_delta_min']} (≥ {t['min_cell']} rated people per "
                   f"cell), conclusive with ≥ {t['min_pairs']} pairs and p < {t['alpha']}.")
        for user, entry in sim["simulators"].items():
            st.markdown(f"**User simulator {user}**: {entry['matched_runs']} of {entry['runs']} runs match a person")
            if "refused" in entry:
                st.warning(f"Not compared: {entry['refused']}", icon=":material/block:")
                continue
            st.dataframe(av.simulated_rows(entry), hide_index=True, key=f"agr_sim_{user}", placeholder=MISSING)
            st.dataframe([{"metric": m.upper(), "direction": sim["directions"][m], "sign agreement": s["note"],
                           "Spearman vs rating (z within level)": e["rating"]["rho"],
                           "Spearman vs correct": e["correct"]["rho"], "cells": e["rating"]["cells"]}
                          for (m, s), e in zip(entry["sign"].items(), entry["spearman"].values())],
                         hide_index=True, key=f"agr_simfig_{user}", placeholder=MISSING)

for key in (keys.AGREEMENT_TURNS, keys.AGREEMENT_SCATTER):
    point = selected_point(key)
    if point and point.get("customdata"):
        nav.open_in_simulate(str(point["customdata"][0]), int(point["customdata"][1]))
