"""Why two runs differ (issue 47, item 1): the first divergent turn and the rule that parted them.

Pairs are planted on a six-IU graph (τ 3, IU1 a prerequisite of IU2) with hand-written labels, so
each differs by one thing at a known turn: a teaching-quality label, a user-attempt label that
overloads the turn, a carried fraction, a prerequisite list. One pair is a real offline run and its
what-if with one label changed.
"""

from __future__ import annotations

import pytest

from knowsim_core.engine.config import preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import play_turn
from knowsim_core.engine.signals import IUSignal
from knowsim_core.engine.state import IUState, KnowledgeState
from knowsim_core.engine.whatif import LabelEdit, apply_edits
from knowsim_core.evaluation.divergence import Rule, diff_runs

PARAMS = preset("paper-final", max_turns=15)
U, S, P, K = IUState.UNAWARE, IUState.STRUGGLING, IUState.PARTIAL, IUState.KNOWS_WELL


def graph(edges=(("IU1", "IU2"),)) -> IUGraph:
    nodes = [{"id": f"IU{i}", "concept": f"concept {i}", "abstraction_level": 0.5, "description": f"what {i} is"}
             for i in range(1, 7)]
    return IUGraph.from_data({"nodes": nodes, "edges": [{"from": f, "to": t} for f, t in edges]})


def planted(turns: list[dict[str, tuple[str, str]]], *, start: dict[str, IUState] | None = None, g: IUGraph | None = None,
            run_id: str = "A", reply: str = "reply") -> RunRecord:
    """A run whose turn ``i`` carries the labels ``turns[i]`` (IU → (quality, attempt)); others not mentioned."""
    g = g or graph()
    s0 = KnowledgeState.from_ids(g, {v: (start or {}).get(v, U) for v in g.index.ids})
    tau = PARAMS.capacity(len(g.nodes))
    state, history, records = s0, [], []
    for n, labels in enumerate(turns, 1):
        signals = tuple(IUSignal.make(v, *labels.get(v, ("not_mentioned", "none"))) for v in g.index.ids)
        rec = play_turn(g, state, signals, turn=n, tau=tau, params=PARAMS, history=history,
                        user_message=f"question {n}", assistant_message=f"{reply} {n}")
        records.append(rec)
        history.append(rec.quantities)
        state = rec.state_after
    return RunRecord(question_id="q", question="?", reference_answer="", graph=g, level="novice", initial_state=s0,
                     tau=tau, params=PARAMS, seed=1, adapters=(("assistant", "test/a"),), turns=tuple(records),
                     run_id=run_id)


WELL, SHALLOW, NONE = "well_explained", "shallow", "none"


def test_one_teaching_quality_label_at_turn_2_is_named_with_its_iu():
    base = [{"IU3": (WELL, NONE)}, {"IU3": (SHALLOW, NONE)}, {"IU4": (WELL, NONE)}]
    alt = [{"IU3": (WELL, NONE)}, {"IU3": (WELL, NONE)}, {"IU4": (WELL, NONE)}]
    d = diff_runs(planted(base), planted(alt, run_id="B"))
    assert d.comparable and not d.start
    assert d.first.turn == 2 and d.first.rule is Rule.QUALITY
    [iu] = d.first.new
    assert iu.id == "IU3" and iu.post == (S, P) and "shallow in A, well_explained in B" in iu.why
    assert [(x.id, x.field, x.a, x.b) for x in d.first.labels] == [("IU3", "teaching quality", SHALLOW, WELL)]
    assert d.turns[0].ius == () and d.turns[2].ius[0].rule is Rule.APART  # turn 3: IU3 entered apart
    assert "turn 2, teaching quality" in d.headline()


def test_a_user_attempt_that_overloads_the_turn_is_overload_and_names_the_label():
    base = [{"IU4": (WELL, NONE)}]
    alt = [{"IU4": (WELL, NONE), "IU5": ("not_mentioned", "reasoning")}]  # +1.75 load: 3.5 against τ 3
    d = diff_runs(planted(base), planted(alt, run_id="B"))
    first = d.first
    assert first.turn == 1 and first.rule is Rule.OVERLOAD
    assert first.eta[0] == 1.0 and first.eta[1] < 1.0
    assert [(x.id, x.field) for x in first.labels] == [("IU5", "user attempt")]
    [iu] = first.new
    assert iu.id == "IU4" and iu.post == (S, U)
    assert "IU5 user attempt none in A, reasoning in B" in d.headline()


def test_a_carry_built_two_turns_earlier_is_carry_with_the_turn_it_began():
    # turn 1 overloaded in both; A also teaches IU4 (gets part of a step, carried), B does not
    busy = {"IU3": (WELL, NONE), "IU5": (WELL, NONE), "IU6": (WELL, NONE)}
    base = [{**busy, "IU4": (WELL, NONE)}, {"IU4": (WELL, NONE), "IU1": ("not_mentioned", "reasoning")}]
    alt = [busy, {"IU4": (WELL, NONE), "IU1": ("not_mentioned", "reasoning")}]
    a, b = planted(base), planted(alt, run_id="B")
    assert a.turns[0].node("IU4").post == U and a.turns[0].node("IU4").carry > 0  # only a carry after turn 1
    d = diff_runs(a, b)
    assert d.first_label.turn == 1
    first = d.first
    assert first.turn == 2 and first.rule is Rule.CARRY
    iu = next(x for x in first.new if x.id == "IU4")
    assert iu.rule is Rule.CARRY and iu.since == 1 and iu.post == (S, U)
    assert "since turn 1" in iu.why


