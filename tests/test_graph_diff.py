"""graph_diff: a readable, exact account of what changed between two graph versions."""

from __future__ import annotations

import pytest

from knowsim_core.engine.graph import IUEdge, IUGraph, IUNode
from knowsim_core.presentation.graph_diff import diff_graphs


def _graph() -> IUGraph:
    return IUGraph.from_data(
        {
            "nodes": [
                {"id": "A", "concept": "atoms", "abstraction_level": 0.9, "description": "matter is made of atoms"},
                {"id": "B", "concept": "bonds", "abstraction_level": 0.7, "description": "atoms share electrons"},
                {"id": "C", "concept": "crystals", "abstraction_level": 0.5, "description": "ordered solids"},
            ],
            "edges": [{"from": "A", "to": "B"}, {"from": "B", "to": "C"}],
        }
    )


def test_identical_graphs_have_an_empty_diff():
    d = diff_graphs(_graph(), _graph())
    assert d.empty and d.summary() == "no change" and d.lines() == []


def test_added_removed_and_changed_nodes_and_edges():
    old = _graph()
    new = (
        old.without_node("C")
        .with_node(IUNode(id="D", concept="diamond", abstraction_level=0.4, description="carbon crystal"))
        .with_node(old.node("B").model_copy(update={"description": "atoms share electron pairs"}))
        .with_edge("B", "D")
    )
    d = diff_graphs(old, new)
    assert [n.id for n in d.added_nodes] == ["D"]
    assert [n.id for n in d.removed_nodes] == ["C"]
    assert [(c.id, [f.field for f in c.changes]) for c in d.changed_nodes] == [("B", ["description"])]
    assert d.added_edges == (("B", "D"),)
    assert d.removed_edges == (("B", "C"),)
    text = "\n".join(d.lines())
    assert "added IU D: diamond" in text and "removed IU C: crystals" in text
    assert "IU B: description atoms share electrons → atoms share electron pairs" in text
    assert "removed edge B → C" in text and "added edge B → D" in text
    assert d.summary() == "+1 IU, −1 IU, 1 IU changed, +1 edge, −1 edge"


def test_removing_one_copy_of_a_duplicate_edge_is_one_removal():
    old = _graph().model_copy(update={"edges": _graph().edges + (IUEdge(from_="A", to="B"),)})
    new = _graph()
    d = diff_graphs(old, new)
    assert d.removed_edges == (("A", "B"),) and not d.added_edges and not d.changed_edges


def test_edge_field_changes_and_rename_show_as_remove_plus_add():
    old = _graph()
    new = old.model_copy(update={"edges": (IUEdge(from_="A", to="B", reason="needed"), old.edges[1])})
    d = diff_graphs(old, new)
    assert [(c.edge, c.changes[0].field) for c in d.changed_edges] == [(("A", "B"), "reason")]
    renamed = diff_graphs(old, old.with_renamed_node("C", "C2"))
    assert [n.id for n in renamed.added_nodes] == ["C2"] and [n.id for n in renamed.removed_nodes] == ["C"]
    assert renamed.added_edges == (("B", "C2"),) and renamed.removed_edges == (("B", "C"),)


@pytest.mark.parametrize("field,value", [("concept", "ATOMS"), ("abstraction_level", 0.8)])
def test_each_node_field_is_compared(field, value):
    old = _graph()
    new = old.with_node(old.node("A").model_copy(update={field: value}))
    (change,) = diff_graphs(old, new).changed_nodes
    assert change.id == "A" and change.changes[0].field == field and change.changes[0].new == value


# ---------------------------------------------------------------------- word level (issue 14)
def test_word_diff_marks_only_the_words_that_changed():
    from knowsim_core.presentation.graph_diff import WordSpan, word_diff

    spans = word_diff("Wax melts when heated from below by the lamp.", "Wax melts when it is heated from below.")
    assert spans == (
        WordSpan("same", "Wax melts when "), WordSpan("added", "it is "), WordSpan("same", "heated from "),
        WordSpan("removed", "below by the lamp."), WordSpan("added", "below."),
    )


@pytest.mark.parametrize("old,new", [
    ("", "brand new text"), ("gone entirely", ""), ("same words", "same words"),
    ("a  b\n c " * 40, "a b c " * 41), ("x" * 300, "x" * 300 + " y"),
])
def test_word_diff_gives_both_texts_back_in_full(old, new):
    from knowsim_core.presentation.graph_diff import word_diff

    spans = word_diff(old, new)
    assert "".join(s.text for s in spans if s.kind != "added") == old
    assert "".join(s.text for s in spans if s.kind != "removed") == new
    assert all(s.text for s in spans)
    assert all(a.kind != b.kind for a, b in zip(spans, spans[1:]))  # neighbours merged


def test_entries_follow_lines_and_keep_long_text_whole():
    old = _graph()
    long = "atoms share electrons " + "in a covalent bond, " * 6
    new = old.with_node(old.node("B").model_copy(update={"description": long})).with_edge("A", "C")
    d = diff_graphs(old, new)
    entries = d.entries()
    assert [e.label for e in entries] == ["IU B · description", "added edge"]
    assert len(entries) == len(d.lines())
    (same, added) = entries[0].spans
    assert same.text == "atoms share electrons" and added.kind == "added" and added.text.endswith("bond, ")
    assert long.strip() in d.lines()[0]  # the plain text is not cut at 60 characters any more


def test_an_iu_is_named_once_never_iu_iu3():
    """Issue 34 item 18: the history read "added IU IU4: …" and "IU IU2 · concept" — the usual ids
    already say IU. A bare id (``D``) keeps its "IU" word."""
    g = IUGraph.from_data({"nodes": [
        {"id": "IU1", "concept": "atoms", "abstraction_level": 0.9, "description": "a"},
        {"id": "IU2", "concept": "bonds", "abstraction_level": 0.7, "description": "b"},
    ], "edges": [{"from": "IU1", "to": "IU2"}]})
    new = (g.with_node(IUNode(id="IU4", concept="ions", abstraction_level=0.5, description="c"))
           .with_node(g.node("IU2").model_copy(update={"concept": "covalent bonds"})))
    d = diff_graphs(g, new)
    text = "\n".join(d.lines() + [e.label for e in d.entries()])
    assert "IU IU" not in text
    assert "added IU4: ions" in d.lines() and "IU2: concept bonds → covalent bonds" in d.lines()
    assert [e.label for e in d.entries()][:2] == ["added IU4", "IU2 · concept"]
    odd = diff_graphs(g, g.with_node(IUNode(id="D", concept="d", abstraction_level=0.4, description="d")))
    assert odd.lines() == ["added IU D: d"]
