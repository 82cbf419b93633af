"""The paper check on the held-out half of the paper's questions: an honest comparison, not a target.

The split, stated before measuring (:func:`~knowsim_core.evaluation.paper_matrix.split_halves`):
within each task, questions at even 0-based positions of the paper's file are the tuning half, odd
positions the held-out half (15 MathQA + 15 ExpertQA each). Here: the held-out half × 3 levels ×
``offline/simple`` (the offline counterpart of the population Fig. 6 and Table 4 describe: one
simple-prompt tutor, 15 turns, no early stop, metrics over all turns) + the novice cells of
``offline/adaptive`` and ``offline/comprehensive``, seed 1, learner ``offline/knowsim``; the whole
60-question figure is ``python benchmarks/paper_check.py`` (README, benchmarks/logs/paper_check.json).

Issue 48 decided that the offline world is not tuned towards Table 4: a load fitted to CO moves
OVERLOAD-WASTED, EFFECTIVE, UNDER-ABSORBED, KG and DC with it, so nothing would confirm the fit, and
every lever of the offline load lowers DC while raising CO where the paper has high CO with higher
DC. So no figure of Fig. 6 or Table 4 is asserted to be within a tolerance here (the earlier tests
did, and strict xfails held the misses): the tests check that the comparison is complete and
labelled — every figure of spec §13 with its source, population and whether it moves with CO's
load — and the directions that hold on general grounds (REDUNDANT rises with the level: a more
advanced learner already knows more of what is explained). Table 4's CO is *not* monotone in the
level (novice 0.918, intermediate 0.802, advanced 0.889); an old test asserted novice >
intermediate > advanced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.evaluation.paper import (
    BENCHMARK, FIG6_SHARES, PAPER_POPULATION, SHARE_TOLERANCE, TABLE4_CO, check_rows, level_checks,
    population, recorded_novice_adaptive,
)
from tests.conftest import load_script, require_shared

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


def test_redundancy_rises_with_the_level(sub_matrix):
    """A more advanced learner already knows more of what is explained (Fig. 6: 20 / 68 / 89 %)."""
    lv = by_level(sub_matrix)
    r = FAILURE_ORDER.index(FailureMode.REDUNDANT)
    assert lv["novice"].shares[r] < lv["intermediate"].shares[r] < lv["advanced"].shares[r]


def test_table4_co_is_not_monotone_in_the_level():
    """Spec §13.1: advanced (0.889) is above intermediate (0.802); the old test asserted that CO falls
    from novice to intermediate to advanced, which the paper's own figures do not."""
    assert TABLE4_CO == {"novice": 0.918, "intermediate": 0.802, "advanced": 0.889}
    assert TABLE4_CO["novice"] > TABLE4_CO["intermediate"] < TABLE4_CO["advanced"]


def test_every_table4_and_fig6_figure_of_the_spec_is_in_the_comparison(sub_matrix):
    from knowsim_core.evaluation.paper import FIG6_REMAINDER, TABLE4_DC, TABLE4_IQ, TABLE4_KG, TIED_TO_LOAD

    assert TABLE4_KG == {"novice": 13.86, "intermediate": 5.53, "advanced": 0.51}
    assert TABLE4_DC == {"novice": 0.084, "intermediate": 0.114, "advanced": 0.107}
    assert TABLE4_IQ == {"novice": 6.39, "intermediate": 7.38, "advanced": 7.49}
    printed = {("novice", "REDUNDANT"): 20, ("intermediate", "REDUNDANT"): 68, ("advanced", "REDUNDANT"): 89,
               ("novice", "PREREQ-BLOCKED"): 37, ("intermediate", "PREREQ-BLOCKED"): 11,
               ("advanced", "PREREQ-BLOCKED"): 6, ("novice", "OVERLOAD-WASTED"): 28,
               ("intermediate", "OVERLOAD-WASTED"): 10, ("intermediate", "UNDER-ABSORBED"): 10,
               ("novice", "EFFECTIVE"): 11, ("advanced", "EFFECTIVE"): 3}
    for (level, title), v in printed.items():
        mode = next(m for m in FAILURE_ORDER if m.title == title)
        assert FIG6_SHARES[level][mode] == v and (level, mode) not in FIG6_REMAINDER
    assert len(FIG6_REMAINDER) == 15 - len(printed)
    rows = check_rows(level_checks(population(sub_matrix)))
    for level in ("novice", "intermediate", "advanced"):
        mine = {r["figure"]: r for r in rows if r["level"] == level}
        assert {f"{m.title} %" for m in FAILURE_ORDER} | {"KG", "DC (proxy)", "CO", "IQ"} <= set(mine)
        for m in FAILURE_ORDER:
            r = mine[f"{m.title} %"]
            assert r["moves with CO's load?"] == TIED_TO_LOAD[m.title] and r["source"] == "Fig. 6"
            if (level, m) in FIG6_REMAINDER:
                assert r["paper"] == "small (not printed)"
        assert mine["CO"]["paper"].startswith(f"{TABLE4_CO[level]:.3f} (9 models ")
        assert mine["REDUNDANT %"]["moves with CO's load?"].startswith("roughly independent")
        assert mine["PREREQ-BLOCKED %"]["moves with CO's load?"].startswith("roughly independent")
        for tied in ("OVERLOAD-WASTED %", "EFFECTIVE %", "UNDER-ABSORBED %", "KG", "DC (proxy)"):
            assert mine[tied]["moves with CO's load?"] == "tied to CO's load"


