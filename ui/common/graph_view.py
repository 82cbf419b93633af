"""The interactive IU graph: vis-network inside a Streamlit v2 component.

Public API (also used by the Graph editor, Failure modes and Saved runs pages):

* :func:`render_graph` — draw a graph, optionally coloured by state, and return the IU id the
  user clicked (or ``None``). Positions are computed here once per graph (rows by prerequisite
  depth), so nodes never move; on a rerun with new states the browser re-colours nodes in place
  with a short transition, and nodes in ``changed`` get a reddish-purple ring.
* :func:`render_legend` — the four state colours with their non-colour cues.
* :func:`selected_iu` — the IU currently selected in a graph with the given key.

Why a v2 component: only the element's data crosses the websocket on each rerun (a few KB). The
component's own JS is a three-line loader; the real code (``ui/assets/graph_view.js``) and
vis-network are ES module / script files on the app's own static route (never a CDN), loaded
once per browser. All text
goes through ``data`` and reaches the page via ``textContent`` or canvas labels, never as HTML.
Tests read the browser-side DataSet at ``window.__knowsim[key].nodes``.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
from collections.abc import Collection, Mapping
from functools import lru_cache

import streamlit as st

from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.state import IUState

from ui.common.graph_layout import positions, signature, wrap
from ui.common.resources import graph_module_url, module_loader, vis_url
from ui.common.theme import (BORDER_COLOUR, CHANGED_COLOUR, EDGE_COLOUR, MODE_BADGE, MODE_COLORS, MODE_FONT, SELECTED_COLOUR,
                      STATE_STYLE)

_HTML = '<div class="ks-graph"><div class="ks-canvas"></div><div class="ks-info" aria-live="polite"></div></div>'
_CSS = """
.ks-graph { font-family: sans-serif; }
.ks-canvas { width: 100%; border: 1px solid #e3e3e3; border-radius: 6px; background: #ffffff; }
.ks-info { min-height: 1.4em; padding: 4px 2px; font-size: 0.85rem; color: #333333; white-space: pre-wrap; }
"""
HINT = "Hover an IU to read it, click to select it; scroll to zoom, drag to pan."
HINT_VIEW_ONLY = "Hover an IU to read it; scroll to zoom, drag to pan."  # no click: nothing to select
# a graph drawn with ids only (its whole labels would fall below MIN_LABEL_PX) says why, in one line
HINT_IDS = "Ids only (to fit): hover to read, click to select, scroll to zoom, drag to pan."
HINT_IDS_VIEW_ONLY = "Ids only (to fit): hover to read, scroll to zoom, drag to pan."
LABEL_FONT_PX = 15
MIN_LABEL_PX = 11  # compact graphs never zoom out below this label size; the view pans instead
COMPACT_MARGIN_PX = 70  # a compact canvas: its layout's height at MIN_LABEL_PX + a node + the fit's margins
_PLAIN = {"c": "#FFFFFF", "f": "#000000", "g": "", "bw": 1, "d": False}
MODE_ORDER: tuple[FailureMode, ...] = tuple(FailureMode)
# per mode: badge fill, letter colour, letter, name (our constants only)
MODE_STYLES = [{"c": MODE_COLORS[m], "f": MODE_FONT[m], "t": MODE_BADGE[m], "n": m.title} for m in MODE_ORDER]


@lru_cache(maxsize=1)
def _component():
    return st.components.v2.component("knowsim.iu_graph", html=_HTML, css=_CSS,
                                      js=module_loader("__ksGraphRender", ".ks-info", "graph"))


@lru_cache(maxsize=64)
def _structure(graph_json: str, descriptions: bool) -> tuple[str, list, list]:
    graph = IUGraph.model_validate_json(graph_json)
    pos = positions(graph)
    nodes = [
        [n.id, wrap(n.concept), n.concept, n.description if descriptions else "", *pos[n.id]] for n in graph.nodes
    ]
    edges = [[e.from_, e.to] for e in graph.edges if e.from_ in pos and e.to in pos]
    return signature(graph), nodes, edges


def graph_data(
    graph: IUGraph,
    *,
    states: Mapping[str, IUState] | None,
    changed: Collection[str],
    selected: str | None,
    key: str,
    height: int,
    selectable: bool,
    descriptions: bool = True,
    marked_edges: Collection[tuple[str, str]] = (),
    compact: bool = False,
    modes: Mapping[str, FailureMode] | None = None,
    min_label_px: int = 0,
) -> dict:
    """The exact payload sent to the browser (exposed for tests and the benchmark).

    ``modes`` (the failure mode of each IU explained this turn) travels as an index into
    :data:`MODE_ORDER` per node — numbers only; the browser draws each as a badge in the
    failure palette (``modeStyles``: our own colours and letters).
    """
    sig, nodes, edges = _structure(graph.model_dump_json(), descriptions)
    st_list = None if states is None else [int(states.get(n[0], IUState.UNAWARE)) for n in nodes]
    changed_ids = sorted(set(changed))
    marked = sorted({(a, b) for a, b in marked_edges})
    mode_list = None if not modes else [
        MODE_ORDER.index(FailureMode(modes[n[0]])) if n[0] in modes else None for n in nodes]
    rev = hashlib.sha1(json.dumps([sig, st_list, changed_ids, selected, marked, compact, mode_list]).encode()
                       ).hexdigest()[:10]
    if compact and nodes:  # tall enough to show every IU at the minimum label size (no vertical panning)
        ys = [n[5] for n in nodes]
        height = max(height, math.ceil((max(ys) - min(ys)) * MIN_LABEL_PX / LABEL_FONT_PX) + COMPACT_MARGIN_PX)
    return {
        "key": key,
        "lib": vis_url(),
        "module": graph_module_url(),
        "sig": sig,
        "rev": rev,
        "height": height,
        "selectable": selectable,
        "hint": HINT if selectable else HINT_VIEW_ONLY,
        "hintSmall": HINT_IDS if selectable else HINT_IDS_VIEW_ONLY,
        "nodes": nodes,
        "marked": [list(e) for e in marked],
        "compact": compact,
        "minScale": (MIN_LABEL_PX if compact else min_label_px) / LABEL_FONT_PX,
        "edges": edges,
        "states": st_list,
        "modes": mode_list,
        "modeStyles": MODE_STYLES if mode_list else None,
        "changed": changed_ids,
        "selected": selected,
        "styles": {
            int(s): {"c": v.colour, "f": v.font, "g": v.glyph, "bw": v.border_width, "d": v.dashed}
            for s, v in STATE_STYLE.items()
        },
        "plain": _PLAIN,
        "borderColour": BORDER_COLOUR,
        "changedColour": CHANGED_COLOUR,
        "selectedColour": SELECTED_COLOUR,
        "edgeColour": EDGE_COLOUR,
    }


def selected_iu(key: str) -> str | None:
    """The IU id last clicked in the graph with this key (None before any click)."""
    value = st.session_state.get(key)
    if isinstance(value, Mapping):
        sel = value.get("selected")
        return sel if isinstance(sel, str) else None
    return None


def render_graph(
    graph: IUGraph,
    *,
    states: Mapping[str, IUState] | None = None,
    changed: Collection[str] = (),
    key: str,
    height: int = 480,
    selectable: bool = True,
    descriptions: bool = True,
    marked_edges: Collection[tuple[str, str]] = (),
    compact: bool = False,
    modes: Mapping[str, FailureMode] | None = None,
    min_label_px: int = 0,
) -> str | None:
    """Draw ``graph`` and return the selected IU id (or None).

    Args:
        graph: the IU graph; its node positions are fixed by prerequisite depth.
        states: ``{IU id: IUState}`` to colour nodes (missing ids are unaware); None draws the
            graph uncoloured (e.g. in the editor).
        changed: IU ids to highlight (e.g. the ones that moved this turn).
        key: a unique widget key; the selection is kept in ``st.session_state[key]``.
        height: canvas height in pixels.
        selectable: whether clicking a node selects it.
        descriptions: include IU descriptions in the hover line; the Simulate player leaves them
            out (they are in its IU panel) to keep each step's payload small.
        marked_edges: ``(from, to)`` edges drawn dashed and thicker (the editor's unsaved edges).
        compact: for graphs side by side: nodes show glyph and id only (the concept is in the
            hover line), drawn closer together, and the view never zooms out below
            :data:`MIN_LABEL_PX` labels — it pans instead.
        modes: ``{IU id: FailureMode}`` for the IUs explained this turn, drawn as a lettered badge
            in the failure palette at each node's corner (named in :func:`legend_html`).
        min_label_px: the whole graph is always fitted into the canvas (on load and on every
            resize); where its labels would then be smaller than this, the nodes show glyph and id
            only, closer together (the concept is in the hover line). 0: whole labels at any size.
            Simulate's player graph passes 9: fitted into its 288 px with whole labels, an 18-IU
            graph nine rows deep drew ~6 px labels.

    Returns:
        The id of the IU the user clicked last, if it is still in the graph.
    """
    current = selected_iu(key)
    if current is not None and current not in graph.index.label_of:
        current = None
    data = graph_data(
        graph, states=states, changed=changed, selected=current, key=key, height=height, selectable=selectable,
        descriptions=descriptions, marked_edges=marked_edges, compact=compact, modes=modes,
        min_label_px=min_label_px,
    )
    _component()(data=data, key=key, default={"selected": None}, on_selected_change=lambda: None)
    return current


def legend_html(*, modes: bool = False) -> str:
    """The legend as HTML: a colour swatch, glyph and name per state, the ring for "changed", and
    with ``modes`` the lettered failure-mode badges.

    Only our own constant names go in here (escaped anyway), never run or user text.
    """
    chip = (
        '<span style="display:inline-flex;align-items:center;gap:4px;margin-right:14px;white-space:nowrap">'
        '<span style="display:inline-block;width:14px;height:14px;border-radius:3px;background:{bg};'
        'border:{bw}px {ls} {bc}"></span>{text}</span>'
    )
    parts = [
        chip.format(bg=v.colour, bw=min(v.border_width, 2), ls="dashed" if v.dashed else "solid", bc=BORDER_COLOUR,
                    text=html.escape(f"{v.glyph} {v.name}"))
        for v in STATE_STYLE.values()
    ]
    parts.append(chip.format(bg="#FFFFFF", bw=3, ls="solid", bc=CHANGED_COLOUR, text="changed this turn"))
    if modes:
        badge = ('<span style="display:inline-flex;align-items:center;gap:3px;margin-right:9px;white-space:nowrap;'
                 'font-size:0.75rem"><span style="display:inline-flex;align-items:center;justify-content:center;'
                 'width:15px;height:15px;border-radius:50%;background:{bg};color:{fg};font-size:10px;font-weight:700">'
                 '{letter}</span>{text}</span>')
        parts.append("".join(
            badge.format(bg=MODE_COLORS[m], fg=MODE_FONT[m], letter=html.escape(MODE_BADGE[m]), text=html.escape(m.title))
            for m in MODE_ORDER))
    return f'<div class="ks-legend" style="font-size:0.8rem;line-height:1.7">{"".join(parts)}</div>'


def render_legend(*, modes: bool = False) -> None:
    """Swatches for the four states (with their glyphs), the "changed this turn" ring and, with
    ``modes``, the failure-mode badges."""
    st.html(legend_html(modes=modes))
