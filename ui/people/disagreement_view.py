"""Agreement's disagreement view: where KnowSim's reading and the people part company, per turn, per
IU and per answer (:mod:`knowsim_core.evaluation.disagreement`, the same counts ``agreement`` prints).

A click on a turn or an IU opens that turn in Simulate with the IU's story; a click on a
conversation in the answers table lists its IUs' parts in DC. The reader's trust note stays in view
here: every call below is that reader's.
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from knowsim_core.evaluation.disagreement import CALLS, GOOD_DOWN, NEUTRAL, POOR_UP
from knowsim_core.evaluation.iu_story import DC_PARTS
from ui.common import nav
from ui.common.safe_text import inline_markdown
from ui.common.selection import selected_rows
from ui.common.tables import MISSING
from ui.common.theme import glossary_help
from ui.people import keys
from ui.people.agreement_view import DOWN_MD, DOWN_WORD, UP_MD, UP_WORD, fmt

EVERY = "every judged turn"
KINDS = (GOOD_DOWN, POOR_UP, EVERY)
KIND_LABELS = {GOOD_DOWN: "called good, thumb down", POOR_UP: "called poor, thumb up", EVERY: EVERY}


def call_rows(turns: dict[str, Any]) -> list[dict[str, Any]]:
    """The call × thumb table, one row per call of the reading."""
    return [{"the reading called the turn": call, UP_WORD: turns["table"][call]["up"],
             DOWN_WORD: turns["table"][call]["down"]} for call in CALLS]


def _names(report: dict[str, Any]) -> dict[str, str]:
    return {r["run"]: r["conversation"] for r in report.get("runs", [])}


def turn_rows(turns: dict[str, Any], which: str, names: dict[str, str]) -> list[dict[str, Any]]:
    """The judged turns of one kind (``EVERY``: all), with the IUs the turn explained and their calls."""
    rows = [r for r in turns["rows"] if which == EVERY or r["kind"] == which]
    return [{"conversation": names.get(r["run"], r["run"]), "turn": r["turn"], "tutor": r["model"],
             "thumb": UP_WORD if r["liked"] else DOWN_WORD, "score": round(r["score"], 3), "call": r["call"],
             "IUs explained (mode)": "; ".join(f"{x['iu']} {x['mode']}" for x in r["ius"]) or "none",
             "reply length": int(r["reply_length"]), "run": r["run"]} for r in rows]


def _first_iu(row: dict[str, Any], kinds: tuple[str, ...]) -> str | None:
    return next((x["iu"] for x in row["ius"] if x["kind"] in kinds), row["ius"][0]["iu"] if row["ius"] else None)


def iu_rows(ius: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per conversation and IU: how often the IU's own call agreed with the thumb."""
    return [{"conversation": r["conversation"], "IU": r["iu"], "concept": r["concept"],
             "judged turns it was explained in": r["judged_turns"], "called good, thumb down": r[GOOD_DOWN],
             "called poor, thumb up": r[POOR_UP], "agree": r["agree"], NEUTRAL: r[NEUTRAL],
             "turns in disagreement": ", ".join(map(str, r["turns"])), "run": r["run"]} for r in ius]


def answer_rows(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per conversation with a known answer: the metric, and its pairs against the direction."""
    return [{"conversation": r["conversation"], "answer": "correct" if r["correct"] else "wrong",
             "value": round(r["value"], 3), "pairs with the other answer": r["pairs"],
             "pairs against the direction": r["against"], "tutor": r["model"], "level": r["level"],
             "rating": r["rating"], "run": r["run"]} for r in entry["rows"]]


def dc_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One conversation's IUs with the turns each took each part in DC."""
    return [{"IU": x["iu"], "concept": x["concept"], **{p: x[p] for p in DC_PARTS}} for x in row["dc_parts"]]


def _view(*parts: Any) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:8]


def _trust(report: dict[str, Any]) -> None:
    for note in report.get("reader", {}).values():
        st.info(f"{note['verdicts_rest_on']} {note['text']}", icon=":material/verified_user:")


