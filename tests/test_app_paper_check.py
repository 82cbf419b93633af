"""AppTest: the Failure modes page's "Paper check" tab shows one assistant's stored runs beside the
paper's figures — the same numbers as computed from the stored records — each row with its source
and population; every assistant's rows beside; the adaptive × novice cell per run and per turn."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.agents import registry
from knowsim_core.engine.session import Simulation
from knowsim_core.evaluation.paper import (
    BENCHMARK, RECORDED_TURN_FIGURES, TURN_FIGURES, RunOutcome, check_rows, level_checks, outcome_of, overload_stop, population,
)

PAGE = "../pages/failures.py"
QUESTIONS = ("sample_lava_lamps", "sample_herd_immunity")


@pytest.fixture()
def db(seeded_store):
    store = seeded_store
    runs = []
    for qid in QUESTIONS:
        g = store.questions.latest_graph_version(qid).graph
        q = store.questions.get(qid)
        from knowsim_core.engine.ports import QuestionMaterial

        mat = QuestionMaterial(qid, q.text, q.reference_answer, g, q.domain)
        for level in ("novice", "advanced"):
            for a in ("offline/adaptive", "offline/comprehensive"):
                sim = Simulation(material=mat, assistant=registry.resolve("assistant", a),
                                 user=registry.resolve("user", "offline/knowsim"),
                                 extractor=registry.resolve("extractor", "offline/lexical"), level=level)
                sim.reset(seed=2)
                run = sim.run_to_end()
                store.runs.save(run, status="finished")
                runs.append(run)
    store.runs = runs
    return store


def _expected(runs, assistant: str) -> list[dict[str, str]]:
    """From the records: overload stops only (what the stored turn columns allow), no DC proxy
    (not among the stored scalars), ``assistant``'s runs only."""
    outs = []
    for r in runs:
        o = outcome_of(r)
        stop = overload_stop([(t.quantities.overload, t.quantities.n_upward_transitions) for t in r.turns])
        outs.append(RunOutcome(o.question_id, o.level, o.assistant, o.mode_counts, o.kg, o.dc, o.co, stop,
                               None if stop is None else "cognitive_overload"))
    return check_rows(level_checks(population(outs, assistant)), population_name=assistant)


def _df(at: AppTest, column: str):
    """The tab's table that has ``column`` (AppTest does not expose a table's key)."""
    return next(el.value for el in at.table if column in el.value.columns)


def _drawn(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``check_rows`` as the tab draws them: the paper's population is said once in a caption."""
    return [{k: v for k, v in r.items() if k != "paper population"} for r in rows]


def test_paper_check_tab_equals_the_records_beside_the_papers_figures(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Paper check" in [t.label for t in at.tabs]
    # the sample questions are not the paper's: the tab says how to get those, and can show all runs
    assert any("No finished runs on the paper's questions" in i.value for i in at.info)
    at.toggle(key="pc_paper_only").set_value(False).run()
    assert not at.exception, [e.value for e in at.exception]
    # no offline/simple among these runs: the first assistant is compared, one population, not a pool
    assert at.selectbox(key="pc_population").value == "offline/adaptive"
    shown = _df(at, "within tolerance").to_dict("records")
    expected = _expected(db.runs, "offline/adaptive")
    assert shown == _drawn(expected)
    assert {r["paper population"] for r in expected} <= {"—", "validation study", BENCHMARK}
    caption = " ".join(c.value for c in at.caption)
    assert f"Fig. 6 and Table 4 — {BENCHMARK}; Table 12 — validation study" in caption
    novice_co = next(r for r in shown if r["level"] == "novice" and r["figure"] == "CO")
    assert novice_co["paper"] == "0.918 (9 models 0.875–0.946)" and novice_co["source"] == "Table 4"
    assert novice_co["moves with CO's load?"] == "the load itself"
    adv_kg = next(r for r in shown if r["level"] == "advanced" and r["figure"] == "KG")
    assert adv_kg["paper"] == "0.51 (9 models 0.3–0.7)"
    stop = next(r for r in shown if r["level"] == "novice" and r["figure"].startswith("mean stop turn"))
    assert stop["source"] == "Table 12"
    at.selectbox(key="pc_population").set_value("offline/comprehensive").run()
    assert _df(at, "within tolerance").to_dict("records") == _drawn(_expected(db.runs, "offline/comprehensive"))
    rec = _df(at, "recordings").to_dict("records")
    per_turn = {r["figure"]: r for r in rec if r["per"] == "turn"}
    # per domain since issue 48: the sample questions (no paper task) beside MathQA's recordings
    assert set(per_turn) == {f"{name} (MathQA)" for name in TURN_FIGURES}
    cell = [r for r in db.runs if r.level == "novice" and r.adapter.get("assistant") == "offline/adaptive"]
    reasoning = sum(sum(1 for s in t.signals if s.attempt.value == "reasoning") for r in cell for t in r.turns)
    assert per_turn["reasoning IUs (MathQA)"]["offline"] == f"{reasoning / sum(len(r.turns) for r in cell):.2f}"
    assert per_turn["reasoning IUs (MathQA)"]["recordings"] == f"{RECORDED_TURN_FIGURES['reasoning IUs']:.2f}"
    per_strategy = _df(at, "stops").to_dict("records")
    assert {(r["assistant"], r["level"]) for r in per_strategy} == {
        (a, lv) for a in ("offline/adaptive", "offline/comprehensive") for lv in ("novice", "advanced")}
    assert all(r["n"] == str(len(QUESTIONS)) for r in per_strategy)
    # the mode shares headed by the graphs' badge letters, named in a caption; "—" for the proxy DC explained
    assert {"R %", "P %", "E %", "O %", "U %"} <= set(per_strategy[0]) and per_strategy[0]["DC (proxy)"] == "—"
    assert "R, P, E, O, U %: the share (%) of explained IU-turns in REDUNDANT" in caption
    assert "DC (proxy) “—”: the paper's DC (the legacy proxy) is computed from each turn's record" in caption


def test_overload_stops_from_the_turn_columns_equal_the_engines_virtual_stop(db):
    for r in db.runs:
        turn, reason = r.virtual_stop
        series = [(t.quantities.overload, t.quantities.n_upward_transitions) for t in r.turns]
        if reason == "cognitive_overload":
            assert overload_stop(series) == turn
        elif reason is None:
            assert overload_stop(series) is None
    stored = db.search.overload_series([r.id for r in db.search.list(limit=50)])
    assert all(len(v) == 15 for v in stored.values())
