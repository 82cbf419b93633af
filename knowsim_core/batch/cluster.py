"""``batch --cluster tcp://HOST:PORT``: a batch's conversations played as tasks on a Dask cluster.

**Only this process writes the database.** It plans the matrix and claims each cell exactly as a
local batch does (``store.cells.claim``), reads what a conversation needs (a new run's setup, or the
run as stored so far), and sends that as a task; the worker builds the agents from their ids with
its own environment's keys and endpoints (:mod:`knowsim_core.batch.remote`), plays, and sends back
what it played, which is stored here (:class:`~knowsim_core.services.runner.RunWriter`). A task
carries no secret: :class:`~knowsim_core.batch.schedule.LLMSetup` pickles without settings.

**How turns travel back, and why.** Dask already runs a task again when its worker dies, from the
same arguments; a task that starts from the run as stored makes that repeat the resume the batch
needs. So:

* a conversation that calls a model is one task per turn (:data:`~.remote.ONE_TURN`): each turn is
  stored when its task returns, before the next turn's task is sent with the run as stored. A lost
  worker costs the turn in flight, which another worker plays again from the last stored turn;
  nothing stored is played twice and no billed call is counted twice (a lost attempt's calls never
  reach the driver). Between two turns the conversation waits for this process to store the turn
  and send the next task — a few milliseconds against seconds of model latency.
* offline conversations play to their end, up to :data:`CHUNK_MAX` of the same question per task:
  they bill nothing and play the same turns again from their seed, so there is nothing to gain from
  sending their turns one by one, and each Dask task cost ~20 ms of the scheduler's, the worker's
  and this process's CPU on a 2-core machine, against ~32 ms for a whole offline conversation with
  its storage (``benchmarks/cluster.py offline --ablations``, medians of 5 rounds: one conversation
  per task took 15.0 s of CPU for the 240-conversation matrix, eight per task 10.7 s, the process
  lanes 7.7 s). A worker sends each turn back as the database stores it
  (:class:`~knowsim_core.storage.runs.StoredTurn`, packed there) with the run's metrics: this
  process, the one writer for the whole cluster, neither unpickles turn records nor packs them
  (its CPU for that matrix: ~2.1 s; ~4.0 s when it packed them itself).

The alternative, one long task per conversation streaming its turns (a Dask queue or event topic),
sends each turn once instead of sending the run so far with every turn, but a repeat after a lost
worker would replay the conversation from its start unless every task first asked this process where
its conversation stood — a round trip per task and a second channel for the answer, for a saving
(the run so far, some tens of kB per turn) that model latency dwarfs.

**Stopping.** A stop request sends no further turn: a model-bound conversation ends after the turn in
flight (``interrupted``, resumable from that turn); offline tasks already sent play to their end (a
chunk takes well under a second); cells not yet sent are left unstarted. A second request cancels
every task and marks the runs still open ``interrupted``. ``--resume`` continues a cluster batch
locally or a local one on a cluster alike: the runs and claims are the same.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import queue
import re
import socket
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from typing import Any, Callable
from urllib.parse import urlsplit

from knowsim_core.batch.plan import Cell
from knowsim_core.batch.remote import ONE_TURN, TO_THE_END, Part, Played, code_version, model_bound
from knowsim_core.batch.remote import play as play_task
from knowsim_core.batch.schedule import CELL_OF_STATUS, STOP_ERROR, Budget, Control, Outcome, Tally, run_loop
from knowsim_core.engine.metrics import Metrics
from knowsim_core.engine.records import Ending, RunRecord
from knowsim_core.errors import ConfigError, KnowSimError
from knowsim_core.services.play import status_of
from knowsim_core.services.runner import RunSetup, RunWriter, load_to_resume, prepare_run, stop_reason_of
from knowsim_core.storage import Store
from knowsim_core.vocab import CellOutcome, ClaimOutcome, EndReason, RunStatus

DEFAULT_PORT = 8786  # the port ``dask scheduler`` listens on unless told otherwise
CONNECT_TIMEOUT_S = 10.0
CHUNK_MAX = 8  # offline conversations per task, at most
CHUNKS_PER_THREAD = 8  # ... and at least this many tasks per worker thread, so the batch ends evenly
TASKS_PER_THREAD = 2  # offline tasks sent per worker thread: one playing, one waiting to start at once
NTHREADS_EVERY_S = 2.0  # how often the workers' threads are counted (workers may join or leave)
EXTRA = "requirements-cluster.txt"
HOW_TO = "docs/how-to/cluster.md"  # how to start a scheduler and workers the Studio can use
MISSING_EXTRA = (f"batch --cluster needs Dask, an optional extra: install it with "
                 f"`python -m pip install -c constraints.txt -r {EXTRA}`")


# ---------------------------------------------------------------------- the address and the extra
def cluster_address(text: str) -> str:
    """``tcp://HOST:PORT`` from text (a bare ``HOST:PORT`` or ``HOST`` is read as TCP, port 8786);
    ``ValueError`` otherwise."""
    text = text.strip()
    parts = urlsplit(text if "://" in text else f"tcp://{text}")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        port = -1
    if (parts.scheme != "tcp" or not parts.hostname or port <= 0 or parts.path not in ("", "/")
            or parts.username or parts.query):
        raise ValueError(f"expected a Dask scheduler's address, tcp://HOST:PORT, got {text[:80]!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"tcp://{host}:{port}"


def extra_missing() -> bool:
    """Whether Dask's ``distributed`` cannot be imported here (the optional extra is not installed)."""
    try:
        return importlib.util.find_spec("distributed") is None
    except (ImportError, ValueError):  # a module set to None (how a missing package is simulated) raises
        return True


