"""Sections of the Graph page: editor tables + validation + save, history diff, export, import, extract.

Each function draws one section and talks to the store; the logic it relies on lives in
:mod:`ui.graph.editor` (edits, validation, import checks), :mod:`knowsim_core.presentation.graph_diff` and
:mod:`knowsim_core.formats.graph_html`.
"""

from __future__ import annotations

import json

import streamlit as st

from knowsim_core.agents import registry
from knowsim_core.errors import FormatError, GraphError, KnowSimError
from knowsim_core.formats.graph_html import graph_html
from knowsim_core.engine.graph import IUGraph, IUNode, checked
from knowsim_core.presentation.graph_diff import diff_graphs
from knowsim_core.llm.settings import LLMSettings, llm_agent_ids, provider_status
from ui.graph.editor import (
    EDGE_COLUMNS, NODE_COLUMNS, EditResult, apply_edits, diff_html, edge_rows, endpoint_options, iu_where, judge, node_rows,
    parse_graph_file, preview,
)
from ui.common.graph_view import render_graph
from ui.common.safe_text import inline_markdown
from ui.graph import keys


def editor_keys(version_id: int) -> tuple[str, str]:
    """The data-editor keys for a version (a nonce renews them after a save so the tables reset)."""
    return keys.editor_tables(version_id, st.session_state.get(keys.NONCE, 0))


def draft(version) -> EditResult:
    """The candidate graph built from the tables' current edits (their deltas are in session
    state before the tables are drawn, so the picture above them can show the draft)."""
    nkey, ekey = editor_keys(version.id)
    return apply_edits(version.graph, st.session_state.get(nkey), st.session_state.get(ekey))


def render_preview(version, result: EditResult, *, height: int = 420) -> str | None:
    """The graph as the unsaved edits make it: new edges drawn, IUs on a cycle ringed.

    Returns the IU the user clicked (to edit it beside the graph).
    """
    base: IUGraph = version.graph
    shown = preview(base, result.graph or base)
    picked = render_graph(
        shown.graph, changed=shown.cycle_ids, marked_edges=shown.new_edges, key=f"graph_view_{version.id}",
        height=height,
    )
    notes = []
    if shown.graph is not base and not diff_graphs(base, shown.graph).empty:
        notes.append("Showing your unsaved edits")
        if shown.new_edges:
            notes.append("new edges dashed: " + ", ".join(f"{a} → {b}" for a, b in shown.new_edges))
    if shown.cycle_ids:
        notes.append("ringed IUs lie on a prerequisite cycle: " + ", ".join(shown.cycle_ids))
    if notes:
        st.caption(" · ".join(notes))
    return picked


def render_node_panel(store, version, result: EditResult, picked: str | None) -> None:
    """Edit the IU clicked in the graph; saving keeps the tables' unsaved edits too."""
    draft_graph = result.graph or version.graph
    if picked is None or picked not in draft_graph.index.index_of:
        st.caption("Click an IU in the graph to edit it here.")
        return
    node = draft_graph.node(picked)
    with st.form(f"iu_form_{version.id}_{picked}", border=True):
        st.markdown(inline_markdown(f"**Edit {picked}**"))  # an IU id is file text: nothing fetched
        concept = st.text_input("Concept", value=node.concept)
        level = st.number_input("Abstraction level", 0.0, 1.0, float(node.abstraction_level), step=0.01,
                                help="1 = general principle, 0 = item-specific computation")
        description = st.text_area("Description", value=node.description, height=120)
        note = st.text_input("Note for this version", placeholder=f"e.g. clarified {picked}")
        go = st.form_submit_button(inline_markdown(f"Save {picked} as a new version"), type="primary",
                                   help="Saves this IU together with any unsaved edits in the tables below")
    if not go:
        return
    try:  # checked(): a description over the length limit is one line, not a traceback
        edited = draft_graph.with_node(checked(IUNode, iu_where(picked), id=picked, concept=concept.strip(),
                                               abstraction_level=level, description=description.strip()))
    except GraphError as exc:
        st.error(f"Not saved: {exc}")
        return
    verdict = judge(EditResult(graph=edited, problems=result.problems, renames=result.renames), version.graph)
    if not verdict.can_save:
        st.error("Not saved: " + "; ".join(verdict.blockers))
    elif diff_graphs(version.graph, edited).empty:
        st.info("Nothing changed.")
    else:
        save_version(store, version, edited, note=note or f"edited {picked}", author="human")


