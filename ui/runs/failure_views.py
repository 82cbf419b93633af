"""Failure-mode charts: one run (modes per turn, IU × turn heatmap) and many runs (Fig. 6, Tab. 4).

Every chart is a plotly figure with ``on_select="rerun"``; a click resolves to a (run, turn) that
the page opens on the Simulate view. Figures are built by pure functions (``*_figure``) so tests
can compare their numbers with the stored records.
"""

from __future__ import annotations

import textwrap
from typing import Any, Sequence

import plotly.graph_objects as go

from knowsim_core.evaluation.analysis import (
    METRIC_NAMES, RunFacts, first_occurrence, metric_table, modes_per_turn, representative_run, shares_by_level,
)
from knowsim_core.evaluation.explain import explain_run
from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.engine.graph import natural_key
from knowsim_core.engine.records import RunRecord
from knowsim_core.vocab import MODE_MEANING
from ui.common.theme import MODE_COLORS

FACTS_LIMIT = 5000  # runs read for the cross-run views (the newest first)

# Legends sit outside the plot area (above, or to the right) with room kept for them, so they
# never cover an axis title or its ticks; their order follows the stack as the eye reads it.
LEGEND_RIGHT = dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top", traceorder="reversed")
LEGEND_ABOVE = dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom", traceorder="normal")


def _mode_marker(m: FailureMode) -> dict:
    """The mode's colour (ui.common.theme.MODE_COLORS, the same in every view) with a white outline.

    No fill patterns: the plotly.js bundled with Streamlit drew patterned stacked bars as nothing.
    """
    return dict(color=MODE_COLORS[m], line=dict(color="#FFFFFF", width=0.5))


# ---------------------------------------------------------------------- one run
def turn_bars_figure(run: RunRecord) -> go.Figure:
    per_turn = modes_per_turn(run)
    turns = [t.turn for t in run.turns]
    fig = go.Figure()
    for m in FAILURE_ORDER:  # the first trace is the bottom of each stack
        fig.add_bar(
            x=turns, y=[c[m] for c in per_turn], name=m.title, marker=_mode_marker(m),
            hovertemplate=f"turn %{{x}}: %{{y}} × {m.title}<br>{MODE_MEANING[m]}<extra></extra>",
        )
    # a vertical legend read top-down lists the top of the stack first
    fig.update_layout(barmode="stack", height=320, margin=dict(t=30, b=50, l=60, r=170), xaxis_title="turn",
                      yaxis_title="explained IUs", legend=LEGEND_RIGHT, clickmode="event+select",
                      xaxis=dict(dtick=1))
    return fig


HOVER_CHARS = 70  # characters per line of a hover label: a why of 290 characters on one line ran off the plot


def hover_lines(text: str, width: int = HOVER_CHARS) -> str:
    """``text`` as hover-label lines of at most ``width`` characters, broken between words only."""
    return "<br>".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def heatmap_figure(run: RunRecord) -> go.Figure:
    """IU × turn: colour = mode, hover = the IU's why that turn (knowsim_core.evaluation.explain); blank = not explained."""
    ids = sorted(run.graph.index.ids, key=natural_key)
    turns = [t.turn for t in run.turns]
    pos = {m: i for i, m in enumerate(FAILURE_ORDER)}
    z: list[list[Any]] = [[None] * len(turns) for _ in ids]
    text: list[list[str]] = [[f"{i} · turn {t}" for t in turns] for i in ids]
    row = {v: k for k, v in enumerate(ids)}
    col = {t: k for k, t in enumerate(turns)}
    for turn, whys in explain_run(run):
        for w in whys:
            if w.id in row:
                if w.mode is not None:
                    z[row[w.id]][col[turn]] = pos[w.mode]
                text[row[w.id]][col[turn]] = f"{w.id} · turn {turn}<br>{hover_lines(w.why)}"
    n = len(FAILURE_ORDER)
    scale = []
    for i, m in enumerate(FAILURE_ORDER):
        scale += [(i / n, MODE_COLORS[m]), ((i + 1) / n, MODE_COLORS[m])]
    fig = go.Figure(
        go.Heatmap(
            z=z, x=turns, y=ids, text=text, hovertemplate="%{text}<extra></extra>", colorscale=scale,
            zmin=-0.5, zmax=n - 0.5, xgap=1, ygap=1,
            colorbar=dict(tickvals=list(range(n)), ticktext=[m.title for m in FAILURE_ORDER], title="mode",
                          thickness=14, x=1.02, xanchor="left"),
        )
    )
    fig.update_layout(height=max(260, 22 * len(ids) + 80), margin=dict(t=30, b=50, l=60, r=170), xaxis_title="turn",
                      yaxis=dict(autorange="reversed", type="category"), xaxis=dict(dtick=1))
    return fig


