"""Sections of the Graph page: editor tables + validation + save, history diff, export, import, extract.

Each function draws one section and talks to the store; the logic it relies on lives in
:mod:`ui.graph_editor` (edits, validation, import checks), :mod:`knowsim_core.graph_diff` and
:mod:`knowsim_core.formats.graph_html`.
"""

from __future__ import annotations

import json

import streamlit as st

from knowsim_core import registry
from knowsim_core.errors import FormatError, KnowSimError
from knowsim_core.formats.graph_html import graph_html
from knowsim_core.graph import IUGraph
from knowsim_core.graph_diff import diff_graphs
from knowsim_core.llm.settings import LLMSettings, llm_agent_ids, provider_status
from ui.graph_editor import EDGE_COLUMNS, NODE_COLUMNS, apply_edits, edge_rows, judge, node_rows, parse_graph_file

NONCE_KEY = "graph_editor_nonce"
FLASH_KEY = "graph_flash"
NEXT_VERSION_KEY = "graph_version_next"


def editor_keys(version_id: int) -> tuple[str, str]:
    """The data-editor keys for a version (a nonce renews them after a save so the tables reset)."""
    n = st.session_state.get(NONCE_KEY, 0)
    return f"nodes_{version_id}_{n}", f"edges_{version_id}_{n}"


def render_editor(store, version) -> IUGraph:
    """The node and edge tables; returns the candidate graph (the base one if it cannot be built)."""
    base: IUGraph = version.graph
    nkey, ekey = editor_keys(version.id)
    st.markdown("**IUs** — add rows at the bottom, select rows to delete; renaming an id renames its edges")
    st.data_editor(
        node_rows(base), key=nkey, num_rows="dynamic", hide_index=True, width="stretch",
        column_order=NODE_COLUMNS,
        column_config={
            "id": st.column_config.TextColumn("id", required=True),
            "concept": st.column_config.TextColumn("concept", required=True),
            "abstraction_level": st.column_config.NumberColumn(
                "abstraction level", min_value=0.0, max_value=1.0, step=0.01, required=True,
                help="1 = general principle, 0 = item-specific computation",
            ),
            "description": st.column_config.TextColumn("description", width="large", required=True),
        },
    )
    # The endpoint options are the saved version's ids and stay fixed while editing: changing a
    # column's options makes Streamlit rebuild the table and drop the edits made so far.
    ids = sorted(set(base.index.ids))
    st.markdown(
        "**Prerequisite edges** — `from → to`: understanding *to* needs *from*. "
        "Endpoints list the saved IUs: save new IUs first, then connect them."
    )
    st.data_editor(
        edge_rows(base), key=ekey, num_rows="dynamic", hide_index=True, width="stretch",
        column_order=EDGE_COLUMNS,
        column_config={
            "from": st.column_config.SelectboxColumn("from", options=ids, required=True),
            "to": st.column_config.SelectboxColumn("to", options=ids, required=True),
            "reason": st.column_config.TextColumn("reason", width="large"),
        },
    )
    result = apply_edits(base, st.session_state.get(nkey), st.session_state.get(ekey))
    verdict = judge(result, base)
    for msg in verdict.blockers:
        st.error(msg, icon="⛔")
    for msg in verdict.inherited:
        st.warning(msg, icon="♻️")
    for msg in verdict.warnings:
        st.warning(msg, icon="⚠️")
    candidate = result.graph or base
    changed = not diff_graphs(base, candidate).empty
    if changed:
        st.caption("Unsaved changes: " + diff_graphs(base, candidate).summary())
    with st.form(f"save_{version.id}", clear_on_submit=True, border=False):
        note = st.text_input("Note for this version", placeholder="e.g. removed the IU4 → IU2 cycle")
        submitted = st.form_submit_button(
            "Save as new version", type="primary", disabled=not (changed and verdict.can_save)
        )
    if submitted and changed and verdict.can_save:
        save_version(store, version, candidate, note=note or "hand edit", author="human")
    if not verdict.can_save:
        st.caption("Saving is disabled until the errors above are fixed.")
    return candidate


