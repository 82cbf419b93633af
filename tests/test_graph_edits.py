"""Hand edits return freshly built graphs: nothing derived from the old graph survives an edit.

The three reproduced bugs of issue 11 (item 1) — a deleted id still indexed, a false "IU30 is not a
node" after a rename, a rename onto an existing id not flagged — each have a test here, in the core
and through the editor's table deltas; and the store refuses a graph with errors it did not inherit.
"""

from __future__ import annotations

import copy
import math
import pickle

import pytest

from knowsim_core.errors import GraphError
from knowsim_core.engine.graph import MAX_IU_NAME, MAX_IU_TEXT, IUGraph, IUNode
from knowsim_core.formats.samples import get_sample
from ui.graph.editor import apply_edits, judge

QID = "sample_lava_lamps"


@pytest.fixture()
def lava() -> IUGraph:
    # a private instance (the sample cache is shared): build it from data so its index is its own
    return IUGraph.from_data(get_sample(QID).graph.to_data())


def _new(node_id: str) -> IUNode:
    return IUNode(id=node_id, concept="New idea", abstraction_level=0.5, description="A new IU.")


# ---------------------------------------------------------------------- the three reproduced bugs
def test_a_deleted_node_is_gone_from_the_index(lava):
    lava.index  # computed before the edit, as the page does
    g = lava.without_node("IU3")
    assert "IU3" not in g.index.ids
    assert "IU3" not in g.index.label_of and "IU3" not in g.index.depth
    assert all("IU3" not in ps for ps in g.index.prereqs.values())


def test_renaming_to_a_new_id_is_not_reported_as_a_missing_node(lava):
    lava.index
    g = lava.with_renamed_node("IU3", "IU30")
    assert g.errors() == []
    assert "IU30" in g.index.ids and "IU3" not in g.index.ids


def test_renaming_onto_an_id_added_by_an_earlier_edit_is_refused(lava):
    g = lava.with_node(_new("IU99"))
    with pytest.raises(GraphError, match="IU99 already exists"):
        g.with_renamed_node("IU1", "IU99")


def test_editor_rename_to_a_new_id_can_be_saved(lava):
    lava.index  # the page lists the saved ids before applying the deltas
    result = apply_edits(lava, {"edited_rows": {2: {"id": "IU30"}}}, None)
    verdict = judge(result, lava)
    assert verdict.can_save, verdict.blockers
    assert "IU30" in result.graph.index.ids


def test_editor_rename_onto_an_existing_id_is_blocked(lava):
    lava.index  # the page lists the saved ids before applying the deltas
    result = apply_edits(lava, {"edited_rows": {0: {"id": "IU2"}}}, None)
    verdict = judge(result, lava)
    assert not verdict.can_save
    assert any("IU2 is used by more than one node" in b for b in verdict.blockers)


def test_editor_deleting_a_node_reindexes(lava):
    lava.index  # the page lists the saved ids before applying the deltas
    result = apply_edits(lava, {"deleted_rows": [2]}, None)
    assert "IU3" not in result.graph.index.ids
    assert judge(result, lava).can_save


# ---------------------------------------------------------------------- copies carry no derived data
@pytest.mark.parametrize(
    "make_copy",
    [lambda g: g.model_copy(), lambda g: g.model_copy(deep=True), copy.copy, copy.deepcopy,
     lambda g: pickle.loads(pickle.dumps(g))],
    ids=["model_copy", "model_copy_deep", "copy", "deepcopy", "pickle"],
)
def test_no_copy_carries_the_cached_index(lava, make_copy):
    lava.index
    c = make_copy(lava)
    assert "index" not in c.__dict__
    assert c == lava and c.index.ids == lava.index.ids


def test_model_copy_with_update_is_revalidated_and_reindexed(lava):
    lava.index
    g = lava.model_copy(update={"nodes": lava.nodes[:-1]})
    assert g.index.ids == lava.index.ids[:-1]
    last = lava.nodes[-1].id
    assert [i.code for i in g.errors()] == ["dangling_edge"] * sum(last in (e.from_, e.to) for e in lava.edges)
    with pytest.raises(GraphError, match="abstraction_level"):
        lava.model_copy(update={"nodes": [{"id": "X", "concept": "c", "abstraction_level": "high", "description": "d"}]})


# ---------------------------------------------------------------------- the save guard
def _bad(lava: IUGraph, kind: str) -> IUGraph:
    data = lava.to_data()
    if kind == "empty":
        data["nodes"], data["edges"] = [], []
    elif kind == "nan":
        data["nodes"][0]["abstraction_level"] = math.nan
    elif kind == "duplicate":
        data["nodes"][1]["id"] = data["nodes"][0]["id"]
    elif kind == "dangling":
        data["edges"].append({"from": "IU404", "to": "IU1", "delta_l": None, "reason": ""})
    return IUGraph.from_data(data)


