"""AppTest: the Runs page — list and filters, compare, what-if, delete, export, import, resume."""

from __future__ import annotations

import json
import time

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.engine.whatif import what_if

from tests.part2_support import make_run
from tests.part2_support import runs_table_key

PAGE = "../pages/runs.py"
QID = "sample_lava_lamps"


@pytest.fixture()
def db(seeded_store):
    store = seeded_store
    g = store.questions.latest_graph_version(QID).graph
    store.ids = [
        store.runs.save(make_run(g, question_id=QID, level="novice", seed=1, max_turns=5)),
        store.runs.save(make_run(g, question_id=QID, level="advanced", seed=2, max_turns=5), status="interrupted"),
    ]
    return store


def _select(at: AppTest, *rows: int) -> AppTest:
    at.session_state[runs_table_key(at)] = {"selection": {"rows": list(rows), "columns": [], "cells": []}}
    return at.run()


def _row_of(at: AppTest, run_id: str) -> int:
    table = at.dataframe[0].value
    return list(table["run"]).index(run_id[:12])


def _open() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_list_shows_every_run_and_the_bad_only_filter(db):
    at = _open()
    assert len(at.dataframe[0].value) == 2 and "2 runs match" in at.caption[0].value
    at.toggle(key="runs_bad").set_value(True).run()
    table = at.dataframe[0].value
    assert list(table["status"]) == ["interrupted"]
    at.toggle(key="runs_bad").set_value(False).run()
    at.text_input(key="runs_text").input("no-such-word-anywhere").run()
    assert len(at.dataframe[0].value) == 0


def test_compare_two_runs_shows_the_right_deltas(db):
    at = _open()
    at = _select(at, 0, 1)
    assert not at.exception, [e.value for e in at.exception]
    ids = [db.search.list()[i].id for i in (0, 1)]
    a, b = db.runs.load(ids[0]), db.runs.load(ids[1])
    def table(*columns):  # the tables by their columns (their places move as the view grows)
        return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))

    metrics = table("metric", "B − A").set_index("metric")
    assert metrics.loc["KG", "B − A"] == pytest.approx(b.metrics().knowledge_gain - a.metrics().knowledge_gain)
    assert metrics.loc["DC", "B − A"] == pytest.approx(round(b.metrics().delivery_calibration - a.metrics().delivery_calibration, 4))
    states = table("IU", "A", "B", "B − A").set_index("IU")
    v = a.graph.index.ids[0]
    lab = a.graph.index.label_of[v]
    assert int(states.loc[v, "B − A"]) == int(b.final_state.state_of(lab)) - int(a.final_state.state_of(lab))
    assert len(table("A load", "B load")) == 5  # aligned turns


