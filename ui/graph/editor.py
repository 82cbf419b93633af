"""The IU graph editor: node and edge tables, their edits applied to a draft, live validation.

The two ``st.data_editor`` tables show the *base* version and never change while the user edits
(so Streamlit keeps their edit deltas); every rerun rebuilds the candidate graph from the deltas
(``{"edited_rows", "added_rows", "deleted_rows"}``) with :func:`apply_edits`. Renaming an IU in
the node table renames it in every edge, deleting it deletes its edges. Saving goes through
:meth:`IUGraph.save_blockers` against the base version, so a cycle inherited from the paper's
graphs can be fixed one edge at a time, while a new cycle is refused with its path named.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from knowsim_core.errors import FormatError, GraphError
from knowsim_core.engine.graph import IUEdge, IUGraph, IUNode, GraphIssue, checked, natural_key
from knowsim_core.formats.jsonio import parse_json
from knowsim_core.formats.reference import graph_from_data
from knowsim_core.presentation.graph_diff import GraphDiff
from knowsim_core.vocab import iu_name

NODE_COLUMNS: tuple[str, ...] = ("id", "concept", "abstraction_level", "description")
EDGE_COLUMNS: tuple[str, ...] = ("from", "to", "reason")
TEXT_NODE_FIELDS: tuple[str, ...] = ("id", "concept", "description")
MAX_IMPORT_BYTES = 2_000_000
_MARKUP = re.compile(r"<\s*/?\s*[a-zA-Z!][^>]*>|javascript:|on[a-z]+\s*=", re.IGNORECASE)


# ---------------------------------------------------------------------- tables

def iu_where(iu_id: Any) -> str:
    """How a message names an IU (the vocabulary's :func:`~knowsim_core.vocab.iu_name`: ``IU3``, ``IU lava``)."""
    return iu_name(iu_id)

def node_rows(graph: IUGraph) -> list[dict[str, Any]]:
    return [
        {"id": n.id, "concept": n.concept, "abstraction_level": n.abstraction_level, "description": n.description}
        for n in graph.nodes
    ]


def edge_rows(graph: IUGraph) -> list[dict[str, Any]]:
    return [{"from": e.from_, "to": e.to, "reason": e.reason} for e in graph.edges]


@dataclass(frozen=True)
class EditResult:
    """The candidate graph built from the table edits, or the reasons it could not be built."""

    graph: IUGraph | None
    problems: tuple[str, ...] = ()
    renames: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what an edit did besides itself (edges removed with an IU, IUs orphaned)


def _delta(d: Mapping[str, Any] | None) -> tuple[dict[int, dict], list[dict], set[int]]:
    d = d or {}
    edited = {int(k): dict(v) for k, v in (d.get("edited_rows") or {}).items()}
    added = [dict(r) for r in (d.get("added_rows") or [])]
    deleted = {int(i) for i in (d.get("deleted_rows") or [])}
    return edited, added, deleted


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def _level(v: Any, where: str, problems: list[str]) -> float:
    try:
        lvl = float(v)
    except (TypeError, ValueError):
        lvl = math.nan
    if math.isnan(lvl):
        problems.append(f"{where}: fill in abstraction_level (a number from 0 to 1)")
        return 0.5
    return lvl


def apply_edits(
    base: IUGraph, node_delta: Mapping[str, Any] | None, edge_delta: Mapping[str, Any] | None
) -> EditResult:
    """Apply the two tables' deltas to ``base`` (rows indexed as in :func:`node_rows` / :func:`edge_rows`)."""
    problems: list[str] = []
    edited, added, deleted = _delta(node_delta)
    rows = node_rows(base)
    nodes: list[IUNode] = []
    renames: dict[str, str] = {}
    removed: set[str] = set()
    for i, row in enumerate(rows):
        if i in deleted:
            removed.add(row["id"])
            continue
        new = {**row, **edited.get(i, {})}
        new_id = _text(new["id"])
        if new_id != row["id"]:
            renames[row["id"]] = new_id
        nodes.append(_node(new, iu_where(row["id"]), problems))
    for j, row in enumerate(added):
        if any(_text(row.get(c)) for c in NODE_COLUMNS):
            missing = [c for c in TEXT_NODE_FIELDS if not _text(row.get(c))]
            if missing:
                problems.append(f"new IU row {j + 1} is incomplete: fill in {' and '.join(missing)}")
            nodes.append(_node(row, f"new IU row {j + 1}", problems))
    if None in nodes:  # an IU row the validators refuse: no graph to show or save until it is fixed
        return EditResult(graph=None, problems=tuple(dict.fromkeys(problems)), renames=renames)
    ids = {n.id for n in nodes}
    e_edited, e_added, e_deleted = _delta(edge_delta)
    levels = {n.id: n.abstraction_level for n in nodes}
    edges: list[IUEdge] = []
    dropped: dict[str, list[str]] = {}
    for i, (orig, row) in enumerate(zip(base.edges, edge_rows(base))):
        if i in e_deleted:
            continue
        new = {**row, **e_edited.get(i, {})}
        a, b = _text(new["from"]), _text(new["to"])
        if a in removed or b in removed:
            dropped.setdefault(a if a in removed else b, []).append(f"{a} → {b}")
            continue  # deleting an IU deletes its edges (said in ``notes``)
        a, b = renames.get(a, a), renames.get(b, b)
        unchanged = i not in e_edited and (a, b) == (orig.from_, orig.to)
        dl = orig.delta_l if unchanged else _delta_l(levels, a, b)
        edges.append(_edge(f"edge {a} → {b}", problems, from_=a, to=b, delta_l=dl, reason=_text(new.get("reason"))))
    for j, row in enumerate(e_added):
        a, b = _text(row.get("from")), _text(row.get("to"))
        if not a and not b:
            continue
        if not a or not b:
            problems.append(
                f"new edge row {j + 1} is incomplete ({a or '?'} → {b or '?'}): choose its "
                f"{'from' if not a else 'to'} IU, or delete the row; it is left out until both ends are set"
            )
            continue
        edges.append(_edge(f"new edge row {j + 1}", problems, from_=a, to=b, delta_l=_delta_l(levels, a, b),
                           reason=_text(row.get("reason"))))
    unbuilt = None in edges
    edges = [e for e in edges if e is not None]
    for e in edges:
        for end in (e.from_, e.to):
            if end not in ids:
                problems.append(f"edge {e.from_} → {e.to}: {end} is not an IU of this graph")
    for old, new in renames.items():
        if not new:
            problems.append(f"{iu_where(old)}: the id cannot be empty")
    if unbuilt:  # a refused edge row, as a refused IU row above
        return EditResult(graph=None, problems=tuple(dict.fromkeys(problems)), renames=renames)
    # built from plain data, never copied from ``base``: the candidate gets its own index, so the
    # validation below sees its real ids (a copy once kept the base's and hid duplicates)
    graph = IUGraph.from_data({
        "knowledge_areas": list(base.knowledge_areas),
        "nodes": [n.model_dump() for n in nodes],
        "edges": [{"from": e.from_, "to": e.to, "delta_l": e.delta_l, "reason": e.reason} for e in edges],
    })
    return EditResult(graph=graph, problems=tuple(dict.fromkeys(problems)), renames=renames,
                      notes=deletion_notes(base, graph, dropped))


def deletion_notes(base: IUGraph, graph: IUGraph, dropped: Mapping[str, list[str]]) -> tuple[str, ...]:
    """What deleting IUs did besides: the edges that went with each, and the IUs left with no
    prerequisite (they had some before; the deleted IUs were all of them)."""
    notes = [f"Deleting {iu} also deletes its {len(es)} edge{'s' if len(es) != 1 else ''}: {', '.join(es)}."
             for iu, es in dropped.items()]
    if dropped:
        before, after = base.index.prereqs, graph.index.prereqs
        orphaned = [v for v in graph.index.ids if before.get(v) and not after.get(v)]
        if orphaned:
            notes.append(f"{', '.join(orphaned)} now {'has' if len(orphaned) == 1 else 'have'} no prerequisite "
                         "(a root IU): the deleted IU was the only one.")
    return tuple(notes)


def _node(row: Mapping[str, Any], where: str, problems: list[str]) -> IUNode | None:
    """The row as an IU, or None with the reason in ``problems`` (an invisible character in the
    id, text over the length limits): the page shows it like any other problem."""
    try:
        return checked(
            IUNode, where,
            id=_text(row.get("id")),
            concept=_text(row.get("concept")),
            abstraction_level=_level(row.get("abstraction_level"), where, problems),
            description=_text(row.get("description")),
        )
    except GraphError as exc:
        problems.append(str(exc))
        return None


def _edge(where: str, problems: list[str], **fields: Any) -> IUEdge | None:
    """The edge row as an edge, or None with the reason in ``problems`` (as :func:`_node`)."""
    try:
        return checked(IUEdge, where, **fields)
    except GraphError as exc:
        problems.append(str(exc))
        return None


def _delta_l(levels: Mapping[str, float], a: str, b: str) -> float | None:
    if a in levels and b in levels:
        return round(abs(levels[a] - levels[b]), 6)
    return None


def endpoint_options(graph: IUGraph) -> list[str]:
    """The ids an edge may name, as people count them (IU2 before IU10)."""
    return sorted(set(graph.index.ids), key=natural_key)


# ---------------------------------------------------------------------- live preview
@dataclass(frozen=True)
class Preview:
    """What the graph above the tables draws while edits are unsaved."""

    graph: IUGraph  # the draft, minus rows that cannot be drawn yet (empty or repeated ids)
    cycle_ids: tuple[str, ...]  # IUs on a prerequisite cycle of the draft (ringed in the picture)
    new_edges: tuple[tuple[str, str], ...]  # edges the draft has and the saved version has not


def preview(base: IUGraph, draft: IUGraph) -> Preview:
    """The draft as the picture shows it, with its cycles (``draft.cycles()``) and new edges.

    Rows without an id or with an id used twice are left out of the picture (a browser graph
    needs unique ids); the tables' messages already name them.
    """
    seen: set[str] = set()
    nodes = []
    for n in draft.nodes:
        if n.id and n.id not in seen:
            seen.add(n.id)
            nodes.append(n)
    drawable = draft if len(nodes) == len(draft.nodes) else IUGraph.from_data({
        "knowledge_areas": list(draft.knowledge_areas),
        "nodes": [n.model_dump() for n in nodes],
        "edges": [{"from": e.from_, "to": e.to, "delta_l": e.delta_l, "reason": e.reason} for e in draft.edges],
    })
    cyc = tuple(dict.fromkeys(v for comp in drawable.cycles() for v in comp))
    old = {(e.from_, e.to) for e in base.edges}
    new = tuple(dict.fromkeys((e.from_, e.to) for e in draft.edges if (e.from_, e.to) not in old))
    return Preview(graph=drawable, cycle_ids=cyc, new_edges=new)


# ---------------------------------------------------------------------- diff as HTML
_SPAN_STYLE = {
    # removed: struck through on a light vermillion; added: underlined on a light blue — told apart
    # by the line as well as the colour (Okabe–Ito hues, safe for colour-vision deficiencies)
    "removed": "background:#F9D9CC;text-decoration:line-through;",
    "added": "background:#CFE6F5;text-decoration:underline;",
}


def diff_html(d: GraphDiff) -> str:
    """The version diff as HTML: one line per change, removed and added words highlighted.

    Every piece of graph text is escaped here; the tags are our own constants.
    """
    rows = []
    for entry in d.entries():
        spans = "".join(
            f'<span class="ks-{s.kind}" style="{_SPAN_STYLE[s.kind]}">{html.escape(s.text)}</span>'
            if s.kind in _SPAN_STYLE else html.escape(s.text)
            for s in entry.spans
        )
        rows.append(
            f'<div class="ks-diff-row" style="margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere">'
            f'<b>{html.escape(entry.label)}</b>: {spans}</div>'
        )
    return f'<div class="ks-diff" style="font-size:0.9rem;line-height:1.5">{"".join(rows)}</div>'


# ---------------------------------------------------------------------- validation
@dataclass(frozen=True)
class Verdict:
    """What the editor shows under the tables."""

    blockers: tuple[str, ...]  # saving is refused while any is present
    warnings: tuple[str, ...]
    inherited: tuple[str, ...]  # errors already in the base version (shown, not blocking)

    @property
    def can_save(self) -> bool:
        return not self.blockers


def judge(result: EditResult, base: IUGraph) -> Verdict:
    """Blockers, warnings (with what to do) and inherited problems for the candidate graph.

    The same rule as the store's (:meth:`IUGraph.save_blockers` against the base version), run on
    the candidate itself, so the page disables Save exactly when the store would refuse it.
    """
    if result.graph is None:
        return Verdict(tuple(result.problems), (), ())
    g = result.graph
    blocking = g.save_blockers(base)
    inherited = [i for i in g.errors() if i not in blocking]
    warnings = [_explain(i) for i in g.issues() if i.severity == "warning"]
    return Verdict(
        blockers=tuple(result.problems) + tuple(i.message for i in blocking),
        warnings=tuple(warnings),
        inherited=tuple(f"{i.message} (already in the saved version; fix it when you can)" for i in inherited),
    )


def _explain(issue: GraphIssue) -> str:
    if issue.code == "delta_l_large" and len(issue.ids) == 2:
        a, b = issue.ids
        return (
            f"{issue.message}: add an IU whose abstraction level lies between those of {a} and {b}, "
            f"then replace {a} → {b} with {a} → new IU → {b}"
        )
    return issue.message


# ---------------------------------------------------------------------- import
def markup_fields(data: Mapping[str, Any]) -> list[str]:
    """Where a graph's text contains HTML/script markup (names like ``IU3.concept``)."""
    found = []
    for i, n in enumerate(data.get("nodes") or []):
        if isinstance(n, Mapping):
            for f in TEXT_NODE_FIELDS:
                if isinstance(n.get(f), str) and _MARKUP.search(n[f]):
                    found.append(f"{n.get('id') or f'node #{i + 1}'}.{f}")
    for e in data.get("edges") or []:
        if isinstance(e, Mapping):
            for f in ("from", "to", "reason"):
                if isinstance(e.get(f), str) and _MARKUP.search(e[f]):
                    found.append(f"edge {e.get('from')} → {e.get('to')}.{f}")
    for a in data.get("knowledge_areas") or []:
        if isinstance(a, str) and _MARKUP.search(a):
            found.append("knowledge_areas")
            break
    return found


def parse_graph_file(raw: bytes, *, name: str = "the file") -> IUGraph:
    """Read an uploaded graph JSON, refusing anything that is not a plain-text IU graph.

    Accepts a graph object (``nodes``/``edges``), or a Studio export wrapping one in ``"graph"``.
    The text goes through the importers' guarded reader and the graph through the same check as an
    IU cache on the command line (:func:`~knowsim_core.formats.reference.graph_from_data`), so deep
    nesting, NaN, a wrong type, an empty graph or a dangling edge get the CLI's one-line message.

    Raises:
        FormatError: with what is wrong and what to do (never a partial graph).
    """
    if len(raw) > MAX_IMPORT_BYTES:
        raise FormatError(f"{name} is {len(raw):,} bytes; an IU graph file is at most {MAX_IMPORT_BYTES:,}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FormatError(f"{name} is not UTF-8 text; export the graph as JSON and try again") from None
    data = parse_json(text, name)
    if isinstance(data, dict) and data.get("format") == "knowsim-studio-run":
        raise FormatError(f"{name} is a saved run, not a graph; import it on the Runs page")
    if isinstance(data, dict) and isinstance(data.get("graph"), dict) and "nodes" not in data:
        data = data["graph"]
    if not isinstance(data, dict) or "nodes" not in data:
        kind = type(data).__name__ if not isinstance(data, dict) else "an object without 'nodes'"
        raise FormatError(
            f"{name} is not an IU graph (got {kind}); expected a JSON object with 'nodes' "
            "(id, concept, abstraction_level, description) and 'edges' (from, to)"
        )
    graph = graph_from_data(data, name)  # strict types first, so the markup scan below sees checked data
    bad = markup_fields(data)
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise FormatError(
            f"{name} has HTML or script markup in {shown}; IU text must be plain text — "
            "remove the tags and import again"
        )
    return graph
