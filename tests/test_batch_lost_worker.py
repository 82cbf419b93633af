"""A batch that loses a worker, and what a batch says (issue 49, items 2, 11 and 12).

* One worker of ``batch --workers 2`` killed with SIGKILL mid-batch (as an out-of-memory kill would):
  the old parent raised ``RuntimeError: batch worker 0 (pid …) exited while playing cell 29`` and
  exited 1 with no summary and no resume line. Now the cell it held is played again by a new worker
  (its run resumed from its last stored turn) and the batch ends as usual — every cell with exactly
  one finished run, none stored twice.
* A parent killed under its workers: each worker printed two BrokenPipe tracebacks.
* The summary named 10 of 12 failed runs and said nothing of the other two.
* ``--dry-run --workers 256`` of a one-cell matrix said "256 worker processes".
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

import pytest

import tests.storage_fakes as fk
from knowsim_core.batch.plan import row_key
from knowsim_core.cli import main
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import RunStatus
from tests.test_batch_signals import ROOT, _writers, cli_cmd, env, wait_for

MATRIX = ("--questions", "sample_lava_lamps", "--levels", "all", "--assistants", "offline", "--seeds", "5")  # 60 cells
CELLS = 60


@pytest.mark.slow
def test_a_worker_killed_mid_batch_loses_only_its_turn_and_the_batch_finishes_every_cell_once(db_path):
    Store(db_path).questions.seed_samples()
    proc = subprocess.Popen(cli_cmd("batch", *MATRIX, "--workers", "2", "--tag", "wk2", "--db", str(db_path)),
                            cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    store = Store(db_path)
    try:
        def a_worker_is_writing() -> bool:
            return store.search.count(RunFilter(batch_tag="wk2", status=RunStatus.FINISHED)) >= 3 and any(
                w.pid != proc.pid for w in _writers(db_path))

        wait_for(a_worker_is_writing, proc, "a worker playing a cell after three finished")
        victim = next(w.pid for w in _writers(db_path) if w.pid != proc.pid)
        os.kill(victim, signal.SIGKILL)  # what the out-of-memory killer does
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err, err
    assert proc.returncode == 0, err
    assert f"{CELLS} of {CELLS} runs finished" in out
    rows = store.search.list(RunFilter(batch_tag="wk2"), limit=1000)
    per_cell = Counter(row_key(r) for r in rows)
    assert len(per_cell) == CELLS and set(per_cell.values()) == {1}  # one run per cell: none stored twice
    assert {r.status for r in rows} == {RunStatus.FINISHED}
    assert all(r.turns == 15 for r in rows)  # the killed cell resumed from its stored turns, none lost or doubled
    assert store.integrity_check() == "ok"


@pytest.mark.slow
def test_workers_whose_parent_was_killed_leave_without_a_traceback(db_path):
    Store(db_path).questions.seed_samples()
    proc = subprocess.Popen(cli_cmd("batch", *MATRIX, "--workers", "2", "--db", str(db_path)), cwd=ROOT, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    store = Store(db_path)
    try:
        wait_for(lambda: store.search.count(RunFilter(status=RunStatus.FINISHED)) >= 4, proc, "four runs finished")
        os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers notice and leave
        deadline = time.monotonic() + 60
        err = proc.stderr.read()  # until every holder of the pipe (the workers too) has exited
        assert time.monotonic() < deadline
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_the_summary_counts_the_failed_runs_it_does_not_name(seeded_store, db_path, capsys):
    code = main(["batch", "--questions", "sample_lava_lamps", "--levels", "novice", "--assistants",
                 fk.FAILING_ASSISTANT, "--user", fk.USER, "--extractor", fk.EXTRACTOR, "--seeds", "12",
                 "--max-turns", "3", "--concurrency", "1", "--tag", "flaky", "--db", str(db_path)])
    _, err = capsys.readouterr()
    assert code == 1
    assert sum(line.startswith("  failed: ") for line in err.splitlines()) == 10
    assert "  … 2 more failed (every run: runs --batch flaky --status failed" in err


def test_a_dry_run_names_the_lanes_that_will_really_run(seeded_store, db_path, capsys):
    def mode(*argv: str) -> str:
        assert main(["batch", "--questions", "sample_lava_lamps", "--levels", "novice", "--dry-run",
                     "--db", str(db_path), *argv]) == 0
        return capsys.readouterr().out.splitlines()[0].split("(", 1)[1].rstrip(")")

    assert mode("--assistants", "offline/simple", "--workers", "256") == "one at a time, in this process"
    assert mode("--assistants", "offline/simple,offline/adaptive,offline/socratic", "--workers", "256") == \
        "3 worker processes"
    assert mode("--assistants", "offline/simple,offline/adaptive", "--concurrency", "1000") == "up to 2 at once"
