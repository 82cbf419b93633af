"""Every validation rule of spec §1.1 names the offending ids/fields and says how to fix it."""

from __future__ import annotations

import pytest

from knowsim_core.errors import GraphCycleError, GraphError
from knowsim_core.engine.graph import IUGraph, IUNode


def node(i, level=0.5, concept=None, description="A description."):
    return {"id": f"IU{i}", "concept": concept or f"Concept {i}", "abstraction_level": level, "description": description}


def edge(a, b, dl=None):
    return {"from": f"IU{a}", "to": f"IU{b}", "delta_l": dl, "reason": "r"}


def graph(nodes, edges=()):
    return IUGraph.from_data({"knowledge_areas": ["k"], "nodes": nodes, "edges": list(edges)})


def codes(g):
    return {i.code: i for i in g.issues()}


def test_not_an_object_or_missing_nodes_is_refused_with_what_a_graph_needs():
    with pytest.raises(GraphError, match="JSON object"):
        IUGraph.from_data([1, 2])
    with pytest.raises(GraphError, match="no 'nodes' list"):
        IUGraph.from_data({"edges": []})


def test_missing_node_field_names_the_field_and_the_node():
    with pytest.raises(GraphError) as exc:
        IUGraph.from_data({"nodes": [{"id": "IU1", "abstraction_level": 0.5, "description": "d"}], "edges": []})
    assert "nodes.0.concept" in str(exc.value) and "every node needs" in str(exc.value)


def test_empty_graph_is_an_error():
    g = graph([])
    assert codes(g)["empty"].severity == "error"
    with pytest.raises(GraphError, match="add at least one IU"):
        g.require_runnable()


def test_duplicate_ids_dangling_self_loop_and_level_range():
    g = graph([node(1), node(1), node(2, level=1.4)], [edge(2, 7), edge(2, 2)])
    c = codes(g)
    assert c["duplicate_id"].ids == ("IU1",) and "rename one" in c["duplicate_id"].message
    assert "IU7" in c["dangling_edge"].message and "add the node or delete the edge" in c["dangling_edge"].message
    assert c["self_loop"].ids == ("IU2",) and "delete it" in c["self_loop"].message
    assert "1.4" in c["level_range"].message and "[0, 1]" in c["level_range"].message
    assert all(c[k].severity == "error" for k in ("duplicate_id", "dangling_edge", "self_loop", "level_range"))


def test_cycle_is_reported_with_its_nodes_and_path():
    g = graph([node(1), node(2), node(3)], [edge(1, 2), edge(2, 3), edge(3, 2)])
    cyc = codes(g)["cycle"]
    assert cyc.ids == ("IU2", "IU3")
    assert "IU2 → IU3 → IU2" in cyc.message and "delete or reverse" in cyc.message


def test_warnings_duplicate_edge_large_delta_mismatch_and_upward_info():
    g = graph(
        [node(1, 0.9), node(2, 0.4), node(3, 0.8)],
        [edge(1, 2, 0.5), edge(1, 2, 0.5), edge(2, 3, 0.1)],
    )
    c = codes(g)
    assert c["duplicate_edge"].severity == "warning" and c["duplicate_edge"].ids == ("IU1", "IU2")
    assert "bridging IU" in c["delta_l_large"].message
    assert c["delta_l_mismatch"].ids == ("IU2", "IU3") and "0.400" in c["delta_l_mismatch"].message
    assert c["upward_edge"].severity == "info"


def test_delta_l_tolerance_accepts_float_noise():
    g = graph([node(1, 0.8), node(2, 0.45)], [edge(1, 2, 0.35000000000000003)])
    assert "delta_l_large" not in codes(g)