def on_worker(*, waits: bool) -> str:
    """The address of the Dask worker running the calling task ("" outside a worker: a test, a tool);
    a task that ``waits`` on a model leaves the worker's thread pool to CPU-bound tasks (``secede``),
    so the conversations in flight are the batch's ``--concurrency``, not the workers' threads."""
    from distributed import get_worker, secede

    try:
        address = get_worker().address
    except ValueError:
        return ""
    if waits:
        secede()
    return address


def check_reachable(address: str, timeout: float = 3.0) -> None:
    """Open (and close) a TCP connection to the scheduler: a refused or unroutable address is one line
    at once, instead of Dask's retrying until its connect timeout.

    Raises:
        ConfigError: nothing listens there.
    """
    parts = urlsplit(address)
    try:
        with socket.create_connection((parts.hostname, parts.port or DEFAULT_PORT), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot reach the Dask scheduler at {address} ({why.lower()}); start it and its "
                          f"workers as {HOW_TO} shows, or fix the address") from None


def connect(address: str) -> Any:
    """A Dask client of the scheduler at ``address``, after checking that the scheduler and its
    workers run this very Studio code (they unpickle its tasks; workers play them).

    Raises:
        ConfigError: the extra is missing, the scheduler cannot be reached, or it or a worker
            cannot load this Studio's code — one line each.
    """
    if extra_missing():
        raise ConfigError(MISSING_EXTRA)
    check_reachable(address)
    from distributed import Client

    # the client's reconnect warnings and tracebacks: a lost scheduler is one line in the batch's summary
    logging.getLogger("distributed").setLevel(logging.CRITICAL)

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
    try:
        _check_code(client, address)
    except BaseException:
        client.close()
        raise
    return client


def _check_code(client: Any, address: str) -> None:
    mine = code_version()
    try:
        theirs = client.run_on_scheduler(code_version)
    except Exception as exc:  # noqa: BLE001 — whatever the scheduler could not do, it is one line here
        raise ConfigError(f"the Dask scheduler at {address} cannot load the Studio's code "
                          f"({type(exc).__name__}: {exc}); start it with the Studio's checkout on its PYTHONPATH "
                          f"(see {HOW_TO})") from None
    if theirs != mine:
        raise ConfigError(f"the Dask scheduler at {address} runs other Studio code ({theirs}, here {mine}); "
                          f"start it from the same checkout (see {HOW_TO})")
    versions = client.run(code_version, on_error="return")
    for worker, v in sorted(versions.items()):
        if v != mine:
            why = f"other Studio code ({v}, here {mine})" if isinstance(v, str) else f"{type(v).__name__}: {v}"
            raise ConfigError(f"the Dask worker {worker} cannot play this batch: {why}; start the workers with "
                              f"the Studio's checkout on their PYTHONPATH (see {HOW_TO})")


# ---------------------------------------------------------------------- the lanes
@dataclass
class _Cell:
    """A cell in flight on the cluster: its outcome so far, where its conversation stands (what the
    next task starts from), the writer of its run once the run exists, and its claim."""

    cell: Cell
    out: Outcome
    start: RunSetup | RunRecord
    one_turn: bool  # its agents call a model: one turn per task
    claimed: bool
    writer: RunWriter | None = None
    task: str = ""  # the key of its task in flight
    worker: str = ""  # where its last task ran


