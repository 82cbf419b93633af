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


LABEL_WIDTH = 18  # characters per label line on the canvas
LABEL_LIMIT = 42  # characters of a concept drawn on its node (the whole text is in the hover line)
_BREAKS = "-–—/"  # a long word may end a line after one of these, and nowhere else


def _pieces(word: str) -> list[str]:
    """``word`` cut after each hyphen, dash or slash ("Expectation-maximizing" → "Expectation-",
    "maximizing"): the only places a word may end a line."""
    out, start = [], 0
    for i, ch in enumerate(word[:-1]):
        if ch in _BREAKS:
            out.append(word[start:i + 1])
            start = i + 1
    out.append(word[start:])
    return [p for p in out if p]


def _shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def wrap_label(text: str, width: int = LABEL_WIDTH, limit: int = LABEL_LIMIT) -> str:
    """A node's label: ``text`` shortened to ``limit`` characters and broken into lines of at most
    ``width`` at spaces, or after a hyphen, dash or slash inside a word that does not fit — never
    elsewhere inside a word. A word longer than ``width`` with nowhere to break keeps its own line
    whole (the node widens). The canvas draws these lines as they are: a drawing library left to
    fit a long word into a fixed width cut it anywhere ("Expectation-maximizin" / "g")."""
    text = _shorten(" ".join(text.split()), limit)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if len(line) + 1 + len(word) <= width or not line and len(word) <= width:
            line = f"{line} {word}" if line else word
        elif len(word) <= width:  # it fits a line of its own: never split it
            lines.append(line)
            line = word
        else:  # longer than a line: end lines only after its hyphens, dashes or slashes
            joiner = " " if line else ""
            for piece in _pieces(word):
                if line and len(line) + len(joiner) + len(piece) > width:
                    lines.append(line)
                    line = piece
                else:
                    line += joiner + piece
                joiner = ""
    if line:
        lines.append(line)
    return "\n".join(lines)