def render_editor(store, version, result: EditResult | None = None) -> IUGraph:
    """The node and edge tables; returns the candidate graph (the base one if it cannot be built).

    No column is ``required``: Streamlit holds back a new row until every required cell is filled,
    which kept a half-filled edge row out of sight with no word; instead the row reaches
    :func:`apply_edits`, which names what it lacks.
    """
    base: IUGraph = version.graph
    nkey, ekey = editor_keys(version.id)
    st.markdown("**IUs** — add rows at the bottom, select rows to delete; renaming an id renames its edges")
    st.data_editor(
        node_rows(base), key=nkey, num_rows="dynamic", hide_index=True, width="stretch",
        column_order=NODE_COLUMNS,
        column_config={
            "id": st.column_config.TextColumn("id"),
            "concept": st.column_config.TextColumn("concept"),
            "abstraction_level": st.column_config.NumberColumn(
                "abstraction level", min_value=0.0, max_value=1.0, step=0.01,
                help="1 = general principle, 0 = item-specific computation",
            ),
            "description": st.column_config.TextColumn("description", width="large"),
        },
    )
    # The endpoint options are the saved version's ids and stay fixed while editing: changing a
    # column's options makes Streamlit rebuild the table and drop the edits made so far.
    ids = endpoint_options(base)
    st.markdown(
        "**Prerequisite edges** — `from → to`: understanding *to* needs *from*. "
        "Endpoints list the saved IUs: save new IUs first, then connect them."
    )
    st.data_editor(
        edge_rows(base), key=ekey, num_rows="dynamic", hide_index=True, width="stretch",
        column_order=EDGE_COLUMNS,
        column_config={
            "from": st.column_config.SelectboxColumn("from", options=ids),
            "to": st.column_config.SelectboxColumn("to", options=ids),
            "reason": st.column_config.TextColumn("reason", width="large"),
        },
    )
    result = apply_edits(base, st.session_state.get(nkey), st.session_state.get(ekey)) if result is None else result
    verdict = judge(result, base)
    for msg in verdict.blockers:
        st.error(msg, icon=":material/block:")
    for msg in verdict.inherited:
        st.warning(msg, icon=":material/recycling:")
    for msg in verdict.warnings:
        st.warning(msg, icon=":material/warning:")
    for msg in result.notes:  # e.g. the edges that went with a deleted IU
        st.info(msg, icon=":material/link_off:")
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
        new_id = store.questions.add_graph_version(parent.question_id, graph, note=note, author=author, parent_id=parent.id)
    except KnowSimError as exc:
        st.error(str(exc))
        return
    st.session_state[keys.NONCE] = st.session_state.get(keys.NONCE, 0) + 1
    v = store.questions.get_graph_version(new_id)
    st.session_state[keys.FLASH] = f"Saved version {v.version} ({note})."
    st.session_state[keys.NEXT_VERSION] = v.id  # picked before the selectbox on the rerun
    st.rerun()


def render_history(store, question_id: str) -> None:
    versions = store.questions.graph_versions(question_id)
    if len(versions) < 2:
        st.caption("Only one version so far; save an edit to start a history.")
        return
    label = {v.id: f"v{v.version} · {v.author} · {v.created[:16]} · {v.note or '—'}" for v in versions}
    ids = [v.id for v in versions]
    newest = versions[-1]
    start = ids.index(newest.parent_id) if newest.parent_id in ids else len(ids) - 2
    # keyed by the newest version: after a save the diff opens on the version just saved against
    # its parent (one key for every save would keep showing v1 → v2)
    c1, c2 = st.columns(2)
    a = c1.selectbox("From version", ids, index=start, format_func=label.get, key=f"diff_a_{question_id}_{newest.id}")
    b = c2.selectbox("To version", ids, index=len(ids) - 1, format_func=label.get,
                     key=f"diff_b_{question_id}_{newest.id}")
    by_id = {v.id: v for v in versions}
    d = diff_graphs(by_id[a].graph, by_id[b].graph)
    st.markdown(f"**{d.summary()}**")
    if not d.empty:
        # our own tags around escaped graph text (ui.graph.editor.diff_html)
        st.markdown(diff_html(d), unsafe_allow_html=True)
        with st.expander("As plain text"):
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
    """LLM graph extraction when a provider is configured; otherwise say what is needed."""
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