def test_the_dc_against_co_rows_name_the_pattern(sub_matrix):
    from knowsim_core.evaluation.paper import MECHANISM_FINDING, mechanism_rows

    rows = mechanism_rows(level_checks(population(sub_matrix)))
    assert [r["levels"] for r in rows] == ["novice -> intermediate", "intermediate -> advanced"]
    assert rows[0]["paper dCO"] == "-0.116" and rows[0]["paper dDC"] == "+0.030"
    assert rows[1]["paper dCO"] == "+0.087" and rows[1]["paper dDC"] == "-0.007"
    assert "not tuned towards Table 4" in MECHANISM_FINDING and "REDUNDANT" in MECHANISM_FINDING


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


def _novice_cell(sub_matrix, a):
    return level_checks([o for o in sub_matrix if o.level == "novice" and o.assistant == a])[0]


def test_a_calibrated_strategy_is_less_overloading_for_novices_than_a_comprehensive_one(sub_matrix):
    assert _novice_cell(sub_matrix, "offline/adaptive").co < _novice_cell(sub_matrix, "offline/comprehensive").co


@pytest.mark.xfail(strict=True, reason="held-out novice DC (strict) adaptive 0.060 vs comprehensive 0.068 with the "
                   "size-independent reader of issue 48 (adaptive was ahead with the rank-based reader): the offline "
                   "adaptive tutor, read by a reader that counts each IU's own words, no longer shows better "
                   "calibrated delivery than the comprehensive one; a finding about the offline world, not re-fitted")
def test_a_calibrated_strategy_delivers_better_calibrated_content_for_novices(sub_matrix):
    assert _novice_cell(sub_matrix, "offline/adaptive").dc > _novice_cell(sub_matrix, "offline/comprehensive").dc


def test_the_check_table_labels_every_figure_with_its_source_and_population(sub_matrix):
    rows = check_rows(level_checks(population(sub_matrix)))
    novice = {r["figure"]: r for r in rows if r["level"] == "novice"}
    assert novice["CO"]["within tolerance"] in ("yes", "no")
    assert novice["CO"]["source"] == "Table 4" and novice["CO"]["paper population"].startswith(BENCHMARK)
    assert novice["DC (proxy)"]["paper"].startswith("0.084") and novice["DC (proxy)"]["within tolerance"] in ("yes", "no")
    assert novice["REDUNDANT %"]["source"] == "Fig. 6"
    assert novice["mean stop turn (1-based)"]["source"] == "Table 12"
    assert {r["level"] for r in rows if r["figure"] in ("KG", "DC (proxy)", "CO")} == {"novice", "intermediate", "advanced"}


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

    m = measure_reply_shapes(reference_dir, REALWORLD)
    assert m["turns"] == tutor_shapes.RECORDED_TURNS
    assert m["expert_turns"] == tutor_shapes.EXPERT_TURNS  # expertqa_001's LLM labels (were hand labels)
    assert m["sentences"] == tutor_shapes.REPLY_SENTENCES
    assert m["expert_sentences"] == tutor_shapes.EXPERT_REPLY_SENTENCES
    assert m["replies"] == (276,)


def test_the_benchmark_says_how_many_processes_played_the_matrix():
    """Old code printed "one process" whatever --workers was."""
    bench = load_script("benchmarks/paper_check.py", "paper_check_bench")
    timing = {"wall_s": 12.0, "cpu_s": 20.5, "workers": 2, "load_average_before": [1.5, 1.0, 0.5]}
    line = bench.header(60, 1, 720, timing)
    assert "2 worker processes" in line and "one process" not in line and "20.5 s CPU" in line
    assert "one process" in bench.header(60, 1, 720, {**timing, "workers": 1})