def test_hand_edit_refuses_a_new_cycle_and_names_it():
    g = graph([node(1), node(2), node(3)], [edge(1, 2), edge(2, 3)])
    with pytest.raises(GraphCycleError) as exc:
        g.with_edge("IU3", "IU1")
    assert exc.value.cycle == ("IU1", "IU2", "IU3", "IU1")
    assert "IU1 → IU2 → IU3 → IU1" in str(exc.value)
    with pytest.raises(GraphError, match="own prerequisite"):
        g.with_edge("IU2", "IU2")
    with pytest.raises(GraphError, match="unknown IU id 'IU9'"):
        g.with_edge("IU9", "IU1")


def test_edits_keep_the_original_and_follow_renames():
    g = graph([node(1, 0.9), node(2, 0.6)])
    g2 = g.with_edge("IU1", "IU2").with_renamed_node("IU1", "IU0")
    assert g.edges == ()
    assert [(e.from_, e.to, e.delta_l) for e in g2.edges] == [("IU0", "IU2", 0.3)]
    g3 = g2.with_node(IUNode(id="IU3", concept="New", abstraction_level=0.5, description="d")).without_node("IU2")
    assert [n.id for n in g3.nodes] == ["IU0", "IU3"] and g3.edges == ()
    with pytest.raises(GraphError, match="already exists"):
        g2.with_renamed_node("IU0", "IU2")


def test_save_blockers_allow_an_inherited_cycle_but_not_a_new_one():
    parent = graph([node(1), node(2), node(3)], [edge(1, 2), edge(2, 1)])
    fixed_elsewhere = parent.with_node(IUNode(id="IU4", concept="x", abstraction_level=0.5, description="d"))
    assert fixed_elsewhere.save_blockers(parent) == []
    worse = graph([node(1), node(2), node(3)], [edge(1, 2), edge(2, 1), edge(2, 3), edge(3, 2)])
    blockers = worse.save_blockers(parent)
    assert [b.code for b in blockers] == ["cycle"] and set(blockers[0].ids) == {"IU1", "IU2", "IU3"}


def test_save_blockers_inherit_soft_errors_but_never_broken_structure():
    parent = graph([node(1), node(2, description="")], [edge(1, 2), edge(9, 1)])
    assert {b.code for b in parent.save_blockers(parent)} == {"dangling_edge"}  # never inherited
    fixed = graph([node(1), node(2, description="")], [edge(1, 2)])
    assert fixed.save_blockers(parent) == []  # the empty description came with the parent
    worse = graph([node(1, concept=" "), node(2, description="")], [edge(1, 2)])
    assert [(b.code, b.field) for b in worse.save_blockers(parent)] == [("missing_field", "concept")]


def test_as_authored_graphs_keep_their_cycles_only():
    cyclic = graph([node(1), node(2)], [edge(1, 2), edge(2, 1)])
    assert cyclic.save_blockers(as_authored=True) == []
    assert [b.code for b in cyclic.save_blockers()] == ["cycle"]
    with pytest.raises(GraphError, match="^graph not saved: IU id IU1 is used by more than one node"):
        graph([node(1), node(1)]).require_savable(as_authored=True)


def test_the_acyclic_shortcut_of_cycles_agrees_with_networkx_on_random_graphs():
    """IUGraph.cycles answers acyclic graphs without networkx (Kahn's algorithm); it must say
    "acyclic" exactly when networkx does, dangling endpoints and repeated edges included."""
    import random

    import networkx as nx

    from knowsim_core.engine.graph import _acyclic

    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for _ in range(2000):
        ids = tuple(f"v{i}" for i in range(rng.randint(1, 8)))
        ends = ids + ("dangling",)
        edges = [(a, b) for a, b in ((rng.choice(ends), rng.choice(ends)) for _ in range(rng.randint(0, 12))) if a != b]
        g = nx.DiGraph(edges)
        g.add_nodes_from(ids)
        expected = nx.is_directed_acyclic_graph(g)
        assert _acyclic(ids, edges) is expected, (ids, edges)
        seen[expected] += 1
    assert min(seen.values()) > 100  # both answers were exercised
