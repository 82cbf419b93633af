"""The Compare view: states and modes by name and colour, view-only compact graphs (issue 14)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.state import IUState
from ui.common.theme import MODE_COLORS, STATE_STYLE, state_badge

from tests.part2_support import make_run

QID = "sample_lava_lamps"


def _runs():
    g = next(s for s in load_samples() if s.id == QID).graph
    return (make_run(g, question_id=QID, level="novice", seed=1, max_turns=4),
            make_run(g, question_id=QID, level="advanced", seed=2, max_turns=4))


def test_states_are_named_and_coloured_not_raw_keys():
    from ui.runs.compare import _STATE_CELL, state_diff, styled

    a, b = _runs()
    rows = state_diff(a, b, 2)
    shown = {r["A"] for r in rows} | {r["B"] for r in rows}
    assert shown <= {state_badge(s) for s in IUState}
    assert not any("_" in s for s in shown)  # e.g. partial_understanding never reaches the screen
    ctx = styled(rows, ("A", "B"), _STATE_CELL)._compute().ctx
    for i, r in enumerate(rows):
        state = next(s for s in IUState if state_badge(s) == r["A"])
        assert ("background-color", STATE_STYLE[state].colour) in ctx[(i, 1)]
    # natural order of the ids, as everywhere else
    assert [r["IU"] for r in rows][:3] == ["IU1", "IU2", "IU3"] and [r["IU"] for r in rows][-1] == "IU14"


def test_modes_are_coloured_with_the_shared_palette():
    from knowsim_core.engine.failures import FAILURE_ORDER
    from ui.runs.compare import _MODE_CELL, styled, why_diff

    a, b = _runs()
    rows = why_diff(a, b, 2)
    ctx = styled(rows, ("A mode", "B mode"), _MODE_CELL)._compute().ctx
    painted = 0
    for i, r in enumerate(rows):
        mode = next((m for m in FAILURE_ORDER if m.title == r["A mode"]), None)
        if mode is not None:
            assert ("background-color", MODE_COLORS[mode]) in ctx[(i, 1)]
            painted += 1
    assert painted


def _page():
    import streamlit as st

    from tests.test_compare_view import _runs
    from ui.runs.compare import render_compare

    render_compare(*_runs(), key="cmpt")
    st.write("done")


def test_compare_graphs_are_compact_and_never_invite_a_click():
    from ui.common.graph_view import HINT, HINT_VIEW_ONLY

    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    payloads = [json.loads(el.proto.json) for el in at.get("bidi_component")]
    assert len(payloads) == 2
    for p in payloads:
        assert p["selectable"] is False and p["hint"] == HINT_VIEW_ONLY and "click" not in p["hint"]
        assert p["compact"] is True and p["minScale"] * 15 >= 11
    assert HINT != HINT_VIEW_ONLY
    states = next(d.value for d in at.dataframe if {"IU", "A", "B", "B − A"} <= set(d.value.columns))
    assert set(states["A"]) <= {state_badge(s) for s in IUState}


def test_a_side_without_turns_says_so_instead_of_ending_after_turn_0():
    from dataclasses import replace

    from ui.runs.compare import side_caption

    a, _ = _runs()
    empty = replace(a, turns=())
    for turn in (0, 3):
        text = side_caption("B", empty, turn)
        assert text.startswith("B: starting state, it has no turns yet") and "ended" not in text, text
    assert side_caption("A", a, 2).startswith("A: state after turn 2 ·")
    assert side_caption("A", a, len(a.turns) + 3).startswith(f"A: state after turn {len(a.turns)} "
                                                            f"(it ended after turn {len(a.turns)})")
