"""A readable difference between two versions of an IU graph.

Researchers correct LLM-extracted graphs by hand, and every correction changes the
denominators of the metrics; the version history therefore has to say *what* changed in plain
words (added / removed / changed IUs and edges), not show two JSON blobs. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .graph import IUEdge, IUGraph, IUNode

NODE_FIELDS: tuple[str, ...] = ("concept", "abstraction_level", "description")
EDGE_FIELDS: tuple[str, ...] = ("delta_l", "reason")


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of one IU or edge, before and after."""

    field: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class NodeChange:
    id: str
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True, slots=True)
class EdgeChange:
    edge: tuple[str, str]
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True, slots=True)
class GraphDiff:
    """What turns ``old`` into ``new``. Edges are keyed by (from, to); copies are counted."""

    added_nodes: tuple[IUNode, ...] = ()
    removed_nodes: tuple[IUNode, ...] = ()
    changed_nodes: tuple[NodeChange, ...] = ()
    added_edges: tuple[tuple[str, str], ...] = ()
    removed_edges: tuple[tuple[str, str], ...] = ()
    changed_edges: tuple[EdgeChange, ...] = ()
    knowledge_areas: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.added_nodes or self.removed_nodes or self.changed_nodes or self.added_edges
            or self.removed_edges or self.changed_edges or self.knowledge_areas
        )

    def summary(self) -> str:
        """One line such as ``+1 IU, −2 edges, 1 IU changed``."""
        parts = []
        for n, what in (
            (len(self.added_nodes), "+{} IU"), (len(self.removed_nodes), "−{} IU"),
            (len(self.changed_nodes), "{} IU changed"), (len(self.added_edges), "+{} edge"),
            (len(self.removed_edges), "−{} edge"), (len(self.changed_edges), "{} edge changed"),
        ):
            if n:
                text = what.format(n)
                parts.append(text.replace(" IU", " IUs").replace(" edge", " edges") if n > 1 else text)
        if self.knowledge_areas:
            parts.append("knowledge areas changed")
        return ", ".join(parts) if parts else "no change"

    def lines(self) -> list[str]:
        """Every change as one plain sentence, in a stable order (nodes, then edges)."""
        out = [f"added IU {n.id}: {n.concept}" for n in self.added_nodes]
        out += [f"removed IU {n.id}: {n.concept}" for n in self.removed_nodes]
        for c in self.changed_nodes:
            out += [f"IU {c.id}: {_field_sentence(f)}" for f in c.changes]
        out += [f"added edge {a} → {b}" for a, b in self.added_edges]
        out += [f"removed edge {a} → {b}" for a, b in self.removed_edges]
        for c in self.changed_edges:
            a, b = c.edge
            out += [f"edge {a} → {b}: {_field_sentence(f)}" for f in c.changes]
        if self.knowledge_areas:
            old, new = self.knowledge_areas
            out.append(f"knowledge areas: {', '.join(old) or '(none)'} → {', '.join(new) or '(none)'}")
        return out


def diff_graphs(old: IUGraph, new: IUGraph) -> GraphDiff:
    """The changes from ``old`` to ``new``.

    A renamed IU shows as one removal plus one addition (ids are the identity a graph has).
    Duplicate edges are compared as multisets, so deleting one copy of a duplicated edge shows as
    one removed edge.
    """
    old_nodes = {n.id: n for n in old.nodes}
    new_nodes = {n.id: n for n in new.nodes}
    added = tuple(n for n in new.nodes if n.id not in old_nodes)
    removed = tuple(n for n in old.nodes if n.id not in new_nodes)
    changed = []
    for n in new.nodes:
        if n.id in old_nodes:
            ch = _field_changes(old_nodes[n.id], n, NODE_FIELDS)
            if ch:
                changed.append(NodeChange(n.id, ch))
    old_edges = _edge_multiset(old.edges)
    new_edges = _edge_multiset(new.edges)
    added_e: list[tuple[str, str]] = []
    removed_e: list[tuple[str, str]] = []
    changed_e: list[EdgeChange] = []
    for key in _ordered_keys(old.edges, new.edges):
        before, after = old_edges.get(key, []), new_edges.get(key, [])
        for a, b in zip(before, after):
            ch = _field_changes(a, b, EDGE_FIELDS)
            if ch:
                changed_e.append(EdgeChange(key, ch))
        removed_e += [key] * max(0, len(before) - len(after))
        added_e += [key] * max(0, len(after) - len(before))
    areas = None
    if tuple(old.knowledge_areas) != tuple(new.knowledge_areas):
        areas = (tuple(old.knowledge_areas), tuple(new.knowledge_areas))
    return GraphDiff(
        added_nodes=added, removed_nodes=removed, changed_nodes=tuple(changed),
        added_edges=tuple(added_e), removed_edges=tuple(removed_e), changed_edges=tuple(changed_e),
        knowledge_areas=areas,
    )


# ---------------------------------------------------------------------- helpers
def _field_changes(a: Any, b: Any, names: tuple[str, ...]) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(f, getattr(a, f), getattr(b, f)) for f in names if getattr(a, f) != getattr(b, f)
    )


def _edge_multiset(edges: tuple[IUEdge, ...]) -> dict[tuple[str, str], list[IUEdge]]:
    out: dict[tuple[str, str], list[IUEdge]] = {}
    for e in edges:
        out.setdefault((e.from_, e.to), []).append(e)
    return out


def _ordered_keys(*edge_lists: tuple[IUEdge, ...]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for edges in edge_lists:
        for e in edges:
            seen.setdefault((e.from_, e.to), None)
    return list(seen)


def _short(value: Any, limit: int = 60) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field_sentence(f: FieldChange) -> str:
    name = f.field.replace("_", " ")
    return f"{name} {_short(f.old)!s} → {_short(f.new)!s}"
