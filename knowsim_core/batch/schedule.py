"""Running a batch's cells: many conversations in flight, a budget, and a clean stop.

**Threads, not asyncio, for conversations in flight.** A batch with LLM agents waits on model
latency, not on the CPU, so one process keeps ``concurrency`` conversations going, one thread each.
Threads because everything under a conversation is already synchronous and thread-safe: the SDK
clients (one cached client per endpoint, whose connection pool is thread-safe), the per-endpoint
:class:`~knowsim_core.llm.providers.Gate` (a semaphore + an RPM spacer whose lock is never held
while sleeping), and the store, which opens a fresh sqlite3 connection per call in the calling
thread (so ``check_same_thread`` is never crossed) and writes each turn in its own
``BEGIN IMMEDIATE`` transaction under WAL with a busy timeout — many threads then queue for the
write lock exactly as many processes do. A turn's three calls stay sequential inside its thread;
limits hold across every conversation because the Gate is per endpoint, not per conversation. The
SDKs retry a 429 with their own backoff inside the call: that thread sleeps holding one slot of
that endpoint's Gate, which slows that endpoint only — other endpoints and the scheduler go on.

**Processes** for CPU-bound matrices: :mod:`knowsim_core.batch.workers`; **a Dask cluster's
workers**: :mod:`knowsim_core.batch.cluster`. All run under one scheduler loop, :func:`run_loop`,
which only the lanes (threads, processes or cluster tasks) tell apart.

**Stopping.** :class:`Control` is what the signal handler flips. The first SIGINT/SIGTERM stops
starting conversations; each one in flight finishes its current turn and is marked
``interrupted`` (resumable from that turn). A second one stops at once: the parent marks what is
still in flight ``interrupted`` and returns without waiting for the threads (or makes the workers
mark theirs and exit).
"""

from __future__ import annotations

import os
import queue
from bisect import insort
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from knowsim_core import llm as llm_layer
from knowsim_core.batch.plan import Cell
from knowsim_core.errors import KnowSimError
from knowsim_core.services.play import play, status_of
from knowsim_core.services.runner import resume_run, start_run
from knowsim_core.storage import Store
from knowsim_core.vocab import CELL_ENDED, CellOutcome, ClaimOutcome, RunStatus

POLL_S = 0.1  # how often the scheduler looks at signals, results and the progress line
STOP_ERROR = "the batch was stopped before this conversation finished; continue it with batch --resume"
DISK_FULL = ("disk is full", "no space left on device", "disk quota exceeded")


def is_disk_full(error: str) -> bool:
    """Whether an outcome's error says the disk (or the database's quota) is full: then every
    further cell would fail the same way, so the batch stops at the first one (rather than failing
    every cell one by one)."""
    low = error.lower()
    return any(d in low for d in DISK_FULL)


@dataclass
class Outcome:
    """What became of one cell: its :class:`~knowsim_core.vocab.CellOutcome`, and what it spent."""

    index: int
    status: CellOutcome
    run_id: str = ""
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    error: str = ""
    lost_turn_tokens: int = 0  # of the above, billed in a turn that did not complete (no turn record holds them)
    lost_turn_usd: float = 0.0
    unknown_calls: int = 0  # billed calls whose tokens could not be read (unusable 200s): in no figure above
    lost_turn_unknown: int = 0  # of those, in a turn that did not complete

    def add(self, usages: Any, *, lost: bool = False) -> None:
        """Count calls once: a stored turn's (``lost`` False) or a cut-short turn's (True)."""
        for u in usages:
            self.tokens_in += u.input_tokens
            self.tokens_out += u.output_tokens
            self.cost_usd += u.cost_usd
            self.unknown_calls += u.unknown_calls
            if lost:
                self.lost_turn_tokens += u.input_tokens + u.output_tokens
                self.lost_turn_usd += u.cost_usd
                self.lost_turn_unknown += u.unknown_calls


class Control:
    """Stop requests, flipped by the signal handler and read by every conversation."""

    def __init__(self, stop: Any = None, force: Any = None):
        self.stop = stop if stop is not None else threading.Event()  # no new conversation; stop after this turn
        self.force = force if force is not None else threading.Event()  # stop now
        self.budget_hit = False
        self.signalled = False
        self.disk_full = ""  # the first "disk is full" error: nothing new starts after it
        self.cluster_lost = ""  # why a cluster batch lost its scheduler: nothing more can be played there

    def full(self, error: str) -> None:
        """The disk is full: stop starting conversations (those in flight end on their own)."""
        if not self.disk_full:
            self.disk_full = error
        self.stop.set()

    def lost(self, error: str) -> None:
        """The cluster's scheduler is gone: stop (what was in flight there is interrupted)."""
        if not self.cluster_lost:
            self.cluster_lost = error
        self.stop.set()

    def request(self) -> None:
        self.signalled = True
        (self.force if self.stop.is_set() else self.stop).set()


