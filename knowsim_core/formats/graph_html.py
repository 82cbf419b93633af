"""A standalone, offline HTML picture of an IU graph (pyvis + the vis-network copy it ships).

The file is meant to be mailed or attached to a paper review and opened from disk years later,
so it must not load anything: vis-network is inlined (``cdn_resources="in_line"``) and the
bootstrap ``<link>``/``<script>`` that pyvis's template always adds from a CDN are removed.
Graph text may come from an LLM or a user, and it reaches the page in three ways, each made safe
for its own context: node and edge data are serialised by pyvis's template with Jinja's
``tojson`` (``<``, ``>``, ``&`` and ``'`` become ``\u003c``-style escapes, so no text can close the
``<script>``); labels are drawn on the canvas and vis-network shows string tooltips with
``innerText``, so both keep the text exactly as written (``a < b`` stays ``a < b``). pyvis would
swap in its own popup, which sets ``innerHTML``, as soon as any node tooltip contains the word
``href`` — HTML-escaping tooltips for it made every tooltip of such a graph a second encoding
(entities shown in vis-network's tooltip, line breaks lost, edge tooltips hidden). So pyvis is
given placeholder titles and never sees the text; the real tooltips are put into the node data
afterwards, JSON-encoded the way the template's ``tojson`` encodes (``<``, ``>``, ``&``, ``'`` as
``\u003c``-style escapes): escaped once, for the one context they are in. pyvis's unescaped
``heading`` is never used: our own title is escaped and inserted instead.
"""

from __future__ import annotations

import html
import json
import re
from typing import Mapping

from knowsim_core.errors import FormatError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.vocab import EDGE_COLOUR, STATE_STYLE, UNSTATED_COLOUR

DEFAULT_HEIGHT_PX = 720
# The Studio's colours for the four IU states (knowsim_core.vocab), used when no palette is given.
DEFAULT_STATE_COLORS: dict[int, str] = {int(s): v.colour for s, v in STATE_STYLE.items()}
STATE_NAMES: dict[int, str] = {int(s): v.name for s, v in STATE_STYLE.items()}
# Every reference to an external resource pyvis's template may emit (bootstrap, CDNs).
_EXTERNAL_TAG = re.compile(
    r"<link\b[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>"
    r"|<script\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>",
    re.IGNORECASE | re.DOTALL,
)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.IGNORECASE)
_DEAD_COMMENT = re.compile(r"<!--(?:(?!-->).)*node_modules(?:(?!-->).)*-->", re.DOTALL)  # template leftovers


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _script_json(text: str) -> str:
    """``text`` as a JSON string safe inside ``<script>`` (what Jinja's ``tojson`` writes)."""
    return (json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("'", "\\u0027"))


def graph_html(
    graph: IUGraph,
    *,
    title: str = "",
    states: Mapping[str, int] | None = None,
    colors: Mapping[int, str] | None = None,
    height_px: int = DEFAULT_HEIGHT_PX,
) -> str:
    """The graph as one self-contained HTML document (no network access when opened).

    Args:
        graph: the IU graph to draw (cycles and dangling edges are drawn as they are).
        title: a heading shown above the picture (escaped).
        states: optional IU id → state (0–3) to colour nodes; absent ids use a neutral colour.
        colors: optional state → CSS colour, overriding the colour-blind-safe defaults.
        height_px: canvas height.

    Raises:
        FormatError: the graph has no nodes (there is nothing to draw).
    """
    try:  # pyvis (with IPython and jinja, ~0.4 s) is imported by the first picture, not by the Graph page
        from pyvis.network import Network
    except ImportError as exc:  # pragma: no cover - pyvis is a runtime requirement
        raise FormatError("exporting a graph picture needs the 'pyvis' package; pip install pyvis") from exc
    if not graph.nodes:
        raise FormatError("the graph has no IUs to draw; add at least one node before exporting")
    palette = {**DEFAULT_STATE_COLORS, **(colors or {})}
    net = Network(
        height=f"{int(height_px)}px", width="100%", directed=True, cdn_resources="in_line", heading=""
    )
    depth = graph.index.depth
    nodes, added = [], set()
    for n in graph.nodes:
        if n.id not in added:  # duplicate ids would make vis-network refuse the whole data set
            added.add(n.id)
            nodes.append(n)
    tooltips = {}
    for n in nodes:
        state = (states or {}).get(n.id)
        tooltips[n.id] = f"{n.id}: {n.concept}\nlevel {n.abstraction_level:g}\n{n.description}"
        if state is not None:
            tooltips[n.id] += f"\nstate: {STATE_NAMES.get(int(state), state)}"
    placeholders = {f"knowsimtooltip{i:06d}x": tooltips[n.id] for i, n in enumerate(nodes)}
    for (mark, _), n in zip(placeholders.items(), nodes):
        state = (states or {}).get(n.id)
        net.add_node(
            n.id,
            label=f"{n.id}: {n.concept}",
            title=mark,  # the real text goes in after pyvis (see the module docstring)
            color=palette.get(int(state), UNSTATED_COLOUR) if state is not None else UNSTATED_COLOUR,
            level=depth.get(n.id, 0),
            shape="box",
        )
    for e in graph.edges:
        if e.from_ in added and e.to in added:
            tip = f"{e.from_} → {e.to}" + (f" (Δl {e.delta_l:g})" if e.delta_l is not None else "")
            if e.reason:
                tip += f"\n{e.reason}"
            net.add_edge(e.from_, e.to, title=tip, arrows="to")  # edge tooltips: always innerText
    net.set_options(json.dumps(_OPTIONS))
    page = net.generate_html(notebook=False)
    for mark, tip in placeholders.items():
        page = page.replace(json.dumps(mark), _script_json(tip), 1)
    page = _EXTERNAL_TAG.sub("", page)
    page = _EMPTY_HEADING.sub("", page)
    page = _DEAD_COMMENT.sub("", page)
    if title:
        page = page.replace("<body>", f"<body>\n<h1 style=\"font-family:sans-serif\">{_esc(title)}</h1>", 1)
    return page


_OPTIONS = {
    "layout": {"hierarchical": {"enabled": True, "direction": "UD", "sortMethod": "directed", "levelSeparation": 110}},
    "physics": {"enabled": False},
    "nodes": {"font": {"size": 14}, "widthConstraint": {"maximum": 220}},
    "edges": {"smooth": {"type": "cubicBezier"}, "color": {"color": EDGE_COLOUR}},
    "interaction": {"hover": True, "tooltipDelay": 150},
}
