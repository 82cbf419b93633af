"""The Realism page's per-level chart: one bar per level and series, every series in the legend.

Streamlit's ``st.bar_chart`` puts its legend under the chart in one row: in the page's half-width
column the last series (with two learners and three floors, the most-common-act floor) falls off
the legend. This figure lists every series that has a value for the metric
in a legend that wraps, floors in greys so they read as floors, and the caller names any series
without a value for that metric.
"""

from __future__ import annotations

from typing import Any, Mapping

import plotly.graph_objects as go

from knowsim_core.evaluation.realism import FLOORS, level_rows

SIM_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")  # Okabe–Ito
FLOOR_COLOURS = {"baseline/copy-last": "#8C8C8C", "baseline/generic": "#BDBDBD", "floor/most-common-act": "#4D4D4D"}


def level_series(report: Mapping[str, Any], metric: str) -> tuple[list[str], dict[str, list[float | None]], list[str]]:
    """Levels (labelled with their n, :func:`realism.level_rows`), each series' values per level, and
    the series without any value for ``metric`` (e.g. a floor that writes no text, on ROUGE-L)."""
    rows = level_rows(report, metric)
    users = list(dict.fromkeys(u for by in report["by_level"].values() for u in by))
    values = {u: [r.get(u) for r in rows] for u in users}
    empty = [u for u, vs in values.items() if all(v is None for v in vs)]
    return [r["level"] for r in rows], {u: vs for u, vs in values.items() if u not in empty}, empty


def level_figure(report: Mapping[str, Any], metric: str, label: str) -> go.Figure:
    levels, values, _ = level_series(report, metric)
    fig = go.Figure()
    sims = iter(SIM_COLOURS * 4)
    for uid, vs in values.items():
        colour = FLOOR_COLOURS.get(uid) if uid in FLOORS else next(sims)
        fig.add_bar(x=levels, y=vs, name=uid, marker_color=colour, showlegend=True,
                    marker_pattern_shape="/" if uid in FLOORS else "", marker_pattern_fillmode="overlay",
                    hovertemplate=f"{uid}<br>%{{x}}: %{{y:.3f}}<extra></extra>")
    fig.update_layout(barmode="group", height=360, margin=dict(t=10, b=40, l=50, r=10), yaxis_title=label,
                      legend=dict(orientation="h", yanchor="top", y=-0.15, x=0, entrywidthmode="fraction",
                                  entrywidth=0.5))
    return fig
