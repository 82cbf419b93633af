"""Validation of an IU graph (spec §1.1): every finding, and which of them forbid a save.

Kept apart from :mod:`knowsim_core.engine.graph` so the model file holds the data and its derived
structure, and this one the judgement about it. Pure: reads only the graph it is given.
:class:`~knowsim_core.engine.graph.IUGraph` exposes all of it through thin methods (``issues``,
``errors``, ``save_blockers``, ``require_savable``), which is what callers use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from knowsim_core.engine import digraph


class IUGraph(Protocol):
    """What the checks read of a graph (:class:`knowsim_core.engine.graph.IUGraph` provides it;
    a protocol here because graph.py builds on this module, not the other way round)."""

    nodes: Any
    edges: Any

    @property
    def index(self) -> Any: ...

    def cycles(self) -> Any: ...

    def errors(self) -> Any: ...

MAX_DELTA_L = 0.35  # spec §1.1: Δl above this asks for a bridging IU
DELTA_L_TOLERANCE = 1e-9
DELTA_L_MISMATCH_TOLERANCE = 1e-6

Severity = Literal["error", "warning", "info"]
_RANK = {"error": 0, "warning": 1, "info": 2}

# Errors no saved version may have, whatever its parent or source: the rules cannot run on them
# (empty, duplicate ids) or would silently read them wrongly (NaN / out-of-range levels, edges to
# nodes that do not exist). The other errors (missing text, self-loops, cycles) may be carried
# over from the parent version, and a graph saved as authored (an import, a first version) may
# bring its own cycles: the paper's graphs have them and must run as the reference ran them.
ALWAYS_BLOCKING: frozenset[str] = frozenset({"empty", "level_range", "duplicate_id", "dangling_edge"})


@dataclass(frozen=True, slots=True)
class GraphIssue:
    """One validation finding, with the ids it concerns and what to do about it."""

    severity: Severity
    code: str
    message: str
    ids: tuple[str, ...] = ()
    field: str = ""  # the node field a missing_field issue is about

    @property
    def key(self) -> tuple:
        """What makes two findings "the same problem" across versions (cycles: their node set)."""
        ids = frozenset(self.ids) if self.code == "cycle" else self.ids
        return (self.code, ids, self.field)


def issues(g: IUGraph) -> list[GraphIssue]:
    """Every finding of spec §1.1, errors first (then warnings, then notes)."""
    found = _structural_issues(g) + _edge_issues(g)
    return sorted(found, key=lambda i: _RANK[i.severity])


def save_blockers(g: IUGraph, parent: IUGraph | None = None, *, as_authored: bool = False) -> list[GraphIssue]:
    """Errors that forbid saving ``g`` as a new version (empty: it may be saved).

    An error already present in ``parent`` does not block (so the paper's cyclic graphs can be
    fixed one edge at a time), except those in :data:`ALWAYS_BLOCKING`, which nothing may save.
    ``as_authored`` (a first version or an import, kept as its author wrote it) also lets the
    graph's own cycles through.
    """
    inherited = {i.key for i in parent.errors()} if parent is not None else set()
    return [
        i
        for i in g.errors()
        if i.code in ALWAYS_BLOCKING or not (i.key in inherited or (as_authored and i.code == "cycle"))
    ]


def duplicates(values: tuple[str, ...]) -> list[str]:
    """Values that occur more than once, in order of their second occurrence."""
    seen: set[str] = set()
    dupes: list[str] = []
    for v in values:
        if v in seen and v not in dupes:
            dupes.append(v)
        seen.add(v)
    return dupes


# ---------------------------------------------------------------------- the checks
def _structural_issues(g: IUGraph) -> list[GraphIssue]:
    out: list[GraphIssue] = []
    if not g.nodes:
        out.append(GraphIssue("error", "empty", "the graph has no IUs; add at least one node"))
    for i, n in enumerate(g.nodes):
        for field in ("id", "concept", "description"):
            if not getattr(n, field).strip():
                out.append(
                    GraphIssue(
                        "error",
                        "missing_field",
                        f"node #{i + 1} ({n.id or 'no id'}) has an empty {field}; fill it in",
                        (n.id,) if n.id else (),
                        field,
                    )
                )
        lvl = n.abstraction_level
        if not (0.0 <= lvl <= 1.0) or math.isnan(lvl):
            out.append(
                GraphIssue(
                    "error",
                    "level_range",
                    f"{n.id}: abstraction_level {lvl} is outside [0, 1]; use 1 for a general "
                    "principle and 0 for an item-specific computation",
                    (n.id,),
                )
            )
    for d in duplicates(g.index.ids):
        out.append(
            GraphIssue("error", "duplicate_id", f"IU id {d} is used by more than one node; rename one", (d,))
        )
    known = set(g.index.ids)
    for e in g.edges:
        missing = [x for x in (e.from_, e.to) if x not in known]
        if missing:
            out.append(
                GraphIssue(
                    "error",
                    "dangling_edge",
                    f"edge {e.from_} → {e.to} names {', '.join(missing)}, which is not a node; "
                    "add the node or delete the edge",
                    (e.from_, e.to),
                )
            )
        elif e.from_ == e.to:
            out.append(
                GraphIssue(
                    "error",
                    "self_loop",
                    f"edge {e.from_} → {e.to} makes {e.from_} its own prerequisite; delete it",
                    (e.from_,),
                )
            )
    for comp in g.cycles():
        out.append(
            GraphIssue(
                "error",
                "cycle",
                f"prerequisite cycle among {', '.join(comp)}: {_cycle_path(g, comp)}; "
                "delete or reverse one of these edges",
                comp,
            )
        )
    return out


def _cycle_path(g: IUGraph, comp: tuple[str, ...]) -> str:
    cyc = digraph.find_cycle(((e.from_, e.to) for e in g.edges if e.from_ in comp and e.to in comp), comp[0])
    return " → ".join([u for u, _ in cyc] + [cyc[0][0]])


def _edge_issues(g: IUGraph) -> list[GraphIssue]:
    out: list[GraphIssue] = []
    levels = {n.id: n.abstraction_level for n in g.nodes}
    seen: set[tuple[str, str]] = set()
    for e in g.edges:
        key = (e.from_, e.to)
        if key in seen:
            out.append(
                GraphIssue(
                    "warning",
                    "duplicate_edge",
                    f"edge {e.from_} → {e.to} appears more than once; the rules count it twice "
                    "in the ceiling's prerequisite list — delete the copy",
                    key,
                )
            )
        seen.add(key)
        if e.from_ not in levels or e.to not in levels:
            continue
        diff = abs(levels[e.from_] - levels[e.to])
        dl = diff if e.delta_l is None else e.delta_l
        if dl > MAX_DELTA_L + DELTA_L_TOLERANCE:
            out.append(
                GraphIssue(
                    "warning",
                    "delta_l_large",
                    f"edge {e.from_} → {e.to} jumps Δl = {dl:.2f} > {MAX_DELTA_L}; consider a "
                    "bridging IU between them",
                    key,
                )
            )
        if e.delta_l is not None and abs(e.delta_l - diff) > DELTA_L_MISMATCH_TOLERANCE:
            out.append(
                GraphIssue(
                    "warning",
                    "delta_l_mismatch",
                    f"edge {e.from_} → {e.to} stores Δl = {e.delta_l:.3f} but the levels differ "
                    f"by {diff:.3f}; update delta_l",
                    key,
                )
            )
        if levels[e.from_] < levels[e.to]:
            out.append(
                GraphIssue(
                    "info",
                    "upward_edge",
                    f"edge {e.from_} → {e.to} goes from a more specific IU to a more general one",
                    key,
                )
            )
    return out
