"""Work claimed once: two ``batch --resume TAG`` at once never play a cell twice.

Real processes race for the same stopped batch; the database must end with exactly one run per
cell, every one finished, and both resumes must exit 0 (the issue measured 751 runs for 450 cells
and exit 1 from both). A dead claimant's cells are claimed again; a resume that finds every
unfinished cell held by a live process says so in one line.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from knowsim_core.batch.plan import plan, row_key
from knowsim_core.batch.schedule import run_cell
from knowsim_core.cli import main
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from knowsim_core.storage.liveness import writer
from knowsim_core.storage.run_filter import RunFilter

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
QUESTIONS = "sample_lava_lamps,sample_herd_immunity"


def _env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("KNOWSIM_")}
    e["PYTHONPATH"] = str(ROOT)
    return e


def _resume(db: Path, tag: str, *mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "knowsim_core", "batch", "--resume", tag, "--db", str(db), *mode],
                            cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stopped_batch(db: Path, tag: str, *, levels: str, seeds: int, finished: set[int], interrupted: dict[int, int],
                   ) -> int:
    """A batch as Ctrl-C leaves it: its matrix stored, ``finished`` cells played to the end,
    ``interrupted`` cells stopped after that many turns, the rest never started. Returns the
    number of cells."""
    store = Store(db)
    store.questions.seed_samples()
    spec = plan(store, questions=QUESTIONS, levels=levels, assistants="offline/simple,offline/adaptive",
                seeds=seeds, max_turns=4)
    store.search.save_batch(tag, spec.to_data())
    cells = spec.cells()

    class Never:
        @staticmethod
        def is_set() -> bool:
            return False

    for cell in cells:
        if cell.index in finished:
            assert run_cell(store, cell, tag=tag, stop=Never).status == "finished"
        elif cell.index in interrupted:
            live = start_run(store, **cell.start_kwargs(), batch_tag=tag)
            for _ in range(interrupted[cell.index]):
                live.step()
            store.runs.finish(live.run_id, status="interrupted", error="stopped")
    return len(cells)


def _one_finished_run_per_cell(db: Path, tag: str, n_cells: int) -> None:
    rows = Store(db).search.list(RunFilter(batch_tag=tag), limit=10**6)
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == n_cells, f"{len(rows)} runs for {n_cells} cells"
    assert {r.status for r in rows} == {"finished"}


def test_two_resumes_at_once_play_every_cell_exactly_once_and_both_succeed(db_path):
    n = _stopped_batch(db_path, "race", levels="all", seeds=3, finished=set(range(0, 36, 5)),
                       interrupted={1: 1, 7: 2, 22: 3})
    a = _resume(db_path, "race", "--workers", "2")
    b = _resume(db_path, "race", "--concurrency", "3")
    (out_a, err_a), (out_b, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
    assert (a.returncode, b.returncode) == (0, 0), err_a + err_b
    assert "Traceback" not in err_a + err_b
    _one_finished_run_per_cell(db_path, "race", n)
    # the interrupted runs were continued, not replaced
    store = Store(db_path)
    assert store.search.count(RunFilter(batch_tag="race")) == n
    assert store.cells.holders("race") == {}  # every claim was given back


def test_a_dead_claimants_cells_are_claimed_again(db_path, tmp_path):
    n = _stopped_batch(db_path, "dead", levels="novice", seeds=1, finished=set(), interrupted={})
    # a process that claimed two cells and died (SIGKILL leaves its claims behind)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    store = Store(db_path)
    with store._conn.write() as db:  # noqa: SLF001 — planting what a killed process leaves
        for cell in (0, 1):
            db.execute("INSERT INTO batch_cells (tag, cell, pid, pid_start, host, claimed) VALUES (?, ?, ?, ?, ?, ?)",
                       ["dead", cell, pid, "1", writer()["host"], "2026-01-01T00:00:00+00:00"])
    assert store.cells.holders("dead") == {}
    assert main(["batch", "--resume", "dead", "--db", str(db_path), "--concurrency", "2"]) == 0
    _one_finished_run_per_cell(db_path, "dead", n)


def test_a_resume_finding_every_cell_held_by_a_live_process_is_refused_in_one_line(db_path, capsys):
    n = _stopped_batch(db_path, "held", levels="novice", seeds=1, finished=set(), interrupted={})
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store = Store(db_path)
        from knowsim_core.storage.liveness import process_start

        with store._conn.write() as db:  # noqa: SLF001 — a live process holding every cell
            for cell in range(n):
                db.execute("INSERT INTO batch_cells VALUES (?, ?, ?, ?, ?, ?)",
                           ["held", cell, holder.pid, process_start(holder.pid), writer()["host"], "x"])
        assert main(["batch", "--resume", "held", "--db", str(db_path)]) == 2  # the CLI's code for a refused command
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"pid {holder.pid}" in err and "nothing left to run" in err
        assert store.search.count(RunFilter(batch_tag="held")) == 0
    finally:
        holder.kill()
        holder.wait()


def test_claims_are_atomic_one_winner_per_cell(db_path):
    store = Store(db_path)
    store.questions.seed_samples()
    key = ("sample_lava_lamps", "novice", "offline/simple", "offline/knowsim", "offline/knowsim", "paper-final", 1)
    first = store.cells.claim("t", 0, key)
    assert first.outcome == "mine"
    # a different live process now asks: it must be told "taken"
    code = ("import sys; from knowsim_core.storage import Store; "
            f"c = Store({str(db_path)!r}).cells.claim('t', 0, {key!r}); print(c.outcome, c.holder)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["taken", str(os.getpid())]
    store.cells.release("t", 0)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "mine"  # released: the next one gets it (and its process is gone now)
    assert store.cells.claim("t", 0, key).outcome == "mine"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_two_concurrent_resumes_of_any_stopped_offline_batch_end_with_one_finished_run_per_cell(
        tmp_path_factory, data):
    """Any stopped batch (which cells finished, which were interrupted after how many turns, the
    rest never started) resumed twice at once ends with exactly one finished run per cell."""
    db = tmp_path_factory.mktemp("prop") / "studio.db"
    seeds = data.draw(st.integers(1, 2), label="seeds")
    n_cells = 2 * 2 * 2 * seeds
    states = data.draw(st.lists(st.sampled_from(["finished", "interrupted", "new"]), min_size=n_cells,
                                max_size=n_cells), label="cell states")
    turns = data.draw(st.lists(st.integers(0, 3), min_size=n_cells, max_size=n_cells), label="turns played")
    finished = {i for i, s in enumerate(states) if s == "finished"}
    interrupted = {i: turns[i] for i, s in enumerate(states) if s == "interrupted"}
    assert _stopped_batch(db, "p", levels="novice,advanced", seeds=seeds, finished=finished,
                          interrupted=interrupted) == n_cells
    modes = data.draw(st.sampled_from([("--workers", "2"), ("--concurrency", "2")]), label="mode")
    a, b = _resume(db, "p", *modes), _resume(db, "p", "--concurrency", "3")
    (_, err_a), (_, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
    assert "Traceback" not in err_a + err_b
    # one of them may find nothing left (refused in one line, exit 2) — never a duplicate
    assert {a.returncode, b.returncode} <= {0, 2}, err_a + err_b
    assert 0 in (a.returncode, b.returncode) or not (set(range(n_cells)) - finished), err_a + err_b
    _one_finished_run_per_cell(db, "p", n_cells)


def test_batch_totals_count_one_run_per_cell_even_where_an_old_studio_ran_a_cell_twice(db_path):
    from ui.batch import launcher as bv

    n = _stopped_batch(db_path, "twice", levels="novice", seeds=1, finished={0, 1, 2}, interrupted={3: 1})
    store = Store(db_path)
    spec_cells = plan(store, questions=QUESTIONS, levels="novice", assistants="offline/simple,offline/adaptive",
                      seeds=1, max_turns=4).cells()
    # what two resumes without claims left behind: a second finished run of cell 0, a failed one of cell 3
    for index, status in ((0, "finished"), (3, "failed")):
        live = start_run(store, **spec_cells[index].start_kwargs(), batch_tag="twice")
        live.step()
        store.runs.finish(live.run_id, status=status, error="" if status == "finished" else "x")
    assert store.search.count(RunFilter(batch_tag="twice")) == 6
    counts = bv.progress(store, "twice")
    assert counts == {"finished": 3, "running": 0, "interrupted": 1, "failed": 0, "cells": n, "not started": 0}


def test_a_claim_reads_its_cells_runs_from_the_cell_index_not_the_whole_batch(db_path):
    """The claim's lookup once read every run of the batch (~1 ms a claim at 7,200 runs, under the
    write lock); migration 0009's index serves it, ORDER BY included (no temporary sort)."""
    from knowsim_core.storage.batch_cells import CELL_RUNS_SQL

    store = Store(db_path)
    store.questions.seed_samples()
    key = ("sample_lava_lamps", "novice", "offline/simple", "offline/knowsim", "offline/knowsim", "paper-final", 1)
    assert store.cells.claim("t", 0, key).outcome == "mine"
    with sqlite3.connect(db_path) as conn:
        plan_rows = [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + CELL_RUNS_SQL, ["t", *key])]
    assert len(plan_rows) == 1 and "USING INDEX runs_batch_cell" in plan_rows[0], plan_rows
    assert "TEMP B-TREE" not in " ".join(plan_rows)
    assert all(f"{c}=?" in plan_rows[0] for c in ("batch_tag", "question_id", "level", "assistant", "seed"))
