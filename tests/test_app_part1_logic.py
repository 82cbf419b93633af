"""The Studio's pure helpers: plain-words reasons, fixed layout, graph payload, the player cursor.

Turns are played by the engine on hand-made graphs, so each reason is checked against a case
whose outcome follows from the rules (spec §4), not against the helper's own output.
"""

from __future__ import annotations

import pytest

from knowsim_core.engine.config import preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.session import play_turn
from knowsim_core.engine.signals import IUSignal
from knowsim_core.engine.state import IUState, KnowledgeState
from knowsim_core.evaluation.explain import explain_turn
from ui.common.graph_layout import ROW_GAP, positions, wrap

U, S, P, K = IUState


def graph(n: int, edges: list[tuple[str, str]]) -> IUGraph:
    return IUGraph.from_data({
        "nodes": [{"id": f"IU{i}", "concept": f"concept {i}", "abstraction_level": 0.5, "description": f"d{i}"}
                  for i in range(1, n + 1)],
        "edges": [{"from": a, "to": b} for a, b in edges],
    })


def play(g: IUGraph, start: dict[str, IUState], signals: list[IUSignal]):
    params = preset()
    rec = play_turn(g, KnowledgeState.from_ids(g, start), signals, turn=1,
                    tau=params.capacity(len(g.nodes)), params=params)
    return rec, {w.id: w.why for w in explain_turn(rec, g)}


def test_reasons_follow_the_update_rules():
    g = graph(10, [("IU1", "IU2"), ("IU2", "IU3")])  # τ = 6: four mentions stay under capacity
    rec, reason = play(g, {"IU1": K, "IU2": U, "IU3": S, "IU4": P, "IU5": K}, [
        IUSignal.make("IU2", "well_explained"),  # prerequisite known: U → S
        IUSignal.make("IU3", "well_explained"),  # IU2 is only struggling after its own step: ceiling S
        IUSignal.make("IU4", "shallow"),  # shallow cannot move a partial IU
        IUSignal.make("IU5", "well_explained"),  # already known well
    ])
    assert reason["IU2"].startswith("effective: unaware → struggling")
    # the rule reads the pre-turn ceiling: IU2 was unaware before this turn
    assert reason["IU3"].startswith("prereq-blocked: ceiling struggling — IU2 is unaware")
    assert reason["IU4"].startswith("under-absorbed: the turn was not overloaded")
    assert "only taught shallowly" in reason["IU4"]
    assert reason["IU5"].startswith("redundant: it was already known well")
    assert reason["IU1"] == "not mentioned this turn; already known well"


def test_not_mentioned_and_overload_reasons_quote_the_numbers():
    g = graph(3, [])
    rec, reason = play(g, {}, [IUSignal.make(f"IU{i}", "well_explained") for i in (1, 2, 3)])
    q = rec.quantities
    assert q.overload and q.efficiency < 1 and q.overload_threshold == 2
    stuck = [n for n in rec.nodes if n.post == n.pre]
    assert stuck, "three unaware mentions overload a 3-IU graph (τ = 2)"
    text = reason[stuck[0].id]
    assert text.startswith("overload-wasted: teachable, but the turn was overloaded")
    assert f"load {q.effective_load:.1f} vs capacity 2" in text and f"η {q.efficiency:.2f}" in text
    assert f"{stuck[0].carry:.2f} carried forward" in text
    _, quiet = play(g, {}, [IUSignal.make("IU1", "well_explained")])
    assert quiet["IU2"] == "not mentioned this turn; stays unaware"


def test_layout_is_by_depth_and_stable():
    g = graph(4, [("IU1", "IU2"), ("IU2", "IU3"), ("IU1", "IU4")])
    pos = positions(g)
    assert pos["IU1"][1] == 0 and pos["IU2"][1] == ROW_GAP and pos["IU3"][1] == 2 * ROW_GAP
    assert pos == positions(IUGraph.from_data(g.to_data()))  # same graph → same picture
    assert len({p for p in pos.values()}) == 4  # nobody on top of anybody


def test_wrap_shortens_long_concepts():
    text = wrap("a very long concept name that goes on and on well beyond the node width")
    assert all(len(line) <= 18 for line in text.split("\n")) and text.endswith("…")


def test_graph_payload_carries_states_and_text_as_data():
    pytest.importorskip("streamlit")
    from ui.common.graph_view import graph_data

    g = graph(3, [("IU1", "IU2")])
    data = graph_data(g, states={"IU1": K, "IU2": S}, changed=["IU2"], selected="IU1", key="k",
                      height=300, selectable=True)
    assert data["states"] == [3, 1, 0]  # a missing id is unaware
    assert data["changed"] == ["IU2"] and data["edges"] == [["IU1", "IU2"]]
    again = graph_data(g, states={"IU1": K, "IU2": S}, changed=["IU2"], selected="IU1", key="k",
                       height=300, selectable=True)
    assert again == data  # byte-identical when nothing changed (the browser can skip it)
    other = graph_data(g, states={"IU1": K, "IU2": P}, changed=["IU2"], selected="IU1", key="k",
                       height=300, selectable=True)
    assert other["sig"] == data["sig"] and other["rev"] != data["rev"]  # same layout, new colours


class _Store:
    """Just enough of a Store for the player: its runs repository, runs kept in memory."""

    def __init__(self, runs):
        self.runs = _Runs(runs)


class _Runs:
    def __init__(self, runs):
        self._runs = runs

    def load(self, rid):
        return self._runs[rid]


