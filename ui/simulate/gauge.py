"""The load gauge (L_t against the capacity τ) and the per-turn load chart (plotly).

The gauge's bands are shares of τ: comfortable below 75 %, near capacity up to τ, overloaded
above; the red line marks τ itself. The title carries the overload flag and η so the state is
readable without the colours. The scale is fixed per run (:func:`gauge_top`), so the needle of one
turn can be compared with the next.

Both are drawn by a small v2 component (``ui/assets/plot_view.js``) that keeps the chart mounted
and applies each new figure with ``Plotly.react``: ``st.plotly_chart`` gives a chart a new element
id whenever its figure changes, so every step re-mounted both charts from scratch in the browser
(~100 ms of main-thread work that held back the graph's new colours).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import streamlit as st

from knowsim_core.engine.records import TurnRecord
from knowsim_core.evaluation.explain import share  # η worded as the why panel words it

from ui.common.resources import module_loader, plot_module_url, plotly_url
from ui.common.theme import GAUGE_BAR, GAUGE_BETTER, GAUGE_NEAR, GAUGE_OK, GAUGE_OVER, GAUGE_THRESHOLD, NEAR_SHARE

GAUGE_HEIGHT = 230
CHART_HEIGHT = 180
CONFIG = {"displayModeBar": False}


def gauge_top(turns: Sequence[TurnRecord], *, tau: int) -> float:
    """The gauge's upper end for a whole run: max(2τ, the largest load of any stored turn), rounded up.

    It depends on the run's stored turns, not on the turn shown, so stepping or scrubbing never
    rescales the dial; only a newly played turn heavier than every earlier one (and above 2τ)
    can widen it.
    """
    peak = max((t.quantities.effective_load for t in turns), default=0.0)
    return float(max(2 * tau, math.ceil(peak), 1))


def gauge_spec(
    rec: TurnRecord | None, *, tau: int, previous: TurnRecord | None = None, top: float | None = None
) -> dict:
    """The gauge for one turn (turn 0: an empty gauge at 0) on the scale 0…``top`` (default 2τ).

    A plain plotly figure dict: building it through ``plotly.graph_objects`` validated every
    property (~6 ms per chart on every step); the tests check that plotly accepts it unchanged.
    """
    load = rec.quantities.effective_load if rec is not None else 0.0
    top = float(max(2 * tau, 1)) if top is None else top
    if rec is None:
        title = "load before the first turn"
    else:
        q = rec.quantities
        flag = "OVERLOADED" if q.overload else "within capacity"
        title = f"turn {rec.turn}: {flag} · η = {share(q.efficiency)}"
    indicator = {
        "type": "indicator",
        "mode": "gauge+number+delta" if previous is not None else "gauge+number",
        "value": load,
        "number": {"valueformat": ".1f", "suffix": f" / τ {tau}"},
        "title": {"text": title, "font": {"size": 14}},
        "gauge": {
            "axis": {"range": [0, top]},
            "bar": {"color": GAUGE_BAR, "thickness": 0.3},
            "steps": [
                {"range": [0, NEAR_SHARE * tau], "color": GAUGE_OK},
                {"range": [NEAR_SHARE * tau, tau], "color": GAUGE_NEAR},
                {"range": [tau, top], "color": GAUGE_OVER},
            ],
            "threshold": {"line": {"color": GAUGE_THRESHOLD, "width": 4}, "thickness": 0.9, "value": tau},
        },
    }
    if previous is not None:  # more load than last turn is the worrying direction
        indicator["delta"] = {"reference": previous.quantities.effective_load, "valueformat": ".1f",
                              "increasing": {"color": GAUGE_THRESHOLD}, "decreasing": {"color": GAUGE_BETTER}}
    # no template: plotly's default one is ~3.6 KB of JSON per step; the chart is drawn with
    # Streamlit's look (ui/assets/plot_view.js)
    return {"data": [indicator],
            "layout": {"height": GAUGE_HEIGHT, "margin": {"l": 20, "r": 20, "t": 50, "b": 10}}}


def load_chart_spec(turns: Sequence[TurnRecord], *, tau: int, current: int, top: float | None = None) -> dict:
    """Load per turn as bars (hatched when overloaded), τ as a line, the shown turn outlined.

    With ``top`` the load axis is fixed to the gauge's scale, so both read the same numbers. A
    plain figure dict like :func:`gauge_spec`.
    """
    bar = {
        "type": "bar", "name": "load",
        "x": [t.turn for t in turns],
        "y": [t.quantities.effective_load for t in turns],
        "marker": {
            "color": [GAUGE_THRESHOLD if t.quantities.overload else GAUGE_BAR for t in turns],
            "pattern": {"shape": ["/" if t.quantities.overload else "" for t in turns]},
            "line": {"width": [3 if t.turn == current else 0 for t in turns], "color": "#000000"},
        },
        "hovertemplate": "turn %{x}: load %{y:.1f}<extra></extra>",
    }
    layout = {
        "height": CHART_HEIGHT, "margin": {"l": 40, "r": 10, "t": 10, "b": 30}, "showlegend": False,
        "xaxis": {"title": {"text": "turn"}, "dtick": 1},
        "yaxis": {"title": {"text": "load"}, **({"range": [0, top]} if top is not None else {})},
        # τ as a plain layout shape (fig.add_hline cost ~10 ms per call)
        "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": tau, "y1": tau,
                    "line": {"color": GAUGE_THRESHOLD, "dash": "dash"}}],
        "annotations": [{"xref": "paper", "x": 1, "y": tau, "text": f"τ = {tau}", "showarrow": False,
                         "xanchor": "right", "yanchor": "bottom"}],
    }
    return {"data": [bar], "layout": layout}


@lru_cache(maxsize=1)
def _component():
    # light DOM (not isolated): plotly.js adds its style rules to the document's head
    return st.components.v2.component("knowsim.live_plot", html='<div class="ks-plot"></div>',
                                      js=module_loader("__ksPlotRender", ".ks-plot", "chart"),
                                      isolate_styles=False)


def chart_data(spec: dict) -> dict:
    """The payload a live chart receives: the figure (a plain dict), plotly.js and the module."""
    return {"figure": spec, "config": CONFIG, "lib": plotly_url(), "module": plot_module_url()}


def render_chart(spec: dict, *, key: str) -> None:
    """Draw the figure ``spec`` in a chart that stays mounted under ``key`` (updated in place)."""
    _component()(data=chart_data(spec), key=key)


def _sized(spec: dict, height: int | None) -> dict:
    """``spec`` drawn ``height`` px tall (a compact chart keeps its margins, loses blank space)."""
    if height is not None:
        spec["layout"]["height"] = height
    return spec


def render_gauge(
    rec: TurnRecord | None, *, tau: int, previous: TurnRecord | None = None, top: float | None = None, key: str,
    height: int | None = None,
) -> None:
    render_chart(_sized(gauge_spec(rec, tau=tau, previous=previous, top=top), height), key=key)


def render_load_chart(
    turns: Sequence[TurnRecord], *, tau: int, current: int, top: float | None = None, key: str,
    height: int | None = None,
) -> None:
    if not turns:
        st.caption("The per-turn load chart fills in as the conversation goes.")
        return
    render_chart(_sized(load_chart_spec(turns, tau=tau, current=current, top=top), height), key=key)
