"""graph_html: a standalone picture that loads nothing and never lets graph text become markup."""

from __future__ import annotations

import json
import re

import pytest

from knowsim_core.errors import FormatError
from knowsim_core.formats.graph_html import graph_html
from knowsim_core.engine.graph import IUGraph
from knowsim_core.formats.samples import load_samples

EVIL = '<img src=x onerror="alert(1)"><script>alert(2)</script> href'


def _evil_graph() -> IUGraph:
    return IUGraph.from_data(
        {
            "knowledge_areas": [EVIL],
            "nodes": [
                {"id": "IU1", "concept": EVIL, "abstraction_level": 0.8, "description": EVIL},
                {"id": "IU2", "concept": "plain", "abstraction_level": 0.6, "description": "ok"},
            ],
            "edges": [{"from": "IU1", "to": "IU2", "reason": EVIL}],
        }
    )


def _dataset(page: str, name: str) -> list[dict]:
    m = re.search(name + r" = new vis\.DataSet\((\[.*?\])\);", page, re.DOTALL)
    assert m, f"no {name} data set in the page"
    return json.loads(m.group(1))


def test_sample_graph_is_self_contained():
    g = load_samples()[0].graph
    page = graph_html(g, title="Sample")
    # no tag pulls a resource from anywhere
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", page, re.IGNORECASE)
    assert "vis.Network" in page and "bootstrap" not in page.lower()
    nodes = _dataset(page, "nodes")
    assert [n["id"] for n in nodes] == [n.id for n in g.nodes]
    assert len(_dataset(page, "edges")) == len(g.edges)


def test_hostile_text_never_becomes_markup():
    page = graph_html(_evil_graph(), title=EVIL)
    # nothing in the page source can open a tag: the title is escaped, the data sets are tojson'd
    assert "<img" not in page and "<script>alert" not in page
    assert "&lt;img src=x" in page  # the title, escaped
    node = _dataset(page, "nodes")[0]
    # the label is drawn on the canvas (plain text), so it is kept exactly as written ...
    assert node["label"] == f"IU1: {EVIL}"
    # ... and so is the tooltip, although it contains "href" (vis-network shows it with innerText)
    assert node["title"].startswith(f"IU1: {EVIL}\n") and "&lt;" not in node["title"]
    assert "popup.innerHTML" not in page
    (edge,) = _dataset(page, "edges")
    assert EVIL in edge["title"]  # vis-network shows edge tooltips with innerText


def test_labels_and_tooltips_show_the_text_as_written():
    """No entity soup: ``a < b & "c"`` is drawn as typed, not as ``a &lt; b &amp; &quot;c&quot;``."""
    text = 'a < b & "c" > d'
    g = IUGraph.from_data({"nodes": [{"id": "IU1", "concept": text, "abstraction_level": 0.5, "description": text}],
                           "edges": []})
    page = graph_html(g)
    node = _dataset(page, "nodes")[0]
    assert node["label"] == f"IU1: {text}"
    assert node["title"].startswith(f"IU1: {text}\n") and "&lt;" not in node["title"]
    assert "tooltip_link" not in page and "popup.innerHTML" not in page  # vis-network's own (innerText) tooltips


def test_one_href_tooltip_does_not_turn_every_tooltip_into_entities():
    """A graph where one description mentions "href": every tooltip is still the text as written,
    escaped once (JSON in the script), never HTML entities (issue 23, item 16)."""
    g = IUGraph.from_data({"nodes": [
        {"id": "IU1", "concept": "links", "abstraction_level": 0.8, "description": 'an <a href="x"> tag'},
        {"id": "IU2", "concept": "a & b", "abstraction_level": 0.4, "description": "x < y, 'quoted'"}],
        "edges": [{"from": "IU1", "to": "IU2", "reason": "r < s"}]})
    page = graph_html(g)
    titles = [n["title"] for n in _dataset(page, "nodes")]
    assert titles == ['IU1: links\nlevel 0.8\nan <a href="x"> tag', "IU2: a & b\nlevel 0.4\nx < y, 'quoted'"]
    assert "&amp;" not in page.split("nodes = new vis.DataSet", 1)[1].split(");", 1)[0]
    assert "popup.innerHTML" not in page and '<a href="x">' not in page  # the script data stays escaped


def test_states_colour_nodes_and_empty_graph_is_refused():
    g = load_samples()[0].graph
    first = g.nodes[0].id
    page = graph_html(g, states={first: 3}, colors={3: "#123456"})
    assert _dataset(page, "nodes")[0]["color"] == "#123456"
    with pytest.raises(FormatError, match="no IUs"):
        graph_html(IUGraph(nodes=()))


def test_the_export_colours_and_names_states_as_the_app_does():
    """One palette (knowsim_core.vocab): the HTML export's "unaware" was #bbbbbb where the app drew #D9D9D9."""
    from knowsim_core.engine.state import IUState
    from ui.common.theme import STATE_STYLE

    g = load_samples()[0].graph
    ids = [n.id for n in g.nodes][:4]
    nodes = {n["id"]: n for n in _dataset(graph_html(g, states={i: s for i, s in zip(ids, range(4))}), "nodes")}
    for i, s in zip(ids, IUState):
        assert nodes[i]["color"] == STATE_STYLE[s].colour
        assert nodes[i]["title"].endswith(f"state: {STATE_STYLE[s].name}")


def test_the_export_draws_edges_in_the_apps_edge_colour():
    """Issue 32: the export drew edges #777777 where the app (and the replay) draw EDGE_COLOUR #8C8C8C."""
    from knowsim_core.vocab import EDGE_COLOUR

    page = graph_html(load_samples()[0].graph)
    options = json.loads(re.search(r"var options = (\{.*?\});\n", page).group(1))
    assert options["edges"]["color"]["color"] == EDGE_COLOUR