@dataclass
class ClusterLanes:
    """The cluster's lanes for :func:`~knowsim_core.batch.schedule.run_loop` (see the module
    docstring): cells are claimed and set up here, played by the workers, stored here."""

    store: Store
    client: Any
    tag: str
    control: Control
    tally: Tally
    llm: Any  # LLMSetup, or None for an offline matrix
    address: str = ""  # the scheduler's, for messages
    chunk: int = 1  # offline cells per task
    counted_turns: bool = True
    cells: dict[int, _Cell] = field(default_factory=dict)
    ready: list[Outcome] = field(default_factory=list)  # decided without a task (skipped, failed to start)
    open: list[_Cell] = field(default_factory=list)  # offline cells gathered into the next task
    futures: dict[str, Any] = field(default_factory=dict)  # task key -> future
    members: dict[str, list[int]] = field(default_factory=dict)  # task key -> its cells
    done: "queue.Queue[str]" = field(default_factory=queue.Queue)  # keys of tasks that ended (Dask's callbacks)
    ended_on: dict[str, int] = field(default_factory=dict)  # worker -> conversations whose last task ran there
    materials: dict[int, Any] = field(default_factory=dict)  # graph version -> the question's material, once
    params: dict[str, Any] = field(default_factory=dict)  # the rules (as JSON) -> one RuleParams
    _seq: int = 0
    _counted: float = 0.0  # when the workers' threads were counted
    _nthreads: dict[str, int] = field(default_factory=dict)  # worker -> threads, as last counted

    # -------------------------------------------------------------- how many at once
    def workers_now(self) -> dict[str, int]:
        """The cluster's workers and their threads (asked every few seconds: workers join and leave)."""
        if time.monotonic() - self._counted > NTHREADS_EVERY_S:
            try:
                self._nthreads = dict(self.client.nthreads())
            except Exception:  # noqa: BLE001 — a scheduler that went away is seen by the tasks' futures
                pass
            self._counted = time.monotonic()
        return self._nthreads

    def threads(self) -> int:
        """The worker threads the cluster has now (at least 1)."""
        return max(1, sum(self.workers_now().values()))

    def capacity(self) -> int:
        """Offline cells to keep in flight: a task playing and one waiting per worker thread."""
        return TASKS_PER_THREAD * self.threads() * self.chunk

    def in_flight(self) -> int:
        return len(self.cells) + len(self.ready)

    # -------------------------------------------------------------- starting a cell
    def submit(self, cell: Cell, resume_id: str) -> None:
        out = Outcome(cell.index, CellOutcome.NOT_STARTED)
        claimed = False
        if self.tag:
            try:
                claim = self.store.cells.claim(self.tag, cell.index, cell.key)
            except KnowSimError as exc:
                out.status, out.error = CellOutcome.FAILED, str(exc)
                self.ready.append(out)
                return
            if claim.outcome != ClaimOutcome.MINE:  # finished elsewhere, or another process plays it
                out.status = CellOutcome.SKIPPED
                out.error = ("finished by another process" if claim.outcome == ClaimOutcome.DONE
                             else f"being played by process {claim.holder}")
                self.ready.append(out)
                return
            claimed, resume_id = True, claim.resume_id
        c = _Cell(cell, out, None, False, claimed)  # type: ignore[arg-type]  # start set below
        try:
            if resume_id:
                run = load_to_resume(self.store, resume_id)
                self.store.runs.reopen(resume_id, turns=len(run.turns))
                c.start, out.run_id = run, resume_id
                c.one_turn = model_bound(run.adapter.values())
                c.writer = self._writer(c, resume_id)
                stop = stop_reason_of(run)
                if stop is not None:  # its writer died between its last turn and closing it
                    self.ready.append(self._close(c, Ending(EndReason.STOPPED, stop)))
                    return
            else:
                c.start = self._shared(prepare_run(self.store, **cell.start_kwargs()))
                c.one_turn = model_bound(dict(c.start.agent_ids).values())
        except KnowSimError as exc:
            out.status, out.error = CellOutcome.FAILED, str(exc)
            self._release(c)
            self.ready.append(out)
            return
        self.cells[cell.index] = c
        if c.one_turn:
            self._send([c], ONE_TURN)
            return
        if self.open and (len(self.open) >= self.chunk or self.open[0].cell.question_id != cell.question_id):
            self._flush()
        self.open.append(c)

    def _shared(self, setup: RunSetup) -> RunSetup:
        """``setup`` holding the same material and rules objects as the setups of the same graph and
        preset before it: a task's pickle then carries each graph once, however many of its cells play it."""
        material = self.materials.setdefault(setup.graph_version_id, setup.material)
        params = self.params.setdefault(setup.params.model_dump_json(), setup.params)
        return replace(setup, material=material, params=params)

    def _writer(self, c: _Cell, run_id: str) -> RunWriter:
        # an offline conversation's turns arrive all at once: one transaction with the run's close, which
        # releases the cell's claim too (c.claimed is cleared once that transaction is stored)
        release = (lambda: self.store.cells.release(self.tag, c.cell.index)) if c.claimed else None
        return RunWriter(self.store, run_id, buffered=not c.one_turn, on_close=release)

    def _release(self, c: _Cell) -> None:
        if c.claimed:
            c.claimed = False
            try:
                self.store.cells.release(self.tag, c.cell.index)
            except KnowSimError:
                pass  # a claim left behind is reclaimable once this process is gone

    def _flush(self) -> None:
        if self.open:
            group, self.open = self.open, []
            self._send(group, TO_THE_END)

    def _send(self, group: list[_Cell], turns: int | None) -> None:
        self._seq += 1
        key = f"knowsim-{self.tag or 'batch'}-{group[0].cell.index}-{self._seq}"
        parts = tuple(Part(c.cell.index, c.start) for c in group)
        try:
            future = self.client.submit(play_task, parts, turns=turns, llm=self.llm if turns is not None else None,
                                        key=key, pure=False)
        except Exception as exc:  # noqa: BLE001 — the client lost its scheduler (closed)
            self._lose(exc)
            self.ready += [self._abandon(c, CellOutcome.INTERRUPTED, STOP_ERROR) for c in group]
            return
        for c in group:
            c.task = key
        self.futures[key], self.members[key] = future, [c.cell.index for c in group]
        future.add_done_callback(lambda f: self.done.put(f.key))

    # -------------------------------------------------------------- what comes back
    def outcomes(self, timeout: float) -> list[Outcome]:
        self._flush()
        out, self.ready = self.ready, []
        keys: list[str] = []
        try:
            keys.append(self.done.get(timeout=timeout) if timeout > 0 and not out else self.done.get_nowait())
            while True:
                keys.append(self.done.get_nowait())
        except queue.Empty:
            pass
        futures = [self.futures.pop(k) for k in keys if k in self.futures]
        for f, played, exc in self._results(futures):
            if played is None:
                out += self._failed_task(f, exc)
                continue
            del self.members[f.key]
            for p in played:
                o = self._played(p)
                if o is not None:
                    out.append(o)
        return out

    def _results(self, futures: list[Any]) -> list[tuple[Any, tuple[Played, ...] | None, BaseException | None]]:
        """Each ended task with what it returned (None: it did not) or why not; the results are
        fetched in one call (one lost with its worker since is computed again by Dask, and waited for)."""
        errors: dict[str, BaseException | None] = {}
        for f in futures:
            try:
                errors[f.key] = f.exception(timeout=CONNECT_TIMEOUT_S)  # None: it returned
            except BaseException as exc:  # noqa: BLE001 — cancelled, or the scheduler is gone
                errors[f.key] = exc
        returned = [f for f in futures if errors[f.key] is None]
        got: dict[str, Any] = {}
        try:
            got = dict(zip((f.key for f in returned), self.client.gather(returned))) if returned else {}
        except Exception:  # noqa: BLE001 — one of them was lost meanwhile: ask each
            for f in returned:
                try:
                    got[f.key] = f.result(timeout=CONNECT_TIMEOUT_S)
                except BaseException as exc:  # noqa: BLE001 — seen by _failed_task
                    errors[f.key] = exc
        return [(f, got.get(f.key), errors[f.key]) for f in futures]

    def _played(self, p: Played) -> Outcome | None:
        """Store what a task played of one conversation; its outcome once it ended, else None (the
        next turn's task is sent)."""
        c = self.cells.get(p.index)
        if c is None:  # given up meanwhile (a forced stop)
            return None
        out, c.worker = c.out, p.worker or c.worker
        try:
            if p.header is not None and c.writer is None:
                assert isinstance(c.start, RunSetup)
                run_id = self.store.runs.create(p.header, graph_version_id=c.start.graph_version_id,
                                                batch_tag=self.tag or None)
                c.start, out.run_id = replace(p.header, run_id=run_id), run_id
                c.writer = self._writer(c, run_id)
            if c.writer is None:  # the conversation could not start on the worker: no run was stored
                out.status, out.error = CellOutcome.FAILED, (p.ending.error if p.ending else "no run was played")
                return self._end(c)
            for turn in p.stored:
                c.writer.turn(turn)
                out.turns = turn.turn
                out.add(turn.usage)
                self.tally.turn(p.index, turn)
            if p.turns:  # a one-turn task's: the next one continues from them
                assert isinstance(c.start, RunRecord)
                c.start = c.start.with_turns(c.start.turns + p.turns)
        except KnowSimError as exc:  # e.g. the disk is full: the run is left to a resume
            out.status, out.error = CellOutcome.FAILED, str(exc)
            return self._end(c)
        ending = p.ending
        if ending is None and self.control.stop.is_set():
            ending = Ending(EndReason.STOP_REQUESTED, error=STOP_ERROR)
        if ending is None:
            self._send([c], ONE_TURN)
            return None
        self.ended_on[c.worker] = self.ended_on.get(c.worker, 0) + 1
        return self._close(c, ending, p.metrics)

    def _close(self, c: _Cell, ending: Ending, metrics: Metrics | None = None) -> Outcome:
        """Close the cell's run as ``ending`` says (with what the ending spent); its outcome.
        ``metrics``: the run's, computed where it was played (else from the run as mirrored here, or
        read back)."""
        out = c.out
        assert c.writer is not None
        run = c.start if isinstance(c.start, RunRecord) and metrics is None else None
        try:
            c.writer.end(ending, run.with_turns(run.turns, ending.stop_reason) if run is not None else None,
                         metrics)
        except KnowSimError as exc:  # the close failed (e.g. the disk is full): the run is left to a resume
            out.status, out.error = CellOutcome.FAILED, str(exc)
            return self._end(c)
        c.claimed = c.claimed and c.writer.on_close is None  # released in the closing transaction
        out.add(ending.spent, lost=True)
        out.status = CELL_OF_STATUS[status_of(ending)]
        if out.status != CellOutcome.FINISHED:
            out.error = out.error or ending.error
        return self._end(c)

    def _end(self, c: _Cell) -> Outcome:
        self._release(c)
        self.cells.pop(c.cell.index, None)
        if c.task:
            self.members.pop(c.task, None)
        return c.out

    def _failed_task(self, future: Any, exc: BaseException | None) -> list[Outcome]:
        """The outcomes of the cells of a task that did not return: its workers kept dying (Dask gave
        up on it: ``lost``, played again once by the loop), it was cancelled, or it raised."""
        from distributed.scheduler import KilledWorker

        if isinstance(exc, (CancelledError, TimeoutError)) or future.cancelled():  # not by us: force() forgets first
            self._lose(exc)
        indices = self.members.pop(future.key, [])
        outs = []
        for index in indices:
            c = self.cells.get(index)
            if c is None:
                continue
            if isinstance(exc, KilledWorker):
                status, error = CellOutcome.LOST, f"the workers playing it died ({exc})"
            elif self.control.cluster_lost or exc is None:
                status, error = CellOutcome.INTERRUPTED, self.control.cluster_lost or STOP_ERROR
            else:
                status, error = CellOutcome.FAILED, f"{type(exc).__name__}: {exc}"
            outs.append(self._abandon(c, status, error))
        return outs

    def _abandon(self, c: _Cell, status: CellOutcome, error: str) -> Outcome:
        """Give a cell up without a task's answer: its run (if any) is closed ``interrupted`` (or
        ``failed``), resumable from its last stored turn, and its claim released."""
        out = c.out
        if c.writer is not None and c.writer.ending is None:
            run_status = RunStatus.FAILED if status == CellOutcome.FAILED else RunStatus.INTERRUPTED
            try:
                self.store.runs.finish(out.run_id, status=run_status, error=error)
            except KnowSimError:
                pass  # closed meanwhile
        if status == CellOutcome.INTERRUPTED and c.writer is None:
            status = CellOutcome.NOT_STARTED
        out.status, out.error = status, error
        return self._end(c)

    def _lose(self, exc: BaseException | None) -> None:
        """The scheduler is gone (the client closed, or cancelled our tasks itself): the batch stops."""
        why = f"{type(exc).__name__}: {exc}" if exc is not None and str(exc) else "the connection was closed"
        self.control.lost(f"lost the Dask scheduler at {self.address}: {why.splitlines()[0]}")

    # -------------------------------------------------------------- stopping
    def stop(self) -> None:
        """Send nothing new: cells gathered for a task that was not sent are left unstarted."""
        group, self.open = self.open, []
        self.ready += [self._abandon(c, CellOutcome.INTERRUPTED, STOP_ERROR) for c in group]

    def force(self) -> list[Outcome]:
        futures = list(self.futures.values())
        self.futures.clear()  # forgotten first: their cancellation is ours, not a lost scheduler
        if futures:
            try:
                self.client.cancel(futures, force=True)
            except Exception:  # noqa: BLE001 — the scheduler is gone: nothing left to cancel
                pass
        outs = self.ready + [self._abandon(c, CellOutcome.INTERRUPTED, STOP_ERROR) for c in list(self.cells.values())]
        self.ready, self.open = [], []
        return outs

    def close(self, forced: bool) -> None:
        pass  # the client is the job's (BatchJob closes it)

    # -------------------------------------------------------------- progress
    def workers(self) -> dict[str, tuple[int, int]]:
        """Per worker: (conversations in flight there, conversations that ended there)."""
        flying: dict[str, int] = {}
        try:
            processing = self.client.processing()
        except Exception:  # noqa: BLE001 — no answer: show what ended
            processing = {}
        for worker, keys in processing.items():
            flying[worker] = sum(len(self.members.get(k, ())) for k in keys)
        names = sorted(set(flying) | {w for w in self.ended_on if w})
        return {w: (flying.get(w, 0), self.ended_on.get(w, 0)) for w in names}


