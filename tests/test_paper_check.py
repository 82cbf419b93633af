"""The paper check on the held-out half of the paper's questions, like with like (issue 29).

The split, stated before measuring (:func:`~knowsim_core.evaluation.paper_matrix.split_halves`):
within each task, questions at even 0-based positions of the paper's file are the tuning half, odd
positions the held-out half (15 MathQA + 15 ExpertQA each). Nothing was set on the held-out half.
Here: the held-out half × 3 levels × ``offline/simple`` (the offline counterpart of the population
Fig. 6 and Table 4 describe: one simple-prompt tutor, 15 turns, no early stop, metrics over all
turns) + the novice cells of ``offline/adaptive`` and ``offline/comprehensive``, seed 1, learner
``offline/knowsim``; the whole 60-question figure is ``python benchmarks/paper_check.py`` (README).

The issue's tolerances (shares ±8 points, CO ±0.10, KG ±40 % or ±1.0, DC ±0.03) are asserted where
the held-out half meets them with a margin of at least 1 point / 0.005 (held-out figure, margin =
tolerance − distance): novice EFFECTIVE 11.2 vs 11 (7.8), novice UNDER-ABSORBED 6.9 vs 4 (5.1),
novice CO 0.830 vs 0.92 (0.010). Since issue 34 item 17's corrected reader, with the offline tutors'
mention scales re-set on the tuning half (tutor_shapes.py), the held-out half reads novice EFFECTIVE
12 vs 11, UNDER-ABSORBED 10 vs 4 (both still asserted), CO 0.808 vs 0.92 — out by 0.112, so the CO
claim is a strict xfail, not a loosened tolerance — and the adaptive × novice cell stops early in at
least half its runs again; intermediate REDUNDANT 61.5 vs 68, intermediate UNDER-ABSORBED 16.9 vs 10
and advanced REDUNDANT 84.1 vs 89 are now within with a margin >= 1 point and asserted. The figures
below are those of the issue-29 round. Not met on the held-out half — reported by the benchmark, not
loosened: novice REDUNDANT / PREREQ-BLOCKED / OVERLOAD-WASTED (8 / 58 / 16 vs 20 / 37 / 28),
intermediate REDUNDANT 58 vs 68, intermediate UNDER-ABSORBED 19 vs 10, advanced REDUNDANT 81 vs 89
(within by 0.1 — below the margin), intermediate CO 0.585 vs 0.80, advanced CO 0.511 vs 0.89,
advanced KG 3.13 vs 0.5. Table 4's DC and its novice / intermediate KG are not at hand ("—").
The adaptive × novice cell against the four recordings: shares within 8 points (asserted); its CO
(0.77 vs 0.89 on all 60) is not within 0.10 and is reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.evaluation.paper import (
    BENCHMARK, CO_TOLERANCE, FIG6_SHARES, PAPER_POPULATION, SHARE_TOLERANCE, TABLE4_CO, check_rows, level_checks,
    population, recorded_novice_adaptive,
)
from tests.conftest import require_shared

REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld"


@pytest.fixture(scope="module")
def held_out(reference_dir):
    from knowsim_core.evaluation.paper_matrix import load_paper_questions, split_halves

    _, held = split_halves(load_paper_questions(reference_dir))
    return held


@pytest.fixture(scope="module")
def sub_matrix(held_out):
    from knowsim_core.evaluation.paper_matrix import run_matrix

    return (run_matrix(held_out, seed=1, assistants=(PAPER_POPULATION,), workers=2)
            + run_matrix(held_out, seed=1, levels=("novice",), assistants=("offline/adaptive", "offline/comprehensive"),
                         workers=2))


def by_level(outcomes):
    return {c.level: c for c in level_checks(population(outcomes))}


def test_the_split_is_the_stated_one(held_out):
    ids = [q.material.question_id for q in held_out]
    assert len(ids) == 30 and ids[:2] == ["expertqa_002", "expertqa_004"] and "math_002" in ids
    assert not {"math_001", "math_003", "expertqa_001"} & set(ids)


def test_novice_figures_within_the_tolerances_where_the_held_out_half_meets_them(sub_matrix):
    nov = by_level(sub_matrix)["novice"]
    for mode in (FailureMode.EFFECTIVE, FailureMode.UNDER_ABSORBED):
        share = nov.shares[FAILURE_ORDER.index(mode)]
        assert abs(share - FIG6_SHARES["novice"][mode]) <= SHARE_TOLERANCE, (mode, share)


def test_the_shares_the_held_out_half_now_meets_are_within_the_tolerance(sub_matrix):
    """After issue 34 item 17's reader and the mention scales re-set on the tuning half, the held-out
    half meets three more of Fig. 6's shares with a margin of at least 1 point (the same rule as
    above): intermediate REDUNDANT 61.5 vs 68 (margin 1.5), intermediate UNDER-ABSORBED 16.9 vs 10
    (1.1), advanced REDUNDANT 84.1 vs 89 (3.1). Not met, or below the margin, in the issue-29 round
    (held out 58 / 19 / 81)."""
    lv = by_level(sub_matrix)
    for level, mode in (("intermediate", FailureMode.REDUNDANT), ("intermediate", FailureMode.UNDER_ABSORBED),
                        ("advanced", FailureMode.REDUNDANT)):
        share = lv[level].shares[FAILURE_ORDER.index(mode)]
        assert abs(share - FIG6_SHARES[level][mode]) <= SHARE_TOLERANCE, (level, mode, share)


@pytest.mark.xfail(strict=True, reason="held-out novice CO 0.808 vs the paper's 0.92 (distance 0.112 > 0.10) "
                   "after the tutors' mention scales were re-set on the tuning half (0.697 before the re-set): "
                   "issue 34 item 17's corrected reader — a finding about the offline world, not a constant "
                   "left to re-fit")
def test_novice_co_within_the_tolerance_on_the_held_out_half(sub_matrix):
    nov = by_level(sub_matrix)["novice"]
    assert abs(nov.co - TABLE4_CO["novice"]) <= CO_TOLERANCE, nov.co


def test_redundancy_rises_and_overload_falls_with_the_level(sub_matrix):
    lv = by_level(sub_matrix)
    r = FAILURE_ORDER.index(FailureMode.REDUNDANT)
    assert lv["novice"].shares[r] < lv["intermediate"].shares[r] < lv["advanced"].shares[r]
    assert lv["novice"].co > lv["intermediate"].co > lv["advanced"].co


def test_only_the_compared_population_is_in_the_comparison(sub_matrix):
    """Old code pooled every strategy into Fig. 6's row; the comparison is offline/simple alone."""
    lv = by_level(sub_matrix)
    assert lv["novice"].runs == lv["advanced"].runs == 30
    pooled = level_checks(sub_matrix)[0]
    assert pooled.runs == 90 and pooled.co != lv["novice"].co


