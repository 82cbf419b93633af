"""IU graph: nodes, prerequisite edges and the derived structure the rules use.

Spec §1.1. The model is lenient on purpose: the paper's own graphs contain cycles and duplicate
edges and must load and run exactly as the reference ran them, so structural *problems* are
reported by :meth:`IUGraph.issues` (the checks live in :mod:`knowsim_core.engine.graph_checks`) rather
than raised. Only data that cannot be read as a graph at
all (not an object, a missing field, a wrong type) raises :class:`GraphError` on load. Hand edits
go through the ``with_*`` methods, which refuse to create a new cycle.

Two things are refused on load because nothing could run them well: an id holding an invisible
character (a zero-width space, a bidi override: ``IU1`` and ``IU\u200b1`` print alike but are two
IUs, and U+202E reverses what a terminal shows) or a control character; and IU text longer than
:data:`MAX_IU_TEXT` characters (a 2 MB description made one offline run take 15 s and 600 MB;
the longest description in the paper's graphs is 555 characters).

The derived structure (:attr:`IUGraph.index`) is computed once per *constructed* graph and never
travels to another one: every edit builds its result through :func:`_rebuilt` (a full
re-validation from plain data), and ``model_copy`` / ``copy.copy`` / pickling drop it, because
pydantic copies the instance ``__dict__`` — where ``cached_property`` keeps its value — verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
import re
import unicodedata
from typing import Annotated, Any, Iterable, Sequence, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from knowsim_core.engine import digraph, graph_checks
from knowsim_core.errors import GraphCycleError, GraphError
from knowsim_core.vocab import iu_name
from knowsim_core.engine.graph_checks import (
    ALWAYS_BLOCKING, DELTA_L_MISMATCH_TOLERANCE, DELTA_L_TOLERANCE, MAX_DELTA_L, GraphIssue, Severity,
)

_DIGITS = re.compile(r"(\d+)")
MAX_IU_TEXT = 20_000  # characters of an IU's description or an edge's reason
MAX_IU_NAME = 1_000  # characters of an id or a concept


def visible_id(value: str) -> str:
    """An id made of characters that show: no control (Cc) or format (Cf: zero-width, bidi) ones."""
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise ValueError(f"contains the invisible character U+{ord(bad):04X} ({unicodedata.name(bad, 'control')}); "
                         "ids must be visible text")
    return value


IUId = Annotated[str, Field(max_length=MAX_IU_NAME), AfterValidator(visible_id)]


__all__ = [
    "ALWAYS_BLOCKING", "DELTA_L_MISMATCH_TOLERANCE", "DELTA_L_TOLERANCE", "MAX_DELTA_L", "GraphIssue", "Severity",
    "GraphIndex", "IUEdge", "IUGraph", "IUNode", "MAX_IU_NAME", "MAX_IU_TEXT", "checked", "make_label", "natural_key",
]


class IUNode(BaseModel):
    """One Information Unit."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: IUId
    concept: Annotated[str, Field(max_length=MAX_IU_NAME)]
    abstraction_level: float
    description: Annotated[str, Field(max_length=MAX_IU_TEXT)]