WORKERS_LINE = re.compile(r"on \d+ workers?: ")  # how the per-worker progress line starts (the Batch page finds it)


def workers_line(counts: dict[str, tuple[int, int]]) -> str:
    """A cluster batch's conversations per worker, in flight and ended, on one line ("" for none)."""
    if not counts:
        return ""
    return f"on {len(counts)} worker{'' if len(counts) == 1 else 's'}: " + " · ".join(
        f"{w} {flying} in flight, {ended} ended" for w, (flying, ended) in counts.items())


def is_workers_line(line: str) -> bool:
    """Whether a printed line is :func:`workers_line`'s."""
    return WORKERS_LINE.match(line) is not None


def run_cluster(store: Store, todo: list[tuple[Cell, str]], *, client: Any, tag: str, control: Control, tally: Tally,
                budget: Budget, llm: Any, concurrency: int | None, tick: Callable[[], None] = lambda: None,
                on_outcome: Callable[[Outcome], None] = lambda o: None,
                on_lanes: Callable[[ClusterLanes], None] = lambda lanes: None) -> tuple[list[Outcome], bool]:
    """Play ``todo`` on the cluster ``client`` is connected to; returns (outcomes, forced).

    ``concurrency``: conversations in flight (the batch's ``--concurrency``); None: for an offline
    matrix, two tasks per worker thread (:meth:`ClusterLanes.capacity`)."""
    lanes = ClusterLanes(store, client, tag, control, tally, llm, address=str(client.scheduler.address))
    threads = lanes.threads()
    lanes.chunk = 1 if llm is not None else max(1, min(CHUNK_MAX, len(todo) // (threads * CHUNKS_PER_THREAD)))
    on_lanes(lanes)
    limit: int | Callable[[], int] = concurrency if concurrency is not None else lanes.capacity
    # one connection for the whole batch (each turn still its own transaction): every store call is
    # made from this thread, and closing a connection checkpointed the WAL each time (~7 ms)
    with store.pinned():
        return run_loop(lanes, todo, limit=limit, control=control, tally=tally, budget=budget, tick=tick,
                        on_outcome=on_outcome)


__all__ = ["CONNECT_TIMEOUT_S", "ClusterLanes", "MISSING_EXTRA", "check_reachable", "cluster_address", "connect",
           "extra_missing", "is_workers_line", "on_worker", "run_cluster", "workers_line"]