def test_adaptive_novice_cell_looks_like_the_papers_recorded_conversations(sub_matrix):
    cell = [o for o in sub_matrix if o.level == "novice" and o.assistant == "offline/adaptive"]
    ours = level_checks(cell)[0]
    rec = recorded_novice_adaptive()
    for mode, s, p in zip(FAILURE_ORDER, ours.shares, rec["shares"]):
        assert abs(s - p) <= SHARE_TOLERANCE, (mode, s, p)
    assert ours.stops >= len(cell) / 2 and ours.overload_stops == ours.stops


def test_a_calibrated_strategy_still_does_better_for_novices_than_a_comprehensive_one(sub_matrix):
    def cell(a):
        return level_checks([o for o in sub_matrix if o.level == "novice" and o.assistant == a])[0]

    adaptive, comprehensive = cell("offline/adaptive"), cell("offline/comprehensive")
    assert adaptive.co < comprehensive.co  # less overloaded
    assert adaptive.dc > comprehensive.dc  # better calibrated delivery


def test_the_check_table_labels_every_figure_with_its_source_and_population(sub_matrix):
    rows = check_rows(level_checks(population(sub_matrix)))
    novice = {r["figure"]: r for r in rows if r["level"] == "novice"}
    assert novice["CO"]["paper"] == "0.92" and novice["CO"]["within tolerance"] in ("yes", "no")
    assert novice["CO"]["source"] == "Table 4" and novice["CO"]["paper population"] == BENCHMARK
    assert novice["DC (proxy)"]["paper"] == "—" and novice["DC (proxy)"]["within tolerance"] == "—"
    assert novice["REDUNDANT %"]["source"] == "Fig. 6"
    assert novice["mean stop turn (1-based)"]["source"] == "Table 12"
    assert {f"{m.title} %" for m in FAILURE_ORDER} <= set(novice)
    assert {r["level"] for r in rows if r["figure"] in ("KG", "DC (proxy)", "CO")} == {"novice", "intermediate", "advanced"}


