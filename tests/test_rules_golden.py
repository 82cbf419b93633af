"""Table-driven golden turns (tests/golden/rules_cases.json), hand-computed from the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowsim_core.engine.config import preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.rules import apply_turn
from knowsim_core.engine.signals import normalize_entries
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState
from knowsim_core.engine.termination import stop_votes

DATA = json.loads((Path(__file__).parent / "golden" / "rules_cases.json").read_text())
GRAPHS = {k: IUGraph.from_data(v) for k, v in DATA["graphs"].items()}
S = {"U": IUState.UNAWARE, "S": IUState.STRUGGLING, "P": IUState.PARTIAL, "K": IUState.KNOWS_WELL}


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_golden_turn(case):
    g = GRAPHS[case["graph"]]
    params = preset(case.get("preset", "paper-final"))
    carries = case.get("pre_carry", {})
    pre = KnowledgeState(
        {g.label(i): LabelState(S[st], carries.get(i)) for i, st in case["pre"].items()}
    )
    tau = params.capacity(len(g.nodes))
    out = apply_turn(g, pre, normalize_entries(case["signals"]), tau=tau, params=params)
    exp = case["expect"]
    by_id = {n.id: n for n in out.nodes}
    if "tau" in exp:
        assert tau == exp["tau"]
    if "update_order" in exp:
        assert list(g.index.update_order) == exp["update_order"]
    for i, st in exp.get("post", {}).items():
        assert by_id[i].post == S[st], f"{i} post"
        assert out.state[g.label(i)].state == S[st]
    for i, c in exp.get("carry", {}).items():
        assert out.state[g.label(i)].carry == c, f"{i} carry"
    for i, ev in exp.get("evidence", {}).items():
        assert out.state[g.label(i)].evidence == ev
    for i, st in exp.get("ceiling", {}).items():
        assert by_id[i].ceiling == S[st], f"{i} live ceiling"
    for i, st in exp.get("ceiling_pre", {}).items():
        assert by_id[i].ceiling_pre == S[st], f"{i} pre-turn ceiling"
    for key, want in exp.get("quantities", {}).items():
        assert getattr(out.quantities, key) == want, key
    if "modes" in exp:
        assert {i: m.value for i, m in out.modes} == exp["modes"]
    if "votes" in exp:
        votes = stop_votes(g, [out.quantities], out.state, params)
        assert votes.mastery == exp["votes"]["mastery"]
        assert votes.fired == exp["votes"]["fired"]


def test_states_never_decrease_even_when_nothing_is_mentioned():
    g = GRAPHS["diamond"]
    pre = KnowledgeState({g.label(i): LabelState(S["K"]) for i in g.index.ids})
    out = apply_turn(g, pre, (), tau=2, params=preset())
    assert all(n.post == IUState.KNOWS_WELL for n in out.nodes)
