"""Realism: does a simulated user write what real people wrote, turn by turn?

Each chosen simulator gets the real history of every imported human conversation and writes the
person's next message; the table compares it with the real one (act, ROUGE-L, cosine, length, IUs),
per level too. Pick a turn to read the real and simulated messages side by side with the history.
"""

import streamlit as st

from knowsim_core.evaluation import realism
from knowsim_core.errors import KnowSimError
from knowsim_core.prompts.baseline_user import METHODS as BASELINE_METHODS
from knowsim_core.agents.registry import spec_of
from ui.frame import ensure_frame
from ui.nav import store
from ui.resources import agent_ids, agent_settings

ensure_frame()  # a deep link as a fresh server's first request must still run app.py

REPORT_KEY = "realism_report"
st.title("Realism")
st.caption("Turn-level realism on real human–tutor conversations: each simulator writes the person's turn t "
           "from the real history before it (KnowSim users also get the state read from that history).")
db = store()
rows = [r for r in db.list_runs(limit=100_000) if spec_of(r.assistant).recorded]
if not rows:
    st.info("No human conversations yet: import a SimulatorArena annotations file or a conversations .jsonl "
            "(Questions → Import, or `python -m knowsim_core import PATH`).")
    st.stop()

options = agent_ids("user")
options += [f"{uid}:{m}" for uid in options if spec_of(uid).needs_model
            for m in BASELINE_METHODS]  # the paper's LLM baselines on every configured model
users = st.multiselect("User simulators", options, default=[u for u in realism.DEFAULT_USERS if u in options],
                       key="realism_users")
if st.button(f"Score {len(rows)} conversation(s)", key="realism_score", type="primary", disabled=not users):
    try:
        with st.spinner("Scoring every real turn…"):
            runs = {r.id: db.load_run(r.id) for r in rows}
            report = realism.score(list(runs.values()), realism.build_users(users, agent_settings(db)))
        st.session_state[REPORT_KEY] = (report, {dict(r.meta).get("conversation", r.question_id): rid
                                                 for rid, r in runs.items()})
    except KnowSimError as exc:
        st.error(f"Scoring stopped: {exc}")
if REPORT_KEY not in st.session_state:
    st.info("Choose the simulators and press Score (the offline ones take a few seconds).")
    st.stop()

report, run_of = st.session_state[REPORT_KEY]
scored = list(report["summary"])
st.subheader("Summary")
st.dataframe(realism.summary_rows(report["summary"]), hide_index=True, key="realism_summary")
left, right = st.columns(2)
with left:
    metric = st.selectbox("Per level", list(realism.METRICS), key="realism_metric")
    st.bar_chart(realism.level_rows(report, metric), x="level", y=scored, stack=False)
with right:
    who = st.selectbox("Simulator", scored, key="realism_user")
    conf = realism.confusion(report, who)
    st.caption("Dialogue acts: real (rows) × simulated (columns)")
    st.dataframe([{"real act": g, **row} for g, row in conf.items()], hide_index=True, key="realism_confusion")

st.subheader("Turns")
turns = realism.turn_rows(report, who)
st.dataframe(turns, hide_index=True, key="realism_turns", on_select="rerun", selection_mode="single-row")
picked = (st.session_state.get("realism_turns") or {}).get("selection", {}).get("rows", [])
if picked and picked[0] < len(turns):
    row = report["turns"][picked[0]]
    run = db.load_run(run_of[row["conversation"]])
    t = row["turn"]
    with st.expander(f"History before turn {t} ({row['conversation']})", expanded=False):
        for rec in run.turns[: t - 1]:
            st.text(f"Person: {rec.user_message}")
            st.text(f"Tutor: {rec.assistant_message or '(no reply recorded)'}")
    cols = st.columns(1 + len(row["simulated"]))
    cols[0].markdown(f"**Real person** · {row['real_act']}")
    cols[0].text(run.turns[t - 1].user_message)
    for col, (uid, sim) in zip(cols[1:], row["simulated"].items()):
        col.markdown(f"**{uid}** · {sim['act']} · ROUGE-L {sim['rouge_l']:.2f}")
        col.text(sim["text"])
