"""Questions: the library — search, filter by domain, add, import the reference items, open or simulate."""

from pathlib import Path

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.services.importing import import_path
from knowsim_core.storage.questions import KIND_LABELS, QUESTION_KINDS
from ui.common import nav
from ui.common.frame import ensure_frame
from ui.common.questions import import_summary
from ui.common.resources import get_store
from ui.common.safe_text import inline_markdown

ensure_frame(nav.QUESTIONS)  # a deep link as a fresh server's first request must still run app.py

store = get_store()
st.title("Questions")

c1, c2, c3 = st.columns([3, 1, 1])
search = c1.text_input("Search", key="q_search", placeholder="words in the question, its title or its id")
domains = sorted({q.domain for q in store.questions.list() if q.domain})
domain = c2.selectbox("Domain", ["all", *domains], key="q_domain")
kind = c3.selectbox("Source", ["all", *QUESTION_KINDS], key="q_kind", format_func=lambda k: KIND_LABELS.get(k, k),
                    help="samples, the paper's reference set, imported real conversations, or questions you added")
rows = store.questions.list(search=search, domain=None if domain == "all" else domain,
                            kind=None if kind == "all" else kind)  # samples first
st.caption(f"{len(rows)} question(s)")

for q in rows[:100]:
    with st.container(border=True):
        top, b1, b2 = st.columns([6, 1, 1])
        top.text(q.title)  # the text's own words: shown as text, never as markdown
        top.markdown(inline_markdown(f"{q.kind_label} · **{q.id}** · {q.domain or 'no domain'}"
                                     f"{' · ' + q.field if q.field else ''} · {q.n_graph_versions} graph version(s)"))
        top.text(q.text[:400])
        if b1.button("Graph", key=f"q_graph_{q.id}", icon=":material/account_tree:"):
            nav.edit_graph(q.id)
        if b2.button("Simulate", key=f"q_sim_{q.id}", icon=":material/play_arrow:",
                     disabled=q.n_graph_versions == 0, help=None if q.n_graph_versions else "add a graph first"):
            nav.simulate_question(q.id)
if len(rows) > 100:
    st.caption("Showing the first 100; refine the search to see the others.")

with st.expander("Add a question"):
    with st.form("q_add", clear_on_submit=True):
        text = st.text_area("Question", key="q_new_text")
        ref = st.text_area("Reference answer", key="q_new_ref")
        c1, c2 = st.columns(2)
        new_domain = c1.text_input("Domain", key="q_new_domain", placeholder="math, expert, …")
        new_field = c2.text_input("Field", key="q_new_field")
        if st.form_submit_button("Add"):
            if not text.strip():
                st.error("The question text is empty; type the question first.")
            else:
                try:
                    qid = store.questions.add(text=text.strip(), reference_answer=ref.strip(), domain=new_domain.strip(),
                                             field=new_field.strip())
                except KnowSimError as exc:
                    st.error(str(exc))
                else:
                    st.success(f"Added {qid}. Open it in the Graph editor to add or extract its IU graph.")

with st.expander("Import reference items, IU caches or runs from a file or folder"):
    folder = st.text_input("File or folder", key="q_import_dir",
                           placeholder="…/reference (paper_subset/*.jsonl, iu_cache/, init_ks_cache.json)")
    if st.button("Import", key="q_import", disabled=not folder.strip()):
        path = Path(folder).expanduser()
        if not path.exists():
            st.error(f"{path} does not exist; give the reference folder (or an items, IU-cache or run file).")
        else:
            try:
                with st.spinner("Importing…"):
                    result = import_path(store, path)
            except KnowSimError as exc:
                st.error(f"Nothing was imported: {exc}")
            else:
                st.success(import_summary(result))
