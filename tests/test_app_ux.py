"""AppTest: the Studio as a new researcher meets it (issue 34) — each test names the old behaviour it catches."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from knowsim_core.services.runner import start_run

from tests.part2_support import runs_table_key

RUNS = "../pages/runs.py"
QID = "sample_lava_lamps"


def _open(page: str, **query) -> AppTest:
    at = AppTest.from_file(page, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _select_run(at: AppTest, run_id: str) -> AppTest:
    rows = list(at.dataframe[0].value["run"])
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [rows.index(run_id[:12])], "columns": [], "cells": []}}
    return at.run()


def test_resume_on_a_typed_run_opens_it_for_typing_and_leaves_it_interrupted(seeded_store):
    """Old: Resume claimed the typed run as ``running`` and stopped on the missing message — the run
    stayed ``running`` for good and left the "failed / interrupted" filter."""
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="human", seed=2, max_turns=4)
    live.sim.assistant.put("Lava lamps heat wax at the bottom; it rises, cools and sinks.")
    live.step()
    seeded_store.finish_run(live.run_id, status="interrupted", error="the browser session went away")
    at = _open(RUNS)
    at.toggle(key="runs_bad").set_value(True).run()
    at = _select_run(at, live.run_id)
    at.button(key="runs_resume").click().run()
    assert not at.exception, [e.value for e in at.exception]
    row = seeded_store.get_run_row(live.run_id)
    assert (row.status, row.turns) == ("interrupted", 1)
    # the run goes to Simulate at its last turn (here, outside the app's navigation, the page says so)
    assert any(f"Open run {live.run_id} at turn 1" in i.value for i in at.info)
    assert live.run_id[:12] in list(at.dataframe[0].value["run"])  # still under "failed / interrupted"