def test_player_moves_over_stored_turns_without_playing():
    from knowsim_core.agents import registry
    from knowsim_core.formats.samples import get_sample
    from knowsim_core.engine.session import Simulation
    from ui.simulate.player import Player

    sample = get_sample("sample_lava_lamps")
    sim = Simulation(material=sample.material, assistant=registry.resolve("assistant", "offline/adaptive"),
                     user=registry.resolve("user", "offline/knowsim"),
                     extractor=registry.resolve("extractor", "offline/lexical"), params=preset(max_turns=3))
    sim.reset(seed=3)
    run = sim.run_to_end()
    p = Player(_Store({"r": run}), ("r",), turn=99)
    assert p.turn == 3 and not p.can_forward  # clamped; finished and at the end
    assert not p.forward() and p.back() and p.turn == 2
    assert p.states("r") == {v: run.turns[1].state_after.state_of(run.graph.index.label_of[v])
                             for v in run.graph.index.ids}
    assert p.changed("r") == tuple(i for i, _, _ in run.turns[1].transitions)
    p.goto(0)
    assert p.record("r") is None and not p.back()


def test_theme_config_uses_the_state_colours_in_state_order():
    import tomllib
    from pathlib import Path

    from ui.common.theme import STATE_STYLE

    cfg = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    assert cfg["theme"]["chartCategoricalColors"][:4] == [STATE_STYLE[s].colour for s in IUState]
    assert cfg["server"]["enableStaticServing"] is True  # the graph's code is served from ./static
    glyphs = {v.glyph for v in STATE_STYLE.values()}
    assert len(glyphs) == 4  # each state readable without colour
    assert cfg["client"]["toolbarMode"] == "viewer"  # no Deploy button


def test_upload_limit_matches_the_import_cap():
    import math
    import tomllib
    from pathlib import Path

    from ui.graph.editor import MAX_IMPORT_BYTES

    cfg = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    # the uploader states server.maxUploadSize (MB); it must be the cap the import enforces
    assert cfg["server"]["maxUploadSize"] == math.ceil(MAX_IMPORT_BYTES / 1_000_000)


def test_the_server_reads_the_no_forced_gc_option_from_the_repository(monkeypatch):
    """Streamlit's forced gc.collect(2) after each script run cost ~90 ms of a Step's ~110 ms of server
    CPU (benchmarks/app.py); the option is read from .streamlit/config.toml under its real name (a
    misspelt key would be ignored and the collection would come back)."""
    from pathlib import Path

    from streamlit import config

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    config.get_config_options(force_reparse=True)
    assert config.get_option("runner.postScriptGC") is False
    assert config.get_where_defined("runner.postScriptGC").endswith(".streamlit/config.toml")


def test_failure_mode_colours_are_distinct_and_never_a_state_colour():
    from knowsim_core.engine.failures import FailureMode
    from ui.common.theme import CHANGED_COLOUR, MODE_COLORS, STATE_STYLE, mode_colour

    assert set(MODE_COLORS) == set(FailureMode)
    colours = [c.upper() for c in MODE_COLORS.values()]
    assert len(set(colours)) == 5
    taken = {v.colour.upper() for v in STATE_STYLE.values()} | {CHANGED_COLOUR.upper()}
    assert not taken & set(colours), "a failure mode must not reuse a state colour with another meaning"
    assert mode_colour("prereq_blocked") == MODE_COLORS[FailureMode.PREREQ_BLOCKED]


def _turn(load: float, turn: int = 1):
    from types import SimpleNamespace

    return SimpleNamespace(turn=turn, quantities=SimpleNamespace(effective_load=load, overload=load >= 8,
                                                                 efficiency=1.0))


def _figure(spec: dict):
    """A chart spec as plotly validates it (the template is set by the browser side)."""
    import plotly.graph_objects as go

    fig = go.Figure(spec)
    fig.update_layout(template="none")
    return fig


def test_gauge_scale_is_one_per_run():
    from ui.simulate.gauge import gauge_spec, gauge_top

    assert gauge_top([], tau=8) == 16  # nothing played yet: 2τ
    assert gauge_top([_turn(3.0), _turn(21.2)], tau=8) == 22  # the run's highest load, rounded up
    turns = [_turn(3.0, 1), _turn(21.2, 2), _turn(5.5, 3)]
    top = gauge_top(turns, tau=8)
    ranges = {tuple(_figure(gauge_spec(t, tau=8, top=top)).data[0].gauge.axis.range) for t in turns}
    assert ranges == {(0, 22)}  # identical whichever turn is shown


def test_chart_specs_are_valid_plotly_figures_as_sent():
    """The player sends plain figure dicts (no plotly validation per step): plotly accepts every
    property of them and changes none (only the template, which the browser side sets)."""
    import json

    import plotly.io

    from ui.simulate.gauge import gauge_spec, load_chart_spec

    turns = [_turn(3.0, 1), _turn(21.2, 2), _turn(5.5, 3)]
    specs = [
        gauge_spec(None, tau=8),
        gauge_spec(turns[0], tau=8, top=22),
        gauge_spec(turns[2], tau=8, previous=turns[1], top=22),
        load_chart_spec(turns[:1], tau=8, current=1),
        load_chart_spec(turns, tau=8, current=2, top=22),
    ]
    for spec in specs:
        validated = json.loads(plotly.io.to_json(_figure(spec), validate=False))
        validated["layout"].pop("template")
        assert json.loads(json.dumps(spec)) == validated


def test_legend_has_a_swatch_per_state():
    from ui.common.graph_view import legend_html
    from ui.common.theme import STATE_STYLE

    html = legend_html()
    for style in STATE_STYLE.values():
        assert f"background:{style.colour}" in html and style.name in html
