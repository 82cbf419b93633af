"""Realism: does a simulated user write what real people wrote, turn by turn?

Each chosen simulator gets the real history of every imported human conversation and writes the
person's next message; the table compares it with the real one (act, ROUGE-L, cosine, length, IUs),
per level too. The headline table uses sampled initial states (no hindsight); the file's states
(hindsight) are scored beside it. Every simulator cell says which floors it beats. Pick a turn to
read the real and simulated messages side by side with the history.
"""

import streamlit as st

from knowsim_core.evaluation import realism
from knowsim_core.errors import KnowSimError
from knowsim_core.prompts.baseline_user import METHODS as BASELINE_METHODS
from knowsim_core.agents.registry import parse_id, spec_of
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.resources import agent_ids, agent_settings, get_store
from ui.common.selection import selected_rows
from ui.common.tables import MISSING, static_table
from ui.people import keys
from ui.people.realism_view import level_figure, level_series

ensure_frame(nav.REALISM)  # a deep link as a fresh server's first request must still run app.py

FEW_TURNS = 10  # a level with fewer scored turns is shown but flagged: too few to compare
st.title("Realism")
st.caption("Turn-level realism on real human–tutor conversations: each simulator writes the person's turn t "
           "from the real history before it (KnowSim users also get the state read from that history) and is "
           "compared with what the person wrote.")
db = get_store()
rows = [r for r in db.search.list(limit=100_000) if spec_of(r.assistant).recorded]
if not rows:
    st.info("No human conversations yet: import a SimulatorArena annotations file or a conversations .jsonl "
            "(Questions → Import, or `python -m knowsim_core import PATH`).")
    st.stop()

# a person is what is scored, not a simulator; every id in the registry's spelling, once
options = list(dict.fromkeys(parse_id(uid).id for uid in agent_ids("user") if not spec_of(uid).human))
llm_ids = [uid for uid in options if spec_of(uid).needs_model]
# the paper's LLM baselines on every configured model, once each: built by the registry (a compat id
# with a URL takes the method before the URL) and compared as parsed ids, not as strings
known = {parse_id(uid) for uid in options}
models = [parse_id(uid) for uid in llm_ids if not parse_id(uid).method]
options += [b.id for b in dict.fromkeys(m.with_method(x) for m in models for x in BASELINE_METHODS)
            if b not in known]
if not llm_ids:
    st.info("Only the offline simulators are offered: no LLM provider is configured. To add the paper's LLM "
            "baselines (zero-shot, zero-shot CoT, CoT with profile) and the KnowSim LLM user, set "
            "`OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `KNOWSIM_COMPAT_BASE_URL` (e.g. a local Ollama "
            "server) in the environment or `.streamlit/secrets.toml`, or enter a key in the sidebar, then reload.")
users = st.multiselect("User simulators", options, default=[u for u in realism.DEFAULT_USERS if u in options],
                       key="realism_users")
st.caption(f"Headline: {realism.START_HELP['sampled']}. Beside it, labelled as hindsight: {realism.START_HELP['file']}.")
if st.button(f"Score {len(rows)} conversation(s)", key="realism_score", type="primary", disabled=not users):
    try:
        with st.spinner("Scoring every real turn…"):
            runs = {r.id: db.runs.load(r.id) for r in rows}
            built = realism.build_users(users, agent_settings(db))
            if any(spec_of(u).needs_model for u in users):  # hindsight too would call the model twice per turn
                report = realism.score(list(runs.values()), built, start="sampled")
            else:
                report = realism.headline(list(runs.values()), built)
        st.session_state[keys.REALISM_REPORT] = (report, {dict(r.meta).get("conversation", r.question_id): rid
                                                 for rid, r in runs.items()})
    except KnowSimError as exc:
        st.error(f"Scoring stopped: {exc}")
if keys.REALISM_REPORT not in st.session_state:
    st.info("Choose the simulators and press Score (the offline ones take a few seconds).")
    st.stop()

report, run_of = st.session_state[keys.REALISM_REPORT]
scored = [uid for uid in report["summary"] if uid != realism.MOST_COMMON]
st.subheader("Summary (headline: no hindsight)")
st.caption(f"Initial states: {realism.START_HELP[report['start']]}. Each simulator cell says which floors of "
           "the same table it beats ('> copy-last') and which it does not ('not > most-common-act'); for the "
           "length ratio, beating means nearer 1.")
for reader_note in report.get("reader", {}).values():
    st.caption(reader_note["text"])
if report.get("skipped"):
    st.caption(f"Skipped {len(report['skipped'])} conversation(s) without a reading: "
               + "; ".join(f"{s['conversation']} ({s['reason']})" for s in report["skipped"]))
static_table(realism.marked_rows(report["summary"]), key="realism_summary")
if "hindsight" not in report:
    st.caption("Hindsight (the file's states) not scored: a model simulator would be called twice per turn.")
else:
    with st.expander("Beside it, with hindsight: initial states from the file", expanded=False):
        st.caption(realism.START_HELP["file"] + ". Not the headline: these states know how the conversation went.")
        static_table(realism.marked_rows(report["hindsight"]["summary"]), key="realism_hindsight")
with st.expander("What the columns and the floors mean", expanded=True):
    lines = [f"- **{realism.METRIC_LABELS[m]}**: {text}" for m, text in realism.METRIC_HELP.items()]
    lines += [f"- **{uid}** — {text}" for uid, text in realism.FLOOR_HELP.items()]
    lines.append("- A simulator is realistic only where it beats every floor; a floor row is not a simulator.")
    st.markdown("\n".join(lines))
with st.expander("By half of the split (development = the learners' rules chosen here; held-out = never used "
                 "to choose them)"):
    for part, by_user in report["by_split"].items():
        st.caption(part)
        static_table(realism.marked_rows(by_user), key=f"realism_split_{part}")
left, right = st.columns(2)
with left:
    metric = st.selectbox("Per level", list(realism.METRICS), key="realism_metric",
                          format_func=lambda m: realism.METRIC_LABELS[m])
    st.plotly_chart(level_figure(report, metric, realism.METRIC_LABELS[metric]), key="realism_levels_chart")
    few = [f"{lvl} ({next(iter(by.values()))['n']} turn(s))" for lvl, by in report["by_level"].items()
           if next(iter(by.values()))["n"] < FEW_TURNS]
    empty = level_series(report, metric)[2]
    st.caption("n = scored turns of that level; floors hatched."
               + (f" No {realism.METRIC_LABELS[metric]} for: {', '.join(empty)}." if empty else "")
               + (f" Too few turns to compare: {', '.join(few)}." if few else ""))
with right:
    who = st.selectbox("Simulator", scored, key="realism_user")
# the tables under the two columns, at the page's width: in half of it they ran off its edge
st.caption(f"{realism.METRIC_LABELS[metric]} per level")
static_table(realism.level_table(report, metric), key="realism_levels")
conf = realism.confusion(report, who)
st.caption(f"Dialogue acts of {who}: real (rows) × simulated (columns)")
static_table([{"real act": g, **row} for g, row in conf.items()], key="realism_confusion")

st.subheader("Turns")
turns = realism.turn_rows(report, who)
st.dataframe(turns, hide_index=True, key=keys.REALISM_TURNS, on_select="rerun", selection_mode="single-row", placeholder=MISSING)
picked = selected_rows(keys.REALISM_TURNS)
if picked and picked[0] < len(turns):
    row = report["turns"][picked[0]]
    run = db.runs.load(run_of[row["conversation"]])
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
