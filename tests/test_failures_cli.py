"""``failures`` and the cross-run population: every figure equals a hand count over the stored
records (each RunRecord loaded and counted), with unfinished runs in the database."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from statistics import fmean, quantiles

import pytest

from knowsim_core.cli import main
from knowsim_core.engine.config import preset
from knowsim_core.errors import StorageError
from knowsim_core.engine.ports import QuestionMaterial
from knowsim_core.engine.session import Simulation

from tests.part2_support import ScriptedAssistant, ScriptedExtractor, ScriptedUser

ROOT = Path(__file__).resolve().parent.parent
QID = "sample_lava_lamps"
QID2 = "sample_herd_immunity"
MODE_NAMES = ["REDUNDANT", "PREREQ-BLOCKED", "EFFECTIVE", "OVERLOAD-WASTED", "UNDER-ABSORBED"]


def _sim(store, qid, *, level, assistant, seed, preset_name="paper-final", turns=5) -> Simulation:
    q = store.questions.get(qid)
    sim = Simulation(
        material=QuestionMaterial(q.id, q.text, q.reference_answer, store.questions.latest_graph_version(qid).graph, q.domain),
        assistant=ScriptedAssistant(assistant), user=ScriptedUser(), extractor=ScriptedExtractor(seed),
        params=preset(preset_name, max_turns=turns), level=level,
    )
    sim.reset(seed=seed)
    return sim


@pytest.fixture()
def store(seeded_store):
    """Finished runs across levels, assistants, presets and two questions, plus unfinished ones:
    stopped at turn 1 (interrupted, failed) and one still running (no stored metrics)."""
    s = seeded_store
    plan = [
        (QID, "novice", "a1", 1, "paper-final"), (QID, "novice", "a1", 2, "paper-final"),
        (QID, "novice", "a2", 3, "paper-final"), (QID, "intermediate", "a1", 4, "paper-final"),
        (QID, "advanced", "a1", 5, "paper-text"), (QID2, "novice", "a1", 6, "paper-final"),
        (QID2, "advanced", "a2", 7, "paper-final"),
    ]
    for qid, lv, asst, seed, pre in plan:
        s.runs.save(_sim(s, qid, level=lv, assistant=asst, seed=seed, preset_name=pre).run_to_end())
    for seed, status in ((11, "interrupted"), (12, "failed")):  # stopped at turn 1
        sim = _sim(s, QID, level="novice", assistant="a1", seed=seed)
        sim.step()
        s.runs.save(sim.run, status=status)
    sim = _sim(s, QID, level="novice", assistant="a1", seed=13)  # still running, two turns so far
    rid = s.runs.create(sim.run)
    s.runs.append_turn(rid, sim.step())
    s.runs.append_turn(rid, sim.step())
    s.runs.create(_sim(s, QID, level="novice", assistant="a1", seed=14).run)  # no turn yet: never counted
    return s


def hand_count(store, *, status="finished", **filters) -> dict:
    """The expected summary, from every stored record loaded and counted."""
    runs = []
    for row in store.search.list(limit=10_000):
        wanted = {"all": True, "finished": row.status == "finished", "unfinished": row.status != "finished"}[status]
        if row.turns == 0 or not wanted:
            continue
        run = store.runs.load(row.id)
        if any(v is not None and {"question_id": run.question_id, "level": run.level,
                                   "assistant": run.adapter["assistant"], "preset": run.params.preset}[k] != v
               for k, v in filters.items()):
            continue
        runs.append(run)
    by_level = {}
    for lv in ("novice", "intermediate", "advanced"):
        sel = [r for r in runs if r.level == lv]
        if not sel:
            continue
        modes = Counter(m.title for r in sel for t in r.turns for _, m in t.modes)
        total = sum(modes.values())
        metrics = [r.metrics() for r in sel]
        by_level[lv] = {
            "runs": len(sel),
            "modes": {name: modes[name] / total for name in MODE_NAMES},
            "knowledge_gain": fmean(m.knowledge_gain for m in metrics),
            "delivery_calibration": fmean(m.delivery_calibration for m in metrics),
            "cognitive_overload": fmean(m.cognitive_overload for m in metrics),
        }
    return {"runs": len(runs), "by_level": by_level}


def cli_json(capsys, *argv) -> dict:
    code = main(["failures", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def assert_matches(got: dict, want: dict) -> None:
    assert got["runs"] == want["runs"]
    assert list(got["by_level"]) == list(want["by_level"])
    for lv, w in want["by_level"].items():
        g = got["by_level"][lv]
        assert g["runs"] == w["runs"]
        assert list(g["modes"]) == MODE_NAMES
        assert g["modes"] == pytest.approx(w["modes"])
        assert sum(g["modes"].values()) == pytest.approx(1.0)
        for key in ("knowledge_gain", "delivery_calibration", "cognitive_overload"):
            assert g[key] == pytest.approx(w[key]), (lv, key)


@pytest.mark.parametrize("status", ["finished", "all", "unfinished"])
def test_every_population_equals_a_hand_count_over_the_stored_records(store, capsys, status):
    got = cli_json(capsys, "--db", str(store.path), *([] if status == "finished" else ["--status", status]))
    want = hand_count(store, status=status)
    assert_matches(got, want)
    assert got["runs"] == {"finished": 7, "all": 10, "unfinished": 3}[status]


@pytest.mark.parametrize("filters", [
    {"level": "novice"}, {"assistant": "a2"}, {"preset": "paper-text"}, {"question_id": QID2},
    {"question_id": QID, "level": "novice", "assistant": "a1"},
])
def test_filters_equal_a_hand_count(store, capsys, filters):
    flags = {"question_id": "--question", "level": "--level", "assistant": "--assistant", "preset": "--preset"}
    argv = [x for k, v in filters.items() for x in (flags[k], v)]
    assert_matches(cli_json(capsys, "--db", str(store.path), *argv), hand_count(store, **filters))
    assert_matches(cli_json(capsys, "--db", str(store.path), "--status", "all", *argv),
                   hand_count(store, status="all", **filters))


def test_the_spread_is_the_interquartile_range_of_the_cell(store, capsys):
    from knowsim_core.storage.run_filter import RunFilter
    got = cli_json(capsys, "--db", str(store.path), "--level", "novice")["by_level"]["novice"]
    runs = [store.runs.load(r.id) for r in store.search.list(RunFilter(level="novice", status="finished"))]
    kg = [r.metrics().knowledge_gain for r in runs]
    q1, _, q3 = quantiles(kg, n=4, method="inclusive")
    assert got["spread"]["method"] == "IQR" and got["spread"]["knowledge_gain"] == pytest.approx([q1, q3])
    one = cli_json(capsys, "--db", str(store.path), "--level", "intermediate")["by_level"]["intermediate"]
    assert one["runs"] == 1 and one["spread"]["delivery_calibration"] is None  # no spread from one run


def test_filters_apply_before_the_limit(store):
    # the two newest runs are not a2's: filtering after a LIMIT 2 would find none of a2's runs
    from knowsim_core.storage.run_filter import RunFilter
    newest = [f.assistant for f in store.search.facts(status="all", limit=2)]
    assert "a2" not in newest
    a2 = store.search.facts(RunFilter(assistant="a2"), limit=2)
    assert [f.assistant for f in a2] == ["a2", "a2"] and {f.status for f in a2} == {"finished"}
    text = store.search.facts(RunFilter(preset="paper-text"), limit=1)
    assert [f.preset for f in text] == ["paper-text"]


def test_an_unknown_status_is_refused_with_the_choices(store):
    with pytest.raises(StorageError, match="unknown status filter 'done'; expected one of finished, all, unfinished"):
        store.search.facts(status="done")


def test_the_command_runs_as_a_program_and_prints_a_table(store):
    p = subprocess.run([sys.executable, "-m", "knowsim_core", "failures", "--db", str(store.path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("7 finished runs · spread: IQR")
    assert all(name in lines[1] for name in MODE_NAMES)
    assert any(line.startswith("novice") and "n=4" in line for line in lines)
    empty = subprocess.run([sys.executable, "-m", "knowsim_core", "failures", "--db", str(store.path),
                            "--assistant", "nobody"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert empty.returncode == 0 and "no finished runs with turns match" in empty.stdout


def test_rows_by_batch_group_the_runs_of_each_tag(seeded_store):
    from knowsim_core.evaluation.analysis import metric_rows

    s = seeded_store
    for seed, tag in ((1, "pilot"), (2, "pilot"), (3, "main"), (4, None)):
        s.runs.save(_sim(s, QID, level="novice", assistant="a1", seed=seed).run_to_end(), batch_tag=tag)
    facts = s.search.facts()
    assert sorted(f.batch for f in facts) == ["", "main", "pilot", "pilot"]
    rows = {r["batch"]: r for r in metric_rows(facts, row="batch")}
    assert {k: v["n runs"] for k, v in rows.items()} == {"": 1, "main": 1, "pilot": 2}
    pilot = [f for f in facts if f.batch == "pilot"]
    assert rows["pilot"]["KG"] == pytest.approx(fmean(f.kg for f in pilot))
