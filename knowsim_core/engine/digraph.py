"""Paths and cycles among an IU graph's prerequisite edges: the engine's one use of networkx.

networkx is imported on first use (:func:`_networkx`, ~0.13 s; more on a busy machine): most graphs
have no cycle, which :meth:`~knowsim_core.engine.graph.IUGraph.cycles` answers without it (Kahn's
algorithm), so only a graph with a cycle, or an edge added in the editor, loads it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Iterable


def _networkx() -> ModuleType:
    import networkx

    return networkx


def strong_components(ids: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[set[str]]:
    """The strongly connected components of two or more nodes of the graph on ``ids`` and ``edges``."""
    nx = _networkx()
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from(edges)
    return [c for c in nx.strongly_connected_components(g) if len(c) > 1]


def shortest_path(edges: Iterable[tuple[str, str]], source: str, target: str) -> tuple[str, ...] | None:
    """The shortest path from ``source`` to ``target`` along ``edges`` (both ends included), or None."""
    nx = _networkx()
    g = nx.DiGraph(edges)
    if g.has_node(source) and g.has_node(target) and nx.has_path(g, source, target):
        return tuple(nx.shortest_path(g, source, target))
    return None


def find_cycle(edges: Iterable[tuple[str, str]], source: str) -> list[tuple[str, str]]:
    """The edges of one directed cycle reachable from ``source`` (networkx's ``find_cycle``)."""
    nx = _networkx()
    return nx.find_cycle(nx.DiGraph(edges), source=source)
