"""``batch --workers K``: one conversation per worker process, for CPU-bound offline matrices.

Offline agents spend CPU, which threads would share under the GIL. Workers ignore SIGINT and
SIGTERM — the parent decides — and a watchdog thread in each exits the worker when the parent is
gone (``os.getppid()`` changes when the parent dies, even by SIGKILL) or when the parent asks for an
immediate stop. The parent keeps at most K jobs submitted, so a stop never leaves a queue to drain.

The scheduling, budget and stop rules are :func:`knowsim_core.batch.schedule.run_loop`'s, the one
loop threads use too; only the lanes differ (:class:`ProcessLanes`: a process instead of a thread).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable

from knowsim_core.batch.plan import Cell
from knowsim_core.batch.schedule import POLL_S, STOP_ERROR, Budget, Control, Outcome, Tally, run_cell, run_loop
from knowsim_core.errors import KnowSimError
from knowsim_core.storage import Store

FORCED_EXIT_WAIT_S = 3.0  # how long the parent waits for workers to leave after a second Ctrl-C


_WORKER: dict[str, Any] = {}


def _worker_init(stop: Any, force: Any, parent: int, db: str, llm: Any) -> None:
    """In each worker: leave signals to the parent; exit when the parent goes or forces a stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    store = Store(db)
    # One connection for the worker's whole life (each turn still its own transaction): closing a
    # conversation's connection checkpointed the WAL whenever it was the last one open, ~4 ms a run.
    pinned = store.pinned()
    pinned.__enter__()  # left open until the process exits; the parent-watch thread opens its own
    _WORKER.update(stop=stop, force=force, store=store, llm=llm, run_id="", pinned=pinned)
    gc.freeze()  # what the fork inherited is never garbage: keep the collector off it
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()


def _watch(parent: int) -> None:
    while True:
        if os.getppid() != parent:  # the parent died (even by SIGKILL): nobody will read our result
            os._exit(1)
        if _WORKER["force"].is_set():
            rid = _WORKER["run_id"]
            if rid:
                try:
                    _WORKER["store"].finish_run(rid, status="interrupted", error=STOP_ERROR)
                except KnowSimError:
                    pass
            os._exit(130)
        time.sleep(POLL_S)


def _worker_job(cell: Cell, tag: str, resume_id: str) -> Outcome:
    def started(rid: str) -> None:
        _WORKER["run_id"] = rid

    try:
        return run_cell(_WORKER["store"], cell, tag=tag, stop=_WORKER["stop"], llm=_WORKER["llm"],
                        resume_id=resume_id, on_start=started)
    finally:
        _WORKER["run_id"] = ""


class ProcessLanes:
    """One conversation per worker process, at most ``workers`` submitted at a time (the lanes of
    :func:`~knowsim_core.batch.schedule.run_loop`). The workers see the parent's stop requests
    through two process-shared events; they report spending only with each outcome."""

    counted_turns = False

    def __init__(self, store: Store, *, workers: int, tag: str, llm: Any):
        ctx = multiprocessing.get_context()
        self.store, self.tag = store, tag
        self.stop_event, self.force_event = ctx.Event(), ctx.Event()
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                                        initargs=(self.stop_event, self.force_event, os.getpid(), str(store.path),
                                                  llm))
        self.running: dict[Any, Cell] = {}

    def in_flight(self) -> int:
        return len(self.running)

    def submit(self, cell: Cell, resume_id: str) -> None:
        self.running[self.pool.submit(_worker_job, cell, self.tag, resume_id)] = cell

    def outcomes(self, timeout: float) -> list[Outcome]:
        if not self.running:
            return []
        done, _ = wait(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for fut in done:
            self.running.pop(fut)
            out.append(fut.result())
        return out

    def stop(self) -> None:
        self.stop_event.set()

    def force(self) -> list[Outcome]:
        self.force_event.set()  # each worker's watchdog marks its run interrupted and exits
        self.pool.shutdown(wait=False, cancel_futures=True)
        _wait_for_workers()
        self.store.mark_dead_runs()  # anything a worker could not mark itself
        abandoned = [Outcome(cell.index, "interrupted") for cell in self.running.values()]
        self.running.clear()
        return abandoned

    def close(self, forced: bool) -> None:
        self.pool.shutdown(wait=not forced, cancel_futures=True)


def run_processes(store: Store, todo: list[tuple[Cell, str]], *, workers: int, tag: str, control: Control,
                  tally: Tally, budget: Budget, llm: Any, tick: Callable[[], None] = lambda: None,
                  on_outcome: Callable[[Outcome], None] = lambda o: None) -> tuple[list[Outcome], bool]:
    """One conversation per worker process, at most ``workers`` submitted at a time."""
    lanes = ProcessLanes(store, workers=workers, tag=tag, llm=llm)
    return run_loop(lanes, todo, limit=workers, control=control, tally=tally, budget=budget, tick=tick,
                    on_outcome=on_outcome)


def _wait_for_workers() -> None:
    deadline = time.monotonic() + FORCED_EXIT_WAIT_S
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in multiprocessing.active_children():
        p.terminate()
        p.join(1.0)


__all__ = ["ProcessLanes", "run_processes"]