@pytest.mark.xfail(strict=True, reason="the check table's novice CO reads 'no' (held-out 0.808 vs 0.92, distance "
                   "0.112 > 0.10): issue 34 item 17's corrected reader — a finding about the offline world, "
                   "not a constant left to re-fit (the mention scales were re-set on the tuning half)")
def test_the_check_table_says_the_novice_co_is_within_tolerance(sub_matrix):
    rows = check_rows(level_checks(population(sub_matrix)))
    novice = {r["figure"]: r for r in rows if r["level"] == "novice"}
    assert novice["CO"]["within tolerance"] == "yes"


def test_the_matrix_is_deterministic_per_seed(held_out):
    from knowsim_core.evaluation.paper_matrix import run_matrix

    few = held_out[:2]
    a = run_matrix(few, seed=3, levels=("novice",), assistants=(PAPER_POPULATION,))
    b = run_matrix(few, seed=3, levels=("novice",), assistants=(PAPER_POPULATION,))
    c = run_matrix(few, seed=4, levels=("novice",), assistants=(PAPER_POPULATION,))
    assert a == b and a != c


def test_the_matrix_in_two_processes_is_the_matrix_in_one(held_out):
    from knowsim_core.evaluation.paper_matrix import run_matrix

    few = held_out[:3] + held_out[-2:]  # math and ExpertQA questions
    seen = []
    one = run_matrix(few, seed=2, levels=("novice", "advanced"), assistants=("offline/simple", "offline/socratic"))
    two = run_matrix(few, seed=2, levels=("novice", "advanced"), assistants=("offline/simple", "offline/socratic"),
                     workers=2, on_run=seen.append)
    assert len(one) == 5 * 2 * 2
    assert two == one and seen == one  # same outcomes, same order, each reported once in this process


def test_the_workers_end_when_the_matrix_is_killed(reference_dir, tmp_path):
    """SIGKILL on the process running run_matrix(workers=2): its workers end too (a pool's worker
    would otherwise wait on its queue for ever)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "matrix.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
        "from knowsim_core.evaluation.paper_matrix import load_paper_questions, run_matrix\n"
        f"qs = load_paper_questions({str(reference_dir)!r})\n"
        "run_matrix(qs, workers=2, on_run=lambda o: print('run', flush=True))\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    children: list[int] = []
    try:
        assert proc.stdout.readline().strip() == "run"  # the workers are playing
        children = [int(p) for p in (Path("/proc") / str(proc.pid) / "task" / str(proc.pid) / "children")
                    .read_text().split()]
        assert len(children) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        alive = children
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [c for c in alive if _running(c)]
        assert not alive, f"workers {alive} outlived their killed parent"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        for pid in children:  # what a failed run of this test would leave behind
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an exited process nobody has reaped yet)."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_recordings_stop_turns_are_compared_1_based():
    assert recorded_novice_adaptive()["mean_stop_turn"] == 11.0  # 0-based 9, 11, 9, 11


def test_the_reply_shape_constants_are_what_the_shared_data_measures(reference_dir):
    require_shared(REALWORLD)
    from knowsim_core.agents import tutor_shapes
    from knowsim_core.evaluation.paper_matrix import measure_reply_shapes

    m = measure_reply_shapes(reference_dir, REALWORLD, Path(__file__).parent / "data" / "expert_tq_labels.json")
    assert m["turns"] == tutor_shapes.RECORDED_TURNS
    assert m["expert_turns"] == tutor_shapes.EXPERT_TURNS
    assert m["sentences"] == tutor_shapes.REPLY_SENTENCES
    assert m["replies"] == (276,)