def test_what_if_changes_exactly_the_turns_from_the_edit_on(db):
    at = _open()
    rid = db.ids[0]
    at = _select(at, _row_of(at, rid))
    run = db.runs.load(rid)
    k = 3
    at.session_state["wi_turn"] = k
    at.run()
    i = next(j for j, s in enumerate(run.turns[k - 1].signals) if s.teaching_quality == "not_mentioned")
    at.session_state[f"wi_signals_{rid}_{k}"] = {"edited_rows": {i: {"teaching_quality": "well_explained"}},
                                                 "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    side = at.dataframe[-1].value
    changed = dict(zip(side["turn"], side["changed"]))
    assert all(not changed[t] for t in range(1, k)) and changed[k]
    # the page's numbers are the engine's what-if
    sig = list(run.turns[k - 1].signals)
    from dataclasses import replace
    sig[i] = replace(sig[i], teaching_quality="well_explained")
    alt = what_if(run, k, signals=sig)
    assert list(side["what-if load"]) == [round(t.quantities.effective_load, 2) for t in alt.turns]
    assert db.runs.load(rid) == run  # nothing stored changed


def test_delete_needs_confirmation(db):
    at = _open()
    rid = db.ids[0]
    at = _select(at, _row_of(at, rid))
    at.button(key="runs_delete").click().run()
    assert len(db.search.list()) == 2  # the dialog asks first
    at.button(key="del_yes").click().run()
    assert [r.id for r in db.search.list()] == [db.ids[1]]


def test_open_in_simulate_targets_the_chosen_turn(db):
    at = _open()
    rid = db.ids[0]
    at = _select(at, _row_of(at, rid))
    at.number_input(key="runs_open_turn").set_value(2).run()
    at.button(key="runs_open").click().run()
    assert any(f"Open run {rid} at turn 2 on the Simulate page" in i.value for i in at.info)  # this page alone


def test_import_a_studio_export_and_refuse_bad_files(db, tmp_path):
    from knowsim_core.formats import studio

    run = db.runs.load(db.ids[0])
    at = _open()
    before = len(db.search.list())
    from ui.runs import run_list  # the page's import path, driven directly (AppTest has no file upload)

    good = tmp_path / "run.json"
    good.write_text(studio.dumps(run))
    from knowsim_core.services.importing import read_runs

    runs, _ = read_runs(good)
    assert runs[0].turns == run.turns
    for name, payload in [("bad.json", "{not json"), ("other.json", json.dumps({"format": "zip", "x": 1}))]:
        p = tmp_path / name
        p.write_text(payload)
        with pytest.raises(Exception) as info:
            read_runs(p)
        assert name in str(info.value)
    assert len(db.search.list()) == before and run_list.PAGE_SIZE > 0


def test_resume_an_interrupted_run_finishes_it(db):
    from knowsim_core.services.runner import start_run

    live = start_run(db, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=3, max_turns=4)
    live.step()
    live.step()
    db.runs.finish(live.run_id, status="interrupted")
    at = _open()
    at = _select(at, _row_of(at, live.run_id))
    at.button(key="runs_resume").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    row = db.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("finished", 4)
    assert any("resumed" in s.value for s in at.success)


def test_cost_and_tokens_are_shown_only_for_runs_that_spent_some(db):
    at = _open()  # offline runs: no token or cost columns, no "cost $0.0000" caption
    assert not {"tokens in", "tokens out", "cost $"} & set(at.dataframe[0].value.columns)
    assert "cost" not in at.caption[0].value and "2 runs match" in at.caption[0].value
    import sqlite3

    conn = sqlite3.connect(db.path)
    conn.execute("UPDATE runs SET tokens_in = 1200, tokens_out = 300, cost_usd = 0.0125 WHERE id = ?", [db.ids[0]])
    conn.commit()
    conn.close()
    at = _open()
    table = at.dataframe[0].value
    assert {"tokens in", "tokens out", "cost $"} <= set(table.columns)
    assert "tokens on this page: 1,200 in / 300 out · cost $0.0125" in at.caption[0].value


def test_filter_by_graph_version_after_a_graph_edit(db):
    """Runs simulated before and after a hand-correction of the IU graph can be told apart."""
    from knowsim_core.storage.run_filter import RunFilter
    v1 = db.questions.latest_graph_version(QID)
    first = v1.graph.nodes[0]
    edited = v1.graph.with_node(first.model_copy(update={"description": first.description + " Corrected by hand."}))
    v2 = db.questions.add_graph_version(QID, edited, note="fixed IU1", parent_id=v1.id)
    on_v2 = db.runs.save(make_run(edited, question_id=QID, level="novice", seed=3, max_turns=3))
    assert db.search.count(RunFilter(question_id=QID, graph_version_id=v2)) == 1
    assert db.search.count(RunFilter(question_id=QID, graph_version_id=v1.id)) == 2
    at = _open()
    assert len(at.dataframe[0].value) == 3
    assert "runs_graph_version" not in at.session_state  # offered once a question is chosen
    at.selectbox(key="runs_q").set_value(QID).run()
    options = at.selectbox(key="runs_graph_version").options
    assert options[0] == "all" and "v2 · fixed IU1" in options
    at.selectbox(key="runs_graph_version").set_value(2).run()  # v2 · fixed IU1
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["run"]) == [on_v2[:12]] and list(table["graph"]) == ["v2"]
    at.selectbox(key="runs_graph_version").set_value(None).run()  # all
    assert sorted(at.dataframe[0].value["graph"]) == ["v1", "v1", "v2"]
    at.selectbox(key="runs_q").set_value("all").run()  # a stale version choice does not linger
    assert not at.exception and len(at.dataframe[0].value) == 3



def test_a_run_abandoned_in_the_browser_is_found_open_with_its_metrics_and_plays_on(db):
    """Issue 47: a session's run left in a closed tab is "open" with its metrics so far — not
    "interrupted" under "Failed / interrupted only" — and Simulate plays on from its last turn."""
    from knowsim_core.services.runner import resume_run, start_run
    from knowsim_core.storage import LEASE_SECONDS, Store

    from tests import storage_fakes as fk

    # a session played one turn under a lease that lapsed long ago; the server (this process) lives on
    then = Store(db.path, clock=lambda: time.time() - 3600)
    live = start_run(then, question_id=QID, level="novice", seed=4, max_turns=3, lease_seconds=60,
                     assistant_id=fk.ASSISTANT, user_id=fk.USER, extractor_id=fk.EXTRACTOR)
    live.step()
    assert db.search.get_row(live.run_id).status == "open"
    at = _open()
    table = at.dataframe[0].value.set_index("run")
    assert table.loc[live.run_id[:12], "status"] == "open"
    assert table.loc[live.run_id[:12], "KG"] == live.run.metrics().knowledge_gain
    at.toggle(key="runs_bad").set_value(True).run()
    assert live.run_id[:12] not in list(at.dataframe[0].value["run"])
    at.toggle(key="runs_bad").set_value(False).run()
    at = _select(at, _row_of(at, live.run_id))
    assert not at.error and any("plays on from turn 1" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "runs_resume"]  # no "Resume": it is no failure
    at.button(key="runs_open").click().run()
    assert any(f"Open run {live.run_id} at turn 1" in i.value for i in at.info)  # (this page alone)
    resume_run(db, live.run_id, lease_seconds=LEASE_SECONDS).run_to_end()  # what Simulate's Step does
    row = db.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("finished", 3)
