"""Invariants of the rules on random graphs, states and labels (hypothesis)."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from knowsim_core.engine.config import REFERENCE_RATIOS, preset
from knowsim_core.errors import GraphError
from knowsim_core.engine.graph import IUGraph, IUNode
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.rules import _gap_sum, apply_turn
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.session import play_turn
from knowsim_core.engine.signals import normalize_entries
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState, sample_initial_state

QUALITIES = ["well_explained", "shallow", "not_mentioned", None, "weird"]
ATTEMPTS = ["reasoning", "articulation", "none", "bogus"]


@st.composite
def graphs(draw, allow_cycles=True):
    n = draw(st.integers(min_value=2, max_value=12))
    nodes = [
        {"id": f"IU{i + 1}", "concept": f"c{i}", "abstraction_level": draw(st.floats(0, 1)), "description": "d"}
        for i in range(n)
    ]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n))
    edges = []
    for a, b in pairs:
        if a == b or (not allow_cycles and a > b):
            continue
        if not allow_cycles:
            a, b = min(a, b), max(a, b)
        edges.append({"from": f"IU{a + 1}", "to": f"IU{b + 1}", "delta_l": 0.1, "reason": ""})
    if allow_cycles and draw(st.booleans()):  # an edge from an id that is not a node (spec §1.1 tolerates it)
        edges.append({"from": "IU77", "to": f"IU{draw(st.integers(1, n))}", "delta_l": 0.1, "reason": ""})
    return IUGraph.from_data({"knowledge_areas": ["x"], "nodes": nodes, "edges": edges})


@st.composite
def turns(draw):
    g = draw(graphs())
    pre = KnowledgeState(
        {
            lab: LabelState(IUState(draw(st.integers(0, 3))), draw(st.one_of(st.none(), st.floats(0, 0.99))))
            for lab in g.index.labels
        }
    )
    ids = list(g.index.ids) + ["IU99", None]
    entries = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.sampled_from(ids),
                    "teaching_quality": st.sampled_from(QUALITIES),
                    "user_attempt_type": st.sampled_from(ATTEMPTS),
                }
            ),
            max_size=3 * len(g.nodes),
        )
    )
    tau = draw(st.integers(2, 10))
    return g, pre, normalize_entries(entries), tau


@settings(max_examples=300, deadline=None)
@given(turns(), st.sampled_from(["paper-final", "paper-text"]))
def test_no_state_decreases_and_none_exceeds_its_ceiling(turn, preset_name):
    g, pre, signals, tau = turn
    out = apply_turn(g, pre, signals, tau=tau, params=preset(preset_name))
    for n in out.nodes:
        assert n.post >= n.pre
        assert n.post <= max(n.pre, n.ceiling)  # a rise never passes the ceiling it was given
        assert n.post - n.pre <= 1  # cap at one step per turn
        assert 0.0 <= n.carry < 1.0 + 1e-12


@settings(max_examples=300, deadline=None)
@given(turns())
def test_ceilings_follow_the_minimum_rule_literally(turn):
    """The update's fast prerequisite readers agree with §4.7 read off the edge list."""
    g, pre, signals, tau = turn
    nodes = set(g.index.ids)
    out = apply_turn(g, pre, signals, tau=tau, params=preset("paper-text"))  # pre-turn ceilings
    for n in out.nodes:
        prereqs = [e.from_ for e in g.edges if e.to == n.id]
        states = [pre.state_of(g.label(p)) if p in nodes else IUState.UNAWARE for p in prereqs]
        expected = IUState.KNOWS_WELL if not states else max(IUState.STRUGGLING, min(states))
        assert n.ceiling_pre == expected == n.ceiling, (n.id, prereqs, states)


def _gap_by_queue(g: IUGraph, mentioned: set[str], post: dict[str, int]) -> float:
    """The gap sum as a literal breadth-first search per IU (the oracle for the precomputed order)."""
    total = 0.0
    for v in g.index.ids:
        if v not in mentioned or post[v] > 1:
            continue
        queue, visited, found = [(v, 0)], {v}, (0, 0)
        while queue and found == (0, 0):
            u, d = queue.pop(0)
            for p in [e.from_ for e in g.edges if e.to == u]:
                if p in visited:
                    continue
                visited.add(p)
                if post.get(p, 0) >= 2:
                    found = (d + 1, post[p])
                    break
                queue.append((p, d + 1))
        total += found[0] + 3 - found[1]
    return total


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_gap_sum_matches_a_breadth_first_search(g, data):
    post = {v: data.draw(st.integers(0, 3)) for v in g.index.ids}
    mentioned = set(data.draw(st.lists(st.sampled_from(list(g.index.ids)))))
    assert _gap_sum(g, mentioned, post) == _gap_by_queue(g, mentioned, post)


