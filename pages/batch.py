"""Batch: choose a matrix, see its size and estimated cost, launch it in the background, watch it, stop it, resume it.

The batch is the command line's ``batch`` in its own process (it outlives this tab); this page only
launches, signals and reads the database.
"""

import streamlit as st

from knowsim_core.agents.registry import spec_of
from knowsim_core.engine.config import LEVELS
from knowsim_core.errors import KnowSimError
from knowsim_core.vocab import RunStatus
from knowsim_core.storage.questions import KIND_LABELS
from knowsim_core.storage.run_filter import RunFilter
from ui.batch import keys
from ui.batch import launcher as bv
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.questions import KIND_SHORT, by_kind, question_label
from ui.common.resources import agent_ids, db_path, get_store
from ui.common.safe_text import inline_markdown

ensure_frame(nav.BATCH)  # a deep link as a fresh server's first request must still run app.py


def add_questions(key: str, ids: list[str]) -> None:
    """Add ``ids`` to the multiselect ``key`` (a button callback: runs before the widget is drawn)."""
    have = list(st.session_state.get(key) or [])
    st.session_state[key] = have + [i for i in ids if i not in have]


POLL_S = 2.0
st.title("Batch")
db, path = get_store(), db_path()

with st.expander("New batch", expanded=not bv.launches(path)):
    questions = [q for q in db.questions.list() if q.n_graph_versions]  # grouped by kind, samples first
    qids = [q.id for q in questions]
    label_of = {q.id: question_label(q) for q in questions}
    if keys.QUESTIONS not in st.session_state:
        st.session_state[keys.QUESTIONS] = qids[:1]
    chosen_q = st.multiselect("Questions", qids, key=keys.QUESTIONS, format_func=label_of.get)
    groups = by_kind(questions)
    row = st.container(horizontal=True, gap="small")
    for kind, ids in groups.items():  # "select all" one group at a time: real conversations are not samples
        row.button(f"All {KIND_SHORT[kind].lower()}s ({len(ids)})" if kind != "yours" else f"All yours ({len(ids)})",
                   key=f"batch_all_{kind}", on_click=add_questions, args=(keys.QUESTIONS, ids),
                   help=f"add every {KIND_LABELS[kind].lower()} question with a graph")
    c1, c2 = st.columns(2)
    levels = c1.multiselect("Levels", list(LEVELS), default=list(LEVELS), key="batch_levels")
    # never "human": a batch cannot wait for someone to type (it would count model calls for it and fail)
    assistants_all = [a for a in agent_ids("assistant") if a != "human"]
    assistants = c2.multiselect("Assistants", assistants_all, default=[a for a in assistants_all if a == "offline/adaptive"],
                                key="batch_assistants")
    users = [u for u in agent_ids("user") if not spec_of(u).human]
    extractors = agent_ids("extractor")
    c1, c2, c3, c4, c5 = st.columns(5)
    user = c1.selectbox("User", users, index=users.index("offline/knowsim") if "offline/knowsim" in users else 0,
                        key="batch_user")
    extractor = c2.selectbox("Extractor", extractors, key="batch_extractor",
                             index=extractors.index("offline/lexical") if "offline/lexical" in extractors else 0)
    seeds = c3.number_input("Seeds", 1, 1000, 1, key="batch_seeds")
    max_turns = c4.number_input("Max turns (0 = preset)", 0, 1000, 0, key="batch_max_turns")
    concurrency = c5.number_input("In flight at once (0 = auto)", 0, 1024, 0, key="batch_concurrency",
                                  help="conversations played at the same time (threads in one process). 0: one "
                                       "worker process per core when every agent is offline (CPU-bound), else 16")
    c1, c2 = st.columns([1, 3])
    numbers = sorted({v.version for q in chosen_q for v in db.questions.graph_versions(q)})
    graph_version = c1.selectbox("Graph version", [None, *numbers], key="batch_graph_version",
                                 format_func=lambda v: "newest of each question" if v is None else f"v{v} of every question",
                                 help="which version of each question's graph the batch plays on (fixed when it starts)")
    tag = c2.text_input("Tag", key="batch_tag", placeholder="generated when empty")
    cluster = bv.cluster_form()
    try:
        req = bv.request(questions=chosen_q, levels=levels, assistants=assistants, user=user, extractor=extractor,
                         seeds=seeds, max_turns=max_turns, concurrency=concurrency, tag=tag or bv.new_tag(),
                         graph_version=graph_version, cluster=cluster)
        spec, est = bv.preview(db, req)
    except KnowSimError as exc:
        st.error(str(exc))
    else:
        played = db.questions.graph_version_numbers(list(spec.graph_version_ids))
        st.caption("  \n".join([*est.lines(), "graphs: " + ", ".join(
            f"{q} v{played[v]}" for q, v in list(zip(spec.questions, spec.graph_version_ids))[:6])
            + (f" and {len(spec.questions) - 6} more" if len(spec.questions) > 6 else "")]))
        if st.button("Launch", type="primary", key="batch_launch"):
            final_tag = req.tag
            if db.search.get_batch(final_tag) is not None:
                st.error(f"A batch tagged {final_tag!r} exists; choose another tag or resume it below.")
            else:
                try:
                    bv.check_cluster(req)
                    bv.launch(path, req.argv(), final_tag)
                except KnowSimError as exc:  # one line, never a traceback; nothing left running unseen
                    st.error(str(exc))
                else:
                    st.session_state[keys.JUST_LAUNCHED] = final_tag
                    st.query_params[nav.WATCHED] = final_tag
                    st.rerun()

