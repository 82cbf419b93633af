"""The batch service: what a batch request means, decided once for the command line and the Batch page.

A :class:`BatchRequest` is the request in typed values (tuples of ids, numbers); the command line
builds it from its options (:meth:`BatchRequest.from_args`), the Batch page from its form, and both
the options and the command line a request is launched as come from one field table,
:data:`OPTIONS`. The service owns everything between the request and the
scheduler: the checks of the modes and tags, resuming a stored batch (its matrix, the cells still to
run, those another process holds) or planning a new one under a given or generated tag, the
estimate, the choice between worker processes and threads, the budget and the LLM settings, and the
signal handling while it plays (:class:`BatchJob`). What it never does is print or exit: the
``batch`` command keeps its argument parsing, its progress line, its summary and its exit codes.

The Batch page runs a batch as a background ``batch`` process (it must outlive the browser tab);
:meth:`BatchRequest.argv` is the one place a request is spelled as that command line, and
:func:`preview` is what the page shows before it launches — the matrix and estimate the command
will print.
"""

from __future__ import annotations

import argparse
import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from knowsim_core import batch
from knowsim_core.batch.cluster import MISSING_EXTRA, cluster_address, connect, extra_missing, run_cluster
from knowsim_core.batch.plan import BatchSpec, Cell, Estimate, estimate_stored, plan, row_key
from knowsim_core.batch.schedule import Budget, Control, LLMSetup, Outcome, Tally, run_threads, signals_stop
from knowsim_core.engine.config import DEFAULT_PRESET, LEVELS, PRESETS
from knowsim_core.errors import ConfigError, StorageError
from knowsim_core.services.runner import DEFAULT_EXTRACTOR, DEFAULT_USER
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter, bounded_int
from knowsim_core.vocab import RunStatus
from knowsim_core.text.tags import check_batch_tag, new_batch_tag

DEFAULT_CONCURRENCY = 16


ALL = "all"  # --questions all / --levels all: every one
OFFLINE = "offline"  # --assistants offline: the offline provider's scripted strategies


def usd(text: str) -> float:
    """A finite amount of 0 or more USD from text, else ``ValueError`` (``nan`` compares false with
    everything, so a nan budget would never stop anything; ``inf`` is no budget)."""
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"expected an amount of 0 or more USD, got {text[:40]!r}")
    return value


def ids(text: str) -> tuple[str, ...]:
    """A comma list as a tuple, each item once (``a,a`` is one cell, not two cells with one key)."""
    return tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))


@dataclass(frozen=True, slots=True)
class _Option:
    """One field of :class:`BatchRequest` on the ``batch`` command line: its option, how its text is
    read (``ValueError`` when invalid) and written back, and whether ``--resume`` carries it."""

    name: str
    flag: str
    parse: Callable[[str], Any]
    show: Callable[[Any], str]
    help: str
    metavar: str | None = None
    resume: bool = False  # a way of running, kept by --resume (the matrix itself is the stored one's)
    choices: tuple[str, ...] | None = None


def _joined(value: tuple[str, ...]) -> str:
    return ",".join(value)