@settings(max_examples=100, deadline=None)
@given(graphs(allow_cycles=False), st.sampled_from(sorted(REFERENCE_RATIOS)), st.integers(0, 10_000))
def test_same_seed_same_initial_state(g, level, seed):
    a = sample_initial_state(g, REFERENCE_RATIOS[level], random.Random(seed))
    b = sample_initial_state(g, REFERENCE_RATIOS[level], random.Random(seed))
    assert a == b
    known = {i for i in g.index.ids if a.state_of(g.label(i)) == IUState.KNOWS_WELL}
    # the known set is closed under prerequisites (spec §2.3)
    assert all(p in known for i in known for p in g.index.prereqs.get(i, ()))


@settings(max_examples=60, deadline=None)
@given(turns())
def test_record_json_round_trip(turn):
    g, pre, signals, tau = turn
    params = preset()
    rec = play_turn(g, pre, signals, turn=1, tau=tau, params=params, user_message="u <b>", assistant_message="a")
    run = RunRecord(
        question_id="q", question="?", reference_answer="!", graph=g, level="novice", initial_state=pre,
        tau=tau, params=params, seed=3, adapters=(("assistant", "x/y"),), turns=(rec,), stop_reason="max_turns",
    )
    assert RunRecord.from_json(run.to_json()) == run


# ---------------------------------------------------------------------- hand edits (issue 11, item 1)
SAMPLE_GRAPHS = {s.id: s.graph for s in load_samples()}


def _index_view(g: IUGraph) -> tuple:
    """Everything in the derived index, comparable by value (the plan's readers are itemgetters)."""
    idx = g.index
    return (
        idx.ids, idx.index_of, idx.labels, idx.label_of, idx.prereqs, idx.neighbors, idx.depth,
        idx.update_order, idx.topo_order, idx.plan,
        idx.neighbor_lists, idx.ancestors,
    )


@st.composite
def _edit(draw, g: IUGraph):
    """One hand edit of ``g`` (ids drawn from the graph, plus new and missing ones)."""
    ids = [n.id for n in g.nodes] or ["IU1"]
    some = st.sampled_from(ids + ["IU90", "IU91"])
    kind = draw(st.sampled_from(["add", "replace", "remove", "rename", "edge", "unedge"]))
    if kind in ("add", "replace"):
        node_id = draw(some) if kind == "replace" else draw(st.sampled_from(["IU90", "IU91", "IU92"]))
        level = draw(st.one_of(st.floats(0, 1), st.just(1.5)))
        node = IUNode(id=node_id, concept=draw(st.sampled_from(["", "c"])), abstraction_level=level, description="d")
        return lambda x: x.with_node(node)
    if kind == "remove":
        v = draw(some)
        return lambda x: x.without_node(v)
    if kind == "rename":
        a, b = draw(some), draw(st.one_of(some, st.sampled_from(["IU30", "X"])))
        return lambda x: x.with_renamed_node(a, b)
    a, b = draw(some), draw(some)
    return (lambda x: x.with_edge(a, b)) if kind == "edge" else (lambda x: x.without_edge(a, b))


def _check_edit_sequences(g: IUGraph, data) -> None:
    g.index  # cached before editing, as every page does
    for _ in range(data.draw(st.integers(1, 8))):
        try:
            g = data.draw(_edit(g))(g)
        except GraphError:
            continue  # a refused edit (unknown id, new cycle, taken id) leaves g as it was
        fresh = IUGraph.from_data(g.to_data())
        assert _index_view(g) == _index_view(fresh)
        assert g.issues() == fresh.issues()
        assert _index_view(g.model_copy()) == _index_view(fresh)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(SAMPLE_GRAPHS)), st.data())
def test_edited_sample_graphs_index_and_validate_like_a_fresh_load(sample_id, data):
    _check_edit_sequences(SAMPLE_GRAPHS[sample_id], data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_edited_reference_graphs_index_and_validate_like_a_fresh_load(math_graphs, expert_graphs, data):
    pool = {**math_graphs, **expert_graphs}
    _check_edit_sequences(pool[data.draw(st.sampled_from(sorted(pool)))], data)


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_the_one_topological_sort_agrees_with_networkx(g):
    """engine.graph's Kahn (shared by topo_order and the cycle check) against networkx: a graph has
    cycles exactly when networkx finds a strongly connected component of 2+ nodes, and topo_order
    lists every IU once with each acyclic edge's source before its target."""
    import networkx as nx

    known = set(g.index.ids)
    nxg = nx.DiGraph((e.from_, e.to) for e in g.edges if e.from_ != e.to)
    nxg.add_nodes_from(known)
    has_cycle = any(len(c) > 1 for c in nx.strongly_connected_components(nxg))
    assert bool(g.cycles()) == has_cycle
    order = g.index.topo_order
    assert sorted(order) == sorted(known)
    if not has_cycle:
        pos = {v: i for i, v in enumerate(order)}
        assert all(pos[e.from_] < pos[e.to] for e in g.edges if e.from_ in known and e.to in known
                   and e.from_ != e.to)
