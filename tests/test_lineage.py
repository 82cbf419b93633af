"""Lineage that survives, and runs left open (issue 47 item 4).

* Deleting a run that others were forked from warns and lists the forks first (Saved runs' dialog);
  afterwards each fork names its parent as a "deleted run …" — in Saved runs, Simulate and the replay —
  never as a run that is not there (old: "is a fork of run f4264611b7aa", a link to nothing).
* A run the app plays and nobody finishes is "open" with its metrics so far — while its tab is open and
  after it closed — not "running" with KG "—" and later "interrupted" (listed with the failed runs).
* A database written before (schema 9) is upgraded in place: the status constraint gains "open",
  its app runs become open, nothing else changes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.services.fork import FORKED_FROM, fork_run, parent_of
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import RunStatus
from tests.part2_support import runs_table_key
from tests.storage_fakes import Clock

QID = "sample_lava_lamps"
AGENTS = dict(assistant_id="offline/adaptive", user_id="offline/knowsim", extractor_id="offline/lexical")


@pytest.fixture()
def family(seeded_store):
    """A finished parent with one fork (made as Simulate's Fork does) and an unrelated run."""
    store = seeded_store
    parent = start_run(store, question_id=QID, level="novice", seed=2, max_turns=4, **AGENTS)
    parent.run_to_end()
    child = fork_run(store, parent.run_id, 2, "Let me put it another way, with an example.")
    child.run_to_end()
    other = start_run(store, question_id=QID, level="advanced", seed=3, max_turns=2, **AGENTS)
    other.run_to_end()
    return store, parent.run_id, child.run_id, other.run_id


# ---------------------------------------------------------------------- the store
def test_deleting_a_parent_remembers_it_for_its_forks(family):
    store, parent, child, other = family
    assert store.runs.forks_of([parent, other]) == {parent: [child]}
    assert parent_of(store, store.runs.load(child)).words() == f"run {parent}"
    store.runs.delete([parent])
    assert not store.runs.exists(parent)
    link = parent_of(store, store.runs.load(child))
    assert (link.run_id, link.turn, link.stored) == (parent, 2, False) and link.deleted
    assert link.words() == f"deleted run {parent} (deleted {link.deleted[:10]})"
    assert parent_of(store, store.runs.load(other)) is None


def test_a_parent_deleted_with_all_its_forks_leaves_nothing_behind(family):
    store, parent, child, _ = family
    store.runs.delete([child, parent])
    assert store.runs.deleted_on(parent) is None and store.runs.forks_of([parent]) == {}


def test_an_imported_fork_whose_parent_was_never_here_says_so(family):
    store, parent, child, _ = family
    run = store.runs.load(child)
    foreign = replace(run, run_id=None, meta=tuple((k, "abc123def456" if k == FORKED_FROM else v) for k, v in run.meta))
    rid = store.runs.save(foreign)
    assert parent_of(store, store.runs.load(rid)).words() == "run abc123def456 (not in this database)"


def test_the_replay_of_a_fork_names_its_deleted_parent(family, tmp_path):
    store, parent, child, _ = family
    out = tmp_path / "fork.html"
    store.runs.delete([parent])
    assert main(["export", child, "--format", "html", "-o", str(out), "--db", str(store.path)]) == 0
    from knowsim_core.evaluation.replay import run_data

    data = run_data(store.runs.load(child), fork_of=(parent, 2), parent_words=parent_of(
        store, store.runs.load(child)).words())
    assert data["parent_words"].startswith(f"deleted run {parent}")
    assert f"deleted run {parent}" in out.read_text()


# ---------------------------------------------------------------------- Saved runs and Simulate
def _open_runs() -> AppTest:
    at = AppTest.from_file("../pages/runs.py", default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _select(at: AppTest, run_id: str) -> AppTest:
    row = list(at.dataframe[0].value["run"]).index(run_id[:12])
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()


def test_saved_runs_warns_lists_the_forks_and_the_fork_then_reads_deleted_run(family):
    store, parent, child, _ = family
    at = _select(_open_runs(), child)
    assert any(f"A fork of run {parent} at turn 2" in m.value for m in at.markdown)  # while the parent is there
    at = _select(_open_runs(), parent)
    assert any("Forked 1 time" in c.value and child in c.value for c in at.caption)
    at.button(key="runs_delete").click().run()
    warning = " ".join(w.value for w in at.warning)
    assert "forked from this run" in warning and child in warning and "deleted run" in warning  # before deleting
    assert store.runs.exists(parent)
    at.button(key="del_yes").click().run()
    assert not at.exception and not store.runs.exists(parent)
    at = _select(_open_runs(), child)
    shown = " ".join(m.value for m in at.markdown)
    assert f"A fork of deleted run {parent} (deleted " in shown and "Open the original" not in str(at)
    # Simulate's header says the same, and draws no link to it
    sim = AppTest.from_file("../app.py", default_timeout=60)
    sim.query_params["run"] = child
    sim.run()
    sim.switch_page("pages/simulate.py").run()
    assert not sim.exception, sim.exception
    assert any(f"is a fork of deleted run {parent}" in c.value for c in sim.caption)


# ---------------------------------------------------------------------- open runs
def test_a_run_left_open_is_listed_open_with_its_metrics_not_among_the_failed(db_path, monkeypatch):
    """The issue's case: an interactive session in a tab that was closed. While the tab is open the
    list says "open" with the metrics so far; after its lease lapses the same, and "Failed /
    interrupted only" does not list it."""
    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    live = start_run(store, question_id=QID, level="novice", seed=4, max_turns=8, lease_seconds=60, **AGENTS)
    for _ in range(3):
        live.step()
    m = live.run.metrics()
    for _ in range(2):  # the tab open, then closed and the lease lapsed
        row = store.search.get_row(live.run_id)
        assert (row.status, row.turns, row.kg, row.dc, row.co, row.error) == (
            RunStatus.OPEN, 3, m.knowledge_gain, m.delivery_calibration, m.cognitive_overload, "")
        clock.t += 61
        store.runs.mark_dead()
    at = _open_runs()
    table = at.dataframe[0].value
    shown = table[table["run"] == live.run_id[:12]].iloc[0]
    assert (shown["status"], shown["KG"]) == ("open", m.knowledge_gain)
    assert shown["DC"] == pytest.approx(m.delivery_calibration) and shown["CO"] == pytest.approx(m.cognitive_overload)
    at.toggle(key="runs_bad").set_value(True).run()
    assert len(at.dataframe[0].value) == 0  # not under "Failed / interrupted only"
    at.toggle(key="runs_bad").set_value(False).run()
    at = _select(at, live.run_id)
    assert any("Open: played in the Studio and not ended" in i.value for i in at.info)
    # the what-if panel computes its "A" column from the stored record (ui.runs.compare.metric_deltas):
    # that is the list's figure now (old: the panel said KG 3 where the list said "—")
    from ui.runs.compare import metric_deltas

    run = store.runs.load(live.run_id)
    panel = {r["metric"]: r["A"] for r in metric_deltas(run, run)}
    assert panel["KG"] == shown["KG"] and panel["DC"] == pytest.approx(shown["DC"], abs=1e-4)
    assert store.search.list(RunFilter(status=RunStatus.OPEN))[0].id == live.run_id  # `runs --status open`


def test_a_command_line_resume_of_an_open_run_is_running_again(db_path):
    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    live = start_run(store, question_id=QID, level="novice", seed=4, max_turns=4, lease_seconds=60, **AGENTS)
    live.step()
    clock.t += 61
    store.runs.mark_dead()
    from knowsim_core.services.runner import resume_run

    again = resume_run(store, live.run_id)  # no lease: the command line
    assert store.search.get_row(live.run_id).status == RunStatus.RUNNING
    again.run_to_end()
    assert store.search.get_row(live.run_id).status == RunStatus.FINISHED


# ---------------------------------------------------------------------- a schema 9 database
def _as_schema_9(path) -> None:
    """Turn a current database back into what schema 9 wrote: the old status constraint, no
    deleted_runs, no record of migration 0010."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'runs'",
                 [sql.replace(", 'open')", ")")])
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.execute("DROP TABLE deleted_runs")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0010_open_runs_and_deleted_parents'")
    conn.execute("PRAGMA user_version = 9")
    conn.execute("COMMIT")
    conn.close()


def test_a_schema_9_database_gains_open_runs_and_keeps_every_turn(db_path):
    from knowsim_core.storage.liveness import LEASE_LAPSED

    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    lapsed = start_run(store, question_id=QID, level="novice", seed=5, max_turns=4, lease_seconds=60, **AGENTS)
    lapsed.step()
    held = start_run(store, question_id=QID, level="novice", seed=6, max_turns=4, lease_seconds=60, **AGENTS)
    held.step()
    cli = start_run(store, question_id=QID, level="novice", seed=7, max_turns=2, **AGENTS)
    cli.run_to_end()
    turns = {r: store.search.get_row(r).turns for r in (lapsed.run_id, held.run_id, cli.run_id)}
    _as_schema_9(db_path)
    conn = sqlite3.connect(db_path)
    # as schema 9 stored them: an app run marked interrupted when its lease lapsed, one still running
    conn.execute("UPDATE runs SET status = 'interrupted', error = ?, lease_until = NULL, kg = NULL, dc = NULL, "
                 "co = NULL WHERE id = ?", [LEASE_LAPSED, lapsed.run_id])
    conn.execute("UPDATE runs SET status = 'running', kg = NULL WHERE id = ?", [held.run_id])
    with pytest.raises(sqlite3.IntegrityError):  # the old constraint
        conn.execute("UPDATE runs SET status = 'open' WHERE id = ?", [cli.run_id])
    conn.commit()
    conn.close()

    upgraded = Store(db_path, clock=clock)
    assert upgraded.schema_version == 10
    rows = {r: upgraded.search.get_row(r) for r in turns}
    assert {r: rows[r].turns for r in turns} == turns  # no turn lost to the constraint's change
    assert (rows[lapsed.run_id].status, rows[lapsed.run_id].error) == ("open", "")
    assert rows[held.run_id].status == "open" and rows[cli.run_id].status == "finished"
    upgraded.runs.mark_dead()  # what a page does before listing: the metrics so far are filled in
    kg = upgraded.search.get_row(lapsed.run_id).kg
    assert kg == upgraded.runs.load(lapsed.run_id).metrics().knowledge_gain
    assert upgraded.integrity_check() == "ok"
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE runs SET status = 'open' WHERE id = ?", [cli.run_id])  # the new word is allowed …
    with pytest.raises(sqlite3.IntegrityError):  # … and the constraint still refuses one that is no status
        conn.execute("UPDATE runs SET status = 'bogus' WHERE id = ?", [cli.run_id])
    conn.rollback()
    conn.close()
    assert upgraded.runs.forks_of([cli.run_id]) == {} and upgraded.runs.deleted_on(cli.run_id) is None
