"""IU graph: view, hand-correct, validate, version, export and import a question's IU graph.

The graphs set every metric's denominator, and LLM-extracted ones (the paper's included) contain
cycles and duplicate edges; this page is where a researcher fixes them and keeps the history.
"""

import streamlit as st

from knowsim_core.errors import KnowSimError
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.questions import question_label
from ui.common.resources import get_store
from ui.graph import keys
from ui.graph import tools as graph_tools

ensure_frame(nav.GRAPH)  # a deep link as a fresh server's first request must still run app.py

st.title("Graph editor")  # the navigation's name for this page
db = get_store()
questions = db.questions.list()
if not questions:
    st.info("No questions yet: add one on the Questions page.")
    st.stop()
qids = [q.id for q in questions]
wanted = st.query_params.get(nav.QUESTION)
qid = st.selectbox(
    "Question", qids, index=qids.index(wanted) if wanted in qids else 0, key="graph_question",
    format_func={q.id: question_label(q) for q in questions}.get,  # grouped by kind, samples first
)
question = db.questions.get(qid)
versions = db.questions.graph_versions(qid)
if not versions:
    st.info("This question has no IU graph yet: import one below or extract one with an LLM.")
if flash := st.session_state.pop(keys.FLASH, None):
    st.success(flash)

if versions:
    vids = [v.id for v in versions]
    picked = st.session_state.pop(keys.NEXT_VERSION, None) or st.session_state.get(keys.VERSION)
    st.session_state[keys.VERSION] = picked if picked in vids else vids[-1]
    row = st.container(horizontal=True, vertical_alignment="bottom")
    vid = row.selectbox(
        "Version", vids, key=keys.VERSION,
        format_func=lambda i: next(f"v{v.version} · {v.author} · {v.note or '—'}" for v in versions if v.id == i),
    )
    version = db.questions.get_graph_version(vid)
    # right after a save the new version is picked: one click simulates on it
    if row.button(f"Simulate on v{version.version}", key="graph_simulate", icon=":material/play_circle:",
                  help="Open Simulate with this question and graph version chosen"):
        nav.simulate_question(qid, version.version)
    g = version.graph
    cycles = g.cycles()
    if cycles:
        st.warning(
            "This graph has prerequisite cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)
            + ". Delete or reverse one edge of each in the edge table below, then save."
        )
    draft = graph_tools.draft(version)  # the tables' unsaved edits, drawn before the tables themselves
    c_graph, c_panel = st.columns([2, 1])
    with c_graph:
        picked = graph_tools.render_preview(version, draft)
    with c_panel:
        graph_tools.render_node_panel(db, version, draft, picked)

    # keyed: a save's flash message above must not make these a new element (the first click in
    # History after a save jumped back to Edit)
    tab_edit, tab_hist, tab_io = st.tabs(["Edit", "History", "Export / import"], key="graph_tabs")
    with tab_edit:
        try:
            graph_tools.render_editor(db, version, draft)
        except KnowSimError as exc:
            st.error(str(exc))
    with tab_hist:
        graph_tools.render_history(db, qid)
    with tab_io:
        graph_tools.render_export(qid, version)
        graph_tools.render_import(db, version)
        graph_tools.render_extract(db, question, version)
