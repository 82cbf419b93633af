"""AppTest (issue 47, items 1 and 2): Compare says why two runs differ — from Saved runs for two runs, from
Simulate for a fork and its original; the what-if panel saves a what-if as a run; Failure modes shows
a batch what-if's before and after side by side, from a link or from its own form.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.engine.facts import run_facts
from knowsim_core.engine.whatif import apply_edits, parse_edit
from knowsim_core.evaluation.analysis import shares_by_level
from knowsim_core.services import whatif
from knowsim_core.services.fork import fork_link
from knowsim_core.services.runner import start_run
from knowsim_core.storage.run_filter import RunFilter
from tests.part2_support import runs_table_key

RUNS, FAILURES, SIMULATE = "../pages/runs.py", "../pages/failures.py", "../pages/simulate.py"
QID = "sample_lava_lamps"
EDIT = parse_edit("turn=2,iu=IU2,quality=well_explained")  # partial → knows well at turn 2 of these novice runs


@pytest.fixture()
def db(seeded_store):
    """Three offline runs filed under the tag "src" (two novices, one advanced learner)."""
    for level, seed in (("novice", 1), ("novice", 2), ("advanced", 1)):
        live = start_run(seeded_store, question_id=QID, level=level, assistant_id="offline/adaptive", seed=seed,
                         max_turns=6)
        live.run_to_end()
        seeded_store.runs.add_tags(live.run_id, ["src"])
    seeded_store.src = [r.id for r in seeded_store.search.list(RunFilter(tag="src"), order="created_asc")]
    return seeded_store


def _runs_page(db, *run_ids: str) -> AppTest:
    at = AppTest.from_file(RUNS, default_timeout=60).run()
    rows = [r.id for r in db.search.list()]
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [rows.index(r) for r in run_ids], "columns": [],
                                                          "cells": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_compare_of_a_run_and_its_what_if_names_the_turn_and_the_rule(db):
    src = db.src[0]
    rid, _ = whatif.save(db, src, [EDIT])
    at = _runs_page(db, src, rid)
    said = [i.value for i in at.info]
    assert any("First divergence: turn 2, teaching quality — IU2 was labelled shallow in A, well_explained in B"
               in s for s in said), said
    per_turn = next(d.value for d in at.dataframe if "what differs" in d.value.columns)
    assert list(per_turn["turn"]) == list(range(1, 7)) and per_turn["rule"][1] == "teaching quality"
    first = next(d.value for d in at.dataframe if {"IU", "rule", "why"} <= set(d.value.columns))
    assert dict(zip(first["IU"], first["rule"]))["IU2"] == "teaching quality"
    assert any(c.value.startswith(f"What-if of run {src}") for c in _runs_page(db, rid).caption)


def test_compare_of_two_questions_says_it_cannot_compare_them_state_by_state(db):
    other = start_run(db, question_id="sample_herd_immunity", level="novice", assistant_id="offline/adaptive",
                      seed=1, max_turns=2)
    other.run_to_end()
    at = _runs_page(db, db.src[0], other.run_id)
    assert any("Not compared turn by turn" in i.value and "only their metrics compare" in i.value for i in at.info)


def test_the_what_if_panel_saves_a_run_linked_tagged_and_selects_nothing_stale(db):
    src = db.src[0]
    at = _runs_page(db, src)
    at.session_state["wi_turn"] = 2
    at.run()
    run = db.runs.load(src)
    i = next(j for j, s in enumerate(run.turns[1].signals) if s.id == "IU2")
    at.session_state[f"wi_signals_{src}_2"] = {"edited_rows": {i: {"teaching_quality": "well_explained"}},
                                              "added_rows": [], "deleted_rows": []}
    at.run()
    assert any("First divergence: turn 2" in x.value for x in at.info)
    at.text_input(key="wi_save_tags").input("ablation, IU2 taught")
    next(b for b in at.button if b.label == "Save as a run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    saved = [r for r in db.search.list(RunFilter(origin="forked"))]
    assert len(saved) == 1
    back = db.runs.load(saved[0].id)
    assert fork_link(back) == (src, 2) and whatif.whatif_edits(back) == (EDIT,)
    assert back.turns == apply_edits(run, [EDIT]).run.turns
    assert db.search.tags_of([back.run_id])[back.run_id] == ["IU2 taught", "ablation"]
    assert any(f"Saved the what-if as run {back.run_id}" in s.value for s in at.success)


def _shares(figure) -> dict[str, list[float]]:
    spec = json.loads(figure.proto.spec)
    return {t["name"]: t["x"] for t in spec["data"]}


def test_before_after_from_a_link_equals_the_runs_made_one_by_one(db):
    report = whatif.save_batch(db, "src", [EDIT])
    at = AppTest.from_file(FAILURES, default_timeout=60)
    at.query_params["before"], at.query_params["after"] = "src", report.tag
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    charts = [c for c in at.get("plotly_chart")]
    before, after = _shares(charts[-2]), _shares(charts[-1])
    one_by_one = shares_by_level([run_facts(apply_edits(db.runs.load(s), [EDIT]).run, run_id=s) for s in db.src])
    from knowsim_core.engine.failures import FAILURE_ORDER

    for i, m in enumerate(FAILURE_ORDER):
        assert after[m.title] == pytest.approx([r.shares[i] for r in one_by_one])
    assert before != after
    table = next(d.value for d in at.dataframe if {"measure", "novice before", "novice after"} <= set(d.value.columns))
    kg = table[table["measure"] == "KG"].iloc[0]
    assert float(kg["novice after"]) > float(kg["novice before"]) and kg["novice change"].startswith("+")


def test_before_after_form_stores_a_batch_what_if_and_shows_it(db):
    at = AppTest.from_file(FAILURES, default_timeout=60)
    at.query_params["before"] = "src"
    at.run()
    assert any("No what-if of 'src' yet" in i.value for i in at.info)
    at.text_input(key="fm_ba_new_turn").input("2")
    at.text_input(key="fm_ba_new_iu").input("IU2")
    at.selectbox(key="fm_ba_new_quality").set_value("well_explained")
    at.text_input(key="fm_ba_new_tag").input("IU2 at 2")
    next(b for b in at.button if b.label == "Store the what-if of every run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert db.search.count(RunFilter(tag="IU2 at 2")) == 3
    assert any("3 run(s) stored under tag 'IU2 at 2'" in s.value for s in at.success)
    assert at.selectbox(key="fm_after").value == "IU2 at 2"  # the new what-if is shown at once
    assert any("After: every run of src with the labels edited (turn=2,iu=IU2,quality=well_explained)" in c.value
               for c in at.caption)


def test_simulate_compares_a_fork_with_its_original_and_says_why(db):
    from knowsim_core.services.fork import fork_run

    live = start_run(db, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=6)
    for _ in range(3):
        live.step()
    child = fork_run(db, live.run_id, 2, "Warm wax is less dense than the oil, so it rises.")
    child.step()
    at = AppTest.from_file(SIMULATE, default_timeout=60)
    at.query_params["run"], at.query_params["pair"], at.query_params["turn"] = live.run_id, child.run_id, "3"
    at.session_state["_ks_compare_open"] = True  # ui.simulate.keys.COMPARE_OPEN
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(i.value for i in at.info)
    from knowsim_core.evaluation.divergence import diff_runs

    d = diff_runs(db.runs.load(live.run_id).with_turns(db.runs.load(live.run_id).turns[:3]), db.runs.load(child.run_id))
    assert d.first_label.turn == 2 and d.turns[0].ius == () and d.turns[1].messages  # the fork's reply, at turn 2
    assert said.startswith(d.headline()[:60]) and f"turn {d.first.turn}," in said, said