# seeds, workers and concurrency are bounded from above here and from below by check() / plan(),
# whose messages name the option ("--seeds must be at least 1, got 0")
_SEEDS, _TURNS, _GV = bounded_int(-100_000, 100_000), bounded_int(1, 1000), bounded_int(1, 1_000_000)
_CONCURRENCY, _WORKERS = bounded_int(-1024, 1024), bounded_int(-256, 256)
OPTIONS: tuple[_Option, ...] = (
    _Option("questions", "--questions", ids, _joined,
            "question ids, or all: every stored sample, paper and own question (real conversations only by id)",
            "all|ID,…"),
    _Option("levels", "--levels", ids, _joined, f"levels ({', '.join(LEVELS)}) or all", "all|L,…"),
    _Option("assistants", "--assistants", ids, _joined,
            "assistant ids, or offline: the four scripted strategies (offline/oracle only by id)", "offline|ID,…"),
    _Option("graph_version", "--graph-version", _GV, str,
            "play every question on version N of its graph (default: each question's newest); the versions are "
            "fixed when the batch starts", "N"),
    _Option("seeds", "--seeds", _SEEDS, str, "seeds 1..N per cell (default 1)", "N"),
    _Option("user", "--user", str, str, f"user simulator (default {DEFAULT_USER})", "ID"),
    _Option("extractor", "--extractor", str, str, f"extractor (default {DEFAULT_EXTRACTOR})", "ID"),
    _Option("preset", "--preset", str, str, "rule preset", None, choices=tuple(sorted(PRESETS))),
    _Option("max_turns", "--max-turns", _TURNS, str, "override the preset's max turns", "N"),
    _Option("concurrency", "--concurrency", _CONCURRENCY, str,
            f"conversations in flight at once, in this process (default {DEFAULT_CONCURRENCY})", "N", resume=True),
    _Option("workers", "--workers", _WORKERS, str,
            "worker processes, one conversation each (CPU-bound offline matrices; default for an all-offline "
            "matrix: one per core); excludes --concurrency", "K", resume=True),
    _Option("cluster", "--cluster", cluster_address, str,
            "play the conversations as tasks on the Dask cluster whose scheduler is at this address (the optional "
            "extra requirements-cluster.txt); this process stores every turn; excludes --workers", "tcp://HOST:PORT",
            resume=True),
    _Option("tag", "--tag", str, str, "the batch's tag, stored with every run (default: generated)", "NAME"),
    _Option("resume", "--resume", str, str, "continue the unfinished cells of batch TAG", "TAG"),
    _Option("max_cost", "--max-cost", usd, repr,
            "stop starting conversations when this invocation's spending + the estimate of those in flight would "
            "pass USD", "USD"),
)