@contextmanager
def signals_stop(control: Control) -> Iterator[None]:
    """SIGINT and SIGTERM request a stop (a second one: stop at once) instead of raising."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = lambda signum, frame: control.request()  # noqa: E731 — no I/O in a signal handler
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# ---------------------------------------------------------------------- one conversation
def run_cell(store: Store, cell: Cell, *, tag: str, stop: Any, llm: Callable[[Store, int], Any] | None = None,
             resume_id: str = "", on_start: Callable[[str], None] | None = None,
             on_turn: Callable[[Any], None] | None = None) -> Outcome:
    """Play one cell to its end (or to a stop request, after the current turn).

    ``resume_id`` continues that stored run instead of starting a new one — for an untagged cell
    only: a tagged cell's claim (``store.cells.claim``) names the run to continue, read when the cell
    is claimed, since another process may have moved it on since the plan; ``llm(store, index)``
    gives the LLM settings of this conversation (None for offline cells). The conversation's calls
    share one connection (each turn still its own transaction): see ``Store.pinned``.
    """
    with store.pinned():
        return _run_cell(store, cell, tag=tag, stop=stop, llm=llm, resume_id=resume_id, on_start=on_start,
                         on_turn=on_turn)


def _run_cell(store: Store, cell: Cell, *, tag: str, stop: Any, llm: Callable[[Store, int], Any] | None,
              resume_id: str, on_start: Callable[[str], None] | None,
              on_turn: Callable[[Any], None] | None) -> Outcome:
    out = Outcome(cell.index, CellOutcome.NOT_STARTED)
    if stop.is_set():
        return out
    if not tag:
        return _play(store, cell, out, tag=tag, stop=stop, llm=llm, resume_id=resume_id, on_start=on_start,
                     on_turn=on_turn, on_close=None)
    try:
        claim = store.cells.claim(tag, cell.index, cell.key)
    except KnowSimError as exc:
        out.status, out.error = CellOutcome.FAILED, str(exc)
        return out
    if claim.outcome != ClaimOutcome.MINE:  # another process finished it or is playing it: never twice
        out.status = CellOutcome.SKIPPED
        out.error = ("finished by another process" if claim.outcome == ClaimOutcome.DONE
                     else f"being played by process {claim.holder}")
        return out
    released: list[bool] = []

    def release() -> None:  # in the transaction that closes the run (the writer's on_close), else after it
        store.cells.release(tag, cell.index)
        released.append(True)

    try:
        return _play(store, cell, out, tag=tag, stop=stop, llm=llm, resume_id=claim.resume_id, on_start=on_start,
                     on_turn=on_turn, on_close=release)
    finally:
        # released with the run's close, unless that transaction failed (the outcome then says so)
        if not (released and out.status in (CellOutcome.FINISHED, CellOutcome.INTERRUPTED)):
            try:
                store.cells.release(tag, cell.index)
            except KnowSimError:
                pass  # a claim left behind is reclaimable once this process is gone


CELL_OF_STATUS = {RunStatus.FINISHED: CellOutcome.FINISHED, RunStatus.FAILED: CellOutcome.FAILED,
                  RunStatus.INTERRUPTED: CellOutcome.INTERRUPTED}


def _play(store: Store, cell: Cell, out: Outcome, *, tag: str, stop: Any,
          llm: Callable[[Store, int], Any] | None, resume_id: str, on_start: Callable[[str], None] | None,
          on_turn: Callable[[Any], None] | None, on_close: Callable[[], None] | None) -> Outcome:
    settings = llm(store, cell.index) if llm is not None else None
    try:
        # an offline conversation's turns go to the database a few at a time (buffered), and the
        # cell's claim is released in the run's closing transaction (on_close)
        if resume_id:
            live = resume_run(store, resume_id, settings=settings, buffered=True, on_close=on_close)
        else:
            live = start_run(store, **cell.start_kwargs(), settings=settings, batch_tag=tag, buffered=True,
                             on_close=on_close)
    except KnowSimError as exc:
        out.status, out.error = CellOutcome.FAILED, str(exc)
        return out
    out.run_id = live.run_id
    if on_start is not None:
        on_start(live.run_id)

    def turn(rec: Any) -> None:
        out.turns = rec.turn
        out.add(rec.usage)
        if on_turn is not None:
            on_turn(rec)

    try:
        ending = play(live, stop=lambda: STOP_ERROR if stop.is_set() else "", on_turn=turn)
    except Exception as exc:  # noqa: BLE001 — a bug in one conversation must not take the batch down
        ending = live.ending  # an agent's bug: the runner closed the run failed, with what the turn had billed
        out.error = str(exc) if isinstance(exc, KnowSimError) else f"{type(exc).__name__}: {exc}"
    if ending is None:  # the close itself failed (e.g. the disk is full): the run is left to a resume
        out.status = CellOutcome.FAILED
        return out
    out.add(ending.spent, lost=True)
    out.status = CELL_OF_STATUS[status_of(ending)]
    if out.status != CellOutcome.FINISHED:
        out.error = out.error or ending.error
    return out


# ---------------------------------------------------------------------- shared bookkeeping
@dataclass
class Tally:
    """Counts for the progress line and the budget (updated from many threads under one lock)."""

    total: int
    done: int = 0
    failed: int = 0
    interrupted: int = 0
    skipped: int = 0  # cells another process finished or holds (claimed there first)
    tokens: int = 0
    cost_usd: float = 0.0
    unknown_calls: int = 0  # billed calls with unknown tokens (not in tokens or cost_usd)
    started_at: float = field(default_factory=time.monotonic)
    in_flight: dict[int, float] = field(default_factory=dict)  # cell index -> spent so far
    finished_costs: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, index: int) -> None:
        with self.lock:
            self.in_flight[index] = 0.0

    def turn(self, index: int, rec: Any) -> None:
        with self.lock:
            spent = sum(u.cost_usd for u in rec.usage)
            self.tokens += sum(u.input_tokens + u.output_tokens for u in rec.usage)
            self.cost_usd += spent
            self.unknown_calls += sum(u.unknown_calls for u in rec.usage)
            self.in_flight[index] = self.in_flight.get(index, 0.0) + spent

    def end(self, out: Outcome, *, counted_turns: bool) -> None:
        with self.lock:
            self.in_flight.pop(out.index, None)
            if not counted_turns:  # worker processes report their spending only at the end
                self.tokens += out.tokens_in + out.tokens_out
                self.cost_usd += out.cost_usd
                self.unknown_calls += out.unknown_calls
            else:  # the turns were counted as they came; a cut-short turn's calls were not
                self.tokens += out.lost_turn_tokens
                self.cost_usd += out.lost_turn_usd
                self.unknown_calls += out.lost_turn_unknown
            if out.status == CellOutcome.FINISHED:
                self.finished_costs.append(out.cost_usd)
            self.done += out.status in CELL_ENDED
            self.skipped += out.status == CellOutcome.SKIPPED
            self.failed += out.status == CellOutcome.FAILED
            self.interrupted += out.status == CellOutcome.INTERRUPTED


class Budget:
    """``--max-cost``: start a conversation only while spent + in-flight estimate + its own estimate fits."""

    def __init__(self, max_cost: float | None, per_conversation: float):
        self.max_cost = max_cost
        self.prior = per_conversation

    def allows(self, tally: Tally) -> bool:
        if self.max_cost is None:
            return True
        with tally.lock:
            # once conversations have finished, their mean cost is a better guess than the prior
            est = (sum(tally.finished_costs) / len(tally.finished_costs)) if tally.finished_costs else self.prior
            committed = tally.cost_usd + sum(max(0.0, est - s) for s in tally.in_flight.values())
        return committed + est <= self.max_cost


class LLMSetup:
    """The LLM settings of a conversation: the environment's, the per-endpoint limit raised to the
    batch's concurrency unless ``KNOWSIM_LLM_MAX_CONCURRENCY`` sets it. Picklable (sent to worker
    processes); the settings are read once per process, lazily, so offline batches never load the LLM layer."""

    def __init__(self, concurrency: int):
        self.concurrency = concurrency
        self._base: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"concurrency": self.concurrency, "_base": None}  # keys are re-read from the env

    def settings(self) -> Any:
        if self._base is None:
            base = llm_layer.LLMSettings.from_env()
            if not os.environ.get("KNOWSIM_LLM_MAX_CONCURRENCY"):
                base = base.with_overrides(max_concurrency=max(base.max_concurrency, self.concurrency))
            self._base = base
        return self._base

    def __call__(self, store: Store | None, index: int) -> dict[str, Any]:
        """The agents' settings; the store's cache when there is a store (a cluster's worker has
        none: its calls are not cached)."""
        s = self.settings()
        return {"settings": s, "cache": store.caches if s.cache_enabled and store is not None else None}


def admit(pending: list[tuple[Cell, str]], in_flight: Callable[[], int], limit: int, *, control: Control,
          tally: Tally, budget: Budget,
          choose: Callable[[list[tuple[Cell, str]]], int] | None = None) -> Iterator[tuple[Cell, str]]:
    """The cells that may start now (the one admission rule of both schedulers): up to ``limit``
    in flight, none after a stop request, none once the budget would be passed — then the rest
    of ``pending`` is dropped, and those in flight go on. Each admitted cell is counted as started.

    ``pending`` is the cells in reverse order (the next one last); ``choose(pending)`` may name
    another one to start next (its index in ``pending``): worker processes keep to their own
    questions (:meth:`knowsim_core.batch.workers.ProcessLanes.choose`). Which cells run and how
    each plays do not depend on it, only which lane plays it and when."""
    while pending and in_flight() < limit and not control.stop.is_set():
        if not budget.allows(tally):
            control.budget_hit = True
            pending.clear()
            return
        cell, resume_id = pending.pop(choose(pending) if choose is not None else -1)
        tally.start(cell.index)
        yield cell, resume_id


# ---------------------------------------------------------------------- the one loop
class Lanes(Protocol):
    """Where a batch's conversations run: threads in this process (:class:`ThreadLanes`) or worker
    processes (:class:`knowsim_core.batch.workers.ProcessLanes`). :func:`run_loop` is the one
    scheduler over either; a lane set only starts cells, hands back their outcomes and stops."""

    counted_turns: bool  # whether the tally saw every turn (threads) or only each conversation's end
    # Optional: ``choose(pending) -> index`` of the cell to start next (see :func:`admit`); without
    # it, cells start in the order of the plan.

    def in_flight(self) -> int: ...
    def submit(self, cell: Cell, resume_id: str) -> None: ...
    def outcomes(self, timeout: float) -> list[Outcome]: ...  # those ended since, waiting up to timeout
    def stop(self) -> None: ...  # no new turn after the current one, in every lane
    def force(self) -> list[Outcome]: ...  # stop at once: the outcomes of what was still in flight
    def close(self, forced: bool) -> None: ...


def run_loop(lanes: Lanes, todo: list[tuple[Cell, str]], *, limit: int | Callable[[], int], control: Control,
             tally: Tally, budget: Budget, tick: Callable[[], None] = lambda: None,
             on_outcome: Callable[[Outcome], None] = lambda o: None) -> tuple[list[Outcome], bool]:
    """Play ``todo`` on ``lanes``, at most ``limit`` in flight (or ``limit()``: a cluster's workers
    come and go); returns (outcomes, forced).

    The rules, the same whatever the lanes: :func:`admit` decides what starts (limit, stop, budget);
    a stop request drops what has not started and lets those in flight end their turn; a second one
    abandons them at once; the first "disk is full" failure stops the batch like a stop request; a
    cell whose lane was lost (a worker process killed) is played again once, by a new lane."""
    pending = list(reversed(todo))
    cells = {cell.index: cell for cell, _ in todo}
    lost: set[int] = set()  # cells whose worker process died once: played again, once
    outcomes: list[Outcome] = []
    forced = False

    def ended(timeout: float) -> None:
        for out in lanes.outcomes(timeout):
            if out.status == CellOutcome.LOST:
                if out.index not in lost and not control.stop.is_set():
                    lost.add(out.index)
                    with tally.lock:
                        tally.in_flight.pop(out.index, None)
                    # back in its place (pending is in reverse plan order): its claim and its run name a
                    # dead process, so whoever plays it next resumes the run from its last stored turn
                    insort(pending, (cells[out.index], ""), key=_reverse_plan_order)
                    continue
                if out.index in lost:  # twice: something in this cell kills its worker (memory?)
                    out.status = CellOutcome.FAILED
                    out.error += "; it was lost twice, so it was not tried again"
                else:  # the batch is stopping: its run is resumed with the rest
                    out.status = CellOutcome.INTERRUPTED
            if out.status == CellOutcome.FAILED and is_disk_full(out.error):
                control.full(out.error)
                lanes.stop()
            tally.end(out, counted_turns=lanes.counted_turns)
            outcomes.append(out)
            on_outcome(out)

    try:
        while pending or lanes.in_flight():
            for cell, resume_id in admit(pending, lanes.in_flight, limit() if callable(limit) else limit,
                                         control=control, tally=tally, budget=budget,
                                         choose=getattr(lanes, "choose", None)):
                lanes.submit(cell, resume_id)
            if control.stop.is_set():
                lanes.stop()
                pending.clear()
            if control.force.is_set():
                forced = True
                ended(0.0)  # those that ended meanwhile keep their own outcome
                outcomes += lanes.force()
                break
            ended(POLL_S if lanes.in_flight() else 0.0)
            tick()
    finally:
        lanes.close(forced or control.force.is_set())
    return outcomes, forced


def _reverse_plan_order(item: tuple[Cell, str]) -> int:
    return -item[0].index


# ---------------------------------------------------------------------- threads
class ThreadLanes:
    """One daemon thread per conversation in this process (model-bound batches). Daemon: a forced
    stop returns without waiting for a thread stuck in a model call. The threads read
    ``control.stop`` themselves, so :meth:`stop` has nothing to pass on."""

    counted_turns = True

    def __init__(self, store: Store, *, tag: str, control: Control, tally: Tally,
                 llm: Callable[[Store, int], Any] | None):
        self.store, self.tag, self.control, self.tally, self.llm = store, tag, control, tally, llm
        self.results: queue.Queue[Outcome] = queue.Queue()
        self.running: dict[int, str] = {}  # cell index -> run id ("" until created)

    def in_flight(self) -> int:
        return len(self.running)

    def submit(self, cell: Cell, resume_id: str) -> None:
        self.running[cell.index] = ""
        threading.Thread(target=self._work, args=(cell, resume_id), daemon=True, name=f"cell-{cell.index}").start()

    def _work(self, cell: Cell, resume_id: str) -> None:
        def started(rid: str) -> None:
            self.running[cell.index] = rid

        self.results.put(run_cell(self.store, cell, tag=self.tag, stop=self.control.stop, llm=self.llm,
                                  resume_id=resume_id, on_start=started,
                                  on_turn=lambda rec: self.tally.turn(cell.index, rec)))

    def outcomes(self, timeout: float) -> list[Outcome]:
        out = []
        try:
            out.append(self.results.get(timeout=timeout) if timeout > 0 else self.results.get_nowait())
            while True:
                out.append(self.results.get_nowait())
        except queue.Empty:
            pass
        for o in out:
            self.running.pop(o.index, None)
        return out

    def stop(self) -> None:
        pass  # every thread watches control.stop

    def force(self) -> list[Outcome]:
        return [_abandon(self.store, index, rid) for index, rid in list(self.running.items())]

    def close(self, forced: bool) -> None:
        pass


def run_threads(store: Store, todo: list[tuple[Cell, str]], *, concurrency: int, tag: str, control: Control,
                tally: Tally, budget: Budget, llm: Callable[[Store, int], Any] | None,
                tick: Callable[[], None] = lambda: None,
                on_outcome: Callable[[Outcome], None] = lambda o: None) -> tuple[list[Outcome], bool]:
    """Up to ``concurrency`` conversations at once in this process; returns (outcomes, forced)."""
    lanes = ThreadLanes(store, tag=tag, control=control, tally=tally, llm=llm)
    return run_loop(lanes, todo, limit=concurrency, control=control, tally=tally, budget=budget, tick=tick,
                    on_outcome=on_outcome)


def _abandon(store: Store, index: int, run_id: str) -> Outcome:
    """Mark a conversation still in flight after a second Ctrl-C as interrupted."""
    if run_id:
        try:
            store.runs.finish(run_id, status=RunStatus.INTERRUPTED, error=STOP_ERROR)
        except KnowSimError:
            pass  # it ended on its own in the meantime
    return Outcome(index, CellOutcome.INTERRUPTED if run_id else CellOutcome.NOT_STARTED, run_id)


__all__ = ["Budget", "CELL_OF_STATUS", "Control", "LLMSetup", "Lanes", "Outcome", "STOP_ERROR", "Tally", "ThreadLanes",
           "admit", "is_disk_full", "run_cell", "run_loop", "run_threads", "signals_stop"]
