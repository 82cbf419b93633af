"""Glue between the registry, :class:`Simulation` and :class:`Store`: runs that are saved as they go.

:func:`start_run` builds the agents by id, fixes s_0, stores the run's setup and returns a
:class:`LiveRun`; every ``step()`` stores the new turn in its own transaction before returning
it, so a crash never loses a completed turn. :func:`resume_run` rebuilds the agents from the ids
recorded with an interrupted or failed run and continues from its last completed turn — with the
per-turn seeds derived from the run's seed, the continuation is the turn the first attempt would
have played. Everything an agent's prompt reads (question, reference answer, graph, domain) is
stored with the run, so a resumed run sends the requests an uninterrupted one would.

The app plays runs under a lease (``lease_seconds``, see ``store.runs.renew_lease``): every step
renews it before the model calls and again when the turn is stored, and a run whose browser
session went away is marked ``interrupted`` once it lapses. Command-line runs hold no lease.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Mapping

from knowsim_core.agents import registry
from knowsim_core.engine.config import DEFAULT_EXTRACTOR, DEFAULT_USER, LEVELS, preset as get_preset
from knowsim_core.errors import ConfigError, ProviderError, SessionError, StorageError
from knowsim_core.engine.ports import QuestionMaterial
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.session import STOP_EXTRACTOR, STOP_MAX_TURNS, STOP_USER_DONE, Simulation
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.formats.samples import load_samples
from knowsim_core.storage import Store
from knowsim_core.storage.runs import Closing

CUSTOM_LEVEL = "custom"  # a hand-set initial state rather than a level's ratios


def _llm_defaults(store: Store) -> dict[str, Any]:
    """Settings for LLM agents when the caller gives none: the environment, and the store as cache."""
    from knowsim_core.llm import LLMSettings  # lazy: offline runs never import the LLM layer

    settings = LLMSettings.from_env()
    return {"settings": settings, "cache": store.caches if settings.cache_enabled else None}


def build_agents(
    store: Store, ids: Mapping[str, str], settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Build assistant, user and extractor by id; LLM ids get ``settings`` (default: env + cache)."""
    if settings is None and any(registry.spec_of(i).needs_model for i in ids.values()):
        settings = _llm_defaults(store)
    return {kind: _build(kind, agent_id, settings) for kind, agent_id in ids.items()}


def _build(kind: str, agent_id: str, settings: Mapping[str, Any] | None) -> Any:
    spec = registry.spec_of(agent_id)
    if spec.recorded:
        raise StorageError(
            f"this run was imported from a recording ({kind} {agent_id!r}); it has no agent to continue it with"
        )
    # settings (API keys, base URLs, temperatures) are for LLM agents; offline and typed ones take none
    if settings and spec.needs_model:
        return registry.resolve(kind, agent_id, **settings)
    return registry.resolve(kind, agent_id)


# An offline conversation's turns are written a few at a time (one transaction for several):
# a transaction per turn was a quarter of an offline batch's time. A turn waits at most this many
# turns or seconds in memory; a crash loses only what an offline agent replays identically on resume
# (the per-turn seeds come from the run's seed). Turns of model-calling agents, and of the app's
# leased runs, are written before step() returns, as before.
BUFFER_TURNS = 16
BUFFER_SECONDS = 0.5