def test_a_prerequisite_the_other_graph_lacks_is_the_ceiling_and_is_noted():
    labels = [{"IU2": (WELL, NONE)}]
    start = {"IU1": S, "IU2": S}
    a = planted(labels, start=start)  # IU1 (struggling) caps IU2 at struggling
    b = planted(labels, start=start, g=graph(edges=()), run_id="B")  # no prerequisite: IU2 may rise
    d = diff_runs(a, b)
    assert d.first.turn == 1 and d.first.rule is Rule.CEILING
    assert d.first.new[0].id == "IU2" and d.first.new[0].post == (S, P)
    assert any("prerequisites differ" in n for n in d.notes)


def test_a_ceiling_cascading_from_a_relabelled_prerequisite_is_named_for_the_dependent():
    start = {"IU1": S, "IU2": S}
    a = planted([{"IU1": (WELL, NONE), "IU2": (WELL, NONE)}], start=start)
    b = planted([{"IU1": (SHALLOW, NONE), "IU2": (WELL, NONE)}], start=start, run_id="B")
    d = diff_runs(a, b)
    rules = {x.id: x.rule for x in d.first.new}
    assert rules == {"IU1": Rule.QUALITY, "IU2": Rule.CEILING} and d.first.rule is Rule.QUALITY


def test_identical_runs_never_part_and_different_levels_start_apart():
    turns = [{"IU3": (WELL, NONE)}, {"IU4": (WELL, NONE)}]
    d = diff_runs(planted(turns), planted(turns, run_id="B"))
    assert d.first is None and "never part" in d.headline()
    d = diff_runs(planted(turns), planted(turns, start={"IU5": K}, run_id="B"))
    assert d.start == ("IU5",) and "start apart" in d.headline()


def test_different_questions_are_not_compared_turn_by_turn():
    from dataclasses import replace

    a = planted([{"IU3": (WELL, NONE)}])
    d = diff_runs(a, replace(a, question_id="other", run_id="B"))
    assert not d.comparable and d.turns == () and "only their metrics compare" in d.headline()


def test_a_longer_run_is_said_and_forks_name_the_message():
    a = planted([{"IU3": (WELL, NONE)}, {"IU4": (WELL, NONE)}, {}])
    b = planted([{"IU3": (WELL, NONE)}, {"IU4": (SHALLOW, NONE)}], reply="other", run_id="B")
    d = diff_runs(a, b)
    assert d.extra == ("A", 1) and "A has 1 more turn" in d.headline()
    assert d.turns[0].messages == ("assistant",)


@pytest.fixture(scope="module")
def sample_run():
    from knowsim_core.formats.samples import get_sample
    from tests.part2_support import make_run

    return make_run(get_sample("sample_lava_lamps").graph, question_id="sample_lava_lamps", max_turns=5)


def test_a_real_run_and_its_one_label_what_if_part_at_that_turn(sample_run):
    # a turn whose load stays under τ with one more unaware IU taught: the label alone decides
    rec = next(t for t in sample_run.turns[1:] if t.quantities.effective_load + 1.75 < sample_run.tau)
    turn = rec.turn
    iu = next(n.id for n in rec.nodes if n.quality == "not_mentioned" and n.pre == U)
    res = apply_edits(sample_run, [LabelEdit(turn, iu, quality=WELL)])
    assert res.first_turn == turn and not res.skipped
    d = diff_runs(sample_run, res.run)
    assert d.first.turn == turn and all(t.ius == () for t in d.turns[: turn - 1])
    mine = next(x for x in d.first.new if x.id == iu)
    assert mine.rule is Rule.QUALITY and mine.post == (U, S)
    assert d.to_data()["first_turn"] == turn


def test_where_both_the_share_and_the_carry_differ_the_one_that_decides_is_named():
    # as above, and A's turn 2 is a little more loaded (η 0.96 against 0.98): A still rises, on its carry
    busy = {"IU3": (WELL, NONE), "IU5": (WELL, NONE), "IU6": (WELL, NONE)}
    second = {"IU4": (WELL, NONE), "IU1": ("not_mentioned", "reasoning")}
    a = planted([{**busy, "IU4": (WELL, NONE)}, {**second, "IU6": ("not_mentioned", "articulation")}])
    b = planted([busy, second], run_id="B")
    d = diff_runs(a, b)
    assert d.first.turn == 2 and d.first.eta[0] < d.first.eta[1] < 1.0
    iu = next(x for x in d.first.new if x.id == "IU4")
    assert iu.rule is Rule.CARRY and iu.post == (S, U) and "η gave it" in iu.why
