"""The paper check: the offline world's per-level picture on a fixed sub-matrix of the paper's
questions, within the issue's stated tolerances; the measured reply shapes; the page's tab.

The whole 60-question figure is `python benchmarks/paper_check.py` (README). Here: the 30
questions of the *held-out* half (odd positions within each task; nothing was set on them) × 3
levels × the 4 strategies × seed 1 = 360 conversations — the half itself, not a sub-sample of it,
so what is asserted is the held-out figure the benchmark prints. Tolerances are the issue's
(shares ±8 points, CO ±0.10), asserted only where the held-out half meets them with a margin
(held-out figures with the learner of issue 22's second round; margin = tolerance − distance):
intermediate REDUNDANT 67 vs 68 (margin 6.6 points), advanced 85 vs 89 (4.1), novice CO 0.874 vs
0.92 (0.054). Not asserted because not met on the held-out half — reported by the benchmark, not
loosened: intermediate CO 0.589 vs 0.80 and advanced CO 0.494 vs 0.89 (the offline learner shows
its step in the concept's words about as often as real learners do — novice 3 %, intermediate
26 % of answers, development half of the shared conversations — and the paper's learners were
LLM-simulated), advanced KG, and the novice REDUNDANT / PREREQ-BLOCKED / OVERLOAD-WASTED split.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.evaluation.paper import (
    CO_TOLERANCE, FIG6_SHARES, SHARE_TOLERANCE, TABLE4_CO, check_rows, level_checks, recorded_novice_adaptive,
)

REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld"


@pytest.fixture(scope="module")
def sub_matrix(reference_dir):
    from knowsim_core.evaluation.paper_matrix import load_paper_questions, run_matrix, split_halves

    _, held = split_halves(load_paper_questions(reference_dir))
    return run_matrix(held, seed=1)


def by_level(outcomes):
    return {c.level: c for c in level_checks(outcomes)}


def test_redundancy_rises_with_the_level_as_in_fig6(sub_matrix):
    lv = by_level(sub_matrix)
    r = FAILURE_ORDER.index(FailureMode.REDUNDANT)
    for level in ("intermediate", "advanced"):
        assert abs(lv[level].shares[r] - FIG6_SHARES[level][FailureMode.REDUNDANT]) <= SHARE_TOLERANCE, level
    assert lv["novice"].shares[r] < lv["intermediate"].shares[r] < lv["advanced"].shares[r]


def test_cognitive_overload_of_novices_is_near_table4(sub_matrix):
    lv = by_level(sub_matrix)
    assert abs(lv["novice"].co - TABLE4_CO["novice"]) <= CO_TOLERANCE, lv["novice"].co
    # intermediate / advanced CO are below Table 4 by more than the tolerance (module docstring):
    # reported by the benchmark, not asserted. What holds is the order of the levels' overload.
    assert lv["novice"].co > lv["intermediate"].co > lv["advanced"].co


def test_adaptive_novice_cell_looks_like_the_papers_recorded_conversations(sub_matrix):
    """The one cell the paper shipped conversations of (4 recordings): shares within the Fig. 6
    tolerance, CO within Table 4's, and the stop rule fires in most runs, all for overload."""
    cell = [o for o in sub_matrix if o.level == "novice" and o.assistant == "offline/adaptive"]
    ours = level_checks(cell)[0]
    rec = recorded_novice_adaptive()
    for mode, s, p in zip(FAILURE_ORDER, ours.shares, rec["shares"]):
        assert abs(s - p) <= SHARE_TOLERANCE, (mode, s, p)
    assert abs(ours.co - rec["co"]) <= CO_TOLERANCE
    assert ours.stops >= len(cell) / 2 and ours.overload_stops == ours.stops


def test_a_calibrated_strategy_still_does_better_for_novices_than_a_comprehensive_one(sub_matrix):
    def cell(a):
        return level_checks([o for o in sub_matrix if o.level == "novice" and o.assistant == a])[0]

    adaptive, comprehensive = cell("offline/adaptive"), cell("offline/comprehensive")
    assert adaptive.co < comprehensive.co  # less overloaded
    assert adaptive.dc > comprehensive.dc  # better calibrated delivery
    # (KG: 11.5 vs 11.4 on all 60 questions — too close to assert on a sub-matrix; the benchmark prints it)


def test_the_check_table_names_every_figure_and_marks_what_the_paper_does_not_give(sub_matrix):
    rows = check_rows(level_checks(sub_matrix))
    novice = {r["figure"]: r for r in rows if r["level"] == "novice"}
    assert novice["CO"]["paper"] == "0.92" and novice["CO"]["within tolerance"] == "yes"
    assert novice["DC"]["paper"] == "—" and novice["DC"]["within tolerance"] == "—"
    assert {f"{m.title} %" for m in FAILURE_ORDER} <= set(novice)


def test_the_reply_shape_constants_are_what_the_shared_data_measures(reference_dir):
    if not REALWORLD.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the real conversations at {REALWORLD}")
        pytest.skip(f"real conversations not found at {REALWORLD}")
    from knowsim_core.agents import tutor_shapes
    from knowsim_core.evaluation.paper_matrix import measure_reply_shapes

    m = measure_reply_shapes(reference_dir, REALWORLD)
    assert m["turns"] == tutor_shapes.RECORDED_TURNS
    assert m["sentences"] == tutor_shapes.REPLY_SENTENCES
    assert m["replies"] == (276,)
