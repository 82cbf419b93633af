"""analysis: per-run breakdowns and the cross-run aggregates (Figure 6 shares, Table 4 cells)."""

from __future__ import annotations

from collections import Counter
from statistics import fmean

import pytest

from knowsim_core.evaluation.analysis import (
    first_occurrence, metric_table, modes_per_turn, representative_run, run_facts,
    shares_by_level,
)
from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.formats.samples import load_samples

from tests.part2_support import make_run


@pytest.fixture(scope="module")
def runs():
    g = load_samples()[3].graph
    out = []
    for i, (lv, asst) in enumerate(
        [("novice", "a1"), ("novice", "a2"), ("advanced", "a1"), ("advanced", "a1"), ("intermediate", "a2")]
    ):
        out.append(make_run(g, level=lv, assistant_id=asst, seed=i + 1, max_turns=5))
    return out


@pytest.fixture(scope="module")
def facts(runs):
    return [run_facts(r, run_id=f"r{i}") for i, r in enumerate(runs)]


def test_run_facts_counts_every_mode_of_every_turn(runs, facts):
    for run, f in zip(runs, facts):
        direct = Counter(m for t in run.turns for _, m in t.modes)
        assert f.mode_counts == tuple(direct.get(m, 0) for m in FAILURE_ORDER)
        assert sum(f.mode_counts) > 0
        m = run.metrics()
        assert (f.kg, f.dc, f.co, f.turns) == (m.knowledge_gain, m.delivery_calibration, m.cognitive_overload, 5)


def test_modes_per_turn_match_the_records(runs):
    run = runs[0]
    per_turn = modes_per_turn(run)
    assert [sum(c.values()) for c in per_turn] == [len(t.modes) for t in run.turns]
    assert [dict(c) for c in per_turn] == [{m: sum(1 for _, x in t.modes if x == m) for m in FAILURE_ORDER}
                                           for t in run.turns]


def test_shares_by_level_follow_the_paper_order_and_sum_to_one(facts):
    rows = shares_by_level(facts)
    assert [r.level for r in rows] == ["novice", "intermediate", "advanced"]
    assert [r.runs for r in rows] == [2, 1, 2]
    novice = rows[0]
    assert novice.counts == tuple(facts[0].mode_counts[i] + facts[1].mode_counts[i] for i in range(5))
    for r in rows:
        assert sum(r.shares) == pytest.approx(1.0)


def test_metric_table_cells_carry_the_runs_behind_them(facts):
    cells = {(c.row, c.level): c for c in metric_table(facts)}
    assert set(cells) == {("a1", "novice"), ("a2", "novice"), ("a1", "advanced"), ("a2", "intermediate")}
    adv = cells[("a1", "advanced")]
    assert adv.n == 2 and adv.run_ids == ("r2", "r3")
    assert adv.means[1] == pytest.approx(fmean([facts[2].dc, facts[3].dc]))
    assert representative_run([facts[2], facts[3]], "KG").run_id in {"r2", "r3"}


def test_first_occurrence(facts):
    i = FAILURE_ORDER.index(FailureMode.EFFECTIVE)
    hit = first_occurrence(facts, "novice", FailureMode.EFFECTIVE)
    assert hit is not None and hit == (facts[0].run_id, facts[0].first_turn[i])
    assert first_occurrence(facts, "expert", FailureMode.EFFECTIVE) is None
    with pytest.raises(ValueError):
        representative_run([], "KG")