def _turns(report: dict[str, Any], names: dict[str, str]) -> None:
    d = report["disagreement"]
    t = d["turns"]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Called good, thumb down", t[GOOD_DOWN], help="turns the reading called good that the person gave a "
              "thumb down")
    c2.metric("Called poor, thumb up", t[POOR_UP], help="turns the reading called poor that the person gave a thumb up")
    c3.metric("Agree", t["agree"], help="called good with a thumb up, or poor with a thumb down")
    c4.metric("Called neutral", t[NEUTRAL], help="score 0: nothing explained, only under-absorbed IUs, or as many "
              "good as poor")
    st.dataframe(call_rows(t), hide_index=True, key="agr_dis_calls", placeholder=MISSING)
    which = st.radio("Turns", KINDS, key=keys.DISAGREE_KIND, horizontal=True, format_func=KIND_LABELS.get)
    rows = turn_rows(t, which, names)
    key = keys.disagree_table("turns", _view(which, t["n"]))
    st.caption(f"{len(rows)} turn(s). Click a turn to open it in Simulate with the story of an IU it disagrees on.")
    st.dataframe(rows, hide_index=True, key=key, on_select="rerun", selection_mode="single-row",
                 column_config={"run": None}, placeholder=MISSING)
    picked = [rows[i] for i in selected_rows(key) if i < len(rows)]
    if picked:
        full = next(r for r in t["rows"] if r["run"] == picked[0]["run"] and r["turn"] == picked[0]["turn"])
        nav.open_in_simulate(full["run"], full["turn"], _first_iu(full, (GOOD_DOWN, POOR_UP)))


def _ius(report: dict[str, Any]) -> None:
    ius = report["disagreement"]["ius"]
    rows = iu_rows(ius)
    key = keys.disagree_table("ius", _view(len(rows)))
    st.markdown("**Per IU** — each IU a judged turn explained, called by its own mode (EFFECTIVE good; "
                "UNDER-ABSORBED neutral; the other three poor) beside the person's thumb. Most disagreements "
                "first; click one to open its first turn in disagreement with the IU's story.")
    st.dataframe(rows, hide_index=True, key=key, on_select="rerun", selection_mode="single-row",
                 column_config={"run": None}, placeholder=MISSING)
    picked = [ius[i] for i in selected_rows(key) if i < len(ius)]
    if picked:
        r = picked[0]
        nav.open_in_simulate(r["run"], (r["turns"] or [1])[0], r["iu"])


def _answers(report: dict[str, Any]) -> None:
    answers = report["disagreement"]["answers"]
    if not answers:
        return
    st.markdown("**Against the answers** — every pair of a conversation whose person answered correctly and one "
                "whose person did not; a pair runs against the metric when the correct one has the worse value "
                "(a tie counts one half).")
    metrics = list(answers)
    metric = st.radio("Metric", metrics, key=keys.DISAGREE_METRIC, horizontal=True, format_func=str.upper,
                      index=metrics.index("dc") if "dc" in metrics else 0) or metrics[0]
    e = answers[metric]
    auc = report["conversations"]["correctness"].get(metric, {}).get("auc")
    share = e["share_against"]
    st.caption(f"{metric.upper()} ({e['direction']}): {e['against']:g} of {e['pairs']} pairs "
               f"({e['correct']} correct × {e['wrong']} wrong) run against it — {fmt(share)} of them; the AUC for a "
               f"correct answer above is {fmt(auc)}. Most pairs against first; click a conversation for its IUs' parts "
               "in DC.", help=glossary_help(metric.upper()) if metric.upper() in ("KG", "DC", "CO") else None)
    rows = answer_rows(e)
    key = keys.disagree_table("answers", _view(metric, len(rows)))
    st.dataframe(rows, hide_index=True, key=key, on_select="rerun", selection_mode="single-row",
                 column_config={"run": None}, placeholder=MISSING)
    picked = [e["rows"][i] for i in selected_rows(key) if i < len(rows)]
    if picked:
        r = picked[0]
        st.markdown(inline_markdown(f"**{r['conversation']}** ({'correct' if r['correct'] else 'wrong'} answer, "
                                    f"{metric.upper()} {fmt(r['value'], 3)}): its IUs, turns per part in DC"),
                    help=glossary_help("DC"))
        st.dataframe(dc_rows(r), hide_index=True, key=f"agr_dis_dc_{r['run']}", placeholder=MISSING)
        nav.link(st, nav.SIMULATE, "Open this conversation in Simulate", icon=":material/open_in_new:",
                 params=nav.simulate_params((r["run"],), 1))


def render_disagreement(report: dict[str, Any]) -> None:
    """The view, under its own heading (the page's other sections are untouched by it)."""
    d = report.get("disagreement")
    if not d or not d["turns"]["n"] and not d["answers"]:
        return
    st.subheader("Where KnowSim's reading and the people disagree: per turn, per IU, per answer")
    st.caption(f"The people's own thumbs ({UP_MD} / {DOWN_MD}) on {d['turns']['n']} judged turns; {d['note']}. "
               "The same counts as `python -m knowsim_core agreement` prints (--json: disagreement).")
    _trust(report)
    _turns(report, _names(report))
    _ius(report)
    _answers(report)