def heatmap_iu(point: dict[str, Any], run: RunRecord) -> str | None:
    """The IU of a clicked heatmap cell (its row), None when the point names no IU of ``run``."""
    iu = point.get("y")
    return iu if isinstance(iu, str) and iu in run.graph.index.label_of else None


# ---------------------------------------------------------------------- many runs
def shares_figure(facts: Sequence[RunFacts]) -> go.Figure:
    rows = shares_by_level(facts)
    levels = [f"{r.level} (n={r.runs})" for r in rows]
    fig = go.Figure()
    for i, m in enumerate(FAILURE_ORDER):
        fig.add_bar(
            y=levels, x=[r.shares[i] for r in rows], orientation="h", name=m.title, marker=_mode_marker(m),
            customdata=[[r.level, m.value, r.counts[i]] for r in rows],
            hovertemplate="%{customdata[0]}: %{x:.1%} " + m.title + " (%{customdata[2]} IU-turns)<extra></extra>",
        )
    # stacks run left to right in trace order, and so does the legend above them
    fig.update_layout(barmode="stack", height=150 + 50 * len(rows), margin=dict(t=70, b=50, l=10, r=20),
                      xaxis=dict(tickformat=".0%", range=[0, 1], title="share of explained IU-turns"),
                      legend=LEGEND_ABOVE)
    return fig


# How a metric's cell is coloured: DC as it is (1 = calibrated), CO turned round (0 overload is
# best), KG relative to the largest KG in the table (it counts state steps, so it has no fixed top).
# One key, "worse → better", then reads the same way for all three metrics.
GOODNESS_SCALE = "Blues"
GOODNESS_KEY = "darker = better<br>DC: as it is<br>CO: less overload<br>KG: vs the largest"


def _goodness(metric: str, mean: float, kg_top: float) -> float:
    if metric == "KG":
        return mean / kg_top if kg_top > 0 else 0.0
    if metric == "CO":
        return 1.0 - min(max(mean, 0.0), 1.0)
    return min(max(mean, 0.0), 1.0)


def table_figure(facts: Sequence[RunFacts], *, row: str) -> tuple[go.Figure, list[list[Any]]]:
    """Table 4 as a clickable grid: one column per (level, metric), one row per ``row`` value.

    Every cell is coloured, KG included (see :func:`_goodness`), with a colour key that says how.
    """
    cells = metric_table(facts, row=row)
    rows = sorted({c.row for c in cells}, key=natural_key)
    levels = list(dict.fromkeys(c.level for c in cells))
    cols = [(lv, m) for lv in levels for m in METRIC_NAMES]
    kg_top = max((c.means[METRIC_NAMES.index("KG")] for c in cells), default=0.0)
    z: list[list[float | None]] = [[None] * len(cols) for _ in rows]
    text = [[""] * len(cols) for _ in rows]
    custom: list[list[Any]] = [[None] * len(cols) for _ in rows]
    records = []
    for c in cells:
        r = rows.index(c.row)
        for k, m in enumerate(METRIC_NAMES):
            j = cols.index((c.level, m))
            mean = c.means[k]
            z[r][j] = _goodness(m, mean, kg_top)
            text[r][j] = f"{mean:.2f}<br>n={c.n}"
            custom[r][j] = [c.row, c.level, m]
        records.append([c.row, c.level, c.n, *(round(v, 3) for v in c.means)])
    fig = go.Figure(
        go.Heatmap(
            z=z, x=[f"{lv} {m}" for lv, m in cols],
            y=rows, text=text, texttemplate="%{text}", customdata=custom, colorscale=GOODNESS_SCALE,
            zmin=0, zmax=1, hovertemplate="%{y} · %{x}<br>%{text}<br>click: open the median run<extra></extra>",
            xgap=2, ygap=2, showscale=True,
            colorbar=dict(title=dict(text=GOODNESS_KEY, side="top", font=dict(size=11)), tickvals=[0, 1],
                          ticktext=["worse", "better"], thickness=14, x=1.02, xanchor="left"),
        )
    )
    fig.update_layout(height=max(240, 110 + 45 * len(rows)), margin=dict(t=40, b=20, l=10, r=140), yaxis=dict(type="category"),
                      xaxis=dict(type="category", side="top"))
    return fig, records


# ---------------------------------------------------------------------- clicks (ui.common.selection reads them)
def target_from_shares(point: dict[str, Any], facts: Sequence[RunFacts]) -> tuple[str, int] | None:
    data = point.get("customdata")
    if not data:
        return None
    return first_occurrence(facts, data[0], FailureMode(data[1]))


def target_from_table(point: dict[str, Any], facts: Sequence[RunFacts], *, row: str) -> tuple[str, int] | None:
    data = point.get("customdata")
    if not data or data[0] is None:
        return None
    sel = [f for f in facts if getattr(f, row) == data[0] and f.level == data[1]]
    if not sel:
        return None
    return representative_run(sel, data[2]).run_id, 1