class IUEdge(BaseModel):
    """``from → to``: understanding ``to`` needs ``from``."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    from_: IUId = Field(alias="from")
    to: IUId
    delta_l: float | None = None
    reason: Annotated[str, Field(max_length=MAX_IU_TEXT)] = ""


_Part = TypeVar("_Part", IUNode, IUEdge)


def checked(model: type[_Part], where: str, /, **fields: Any) -> _Part:
    """Build an :class:`IUNode` or :class:`IUEdge` from hand-edited fields, refusing bad ones as
    :class:`GraphError`.

    The field validators (visible ids, bounded text) raise pydantic's ValidationError, which
    callers of the ``with_*`` methods and the graph editor do not expect: they catch GraphError
    and show its one line. ``where`` names the IU or edge (``"IU3"``, ``"new edge row 2"``).
    """
    try:
        return model(**fields)
    except ValidationError as exc:
        raise GraphError(_field_problem(exc, where, fields)) from None


def _field_problem(exc: ValidationError, where: str, fields: dict[str, Any] | None = None) -> str:
    """One line for the first error of ``exc``: what, which field, what is wrong and the limit."""
    first = exc.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else "value"
    name = "from" if name == "from_" else name
    value = (fields or {}).get(first["loc"][0]) if first["loc"] else None
    if first["type"] == "string_too_long" and isinstance(value, str):
        limit = first.get("ctx", {}).get("max_length")
        return f"{where}: {name} is {len(value):,} characters; at most {limit:,} are allowed, shorten it"
    msg = first["msg"]
    msg = msg[len("Value error, "):] if msg.startswith("Value error, ") else msg[:1].lower() + msg[1:]
    return f"{where}: {name} {msg}"


def natural_key(text: str) -> tuple:
    """Sort key that orders ids as people count: ``IU2`` before ``IU10`` (digit runs as numbers).

    Every list of IU ids on screen (selectboxes, tables, the editor's endpoint options) sorts with
    this one key, so they all agree.
    """
    parts = tuple((0, int(p)) if p.isdigit() else (1, p.casefold()) for p in _DIGITS.split(text) if p)
    return (parts, text)  # the text itself breaks ties (IU01 / IU1, iu1 / IU1) the same way every time


def make_label(node_id: str, concept: str) -> str:
    """The storage key of an IU: ``"IU3: concept"``, or the non-empty part (spec §1.1)."""
    if node_id and concept:
        return f"{node_id}: {concept}"
    return node_id or concept


@dataclass(frozen=True, slots=True)
class GraphIndex:
    """Derived structure of a graph, computed once and shared by every turn."""

    ids: tuple[str, ...]
    index_of: dict[str, int]
    labels: tuple[str, ...]
    label_of: dict[str, str]
    prereqs: dict[str, tuple[str, ...]]
    neighbors: dict[str, frozenset[str]]
    depth: dict[str, int]
    update_order: tuple[str, ...]
    topo_order: tuple[str, ...]
    # one step per node in update order: what the rules' update loop reads (see UpdateStep)
    plan: tuple[UpdateStep, ...]
    # neighbour ids per node, in node order (density)
    neighbor_lists: tuple[frozenset[str], ...]
    # every ancestor of a node with its hop count, in breadth-first visiting order (prerequisites
    # in edge order): the gap sum stops at the first one that is known
    ancestors: dict[str, tuple[tuple[str, int], ...]]


@dataclass(frozen=True, slots=True)
class UpdateStep:
    """One node of the update, in update order (GraphIndex.plan), with what its ceiling reads.

    ``prerequisites`` are the node's prerequisite ids (none: the ceiling is knows_well);
    ``dangling`` says one of them is no node of the graph, which reads as unaware (the ceiling is
    struggling). ``position`` is the node's place in node order, where its record goes.
    """

    id: str
    label: str
    position: int
    prerequisites: tuple[str, ...]
    dangling: bool


def _plan_entry(v: str, label: str, ps: tuple[str, ...], position: int, nodes: dict[str, int]) -> UpdateStep:
    return UpdateStep(id=v, label=label, position=position, prerequisites=ps,
                      dangling=any(p not in nodes for p in ps))


def _ancestors_breadth_first(v: str, prereqs: dict[str, tuple[str, ...]]) -> tuple[tuple[str, int], ...]:
    """(ancestor, hops) in the order a breadth-first search from ``v`` first reaches them.

    Each ancestor appears once, at its shortest hop count; ``v`` itself never does (cycles).
    """
    out: list[tuple[str, int]] = []
    visited = {v}
    frontier = [v]
    hops = 0
    while frontier:
        hops += 1
        nxt: list[str] = []
        for u in frontier:
            for p in prereqs.get(u, ()):
                if p not in visited:
                    visited.add(p)
                    out.append((p, hops))
                    nxt.append(p)
        frontier = nxt
    return tuple(out)


class IUGraph(BaseModel):
    """An IU graph as in spec §1.1 (node and edge order are significant)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    knowledge_areas: tuple[str, ...] = ()
    nodes: tuple[IUNode, ...]
    edges: tuple[IUEdge, ...] = ()

    # ------------------------------------------------------------------ copies carry no derived data
    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "IUGraph":
        """A copy without the cached index; with ``update`` it is re-validated from plain data."""
        if update:
            data = self.to_data()
            for key, value in update.items():
                data[key] = _plain(key, value)
            return type(self).from_data(data)
        return super().model_copy(deep=deep)  # __copy__ / __deepcopy__ below drop the index

    def __copy__(self) -> "IUGraph":
        return _without_derived(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> "IUGraph":
        return _without_derived(super().__deepcopy__(memo))

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k not in _DERIVED}
        return state

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_data(cls, data: Any) -> "IUGraph":
        """Read a graph from parsed JSON.

        Raises:
            GraphError: naming the field and what a graph needs, when ``data`` is not a graph.
        """
        if not isinstance(data, dict):
            raise GraphError(
                f"an IU graph must be a JSON object with 'nodes' and 'edges', got {type(data).__name__}"
            )
        if "nodes" not in data:
            raise GraphError("the IU graph has no 'nodes' list; add the list of IU objects")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise GraphError(
                f"IU graph field {where}: {first['msg'].lower()}; every node needs id, concept, "
                "abstraction_level (0–1) and description, every edge needs from and to"
            ) from None

    def to_data(self) -> dict[str, Any]:
        """The graph as JSON-ready data in the format of spec §1.1."""
        return {
            "knowledge_areas": list(self.knowledge_areas),
            "nodes": [n.model_dump() for n in self.nodes],
            "edges": [_edge_data(e) for e in self.edges],
        }

    # ------------------------------------------------------------------ derived structure
    @cached_property
    def index(self) -> GraphIndex:
        ids = tuple(n.id for n in self.nodes)
        index_of: dict[str, int] = {}
        for i, node_id in enumerate(ids):
            index_of.setdefault(node_id, i)
        labels = tuple(make_label(n.id, n.concept) for n in self.nodes)
        label_of = {n.id: lab for n, lab in zip(self.nodes, labels)}
        prereq_lists: dict[str, list[str]] = {}
        neighbor_sets: dict[str, set[str]] = {}
        for e in self.edges:
            prereq_lists.setdefault(e.to, []).append(e.from_)
            neighbor_sets.setdefault(e.from_, set()).add(e.to)
            neighbor_sets.setdefault(e.to, set()).add(e.from_)
        prereqs = {k: tuple(v) for k, v in prereq_lists.items()}
        depth = _depths(ids, prereqs)
        order = sorted(range(len(ids)), key=lambda i: depth[ids[i]])
        neighbors = {k: frozenset(v) for k, v in neighbor_sets.items()}
        return GraphIndex(
            ids=ids,
            index_of=index_of,
            labels=labels,
            label_of=label_of,
            prereqs=prereqs,
            neighbors=neighbors,
            depth=depth,
            update_order=tuple(ids[i] for i in order),
            topo_order=_kahn_order(ids, self.edges),
            plan=tuple(_plan_entry(ids[i], labels[i], prereqs.get(ids[i], ()), i, index_of) for i in order),
            neighbor_lists=tuple(neighbors.get(v, frozenset()) for v in ids),
            ancestors={v: _ancestors_breadth_first(v, prereqs) for v in ids},
        )

    def node(self, node_id: str) -> IUNode:
        """The node with this id (GraphError naming the known ids otherwise)."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise GraphError(f"unknown IU id {node_id!r}; this graph has {', '.join(self.index.ids)}")

    def label(self, node_id: str) -> str:
        return self.index.label_of.get(node_id, node_id)

    # ------------------------------------------------------------------ validation
    def issues(self) -> list[GraphIssue]:
        """Every finding of spec §1.1, errors first (:func:`graph_checks.issues`)."""
        return graph_checks.issues(self)

    def errors(self) -> list[GraphIssue]:
        return [i for i in self.issues() if i.severity == "error"]

    def cycles(self) -> list[tuple[str, ...]]:
        """Each strongly connected component of 2+ nodes, its ids in node order."""
        edges = [(e.from_, e.to) for e in self.edges if e.from_ != e.to]
        if _acyclic(self.index.ids, edges):  # the usual case, answered without networkx
            return []
        pos = self.index.index_of
        comps = [tuple(sorted(c, key=lambda v: pos.get(v, len(pos))))
                 for c in digraph.strong_components(self.index.ids, edges)]
        return sorted(comps, key=lambda c: pos.get(c[0], len(pos)))

    def require_runnable(self) -> None:
        """Raise GraphError if the rules cannot run on this graph at all.

        Cycles, dangling edges and duplicate edges are tolerated (the reference runs them);
        an empty graph or duplicate ids are not.
        """
        if not self.nodes:
            raise GraphError("the IU graph has no nodes; add at least one IU before simulating")
        dupes = graph_checks.duplicates(self.index.ids)
        if dupes:
            raise GraphError(
                f"duplicate IU ids {', '.join(dupes)}; give every IU its own id before simulating"
            )

    def save_blockers(self, parent: "IUGraph | None" = None, *, as_authored: bool = False) -> list[GraphIssue]:
        """Errors that forbid saving this graph as a new version (:func:`graph_checks.save_blockers`)."""
        return graph_checks.save_blockers(self, parent, as_authored=as_authored)

    def require_savable(self, parent: "IUGraph | None" = None, *, as_authored: bool = False) -> None:
        """Raise GraphError (one line naming the problems) if :meth:`save_blockers` finds any."""
        blockers = self.save_blockers(parent, as_authored=as_authored)
        if blockers:
            shown = "; ".join(i.message for i in blockers[:3])
            more = f" (and {len(blockers) - 3} more)" if len(blockers) > 3 else ""
            raise GraphError(f"graph not saved: {shown}{more}")

    # ------------------------------------------------------------------ hand edits
    # Each edit returns a graph built from scratch by _rebuilt: re-validated, with its own index.
    def with_node(self, node: IUNode) -> "IUGraph":
        """Add a node, or replace the node with the same id (keeping its position)."""
        if node.id in self.index.index_of:
            nodes = tuple(node if n.id == node.id else n for n in self.nodes)
        else:
            nodes = self.nodes + (node,)
        return _rebuilt(self, nodes=nodes)

    def without_node(self, node_id: str) -> "IUGraph":
        """Remove a node and every edge that touches it."""
        self.node(node_id)
        return _rebuilt(
            self,
            nodes=tuple(n for n in self.nodes if n.id != node_id),
            edges=tuple(e for e in self.edges if node_id not in (e.from_, e.to)),
        )

    def with_renamed_node(self, old_id: str, new_id: str) -> "IUGraph":
        """Rename an IU id everywhere (edges follow).

        Raises:
            GraphError: an unknown ``old_id``, an empty ``new_id``, one another IU already has, or one
                the id validator refuses (an invisible character, longer than :data:`MAX_IU_NAME`).
        """
        self.node(old_id)
        if not new_id.strip():
            raise GraphError(f"cannot rename {old_id} to an empty id; give the IU a non-empty id")
        if new_id != old_id and new_id in self.index.index_of:
            raise GraphError(f"cannot rename {old_id} to {new_id}: {new_id} already exists; pick an unused id")

        def renamed(v: str) -> str:
            return new_id if v == old_id else v

        # checked(): a new id the validators refuse (an invisible character, too long) is a GraphError
        nodes = tuple(
            checked(IUNode, f"renaming {iu_name(old_id)}", id=new_id, concept=n.concept,
                    abstraction_level=n.abstraction_level, description=n.description)
            if n.id == old_id else n
            for n in self.nodes
        )
        edges = tuple(
            IUEdge(from_=renamed(e.from_), to=renamed(e.to), delta_l=e.delta_l, reason=e.reason)
            for e in self.edges
        )
        return _rebuilt(self, nodes=nodes, edges=edges)

    def with_edge(self, from_id: str, to_id: str, reason: str = "") -> "IUGraph":
        """Add ``from_id → to_id`` with its Δl.

        Raises:
            GraphError: an unknown id, a self-loop or a ``reason`` longer than :data:`MAX_IU_TEXT`.
            GraphCycleError: the edge would close a directed cycle (the cycle is named).
        """
        a, b = self.node(from_id), self.node(to_id)
        if from_id == to_id:
            raise GraphError(f"an IU cannot be its own prerequisite ({from_id} → {to_id})")
        back = digraph.shortest_path(((e.from_, e.to) for e in self.edges), to_id, from_id)
        if back is not None:
            path = back + (to_id,)
            raise GraphCycleError(
                f"adding {from_id} → {to_id} would create the cycle {' → '.join(path)}; "
                "remove one of those edges first or reverse this one",
                cycle=path,
            )
        edge = checked(
            IUEdge,
            f"edge {from_id} → {to_id}",
            from_=from_id,
            to=to_id,
            delta_l=round(abs(a.abstraction_level - b.abstraction_level), 6),
            reason=reason,
        )
        return _rebuilt(self, edges=self.edges + (edge,))

    def without_edge(self, from_id: str, to_id: str) -> "IUGraph":
        """Remove every ``from_id → to_id`` edge."""
        edges = tuple(e for e in self.edges if (e.from_, e.to) != (from_id, to_id))
        if len(edges) == len(self.edges):
            raise GraphError(f"there is no edge {from_id} → {to_id} to remove")
        return _rebuilt(self, edges=edges)


def _edge_data(e: IUEdge) -> dict[str, Any]:
    return {"from": e.from_, "to": e.to, "delta_l": e.delta_l, "reason": e.reason}


def _plain(key: str, value: Any) -> Any:
    """An update value as JSON-like data (models dumped) so from_data validates it afresh."""
    if key == "nodes":
        return [n.model_dump() if isinstance(n, IUNode) else n for n in value]
    if key == "edges":
        return [_edge_data(e) if isinstance(e, IUEdge) else e for e in value]
    if key == "knowledge_areas":
        return list(value)
    return value


def _rebuilt(
    base: IUGraph, *, nodes: tuple[IUNode, ...] | None = None, edges: tuple[IUEdge, ...] | None = None
) -> IUGraph:
    """The one constructor of edited graphs: plain data through :meth:`IUGraph.from_data`.

    A fresh, fully validated instance, so nothing derived from ``base`` (its index) can leak in.
    """
    return IUGraph.from_data(
        {
            "knowledge_areas": list(base.knowledge_areas),
            "nodes": [n.model_dump() for n in (base.nodes if nodes is None else nodes)],
            "edges": [_edge_data(e) for e in (base.edges if edges is None else edges)],
        }
    )


# Instance attributes computed from the fields (functools.cached_property values).
_DERIVED: tuple[str, ...] = ("index",)


def _without_derived(g: IUGraph) -> IUGraph:
    for name in _DERIVED:
        g.__dict__.pop(name, None)
    return g


# ---------------------------------------------------------------------- helpers
def _depths(ids: tuple[str, ...], prereqs: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Longest prerequisite chain above each node (spec §4.6), cycle-guarded like the reference."""
    memo: dict[str, int] = {}

    def depth(v: str, visiting: set[str]) -> int:
        if v in memo:
            return memo[v]
        if v in visiting:
            return 0
        visiting.add(v)
        ps = prereqs.get(v, ())
        d = 0 if not ps else 1 + max(depth(p, visiting) for p in ps)
        memo[v] = d
        return d

    for v in ids:
        depth(v, set())
    return {v: memo[v] for v in ids}


def _kahn(nodes: Sequence[str], pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Kahn's algorithm, first-in first-out in the order ``nodes`` are given (the order spec §2.2
    fixes): every node that lies on no cycle and after none. ``pairs`` must join listed nodes.

    The one topological sort of the package (networkx's tie-break order is not documented).
    Loading and running a graph never import networkx (~0.13 s of a command's start-up);
    validation imports it only for a graph that has a cycle (:meth:`IUGraph.cycles`,
    :mod:`~knowsim_core.engine.graph_checks`), and a hand edit (:meth:`IUGraph.with_edge`) always
    does, to name the cycle a new edge would close.
    """
    indeg = dict.fromkeys(nodes, 0)
    children: dict[str, list[str]] = {v: [] for v in nodes}
    for a, b in pairs:
        indeg[b] += 1
        children[a].append(b)
    queue = [v for v in nodes if indeg[v] == 0]
    head = 0
    while head < len(queue):
        v = queue[head]
        head += 1
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    return queue


def _kahn_order(ids: tuple[str, ...], edges: tuple[IUEdge, ...]) -> tuple[str, ...]:
    """Kahn's order over edges between nodes; leftovers (cycles) appended in node order (§2.2)."""
    known = set(ids)
    order = _kahn(ids, ((e.from_, e.to) for e in edges if e.from_ in known and e.to in known))
    placed = set(order)
    return tuple(order) + tuple(v for v in ids if v not in placed)


def _acyclic(ids: tuple[str, ...], edges: list[tuple[str, str]]) -> bool:
    """Whether the directed graph (``ids`` plus any endpoint of ``edges``) has no cycle: Kahn's
    algorithm removes every node exactly when none lies on a cycle."""
    nodes = list(dict.fromkeys([*ids, *(v for e in edges for v in e)]))
    return len(_kahn(nodes, edges)) == len(nodes)
