"""A readable difference between two versions of an IU graph.

Researchers correct LLM-extracted graphs by hand, and every correction changes the
denominators of the metrics; the version history therefore has to say *what* changed in plain
words (added / removed / changed IUs and edges), not show two JSON blobs. A changed text field
is compared word by word (:func:`word_diff`), so a one-word correction in a long description shows
as that word, not as two long strings cut at some width. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal

from knowsim_core.engine.graph import IUEdge, IUGraph, IUNode
from knowsim_core.vocab import iu_name

NODE_FIELDS: tuple[str, ...] = ("concept", "abstraction_level", "description")
EDGE_FIELDS: tuple[str, ...] = ("delta_l", "reason")


SpanKind = Literal["same", "removed", "added"]
_TOKENS = re.compile(r"\s+|[^\s]+")


@dataclass(frozen=True, slots=True)
class WordSpan:
    """A run of text that both versions share, or that only the old / only the new one has."""

    kind: SpanKind
    text: str


def word_diff(old: str, new: str) -> tuple[WordSpan, ...]:
    """``old`` → ``new`` as spans of whole words (whitespace kept), shortest edit first.

    Joining the ``same`` + ``removed`` spans gives ``old`` back, ``same`` + ``added`` gives ``new``
    — nothing is cut or reflowed, so any length of text can be shown in full.
    """
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[WordSpan] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            _push(out, "same", "".join(a[i1:i2]))
            continue
        if i2 > i1:
            _push(out, "removed", "".join(a[i1:i2]))
        if j2 > j1:
            _push(out, "added", "".join(b[j1:j2]))
    return tuple(out)


def _push(out: list[WordSpan], kind: SpanKind, text: str) -> None:
    if out and out[-1].kind == kind:
        out[-1] = WordSpan(kind, out[-1].text + text)
    elif text:
        out.append(WordSpan(kind, text))


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of one IU or edge, before and after."""

    field: str
    old: Any
    new: Any

    def words(self) -> tuple[WordSpan, ...]:
        """The change word by word (numbers and empty values compare as one word)."""
        return word_diff(_text(self.old), _text(self.new))


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One line of the highlighted diff: what it is about, and its text as word spans."""

    label: str
    spans: tuple[WordSpan, ...]


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
        out = [f"added {iu_name(n.id)}: {n.concept}" for n in self.added_nodes]
        out += [f"removed {iu_name(n.id)}: {n.concept}" for n in self.removed_nodes]
        for c in self.changed_nodes:
            out += [f"{iu_name(c.id)}: {_field_sentence(f)}" for f in c.changes]
        out += [f"added edge {a} → {b}" for a, b in self.added_edges]
        out += [f"removed edge {a} → {b}" for a, b in self.removed_edges]
        for c in self.changed_edges:
            a, b = c.edge
            out += [f"edge {a} → {b}: {_field_sentence(f)}" for f in c.changes]
        if self.knowledge_areas:
            old, new = self.knowledge_areas
            out.append(f"knowledge areas: {', '.join(old) or '(none)'} → {', '.join(new) or '(none)'}")
        return out


    def entries(self) -> list[DiffEntry]:
        """The same changes as :meth:`lines`, in the same order, as word spans for highlighting."""
        out = [DiffEntry(f"added {iu_name(n.id)}", (WordSpan("added", _node_text(n)),)) for n in self.added_nodes]
        out += [DiffEntry(f"removed {iu_name(n.id)}", (WordSpan("removed", _node_text(n)),)) for n in self.removed_nodes]
        for c in self.changed_nodes:
            out += [DiffEntry(f"{iu_name(c.id)} · {f.field.replace('_', ' ')}", f.words()) for f in c.changes]
        out += [DiffEntry("added edge", (WordSpan("added", f"{a} → {b}"),)) for a, b in self.added_edges]
        out += [DiffEntry("removed edge", (WordSpan("removed", f"{a} → {b}"),)) for a, b in self.removed_edges]
        for c in self.changed_edges:
            a, b = c.edge
            out += [DiffEntry(f"edge {a} → {b} · {f.field.replace('_', ' ')}", f.words()) for f in c.changes]
        if self.knowledge_areas:
            old, new = self.knowledge_areas
            out.append(DiffEntry("knowledge areas", word_diff(", ".join(old), ", ".join(new))))
        return out


def _node_text(n: IUNode) -> str:
    return f"{n.concept} (level {n.abstraction_level:g}) — {n.description}"


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


def _text(value: Any) -> str:
    """A field value as shown: floats compactly (0.5, not 0.500000), None as an empty string."""
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _field_sentence(f: FieldChange) -> str:
    """``description old text → new text`` in full (the word-level view is :meth:`FieldChange.words`)."""
    name = f.field.replace("_", " ")
    return f"{name} {_text(f.old) or '(empty)'} → {_text(f.new) or '(empty)'}"