class LiveRun:
    """A stored run being played: ``step()`` plays and saves one turn.

    ``buffered`` (set by the caller that plays a whole conversation: :meth:`run_to_end`, a batch)
    lets an offline conversation's turns wait in memory (up to :data:`BUFFER_TURNS` /
    :data:`BUFFER_SECONDS`) and go to the database with the next ones, the last of them in the same
    transaction that closes the run. Every way out of :meth:`step` writes them first, and so do
    :meth:`flush` and :meth:`interrupt`.

    ``on_close`` (set by a batch) is called inside the transaction that closes the run, for the
    caller's own bookkeeping to commit with it (a batch releases the cell's claim there: one write
    transaction less per conversation); if that transaction fails, neither is stored.
    """

    def __init__(self, store: Store, sim: Simulation, run_id: str, *, leased: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.sim = sim
        self.run_id = run_id
        self.leased = leased  # the app's runs: renew the lease before each step
        self.buffered = False
        self.on_close: Callable[[], None] | None = None
        self._offline = not any(registry.spec_of(agent_id).needs_model for agent_id in sim.run.adapter.values())
        self._pending: list[TurnRecord] = []
        self._since = 0.0
        self._clock = clock

    @property
    def run(self) -> RunRecord:
        return self.sim.run

    @property
    def done(self) -> bool:
        return self.sim.done

    def step(self) -> TurnRecord:
        """Play the next turn and store it (with the turns still buffered); a finished run is closed.

        Raises:
            ProviderError: a model call failed; the run is marked ``failed`` with the message and
                can be resumed later (completed turns are kept).
            SessionError: an agent returned an empty message; the run is closed with that reason.
            StorageError: a leased run is no longer running here (its lease lapsed and it was
                marked interrupted); nothing was played — resume it.
        """
        with self.store.pinned():  # one connection for the lease, the step's reads and its writes
            if self.leased and not self.done and not self.store.runs.renew_lease(self.run_id):
                raise StorageError(
                    f"run {self.run_id} is no longer running in this session (it was idle too long and was "
                    "marked interrupted); resume it to play on"
                )
            try:
                rec = self.sim.step()
            except ProviderError as exc:  # the calls billed before it count in the run's cost (exc.spent)
                self._write(self._closing("failed", str(exc), spent=exc.spent))
                raise
            except SessionError as exc:  # an empty message ends the conversation (done), else it is the caller's
                self._write(self._closing("finished", spent=exc.spent) if self.sim.done else None)
                raise
            except KeyboardInterrupt:  # the turn's calls billed before Ctrl-C count in the run's cost
                self._write(self._closing("interrupted", "stopped by the user", spent=self.sim.unrecorded_spent))
                raise
            except Exception as exc:  # a bug in an agent: keep the evidence (and what it cost), then surface it
                self._write(self._closing("failed", f"{type(exc).__name__}: {exc}", spent=self.sim.unrecorded_spent))
                raise
            if not self._pending:
                self._since = self._clock()
            self._pending.append(rec)
            if self.sim.done:
                self._write(self._closing("finished"))
            elif not (self.buffered and self._offline and not self.leased) or (
                    len(self._pending) >= BUFFER_TURNS or self._clock() - self._since >= BUFFER_SECONDS):
                self._write(None)
        return rec

    def flush(self) -> None:
        """Write the turns still buffered (nothing when none are)."""
        self._write(None)

    def interrupt(self, error: str) -> None:
        """Close the run as ``interrupted`` (a batch's stop), with the turns still buffered."""
        self._write(self._closing("interrupted", error))

    def _closing(self, status: str, error: str = "", *, spent: Any = ()) -> Closing:
        stop = self.sim.run.stop_reason if status == "finished" else None
        # the run so far: its metrics need no reading back
        return Closing(status, stop, error, self.sim.run, tuple(spent or ()))

    def _write(self, close: Closing | None) -> None:
        if not self._pending and close is None:
            return
        turns, self._pending = self._pending, []
        with self.store.pinned():  # the close reads the turns written in the same transaction
            self.store.runs.append_turns(self.run_id, turns, close=close,
                                         then=self.on_close if close is not None else None)

    def run_to_end(self, progress: Callable[[TurnRecord], None] | None = None) -> RunRecord:
        """Step until the run ends; an agent's empty message ends it quietly (it is recorded).

        The turns share one connection, and an offline conversation's turns are written a few at a
        time (:attr:`buffered`): a conversation is a long series of small writes, and opening a
        connection or a transaction per turn cost more than the write.
        """
        self.buffered = True
        try:
            with self.store.pinned():
                return self._run_to_end(progress)
        finally:
            self.buffered = False
            self.flush()

    def _run_to_end(self, progress: Callable[[TurnRecord], None] | None) -> RunRecord:
        while not self.done:
            try:
                rec = self.step()
            except SessionError:
                if self.done:
                    break
                raise
            if progress is not None:
                progress(rec)
        return self.run

def start_run(
    store: Store,
    *,
    question_id: str,
    level: str,
    assistant_id: str,
    user_id: str = DEFAULT_USER,
    extractor_id: str = DEFAULT_EXTRACTOR,
    seed: int = 1,
    preset: str = "paper-final",
    max_turns: int | None = None,
    graph_version_id: int | None = None,
    initial_state: KnowledgeState | None = None,
    stop_mode: str = "virtual",
    settings: Mapping[str, Any] | None = None,
    lease_seconds: float | None = None,
    batch_tag: str | None = None,
) -> LiveRun:
    """Create a stored run (status ``running``) ready to be stepped.

    ``lease_seconds``: hold the run under a lease of that length (the app; see the module docstring).

    The graph is the given version or the question's latest; s_0 is ``initial_state``, else the
    stored canonical state for the level (when it names exactly this graph's IUs), else sampled
    from ``seed``.

    Raises:
        StorageError: unknown question / graph version, or a question without a graph.
        ConfigError: unknown level, preset or agent id.
    """
    if level == CUSTOM_LEVEL and initial_state is None:
        raise ConfigError("level 'custom' needs the initial state to start from")
    if level not in LEVELS and level != CUSTOM_LEVEL:
        raise ConfigError(f"unknown knowledge level {level!r}; expected one of {', '.join(LEVELS)} or custom")
    with store.pinned():  # one connection for the setup's reads and the run's creation
        q = store.questions.get(question_id)
        if graph_version_id is not None:
            gv = store.questions.get_graph_version(graph_version_id)
            if gv.question_id != question_id:
                raise StorageError(f"graph version {graph_version_id} belongs to {gv.question_id!r}, not {question_id!r}")
        else:
            gv = store.questions.latest_graph_version(question_id)
            if gv is None:
                raise StorageError(f"question {question_id!r} has no IU graph yet; add or extract one first")
        params = get_preset(preset, max_turns=max_turns) if max_turns is not None else get_preset(preset)
        graph = gv.graph
        if initial_state is None:
            cached = store.caches.get_initial_state(question_id, level)
            if cached is not None and set(cached) == set(graph.index.labels):
                initial_state = cached
        elif set(initial_state) != set(graph.index.labels):
            raise ConfigError("the given initial state does not name exactly the IUs of this graph")
        agents = build_agents(store, {"assistant": assistant_id, "user": user_id, "extractor": extractor_id}, settings)
        sim = Simulation(
            material=QuestionMaterial(q.id, q.text, q.reference_answer, graph, q.domain),
            **agents,
            params=params,
            level=level,
            stop_mode=stop_mode,
        )
        s0 = sim.reset(seed=seed, initial=initial_state)
        run_id = store.runs.create(sim.run, graph_version_id=gv.id, lease_seconds=lease_seconds, batch_tag=batch_tag)
        sim.reset(seed=seed, initial=s0, run_id=run_id)
        return LiveRun(store, sim, run_id, leased=lease_seconds is not None)


def _stop_reason_of(run: RunRecord) -> str | None:
    """Why a stored run (with no stop recorded) had in fact already ended, if it had."""
    if not run.turns:
        return None
    last = run.turns[-1]
    if last.extractor_failed:
        return STOP_EXTRACTOR
    if last.user_done:  # the user had said goodbye: no further turn (as Simulation.step decides)
        return STOP_USER_DONE
    if dict(run.meta).get("stop_mode") == "real" and last.votes.fired:
        return last.votes.fired
    if len(run.turns) >= run.params.max_turns:
        return STOP_MAX_TURNS
    return None


def resume_run(
    store: Store, run_id: str, *, settings: Mapping[str, Any] | None = None, lease_seconds: float | None = None,
) -> LiveRun:
    """Continue an interrupted or failed run from its last completed turn.

    The run is claimed with ``store.runs.reopen``, which re-checks its status and turn count in
    the claiming transaction: of two concurrent resumes one wins, the other gets a StorageError.

    Raises:
        StorageError: unknown run, a finished run, an imported recording, a run another live
            process is still writing, or one that moved on while this resume was preparing.
    """
    with store.pinned():  # one connection for the checks, the load and the claim
        row = store.search.get_row(run_id)
        if row.status == "finished":  # the cheap early answer; reopen_run decides under the write lock
            raise StorageError(f"run {run_id} is already finished ({row.stop_reason}); nothing to resume")
        run = store.runs.load(run_id)
        if not run.domain:  # stored before runs recorded their domain: the question still knows it
            run = replace(run, domain=store.questions.get(run.question_id).domain)
        adapters = run.adapter
        try:
            agents = build_agents(store, {kind: adapters[kind] for kind in ("assistant", "user", "extractor")}, settings)
        except KeyError as exc:
            raise StorageError(f"run {run_id} does not record its {exc.args[0]} id; it cannot be resumed") from None
        store.runs.reopen(run_id, turns=len(run.turns), lease_seconds=lease_seconds)
        sim = Simulation.resume(run, **agents)
        live = LiveRun(store, sim, run_id, leased=lease_seconds is not None)
        stop = _stop_reason_of(run)
        if stop is not None:  # the writer died between its last turn and closing the run
            sim.end(stop)
            store.runs.finish(run_id, status="finished", stop_reason=stop)
        return live


# DEFAULT_USER / DEFAULT_EXTRACTOR are engine.config's, imported from here by the app, batch and tests
__all__ = ["LiveRun", "start_run", "resume_run", "DEFAULT_USER", "DEFAULT_EXTRACTOR"]


def ensure_question(store: Store, question_id: str) -> None:
    """Sample questions are seeded on first use, so a fresh database can run them at once."""
    try:
        store.questions.get(question_id)
    except StorageError:
        if not any(s.id == question_id for s in load_samples()):
            raise
        store.questions.seed_samples()
