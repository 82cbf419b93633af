"""Worker processes talk to the parent over one pipe each (``batch --workers K``): a cell goes down,
its outcome comes back, with no helper thread in the parent; what goes wrong in a worker reaches the
parent as an error, not as a batch that waits forever. (The pool per worker they replace started a
manager and a feeder thread in the parent: the first test fails on it.)

The worker is a fork of this process, so a test replaces what the worker runs before it starts."""

from __future__ import annotations

import os
import threading

import pytest

from knowsim_core.batch import workers
from knowsim_core.batch.plan import Cell
from knowsim_core.batch.schedule import Outcome
from knowsim_core.batch.workers import ProcessLanes
from knowsim_core.storage import Store
from knowsim_core.vocab import CellOutcome


def _cell(index: int) -> Cell:
    return Cell(index, "q", "novice", "offline/simple", "offline/knowsim", "offline/lexical", "paper-final", 1, None,
                None)


def _lanes(tmp_path, monkeypatch, job) -> ProcessLanes:
    monkeypatch.setattr(workers, "_worker_job", job)
    return ProcessLanes(Store(tmp_path / "w.db"), workers=2, tag="t", llm=None)


def _echo(cell: Cell, tag: str, resume_id: str) -> Outcome:
    return Outcome(cell.index, CellOutcome.FINISHED, run_id=f"{tag}-{os.getpid()}", turns=cell.index)


def test_cells_go_to_their_worker_and_outcomes_come_back_without_a_thread_in_the_parent(tmp_path, monkeypatch):
    lanes = _lanes(tmp_path, monkeypatch, _echo)
    threads = threading.active_count()
    try:
        lanes._next = 0
        lanes.submit(_cell(1), "")
        lanes._next = 1
        lanes.submit(_cell(2), "")
        assert threading.active_count() == threads  # nothing between the scheduler and the pipes
        got = []
        while lanes.in_flight():
            got += lanes.outcomes(30.0)
        assert sorted((o.index, o.turns) for o in got) == [(1, 1), (2, 2)]
        pids = {o.run_id for o in got}
        assert len(pids) == 2 and f"t-{os.getpid()}" not in pids  # two worker processes, not this one
        lanes.submit(_cell(3), "")  # a worker plays cell after cell
        assert [o.index for o in lanes.outcomes(30.0)] == [3]
    finally:
        lanes.close(forced=False)
    assert all(not p.is_alive() for p in lanes.procs if p is not None)  # each left when told to


def _boom(cell: Cell, tag: str, resume_id: str) -> Outcome:
    raise ValueError(f"no cell {cell.index}")


def test_an_error_no_conversation_caught_is_raised_in_the_parent(tmp_path, monkeypatch):
    lanes = _lanes(tmp_path, monkeypatch, _boom)
    try:
        lanes.submit(_cell(7), "")
        with pytest.raises(ValueError, match="no cell 7"):
            lanes.outcomes(30.0)
    finally:
        lanes.close(forced=False)


def _die(cell: Cell, tag: str, resume_id: str) -> Outcome:
    os._exit(3)


def test_a_worker_that_dies_mid_cell_is_a_lost_cell_not_a_wait_and_its_lane_starts_again(tmp_path, monkeypatch):
    """Issue 49: the dead worker's cell came back as a RuntimeError that aborted the whole batch.
    Now it is an outcome (``lost``, which the scheduler plays again) and the lane starts a new
    worker for its next cell."""
    lanes = _lanes(tmp_path, monkeypatch, _die)
    try:
        lanes._next = 0
        lanes.submit(_cell(4), "")
        (lost,) = lanes.outcomes(30.0)
        assert lost.index == 4 and lost.status == CellOutcome.LOST and "(exit 3)" in lost.error
        assert lanes.procs[0] is None and lanes.pipes[0] is None  # reaped and forgotten
        monkeypatch.setattr(workers, "_worker_job", _echo)  # what the next fork runs
        lanes._next = 0
        lanes.submit(_cell(5), "")
        (played,) = lanes.outcomes(30.0)
        assert played.index == 5 and played.status == CellOutcome.FINISHED
    finally:
        lanes.close(forced=True)