@pytest.mark.parametrize("kind", ["empty", "nan", "duplicate", "dangling"])
def test_the_store_refuses_a_broken_graph_with_or_without_a_parent(seeded_store, lava, kind):
    parent = seeded_store.questions.latest_graph_version(QID)
    bad = _bad(lava, kind)
    for parent_id in (parent.id, None):
        with pytest.raises(GraphError, match="^graph not saved: ") as exc:
            seeded_store.questions.add_graph_version(QID, bad, note="x", parent_id=parent_id)
        assert "\n" not in str(exc.value)
    assert len(seeded_store.questions.graph_versions(QID)) == 1


def test_the_store_refuses_a_new_cycle_but_keeps_an_inherited_one(seeded_store, lava):
    v1 = seeded_store.questions.latest_graph_version(QID)
    root, child = lava.edges[0].from_, lava.edges[0].to
    cyclic = IUGraph.from_data({**lava.to_data(), "edges": lava.to_data()["edges"] + [
        {"from": child, "to": root, "delta_l": None, "reason": ""}]})
    with pytest.raises(GraphError, match="prerequisite cycle"):
        seeded_store.questions.add_graph_version(QID, cyclic, note="new cycle", parent_id=v1.id)
    # saved as authored (no parent: an import) its cycle is allowed …
    v2 = seeded_store.questions.add_graph_version(QID, cyclic, note="as extracted")
    # … and a child that keeps that cycle while changing something else may be saved
    child_graph = cyclic.with_node(_new("IU99"))
    v3 = seeded_store.questions.add_graph_version(QID, child_graph, note="added IU99", parent_id=v2)
    assert seeded_store.questions.get_graph_version(v3).graph == child_graph


def test_the_editor_and_the_store_agree(seeded_store, lava):
    """What the editor blocks the store refuses, and what it allows the store saves."""
    v1 = seeded_store.questions.latest_graph_version(QID)
    for delta in ({"edited_rows": {0: {"id": "IU2"}}}, {"edited_rows": {2: {"id": "IU30"}}},
                  {"edited_rows": {0: {"abstraction_level": 1.5}}}, {"deleted_rows": [4]}):
        result = apply_edits(v1.graph, delta, None)
        if judge(result, v1.graph).can_save:
            seeded_store.questions.add_graph_version(QID, result.graph, note="ok", parent_id=v1.id)
        else:
            with pytest.raises(GraphError):
                seeded_store.questions.add_graph_version(QID, result.graph, note="bad", parent_id=v1.id)


# ---------------------------------------------------------------------- refused field values are GraphErrors
# The field validators (visible ids, bounded text) raise pydantic's ValidationError; the edit
# methods promise GraphError, and the editor must show a problem, not a traceback.
def test_renaming_to_an_invisible_id_is_a_graph_error(lava):
    with pytest.raises(GraphError, match=r"^renaming IU1: id contains the invisible character U\+200B"):
        lava.with_renamed_node("IU1", "IU\u200b9")
    with pytest.raises(GraphError, match="id is 1,001 characters; at most 1,000"):
        lava.with_renamed_node("IU1", "I" * (MAX_IU_NAME + 1))


def test_an_edge_reason_over_the_limit_is_a_graph_error(lava):
    a, b = lava.nodes[0].id, lava.nodes[-1].id
    with pytest.raises(GraphError, match=f"^edge {a} → {b}: reason is 20,001 characters; at most 20,000"):
        lava.with_edge(a, b, reason="r" * (MAX_IU_TEXT + 1))


@pytest.mark.parametrize(
    "node_delta,edge_delta,expected",
    [
        ({"edited_rows": {0: {"description": "d" * (MAX_IU_TEXT + 1)}}}, None,
         "IU1: description is 20,001 characters; at most 20,000 are allowed"),
        ({"edited_rows": {0: {"id": "IU\u200b9"}}}, None,
         "IU1: id contains the invisible character U+200B (ZERO WIDTH SPACE)"),
        ({"added_rows": [{"id": "IU50", "concept": "c" * (MAX_IU_NAME + 1), "abstraction_level": 0.3,
                          "description": "x"}]}, None,
         "new IU row 1: concept is 1,001 characters; at most 1,000 are allowed"),
        (None, {"edited_rows": {0: {"reason": "r" * (MAX_IU_TEXT + 1)}}},
         "reason is 20,001 characters; at most 20,000 are allowed"),
        (None, {"added_rows": [{"from": "IU1", "to": "IU\u202e2"}]},
         "new edge row 1: to contains the invisible character U+202E"),
    ],
)
def test_editor_reports_a_refused_field_as_a_problem(lava, node_delta, edge_delta, expected):
    result = apply_edits(lava, node_delta, edge_delta)
    assert result.graph is None  # nothing to show or save until the row is fixed
    assert len(result.problems) == 1 and expected in result.problems[0], result.problems
    verdict = judge(result, lava)
    assert not verdict.can_save and verdict.blockers == result.problems
