"""Fixed node positions for drawing an IU graph: rows by prerequisite depth, roots on top.

Order within a row follows the mean x of each node's prerequisites (one barycentre pass keeps
edges short); a row is spread evenly around x = 0. Shared by the Studio's graph view
(``ui/common/graph_layout.py``) and the single-file replay (``formats/replay_html.py``), so an exported
replay shows the graph the way the Studio does. Pure: graph in, coordinates out.
"""

from __future__ import annotations

from knowsim_core.engine.graph import IUGraph


def layered_positions(graph: IUGraph, *, row_gap: int, col_gap: int) -> list[tuple[str, tuple[int, int]]]:
    """``[(id, (x, y))]`` in node-index order of the rows, x centred on 0, y = depth × ``row_gap``."""
    idx = graph.index
    rows: dict[int, list[str]] = {}
    for v in idx.ids:
        rows.setdefault(idx.depth.get(v, 0), []).append(v)
    x_of: dict[str, float] = {}
    out: list[tuple[str, tuple[int, int]]] = []
    for depth in sorted(rows):
        members = rows[depth]

        def bary(v: str) -> tuple[float, int]:
            xs = [x_of[p] for p in idx.prereqs.get(v, ()) if p in x_of]
            return (sum(xs) / len(xs) if xs else 0.0, idx.index_of[v])

        if depth > 0:
            members = sorted(members, key=bary)
        width = (len(members) - 1) * col_gap
        for i, v in enumerate(members):
            x = int(i * col_gap - width / 2)
            x_of[v] = x
            out.append((v, (x, depth * row_gap)))
    return out
