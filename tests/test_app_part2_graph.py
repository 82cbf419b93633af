"""AppTest: the Graph page — live validation of injected table edits, saving, history diff, import."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.engine.graph import IUEdge

PAGE = "../pages/graph.py"
QID = "sample_lava_lamps"


def _open(seeded_store, qid: str = QID) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.query_params["question"] = qid
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _keys(seeded_store, qid: str = QID) -> tuple[str, str, int]:
    v = seeded_store.questions.latest_graph_version(qid)
    return f"nodes_{v.id}_0", f"edges_{v.id}_0", v.id


def _save_button(at: AppTest):
    return next(b for b in at.button if b.label == "Save as new version")


def test_page_renders_the_sample_graph_tables(seeded_store):
    at = _open(seeded_store)
    g = seeded_store.questions.latest_graph_version(QID).graph
    frames = at.dataframe
    assert len(frames) == 2
    nodes = frames[0].value
    assert list(nodes["id"]) == [n.id for n in g.nodes]
    assert len(frames[1].value) == len(g.edges)
    assert not at.error


def test_an_edit_that_closes_a_cycle_is_refused_with_the_cycle_named(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    edge = seeded_store.questions.latest_graph_version(QID).graph.edges[0]
    at.session_state[ekey] = {"edited_rows": {}, "added_rows": [{"from": edge.to, "to": edge.from_}], "deleted_rows": []}
    at.run()
    errors = [e.value for e in at.error]
    assert any("cycle" in e and edge.from_ in e and edge.to in e for e in errors), errors
    assert _save_button(at).disabled
    assert len(seeded_store.questions.graph_versions(QID)) == 1


def test_a_valid_edit_saves_a_new_version_and_the_diff_shows_it(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    g = seeded_store.questions.latest_graph_version(QID).graph
    first = g.nodes[0]
    at.session_state[nkey] = {"edited_rows": {0: {"description": "Wax melts when heated from below."}},
                              "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.error and not _save_button(at).disabled
    at.text_input[0].input("clarified IU description")
    _save_button(at).click().run()
    versions = seeded_store.questions.graph_versions(QID)
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].note == "clarified IU description" and versions[1].parent_id == vid
    assert versions[1].graph.node(first.id).description == "Wax melts when heated from below."
    assert any("Saved version 2" in s.value for s in at.success)
    history = "\n".join(c.value for c in at.code)
    assert f"{first.id}: description" in history and f"IU {first.id}" not in history and "Wax melts when heated from below." in history
    assert any("1 IU changed" in m.value for m in at.markdown)


def test_an_inherited_cycle_does_not_block_and_can_be_fixed(seeded_store):
    g = seeded_store.questions.latest_graph_version(QID).graph
    e = g.edges[0]
    cyclic = g.model_copy(update={"edges": g.edges + (IUEdge(from_=e.to, to=e.from_),)})
    seeded_store.questions.add_graph_version(QID, cyclic, note="as extracted (cyclic)", author="llm")
    at = _open(seeded_store)
    assert any("prerequisite cycles" in w.value for w in at.warning)
    nkey, ekey, vid = _keys(seeded_store)
    # deleting the closing edge (the last row) removes the cycle; the save is allowed
    at.session_state[ekey] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [len(cyclic.edges) - 1]}
    at.run()
    assert not at.error and not _save_button(at).disabled
    _save_button(at).click().run()
    assert seeded_store.questions.latest_graph_version(QID).graph.cycles() == []


def test_large_level_jump_warns_with_a_bridging_suggestion(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    g = seeded_store.questions.latest_graph_version(QID).graph
    hi = max(g.nodes, key=lambda n: n.abstraction_level)
    lo = min(g.nodes, key=lambda n: n.abstraction_level)
    assert hi.abstraction_level - lo.abstraction_level > 0.35
    at.session_state[ekey] = {"edited_rows": {}, "deleted_rows": [], "added_rows": [{"from": hi.id, "to": lo.id}]}
    at.run()
    warnings = [w.value for w in at.warning]
    assert any(f"{hi.id} → {lo.id}" in w and "bridging" in w and "between" in w for w in warnings), warnings
    assert not at.error and not _save_button(at).disabled


def test_a_new_iu_is_added_and_its_missing_level_is_named(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    at.session_state[nkey] = {"edited_rows": {}, "deleted_rows": [],
                              "added_rows": [{"id": "IUX", "concept": "bridge", "description": "a bridging idea"}]}
    at.run()
    assert any("new IU row 1: fill in abstraction_level" in e.value for e in at.error)
    assert _save_button(at).disabled


@pytest.mark.parametrize(
    "payload,expected",
    [
        (b"{not json", "not valid JSON"),
        (json.dumps({"format": "something-else", "items": []}).encode(), "not an IU graph"),
        (json.dumps([1, 2, 3]).encode(), "not an IU graph"),
        (json.dumps({"format": "knowsim-studio-run"}).encode(), "saved run"),
    ],
)
def test_bad_imports_give_a_clear_message(payload, expected):
    from knowsim_core.errors import FormatError
    from ui.graph.editor import parse_graph_file

    with pytest.raises(FormatError, match=expected):
        parse_graph_file(payload, name="upload.json")


def test_html_in_every_text_field_is_refused_and_nothing_is_stored(seeded_store):
    from knowsim_core.errors import FormatError
    from ui.graph.editor import parse_graph_file

    evil = "<img src=x onerror=alert(1)>"
    data = {"knowledge_areas": [evil],
            "nodes": [{"id": f"IU{i}{evil}", "concept": evil, "abstraction_level": 0.5, "description": evil}
                      for i in range(2)],
            "edges": [{"from": f"IU0{evil}", "to": f"IU1{evil}", "reason": evil}]}
    before = [(v.id, v.graph) for v in seeded_store.questions.graph_versions(QID)]
    with pytest.raises(FormatError, match="HTML or script markup") as info:
        parse_graph_file(json.dumps(data).encode(), name="evil.json")
    assert "concept" in str(info.value) and "description" in str(info.value)
    assert [(v.id, v.graph) for v in seeded_store.questions.graph_versions(QID)] == before


# ---------------------------------------------------------------------- issue 14
def _graph_payload(at: AppTest) -> dict:
    from tests.test_app_part1 import graph_payloads

    (payload,) = graph_payloads(at)
    return payload


def _columns(at: AppTest, which: int) -> dict:
    return json.loads(at.dataframe[which].proto.columns)


def test_edge_endpoints_are_listed_as_people_count(seeded_store):
    at = _open(seeded_store)
    cols = _columns(at, 1)
    expected = [f"IU{i}" for i in range(1, 15)]  # the sample has IU1…IU14: a string sort gives IU1, IU10, …
    assert cols["from"]["type_config"]["options"] == expected
    assert cols["to"]["type_config"]["options"] == expected


def test_natural_key_orders_numbers_inside_ids():
    from knowsim_core.engine.graph import natural_key

    ids = ["IU10", "IU2", "IU1", "IU14", "IU2b", "A"]
    assert sorted(ids, key=natural_key) == ["A", "IU1", "IU2", "IU2b", "IU10", "IU14"]


def test_a_half_filled_edge_row_is_named_not_held_back(seeded_store):
    at = _open(seeded_store)
    # a required column makes the browser hold a new row back until it is complete, silently
    assert not any(c.get("required") for c in _columns(at, 1).values())
    assert not any(c.get("required") for c in _columns(at, 0).values())
    nkey, ekey, vid = _keys(seeded_store)
    at.session_state[ekey] = {"edited_rows": {}, "deleted_rows": [], "added_rows": [{"from": "IU3"}]}
    at.run()
    errors = [e.value for e in at.error]
    assert any("new edge row 1 is incomplete (IU3 → ?)" in e and "choose its to IU" in e for e in errors), errors
    assert _save_button(at).disabled


def test_a_half_filled_iu_row_names_what_it_lacks(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    at.session_state[nkey] = {"edited_rows": {}, "deleted_rows": [],
                              "added_rows": [{"id": "IU15", "abstraction_level": 0.4}]}
    at.run()
    errors = [e.value for e in at.error]
    assert any("new IU row 1 is incomplete: fill in concept and description" in e for e in errors), errors


def test_the_graph_draws_unsaved_edges_and_rings_the_cycle_they_make(seeded_store):
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    g = seeded_store.questions.latest_graph_version(QID).graph
    e = g.edges[0]
    before = _graph_payload(at)
    assert [e.to, e.from_] not in before["edges"] and before["marked"] == [] and before["changed"] == []
    at.session_state[ekey] = {"edited_rows": {}, "deleted_rows": [], "added_rows": [{"from": e.to, "to": e.from_}]}
    at.run()
    after = _graph_payload(at)
    assert [e.to, e.from_] in after["edges"] and after["marked"] == [[e.to, e.from_]]
    assert set(after["changed"]) == {e.from_, e.to}  # the would-be cycle, ringed
    assert any("unsaved edits" in c.value and f"{e.to} → {e.from_}" in c.value for c in at.caption)
    assert _save_button(at).disabled  # still refused: the picture shows what the error says


def test_clicking_an_iu_opens_its_editor_and_saves_a_version(seeded_store):
    at = _open(seeded_store)
    g = seeded_store.questions.latest_graph_version(QID).graph
    vid = seeded_store.questions.latest_graph_version(QID).id
    node = g.nodes[2]
    at.session_state[f"graph_view_{vid}"] = {"selected": node.id}  # what a click in the browser sends
    at.run()
    assert any(m.value == f"**Edit {node.id}**" for m in at.markdown)
    concept = next(t for t in at.text_input if t.label == "Concept")
    assert concept.value == node.concept
    next(t for t in at.text_area if t.label == "Description").input("Rewritten after a click on the graph.")
    next(b for b in at.button if b.label == f"Save {node.id} as a new version").click().run()
    assert not at.exception, [x.value for x in at.exception]
    latest = seeded_store.questions.latest_graph_version(QID)
    assert latest.version == 2 and latest.note == f"edited {node.id}"
    assert latest.graph.node(node.id).description == "Rewritten after a click on the graph."


def test_history_diff_is_word_level_highlighted_and_escaped(seeded_store):
    g = seeded_store.questions.latest_graph_version(QID).graph
    first = g.nodes[0]
    long_tail = " and it keeps going well past sixty characters so nothing may be cut off"
    new_text = first.description + long_tail + " <b>bold?</b>"
    seeded_store.questions.add_graph_version(QID, g.with_node(first.model_copy(update={"description": new_text})), note="longer", author="t")
    at = _open(seeded_store)
    html_md = next(m.value for m in at.markdown if 'class="ks-diff"' in m.value)
    assert f"{first.id} · description" in html_md
    # only the new words are highlighted; the shared start is plain text, the whole text is there
    assert '<span class="ks-added"' in html_md and "ks-removed" not in html_md
    added = html_md.split('<span class="ks-added"', 1)[1]
    assert "sixty characters so nothing may be cut off" in added
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html_md and "<b>bold?</b>" not in html_md


def test_the_preview_leaves_out_rows_a_browser_graph_cannot_draw(seeded_store):
    from ui.graph.editor import apply_edits, preview

    base = seeded_store.questions.latest_graph_version(QID).graph
    # a new row repeating IU1's id and one without an id: the tables name both problems; the
    # picture (whose nodes need unique ids) leaves them out and still draws the rest
    result = apply_edits(base, {"edited_rows": {}, "deleted_rows": [], "added_rows": [
        {"id": "IU1", "concept": "copy", "abstraction_level": 0.5, "description": "d"},
        {"concept": "no id yet", "abstraction_level": 0.5, "description": "d"},
    ]}, None)
    shown = preview(base, result.graph)
    assert [n.id for n in shown.graph.nodes] == [n.id for n in base.nodes]
    assert shown.cycle_ids == () and shown.new_edges == ()


def test_a_refused_id_or_overlong_text_is_shown_as_an_error_not_a_traceback(seeded_store):
    """The field validators raised pydantic's ValidationError out of the page (a traceback)."""
    at = _open(seeded_store)
    nkey, ekey, vid = _keys(seeded_store)
    first = seeded_store.questions.latest_graph_version(QID).graph.nodes[0]
    at.session_state[nkey] = {"edited_rows": {0: {"id": "IU\u200b9"}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{first.id}: id contains the invisible character U+200B" in e.value for e in at.error)
    assert _save_button(at).disabled
    at.session_state[nkey] = {"edited_rows": {0: {"description": "d" * 20_001}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("description is 20,001 characters; at most 20,000" in e.value for e in at.error)
    assert _save_button(at).disabled
    assert len(seeded_store.questions.graph_versions(QID)) == 1


def test_the_iu_panel_refuses_an_overlong_description_in_one_line(seeded_store):
    at = _open(seeded_store)
    v = seeded_store.questions.latest_graph_version(QID)
    node = v.graph.nodes[2]
    at.session_state[f"graph_view_{v.id}"] = {"selected": node.id}
    at.run()
    next(t for t in at.text_area if t.label == "Description").input("d" * 20_001)
    next(b for b in at.button if b.label == f"Save {node.id} as a new version").click().run()
    assert not at.exception, [x.value for x in at.exception]
    assert any(e.value.startswith(f"Not saved: {node.id}: description is 20,001 characters") for e in at.error)
    assert len(seeded_store.questions.graph_versions(QID)) == 1