mine = bv.launches(path)
runs = mine + bv.elsewhere(db, mine)  # the command line's batches too: watch and resume them here
if not runs:
    st.info("No batch in this database yet.")
    st.stop()
tags = [r.tag for r in runs]
outside = {r.tag for r in runs if r.pid <= 0}
launched = st.session_state.pop(keys.JUST_LAUNCHED, None)
wanted = launched or st.query_params.get(nav.WATCHED)
if wanted in tags and (launched or st.session_state.get(keys.WATCHED) not in tags):
    st.session_state[keys.WATCHED] = wanted
tag = st.selectbox("Watch batch", tags, key=keys.WATCHED,
                   format_func=lambda t: f"{t} (not launched here)" if t in outside else t)
st.query_params[nav.WATCHED] = tag
rec = runs[tags.index(tag)]


def is_alive() -> bool:
    return bv.playing_elsewhere(db, rec.tag) if rec.pid <= 0 else bv.alive(rec)


was_alive = is_alive()


@st.fragment(run_every=POLL_S if was_alive else None)
def watch() -> None:
    """Progress from the database; the stop buttons while it runs, the summary and Resume after."""
    live = is_alive()
    counts = bv.progress(db, rec.tag)
    share, text = bv.progress_line(counts, live=live)
    st.progress(share, text=text)
    who = (f"launched elsewhere (e.g. the command line), {'still playing' if live else 'not playing now'}"
           if rec.pid <= 0 else f"process {rec.pid} {'running' if live else 'ended'}")
    st.caption(" · ".join(f"{n} {s}" for s, n in counts.items() if s != "cells" and n) + f" · {who}")
    if rec.pid > 0 and bv.workers_line(rec):
        st.caption(bv.workers_line(rec))  # a cluster batch: conversations per worker, in flight and ended
    if live and rec.pid <= 0:
        st.caption("Stop it where it was started (Ctrl-C in its terminal); this page only watches it.")
        if not was_alive:
            st.rerun()
        return
    if live:
        c1, c2 = st.columns(2)
        if c1.button("Stop", key="batch_stop", help="no new conversation starts; those in flight finish their turn"):
            bv.stop(rec)
        if c2.button("Stop now", key="batch_stop_now",
                     help="conversations in flight stop at once, marked interrupted (Resume continues them)"):
            bv.stop(rec, now=True)
        if not was_alive:
            st.rerun()  # it was relaunched elsewhere: poll again
        return
    if was_alive:
        st.rerun()  # it just ended: redraw the page without the polling
    st.subheader("Summary")
    # the page's own words, from the database (the command's printout is for a terminal)
    st.markdown("\n".join(f"- {inline_markdown(line)}" for line in bv.summary(db, rec, counts)))
    if counts[RunStatus.FINISHED] < counts["cells"] and st.button("Resume", key="batch_resume", type="primary"):
        try:
            bv.launch(path, bv.resume_argv(rec), rec.tag)
        except KnowSimError as exc:
            st.error(str(exc))
        else:
            st.rerun()
    if st.button("Failure modes of this batch", icon=":material/troubleshoot:", key="batch_failures"):
        nav.failures(RunFilter(batch_tag=rec.tag))  # the link sets that page's batch filter


watch()
