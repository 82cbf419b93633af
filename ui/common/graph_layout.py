"""Fixed node positions for the IU graph view (pure: no streamlit).

Rows by prerequisite depth (roots on top), order within a row by the mean x of each node's
prerequisites (a single barycentre pass keeps edges short), then spread evenly. Computed once
per graph and sent with the data, so the browser never runs physics and nodes never move
between turns.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from knowsim_core.engine.graph import IUGraph
from knowsim_core.presentation.layout import LABEL_LIMIT, LABEL_WIDTH, layered_positions, wrap_label

ROW_GAP = 85
COL_GAP = 165
LABEL_WRAP = LABEL_WIDTH  # characters per label line on the canvas
LABEL_MAX = LABEL_LIMIT  # characters of the concept shown on the node (the rest is in the info line)


def positions(graph: IUGraph) -> dict[str, tuple[int, int]]:
    """``{id: (x, y)}`` in vis-network pixels, centred on x = 0."""
    return dict(_positions(graph.model_dump_json()))


@lru_cache(maxsize=64)
def _positions(graph_json: str) -> tuple[tuple[str, tuple[int, int]], ...]:
    graph = IUGraph.model_validate_json(graph_json)
    return tuple(layered_positions(graph, row_gap=ROW_GAP, col_gap=COL_GAP))


def wrap(text: str, width: int = LABEL_WRAP, limit: int = LABEL_MAX) -> str:
    """Short multi-line label text for the canvas (the full text is in the info line), broken at
    word boundaries (:func:`~knowsim_core.presentation.layout.wrap_label`)."""
    return wrap_label(text, width, limit)


def signature(graph: IUGraph) -> str:
    """A short stable hash of the graph's structure and text: the browser rebuilds only when it changes."""
    blob = json.dumps(graph.to_data(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]
