"""graph_html: a standalone picture that loads nothing and never lets graph text become markup."""

from __future__ import annotations

import json
import re

import pytest

from knowsim_core.errors import FormatError
from knowsim_core.formats.graph_html import graph_html
from knowsim_core.graph import IUGraph
from knowsim_core.samples import load_samples

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


def test_hostile_text_is_escaped_everywhere():
    page = graph_html(_evil_graph(), title=EVIL)
    assert "<img" not in page and "<script>alert" not in page
    assert "&lt;img src=x" in page  # the title, escaped
    node = _dataset(page, "nodes")[0]
    assert "<" not in node["label"] and "<" not in node["title"]
    assert "&lt;script&gt;" in node["title"]
    (edge,) = _dataset(page, "edges")
    assert "<" not in edge["title"]


def test_states_colour_nodes_and_empty_graph_is_refused():
    g = load_samples()[0].graph
    first = g.nodes[0].id
    page = graph_html(g, states={first: 3}, colors={3: "#123456"})
    assert _dataset(page, "nodes")[0]["color"] == "#123456"
    with pytest.raises(FormatError, match="no IUs"):
        graph_html(IUGraph(nodes=()))