def save_version(store, parent, graph: IUGraph, *, note: str, author: str) -> None:
    try:
        new_id = store.add_graph_version(parent.question_id, graph, note=note, author=author, parent_id=parent.id)
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state[NONCE_KEY] = st.session_state.get(NONCE_KEY, 0) + 1
    v = store.get_graph_version(new_id)
    st.session_state[FLASH_KEY] = f"Saved version {v.version} ({note})."
    st.session_state[NEXT_VERSION_KEY] = v.id  # picked before the selectbox on the rerun
    st.rerun()


def render_history(store, question_id: str) -> None:
    versions = store.graph_versions(question_id)
    if len(versions) < 2:
        st.caption("Only one version so far; save an edit to start a history.")
        return
    label = {v.id: f"v{v.version} · {v.author} · {v.created[:16]} · {v.note or '—'}" for v in versions}
    ids = [v.id for v in versions]
    c1, c2 = st.columns(2)
    a = c1.selectbox("From version", ids, index=len(ids) - 2, format_func=label.get, key=f"diff_a_{question_id}")
    b = c2.selectbox("To version", ids, index=len(ids) - 1, format_func=label.get, key=f"diff_b_{question_id}")
    by_id = {v.id: v for v in versions}
    d = diff_graphs(by_id[a].graph, by_id[b].graph)
    st.markdown(f"**{d.summary()}**")
    if not d.empty:
        st.code("\n".join(d.lines()), language=None, wrap_lines=True)


def render_export(question_id: str, version) -> None:
    g: IUGraph = version.graph
    stem = f"{question_id}_v{version.version}"
    c1, c2 = st.columns(2)
    c1.download_button(
        "Graph JSON", data=json.dumps(g.to_data(), indent=2, ensure_ascii=False), file_name=f"{stem}.json",
        mime="application/json", on_click="ignore", key=f"dl_json_{version.id}",
    )
    c2.download_button(
        "Standalone HTML picture", data=lambda: graph_html(g, title=f"{question_id} · version {version.version}"),
        file_name=f"{stem}.html", mime="text/html", on_click="ignore", key=f"dl_html_{version.id}",
        help="One offline file (vis-network inlined); opens from disk with no network access",
    )


def render_import(store, version) -> None:
    up = st.file_uploader("Import a graph JSON as a new version", type=["json"], key=f"import_{version.id}")
    if up is None:
        return
    try:
        graph = parse_graph_file(up.getvalue(), name=up.name)
    except FormatError as exc:
        st.error(str(exc))
        return
    blockers = graph.save_blockers(version.graph)
    if blockers:
        st.error("Not imported: " + "; ".join(i.message for i in blockers))
        return
    st.success(f"{up.name}: {len(graph.nodes)} IUs, {len(graph.edges)} edges — " + diff_graphs(version.graph, graph).summary())
    if st.button("Save the imported graph as a new version", key=f"import_save_{version.id}"):
        save_version(store, version, graph, note=f"imported from {up.name}", author="import")


def render_extract(store, question, version) -> None:
    """LLM graph extraction (issue 7) when a provider is configured; otherwise say what is needed."""
    try:
        settings = LLMSettings.from_sources()
    except KnowSimError as exc:
        st.error(str(exc))
        return
    ids = list(llm_agent_ids(settings).get("graph_extractor", []))
    if not ids:
        st.button("Extract a graph with an LLM", disabled=True, key="extract_off")
        missing = ", ".join(f"{p.name}: {p.detail}" for p in provider_status(settings) if not p.available)
        st.caption(
            "No LLM provider is configured. Set OPENAI_API_KEY, ANTHROPIC_API_KEY, or an "
            "OpenAI-compatible base URL (environment or secrets), then reload. " + missing
        )
        return
    pick = st.selectbox("Graph extractor", ids, key="extract_id")
    if st.button("Extract a graph from the question and reference answer", key="extract_go"):
        try:
            extractor = registry.resolve("graph_extractor", pick, settings=settings)
            with st.spinner("Asking the model…"):
                graph = extractor.extract_graph(question.text, question.reference_answer)
        except KnowSimError as exc:
            st.error(str(exc))
            return
        blockers = graph.save_blockers(version.graph)
        if blockers:
            st.error("The extracted graph cannot be saved: " + "; ".join(i.message for i in blockers))
            return
        save_version(store, version, graph, note=f"extracted by {pick}", author=pick)