@dataclass(frozen=True)
class BatchRequest:
    """A batch as asked for, in typed values: the matrix (``questions`` / ``levels`` are ids or
    ``(ALL,)``, ``assistants`` ids or ``(OFFLINE,)``), how to run it, and under which tag — or
    ``resume``, the tag of a stored batch to continue.

    Its ``batch`` command line comes from :data:`OPTIONS`, one entry per field: the options
    (:meth:`add_arguments`), reading them (:meth:`from_args`) and writing them (:meth:`argv`)
    cannot disagree.
    """

    questions: tuple[str, ...] | None = None
    levels: tuple[str, ...] = (ALL,)
    assistants: tuple[str, ...] = (OFFLINE,)
    seeds: int = 1
    user: str = DEFAULT_USER
    extractor: str = DEFAULT_EXTRACTOR
    preset: str = DEFAULT_PRESET
    max_turns: int | None = None
    concurrency: int | None = None  # conversations in flight per process (threads)
    workers: int | None = None  # worker processes
    cluster: str | None = None  # a Dask scheduler's address: the conversations play on its workers
    tag: str | None = None
    resume: str | None = None
    max_cost: float | None = None
    graph_version: int | None = None  # the graph version number every question plays on (None: each one's newest)

    def __post_init__(self) -> None:
        for name in ("questions", "levels", "assistants"):  # held as tuples; text is read as the command's
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, ids(value) if isinstance(value, str) else tuple(value))

    def check(self) -> None:
        """Refuse contradictory modes and bad tags before anything is opened.

        Raises:
            ConfigError: one line.
        """
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {self.workers}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.workers is not None and self.workers > 1 and self.concurrency is not None:
            raise ConfigError("choose --concurrency N (conversations in flight, for model-bound batches) "
                              "or --workers K (processes, for CPU-bound offline matrices), not both")
        if self.cluster is not None:
            if self.workers is not None:
                raise ConfigError("--cluster plays the conversations on the cluster's workers; drop --workers")
            if extra_missing():
                raise ConfigError(MISSING_EXTRA)
        if self.max_cost is not None and self.max_cost < 0:
            raise ConfigError(f"--max-cost must be 0 or more USD, got {self.max_cost}")
        if self.tag is not None:
            check_batch_tag(self.tag)
        if self.resume is not None:
            check_batch_tag(self.resume, what="--resume")

    # ------------------------------------------------------------------ the command line
    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The ``batch`` command's options for the request's fields (defaults: the request's own)."""
        defaults = BatchRequest()
        for o in OPTIONS:
            parser.add_argument(o.flag, dest=f"request_{o.name}", type=_arg_type(o), choices=o.choices,
                                default=getattr(defaults, o.name), metavar=o.metavar, help=o.help)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "BatchRequest":
        """The request the parsed options describe."""
        return cls(**{o.name: getattr(args, f"request_{o.name}") for o in OPTIONS})

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> "BatchRequest":
        """The request a ``batch`` command line (as :meth:`argv` writes it) describes; options
        that are not the request's (``--db``) are ignored.

        Raises:
            ConfigError: an option's value does not parse.
        """
        parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
        cls.add_arguments(parser)
        words = list(argv)[1:] if list(argv[:1]) == ["batch"] else list(argv)
        try:
            known, _ = parser.parse_known_args(words)
        except (argparse.ArgumentError, SystemExit) as exc:
            raise ConfigError(f"not a batch command line: {exc}") from None
        return cls.from_args(known)

    def argv(self) -> list[str]:
        """The ``batch`` command line that runs this request (without ``--db``): every field that
        differs from its default, the matrix always."""
        if self.resume is not None:
            return self.resume_argv(self.resume)
        defaults = BatchRequest()
        argv = ["batch"]
        for o in OPTIONS:
            value = getattr(self, o.name)
            if value is not None and (value != getattr(defaults, o.name) or o.name in _ALWAYS):
                argv += [o.flag, o.show(value)]
        return argv

    def resume_argv(self, tag: str) -> list[str]:
        """``batch --resume TAG`` with this request's way of running (worker processes or threads)."""
        argv = ["batch", "--resume", tag]
        for o in OPTIONS:
            value = getattr(self, o.name)
            if o.resume and value is not None:
                argv += [o.flag, o.show(value)]
        return argv


_ALWAYS = ("questions", "levels", "assistants", "seeds")  # the matrix is spelled out, defaults too


def _arg_type(o: _Option) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return o.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(o.parse, "__name__", "value")
    return parse


@dataclass
class Prepared:
    """A batch ready to play: its tag and matrix, the cells to run (with the stored run each one
    continues, if any), how many are finished or held elsewhere, the estimate and the mode."""

    request: BatchRequest
    tag: str
    spec: BatchSpec
    todo: list[tuple[Cell, str]]
    skipped: int  # cells already finished (a resume)
    busy: int  # cells another live process is playing (left alone)
    estimate: Estimate
    workers: int
    concurrency: int

    @property
    def resumed(self) -> bool:
        return self.request.resume is not None

    def cluster_concurrency(self) -> int | None:
        """Conversations in flight on a cluster: what was asked, else ``DEFAULT_CONCURRENCY`` for a
        matrix with a model in it; None for an offline one (then as many as the workers' threads take)."""
        if self.request.concurrency is not None or self.spec.llm_agents():
            return self.concurrency
        return None

    def mode(self) -> str:
        """How the cells will really run (never more lanes than cells)."""
        if self.request.cluster is not None:
            at_once = self.cluster_concurrency()
            return (f"as tasks on the Dask cluster at {self.request.cluster}"
                    + (f", up to {min(at_once, max(1, len(self.todo)))} at once" if at_once else ""))
        if self.workers > 1:
            return f"{self.workers} worker processes"
        at_once = min(self.concurrency, max(1, len(self.todo)))
        return "one at a time, in this process" if at_once == 1 else f"up to {at_once} at once"


def _matrix(store: Store, req: BatchRequest) -> tuple[str | None, BatchSpec]:
    """The stored matrix of ``req.resume`` (with its tag), or a new plan (tag None: not chosen yet)."""
    if req.resume:
        if req.questions is not None or req.tag or req.graph_version is not None:
            raise ConfigError("--resume TAG continues the stored matrix of that batch; drop --questions / --tag "
                              "/ --graph-version")
        data = store.search.get_batch(req.resume)
        if data is None:
            raise StorageError(f"no batch tagged {req.resume!r} in {store.path}; `runs --batch TAG` lists a batch's runs")
        return req.resume, BatchSpec.from_data(data)
    return None, plan(store, questions=req.questions, levels=req.levels, assistants=req.assistants, seeds=req.seeds,
                      user=req.user, extractor=req.extractor, preset=req.preset, max_turns=req.max_turns,
                      graph_version=req.graph_version)


def preview(store: Store, req: BatchRequest) -> tuple[BatchSpec, Estimate]:
    """The matrix and estimate of a new batch (the Batch page's preview; nothing is written)."""
    _, spec = _matrix(store, req)
    return spec, estimate_stored(store, spec, len(spec.cells()))


def prepare(store: Store, req: BatchRequest) -> Prepared:
    """Everything decided before a batch plays; nothing is written (a dry run stops here).

    Raises:
        ConfigError: a bad request or matrix.
        StorageError: no batch to resume, a new tag already taken, or every unfinished cell of the
            resumed batch held by another process.
    """
    tag, spec = _matrix(store, req)
    if tag is None:
        tag = req.tag or new_batch_tag()
        if store.search.get_batch(tag) is not None:
            raise StorageError(f"batch tag {tag!r} exists; continue it with --resume {tag} or choose another --tag")
        todo, skipped, busy, pids = [(c, "") for c in spec.cells()], 0, 0, set()
    else:
        todo, skipped, busy, pids = cells_to_run(store, spec, tag)
        if not todo and busy:
            raise StorageError(f"batch {tag}: every unfinished cell is being played by another process "
                               f"(pid {', '.join(map(str, sorted(pids))) or '?'}); nothing left to run here")
    workers, concurrency = modes(req, spec, len(todo))
    return Prepared(req, tag, spec, todo, skipped, busy, estimate_stored(store, spec, len(todo)), workers, concurrency)


def cells_to_run(store: Store, spec: BatchSpec, tag: str) -> tuple[list[tuple[Cell, str]], int, int, set[int]]:
    """The cells still to run (with the stored run to continue, if any), how many are finished,
    how many another live process is still playing (opening the store marked dead writers' runs
    ``interrupted``, so a ``running`` run here has a live writer; it is left alone; so is a cell a
    live process has claimed), and the pids of those processes. Each cell is claimed again when it
    starts (``store.cells.claim``): this list is only what to try."""
    holders = store.cells.holders(tag)
    finished, busy, resumable = set(), set(), {}
    for row in store.search.list(RunFilter(batch_tag=tag), limit=10**9, order="created_asc"):
        if row.status == RunStatus.FINISHED:
            finished.add(row_key(row))
        elif row.status == RunStatus.RUNNING:
            busy.add(row_key(row))
        else:  # interrupted or failed: continue the newest from its last completed turn
            resumable[row_key(row)] = row.id
    cells = spec.cells()
    busy |= {c.key for c in cells if c.index in holders}
    todo = [(c, resumable.get(c.key, "")) for c in cells if c.key not in finished | busy]
    return (todo, sum(c.key in finished for c in cells), sum(c.key in busy and c.key not in finished for c in cells),
            set(holders.values()))


def modes(req: BatchRequest, spec: BatchSpec, n_todo: int) -> tuple[int, int]:
    """(worker processes, conversations in flight per process): what was asked, else a process per
    core (at most one per conversation) for offline agents only (threads would share one core under
    the GIL), else ``DEFAULT_CONCURRENCY`` threads for a matrix with a model in it.

    ``--workers K`` alone is K processes of one conversation each (no more than there are cells),
    K = 1 too (played in this process): one process playing
    16 offline conversations in threads took 4.4 s for the offline matrix against 3.4 s one at a
    time (the threads only contended for the GIL and the write lock)."""
    if req.cluster is not None:  # no process here plays: the cluster's workers do
        return 1, req.concurrency or DEFAULT_CONCURRENCY
    if req.concurrency is not None:
        return req.workers or 1, req.concurrency
    if req.workers is not None:  # a worker per cell at most: the others would never start
        return max(1, min(req.workers, n_todo)), 1
    if spec.llm_agents():
        return 1, DEFAULT_CONCURRENCY
    return max(1, min(os.cpu_count() or 1, n_todo)), 1


@dataclass
class BatchJob:
    """A prepared batch being played: its matrix stored under its tag (a new batch), and the stop
    control, tally and budget its caller can watch (progress line, page), and the Dask client of a
    cluster batch (connected before anything is stored)."""

    store: Store
    prepared: Prepared
    control: Control = field(default_factory=Control)
    tally: Tally = field(init=False)
    outcomes: list[Outcome] = field(default_factory=list)
    forced: bool = False
    client: Any = None
    lanes: Any = None  # a cluster batch's lanes while it plays (per-worker progress)

    def __post_init__(self) -> None:
        self.tally = Tally(len(self.prepared.todo))

    @classmethod
    def start(cls, store: Store, prepared: Prepared) -> "BatchJob":
        """Connect to the cluster of a ``--cluster`` batch, store a new batch's matrix under its tag (so
        it can be resumed) and return the job.

        Raises:
            ConfigError: the cluster cannot be used (one line; nothing is stored).
        """
        client = None
        if prepared.request.cluster is not None:
            client = connect(prepared.request.cluster)
        if not prepared.resumed:
            store.search.save_batch(prepared.tag, prepared.spec.to_data())
        return cls(store, prepared, client=client)

    def play(self, *, tick: Callable[[], None] = lambda: None,
             on_outcome: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
        """Run the cells to run, in worker processes or threads, with SIGINT / SIGTERM stopping
        cleanly (a second one at once); returns the outcomes."""
        p = self.prepared
        budget = Budget(p.request.max_cost, p.estimate.per_conversation_usd)
        llm = LLMSetup(p.concurrency) if p.spec.llm_agents() else None
        with signals_stop(self.control):
            if self.client is not None:
                try:
                    self.outcomes, self.forced = run_cluster(
                        self.store, p.todo, client=self.client, tag=p.tag, control=self.control, tally=self.tally,
                        budget=budget, llm=llm, concurrency=p.cluster_concurrency(), tick=tick, on_outcome=on_outcome,
                        on_lanes=lambda lanes: setattr(self, "lanes", lanes))
                finally:
                    self.client.close()
            elif p.workers > 1:
                # batch.workers (multiprocessing) loads here: a dry run or a thread batch needs none
                self.outcomes, self.forced = batch.workers.run_processes(
                    self.store, p.todo, workers=p.workers, tag=p.tag, control=self.control, tally=self.tally,
                    budget=budget, llm=llm, tick=tick, on_outcome=on_outcome)
            else:
                self.outcomes, self.forced = run_threads(self.store, p.todo, concurrency=p.concurrency, tag=p.tag,
                                                         control=self.control, tally=self.tally, budget=budget,
                                                         llm=llm, tick=tick, on_outcome=on_outcome)
        return self.outcomes

    def workers(self) -> dict[str, tuple[int, int]]:
        """A cluster batch's workers: (conversations in flight there, conversations ended there) each;
        empty for a local batch."""
        return self.lanes.workers() if self.lanes is not None else {}

    def threads_left_behind(self) -> bool:
        """A forced stop returned while conversation threads were stuck in a model call: the process
        should exit at once rather than wait for them (``os._exit`` in the command)."""
        return self.forced and threading.active_count() > 1


__all__ = ["BatchJob", "BatchRequest", "DEFAULT_CONCURRENCY", "Prepared", "cells_to_run", "modes", "prepare",
           "preview"]
