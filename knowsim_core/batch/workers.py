"""``batch --workers K``: one conversation per worker process, for CPU-bound offline matrices.

Offline agents spend CPU, which threads would share under the GIL. Workers ignore SIGINT and
SIGTERM — the parent decides — and a watchdog thread in each exits the worker when the parent is
gone (``os.getppid()`` changes when the parent dies, even by SIGKILL) or when the parent asks for an
immediate stop. The parent keeps at most K jobs submitted, so a stop never leaves a queue to drain.

The scheduling, budget and stop rules are :func:`knowsim_core.batch.schedule.run_loop`'s, the one
loop threads use too; only the lanes differ (:class:`ProcessLanes`: a process instead of a thread).

**A lost worker** (SIGKILL, the out-of-memory killer) is seen as its pipe's end: its cell comes back
as a ``lost`` outcome, which the loop plays again once on a new worker. The dead worker's claim on
the cell and its ``running`` run name a process that is gone, so the new one claims the cell and
resumes the run from its last stored turn: what is lost is the turn in flight (and, offline, the
turns still buffered, which replay identically).

**A pipe per worker.** The parent sends a worker its next cell down the worker's own pipe and
reads the outcome back from it; the scheduler waits on all the pipes at once. A
``ProcessPoolExecutor`` per worker did the same through two helper threads in the parent (a
manager and a queue feeder): each hand-over between a conversation ending and the next one
starting crossed both and took ~0.7 ms (up to 6 ms), the worker idle all the while — 40–75 ms of
each worker's 1.5 s on the offline matrix.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from bisect import bisect_left, bisect_right
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from knowsim_core.batch.plan import Cell
from knowsim_core.batch.schedule import POLL_S, STOP_ERROR, Budget, Control, Outcome, Tally, run_cell, run_loop
from knowsim_core.errors import KnowSimError
from knowsim_core.storage import Store
from knowsim_core.vocab import CellOutcome, RunStatus

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
    # A conversation allocates many short-lived objects and frees them by reference counting; the
    # default threshold (700) ran ~190 young collections per 60 conversations, ~6 % of the CPU.
    gc.set_threshold(50_000, 50, 100)
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()


def _watch(parent: int) -> None:
    while True:
        if os.getppid() != parent:  # the parent died (even by SIGKILL): nobody will read our result
            os._exit(1)
        if _WORKER["force"].is_set():
            rid = _WORKER["run_id"]
            if rid:
                try:
                    _WORKER["store"].runs.finish(rid, status=RunStatus.INTERRUPTED, error=STOP_ERROR)
                except KnowSimError:
                    pass
            os._exit(130)
        time.sleep(POLL_S)


def _worker_main(conn: Connection, others: list[Connection], stop: Any, force: Any, parent: int, db: str,
                 llm: Any) -> None:
    """A worker's life: set up, then play each cell the parent sends until it sends ``None`` (or its
    end of the pipe closes). Each answer is ``(True, outcome)``, or ``(False, exception)`` for an
    error no conversation caught (the parent raises it, as a pool's future did)."""
    for other in others:  # the parent's ends of this and earlier workers' pipes, inherited by the fork
        other.close()
    _worker_init(stop, force, parent, db, llm)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the parent is gone (or closed the pipe): nobody will send more
            return
        if job is None:
            return
        try:
            answer: tuple[bool, Any] = (True, _worker_job(*job))
        except BaseException as exc:  # noqa: BLE001 — reported to the parent, which raises it
            answer = (False, exc)
        try:
            conn.send(answer)
        except OSError:  # a broken pipe: the parent is gone, and the run is stored (or marked) already
            os._exit(1)
        except Exception as exc:  # noqa: BLE001 — e.g. an exception that does not pickle
            try:
                conn.send((False, RuntimeError(f"batch worker {os.getpid()}: {answer[1]!r} ({exc})")))
            except OSError:
                os._exit(1)


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
    through two process-shared events; they report spending only with each outcome.

    **Each worker keeps to its own questions.** The offline agents remember, per question, what
    they have read (term profiles, n-gram index, the readings of sentences and replies: see
    ``text/profiles.py``); a worker that plays every question builds all of that for each of them,
    and two workers playing the same question at once both pay for it. So the questions are split
    into one contiguous share per worker (balanced by cells), each worker is a process of its own
    (a one-process pool, so a job can be sent to it), and a free worker takes the next cell of its
    own share — or, when its share is done, the last cell of the largest share left. Which cells
    run and how each one plays do not change (each conversation is deterministic in its cell):
    only which process plays it. Half the offline matrix played in one process took 4.3 s of CPU
    by question against 5.0–5.6 s interleaved as two pool workers saw it (a loaded 2-core machine).
    """

    counted_turns = False

    def __init__(self, store: Store, *, workers: int, tag: str, llm: Any):
        self._ctx = multiprocessing.get_context()
        self.store, self.tag, self.llm = store, tag, llm
        self.stop_event, self.force_event = self._ctx.Event(), self._ctx.Event()
        self.workers = max(1, workers)
        # per worker, started on its first cell (after the plan, so the fork inherits what it loaded):
        # its process and the parent's end of its pipe
        self.procs: list[Any] = [None] * self.workers
        self.pipes: list[Connection | None] = [None] * self.workers
        self.running: dict[Any, tuple[Cell, int]] = {}  # the worker's pipe -> (cell, worker)
        self._ranges: list[tuple[int, int]] | None = None  # per worker: its share's plan indices (first, last)
        self._next = 0  # the worker the chosen cell goes to

    def in_flight(self) -> int:
        return len(self.running)

    def _idle(self) -> int:
        busy = {w for _, w in self.running.values()}
        return next(w for w in range(self.workers) if w not in busy)

    def _pipe(self, worker: int) -> Connection:
        """The worker's pipe, starting the worker on first use."""
        pipe = self.pipes[worker]
        if pipe is None:
            pipe, child = self._ctx.Pipe()
            others = [p for p in self.pipes if p is not None] + [pipe]
            proc = self._ctx.Process(
                target=_worker_main, name=f"batch-worker-{worker}", daemon=True,
                args=(child, others, self.stop_event, self.force_event, os.getpid(), str(self.store.path), self.llm))
            proc.start()
            child.close()  # the worker's end lives in the worker only: its exit is seen as EOF here
            self.procs[worker], self.pipes[worker] = proc, pipe
        return pipe

    def choose(self, pending: list[tuple[Cell, str]]) -> int:
        """The index in ``pending`` (next cell last) of the cell the first free worker plays next:
        the first of its own share left, else the last of the largest share left. ``pending`` only
        ever loses cells, so it stays in descending plan index and is searched by bisection."""
        if self._ranges is None:
            self._ranges = shares([cell for cell, _ in reversed(pending)], self.workers)
        if not self._ranges:  # not in plan order: plain order
            self._next = self._idle()
            return len(pending) - 1
        self._next = worker = self._idle()

        def first_from(index: int) -> int:  # position of the smallest plan index >= index
            return bisect_right(pending, -index, key=_descending) - 1

        def last_to(index: int) -> int:  # position of the largest plan index <= index
            return bisect_left(pending, -index, key=_descending)

        lo, hi = self._ranges[worker]
        at = first_from(lo)
        if at >= 0 and pending[at][0].index <= hi:
            return at
        left = [(first_from(a) - last_to(b) + 1, -w) for w, (a, b) in enumerate(self._ranges)]
        _, w = max(left)
        return last_to(self._ranges[-w][1])

    def submit(self, cell: Cell, resume_id: str) -> None:
        busy = {w for _, w in self.running.values()}
        worker = self._next if self._next not in busy else self._idle()
        pipe = self._pipe(worker)
        try:
            pipe.send((cell, self.tag, resume_id))
        except OSError:  # the worker died between two cells: a new one takes the cell
            self._reap(worker)
            pipe = self._pipe(worker)
            pipe.send((cell, self.tag, resume_id))
        self.running[pipe] = (cell, worker)

    def outcomes(self, timeout: float) -> list[Outcome]:
        if not self.running:
            return []
        out = []
        for pipe in wait(list(self.running), timeout=timeout):
            cell, worker = self.running.pop(pipe)
            try:
                ok, value = pipe.recv()
            except (EOFError, OSError):  # the worker died mid-conversation (SIGKILL, out of memory)
                out.append(self._lost(cell, worker))
                continue
            if not ok:
                raise value
            out.append(value)
        return out

    def _lost(self, cell: Cell, worker: int) -> Outcome:
        """A worker that died while playing ``cell``: reaped and forgotten (the next cell for that
        lane starts a new process). Its claim on the cell and its run name a dead process, so the
        cell is claimed again and its run resumed from its last stored turn; what was lost is at most
        the turn in flight (and an offline conversation's buffered turns, replayed identically)."""
        proc = self._reap(worker)
        how = f"signal {-proc.exitcode}" if proc.exitcode is not None and proc.exitcode < 0 else f"exit {proc.exitcode}"
        return Outcome(cell.index, CellOutcome.LOST,
                       error=f"its worker process (pid {proc.pid}) died while playing it ({how})")

    def _reap(self, worker: int) -> Any:
        """Forget a dead worker (its lane starts a new process on its next cell); its process, reaped."""
        proc, pipe = self.procs[worker], self.pipes[worker]
        self.procs[worker] = self.pipes[worker] = None
        if pipe is not None:
            pipe.close()
        if proc is not None:
            proc.join(FORCED_EXIT_WAIT_S)  # reaped: a zombie's pid would still look alive to a claim
        return proc

    def stop(self) -> None:
        self.stop_event.set()

    def force(self) -> list[Outcome]:
        self.force_event.set()  # each worker's watchdog marks its run interrupted and exits
        _wait_for_workers()
        self.store.runs.mark_dead()  # anything a worker could not mark itself
        abandoned = [Outcome(cell.index, CellOutcome.INTERRUPTED) for cell, _ in self.running.values()]
        self.running.clear()
        return abandoned

    def close(self, forced: bool) -> None:
        """Tell every worker to leave and, unless forced, wait until each has."""
        for pipe in self.pipes:
            if pipe is not None:
                try:
                    pipe.send(None)
                except OSError:  # the worker is gone already
                    pass
        for proc, pipe in zip(self.procs, self.pipes):
            if proc is not None and not forced:
                proc.join()
            if pipe is not None:
                pipe.close()


def _descending(item: tuple[Cell, str]) -> int:
    return -item[0].index


def shares(cells: list[Cell], workers: int) -> list[tuple[int, int]]:
    """One contiguous share of ``cells`` (in plan order) per worker, as (first, last) plan index:
    about as many cells each, cut only where the question changes (a question is never split
    unless there are fewer questions than workers). Empty when ``cells`` are not in increasing
    plan index (then there are no shares)."""
    if any(a.index >= b.index for a, b in zip(cells, cells[1:])) or not cells:
        return []
    cuts = [i for i in range(1, len(cells)) if cells[i].question_id != cells[i - 1].question_id]
    bounds = [0]
    for w in range(1, workers):
        ideal = round(w * len(cells) / workers)
        later = [c for c in cuts if c > bounds[-1]]
        bounds.append(min(later, key=lambda c: (abs(c - ideal), c)) if later else max(bounds[-1] + 1, ideal))
    bounds = [min(b, len(cells)) for b in bounds] + [len(cells)]
    out = []
    for w in range(workers):
        a, b = bounds[w], max(bounds[w], bounds[w + 1]) - 1
        out.append((cells[a].index, cells[b].index) if a <= b and a < len(cells) else (-1, -2))  # -1..-2: empty
    return out


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


__all__ = ["ProcessLanes", "run_processes", "shares"]
