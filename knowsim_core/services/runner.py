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
session went away is left ``open`` once it lapses (its lease released, its metrics so far stored),
for Simulate to play on later. Command-line runs hold no lease.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from knowsim_core import llm
from knowsim_core.agents import registry
from knowsim_core.engine.config import DEFAULT_EXTRACTOR, DEFAULT_USER, LEVELS, RuleParams, preset as get_preset
from knowsim_core.errors import ConfigError, ProviderError, SessionError, StorageError
from knowsim_core.engine.metrics import Metrics
from knowsim_core.engine.ports import QuestionMaterial
from knowsim_core.engine.records import Ending, RunRecord, TurnRecord
from knowsim_core.engine.session import STOP_EXTRACTOR, STOP_MAX_TURNS, STOP_USER_DONE, Simulation
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.formats.samples import load_samples
from knowsim_core.storage import Store
from knowsim_core.storage.runs import Closing, StoredTurn
from knowsim_core.services.play import STOPPED_BY_USER, play, status_of
from knowsim_core.vocab import EndReason, RunStatus

LEASE_LAPSED_ERROR = ("run {} is no longer held by this session (it was idle too long and its hold was "
                      "released); play on to claim it again")

CUSTOM_LEVEL = "custom"  # a hand-set initial state rather than a level's ratios
AGENT_KINDS = registry.CONVERSATION_ROLES  # the agents a run records and is played by


def _llm_defaults(store: Store | None) -> dict[str, Any]:
    """Settings for LLM agents when the caller gives none: the environment, and the store as cache."""
    settings = llm.LLMSettings.from_env()  # the LLM layer loads here: offline runs never need it
    return {"settings": settings, "cache": store.caches if settings.cache_enabled and store is not None else None}


def build_agents(
    store: Store | None, ids: Mapping[str, str], settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Build assistant, user and extractor by id; LLM ids get ``settings`` (default: env + the
    store as cache; a process without the database, a cluster's worker, passes its own)."""
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
# leased runs, are written before step() returns.
BUFFER_TURNS = 16
BUFFER_SECONDS = 0.5


class RunWriter:
    """The storing half of a run's life: what a conversation's play reports — each turn, then its
    ending — written to one stored run. It holds no agents and plays nothing, so the turns may be
    played anywhere (this process's :class:`Simulation`, or another machine's) and stored here.

    ``buffered`` (chosen when the run is built: a whole conversation played in one go, such as the
    ``run`` command's or a batch's) lets the turns of a run whose agents call no model wait in memory
    (up to :data:`BUFFER_TURNS` / :data:`BUFFER_SECONDS`) and go to the database with the next ones,
    the last of them in the transaction that closes the run. ``on_close`` is called inside that
    closing transaction, for the caller's own bookkeeping to commit with it (a batch releases the
    cell's claim there); if the transaction fails, neither is stored.
    """

    def __init__(self, store: Store, run_id: str, *, buffered: bool = False,
                 on_close: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.run_id = run_id
        self.buffered = buffered
        self.on_close = on_close
        self.ending: Ending | None = None  # how the run was closed (None while it is open)
        self._pending: list[TurnRecord | StoredTurn] = []
        self._latest: RunRecord | None = None  # the run as played with the pending turns
        self._since = 0.0
        self._clock = clock

    def turn(self, rec: TurnRecord | StoredTurn, run: RunRecord | None = None) -> None:
        """Store ``rec`` (the run's next turn), now or with the next ones when buffered; a
        :class:`~knowsim_core.storage.runs.StoredTurn` was packed where it was played. ``run``: the
        run as played with it (an open run's metrics so far are stored from it)."""
        if not self._pending:
            self._since = self._clock()
        self._pending.append(rec)
        self._latest = run
        if not self.buffered or len(self._pending) >= BUFFER_TURNS or self._clock() - self._since >= BUFFER_SECONDS:
            self._write(None)

    def end(self, ending: Ending, run: RunRecord | None, metrics: Metrics | None = None) -> Ending:
        """Close the run as ``ending`` says (:func:`~knowsim_core.services.play.status_of`), with the
        turns still buffered and the calls the ending spent; ``run``: the run as played, or ``metrics``:
        its metrics computed where it was played (either spares reading its turns back). A lapsed lease
        writes only what it spent: the run was settled (left open) where the lapse was noticed."""
        if self.ending is None:
            if ending.reason == EndReason.LEASE_LAPSED:  # closed where it lapsed: only what it cost is added
                self._pending.clear()
                if ending.spent:
                    self.store.runs.add_spent(self.run_id, ending.spent)
            else:
                status = status_of(ending)
                stop = ending.stop_reason if status == RunStatus.FINISHED else None
                self._write(Closing(status, stop, ending.error, run, ending.spent, metrics))
            self.ending = ending  # once stored: a close that failed leaves the run open
        return self.ending

    def flush(self) -> None:
        """Write the turns still buffered (nothing when none are)."""
        self._write(None)

    def _write(self, close: Closing | None) -> None:
        if not self._pending and close is None:
            return
        with self.store.pinned():  # the close reads the turns written in the same transaction
            self.store.runs.append_turns(self.run_id, self._pending, close=close,
                                         then=self.on_close if close is not None else None, record=self._latest)
        self._pending = []


class LiveRun:
    """A stored run being played here: a :class:`Simulation` (the play) and a :class:`RunWriter`
    (the storing). ``step()`` plays one turn and stores it; every way a step ends is stored before
    it returns, and returned as data (:class:`Ending`) — except a bug in an agent, a typed side with
    nothing typed, or Ctrl-C, which close the run (failed / interrupted, with what the turn had
    billed) and propagate. :func:`knowsim_core.services.play.play` is the loop over it.
    """

    def __init__(self, store: Store, sim: Simulation, run_id: str, *, leased: bool = False, buffered: bool = False,
                 on_close: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.sim = sim
        self.run_id = run_id
        self.leased = leased  # the app's runs: renew the lease before each step
        offline = not any(registry.spec_of(agent_id).needs_model for agent_id in sim.run.adapter.values())
        # only an offline conversation's turns may wait: a model's turns cost money to play again
        self.writer = RunWriter(store, run_id, buffered=buffered and offline and not leased, on_close=on_close,
                                clock=clock)

    @property
    def run(self) -> RunRecord:
        return self.sim.run

    @property
    def done(self) -> bool:
        """The conversation is over (a resume has nothing to play)."""
        return self.sim.done

    @property
    def ending(self) -> Ending | None:
        """How this run was closed here (None while it is open)."""
        return self.writer.ending

    @property
    def closed(self) -> bool:
        return self.writer.ending is not None

    def step(self) -> TurnRecord | Ending:
        """Play the next turn and store it; returns its record, or the run's ending (stored).

        Once closed, the ending again (a failed run is played on by resuming it: ``resume_run``).
        """
        if self.writer.ending is not None:
            return self.writer.ending
        with self.store.pinned():  # one connection for the lease, the step's reads and its writes
            if self.leased and not self.hold():
                return self.writer.ending  # type: ignore[return-value]  # hold() closed it
            try:
                result = self.sim.step()
            except SessionError:  # nothing was played (a typed side with nothing typed): the run stays open
                self.writer.flush()
                raise
            except KeyboardInterrupt:
                self.end(Ending(EndReason.STOP_REQUESTED, error=STOPPED_BY_USER))
                raise
            except Exception as exc:  # a bug in an agent: keep the evidence (and what it cost), then surface it
                self.end(Ending(EndReason.AGENT_ERROR, error=f"{type(exc).__name__}: {exc}"))
                raise
            if isinstance(result, Ending):
                return self.writer.end(result, self.sim.run)
            self.writer.turn(result, self.sim.run)
            if self.sim.done:
                self.writer.end(self.sim.ending, self.sim.run)
        return result

    def hold(self, seconds: float | None = None) -> bool:
        """Renew the run's lease (``seconds``: its new length); False when it lapsed and the run was
        released elsewhere — the run is then closed here as ``LEASE_LAPSED``, with the calls
        its ledger still holds (a learner's message asked for but never answered) added to its cost."""
        if self.writer.ending is None and self.store.runs.renew_lease(self.run_id, seconds=seconds):
            return True
        if self.writer.ending is None:
            self.end(Ending(EndReason.LEASE_LAPSED, error=LEASE_LAPSED_ERROR.format(self.run_id)))
        return False

    def end(self, ending: Ending) -> Ending:
        """Close the run as ``ending`` says, adding whatever the run's ledger still holds (calls of
        a turn that did not complete) to what the ending spent."""
        spent = self.sim.ledger.take()
        if spent:
            ending = replace(ending, spent=(*ending.spent, *spent))
        return self.writer.end(ending, self.sim.run)

    def interrupt(self, error: str) -> Ending:
        """Stop before the next turn (a batch's stop): the run is closed ``interrupted``, resumable."""
        return self.end(Ending(EndReason.STOP_REQUESTED, error=error))

    def flush(self) -> None:
        """Write the turns still buffered."""
        self.writer.flush()

    def run_to_end(self, progress: Callable[[TurnRecord], None] | None = None) -> RunRecord:
        """Play until the run ends (:func:`~knowsim_core.services.play.play`); the run as stored.

        Raises:
            ProviderError: a model call failed (the run is stored ``failed``, resumable).
        """
        ending = play(self, on_turn=progress)
        if ending.reason == EndReason.PROVIDER_ERROR:
            raise ProviderError(ending.error)
        return self.run


@dataclass(frozen=True)
class RunSetup:
    """A new run as :func:`start_run` reads it from the store, before any agent is built: the
    question's material, the rules, the level, the seed, s_0 when it is fixed (given, or the level's
    stored canonical state) and the agents' ids. Plain data that pickles, so the agents can be built
    and the run played in another process — a cluster's worker, with its own keys — while the
    process that holds the database stores what is played."""

    material: QuestionMaterial
    params: RuleParams
    level: str
    seed: int
    initial: KnowledgeState | None  # None: sampled from the seed when the simulation is reset
    stop_mode: str
    agent_ids: tuple[tuple[str, str], ...]  # (kind, id): assistant, user, extractor
    graph_version_id: int

    def simulation(self, agents: Mapping[str, Any]) -> Simulation:
        """A :class:`Simulation` of this setup over ``agents`` (built from :attr:`agent_ids`), reset
        to its first turn (no run id yet: the store gives one when the run is created)."""
        sim = Simulation(material=self.material, **agents, params=self.params, level=self.level,
                         stop_mode=self.stop_mode)
        sim.reset(seed=self.seed, initial=self.initial)
        return sim


def prepare_run(
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
) -> RunSetup:
    """Read and check everything a new run needs from the store (no agent is built, nothing is
    written): the graph is the given version or the question's latest; s_0 is ``initial_state``,
    else the stored canonical state for the level (when it names exactly this graph's IUs), else
    left to the seed.

    Raises:
        StorageError: unknown question / graph version, or a question without a graph.
        ConfigError: unknown level or preset, or an initial state that does not fit the graph.
    """
    if level == CUSTOM_LEVEL and initial_state is None:
        raise ConfigError("level 'custom' needs the initial state to start from")
    if level not in LEVELS and level != CUSTOM_LEVEL:
        raise ConfigError(f"unknown knowledge level {level!r}; expected one of {', '.join(LEVELS)} or custom")
    with store.pinned():  # one connection for the setup's reads
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
    return RunSetup(QuestionMaterial(q.id, q.text, q.reference_answer, graph, q.domain), params, level, seed,
                    initial_state, stop_mode,
                    (("assistant", assistant_id), ("user", user_id), ("extractor", extractor_id)), gv.id)


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
    buffered: bool = False,
    on_close: Callable[[], None] | None = None,
) -> LiveRun:
    """Create a stored run (status ``running``) ready to be stepped: :func:`prepare_run`'s setup,
    its agents built here.

    ``lease_seconds``: hold the run under a lease of that length (the app; see the module docstring).
    ``buffered`` / ``on_close``: how its turns are written (see :class:`RunWriter`).

    Raises:
        StorageError: unknown question / graph version, or a question without a graph.
        ConfigError: unknown level, preset or agent id.
    """
    with store.pinned():  # one connection for the setup's reads and the run's creation
        setup = prepare_run(store, question_id=question_id, level=level, assistant_id=assistant_id, user_id=user_id,
                            extractor_id=extractor_id, seed=seed, preset=preset, max_turns=max_turns,
                            graph_version_id=graph_version_id, initial_state=initial_state, stop_mode=stop_mode)
        sim = setup.simulation(build_agents(store, dict(setup.agent_ids), settings))
        run_id = store.runs.create(sim.run, graph_version_id=setup.graph_version_id, lease_seconds=lease_seconds,
                                   batch_tag=batch_tag)
        sim.reset(seed=seed, initial=sim.run.initial_state, run_id=run_id)
        return LiveRun(store, sim, run_id, leased=lease_seconds is not None, buffered=buffered, on_close=on_close)


def stop_reason_of(run: RunRecord) -> str | None:
    """Why a stored run (with no stop recorded) had in fact already ended, if it had: its writer
    died between its last turn and closing it."""
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


def load_to_resume(store: Store, run_id: str) -> RunRecord:
    """An interrupted or failed run as stored, checked for resuming (not yet claimed: that is
    ``store.runs.reopen``, with the number of turns loaded here).

    Raises:
        StorageError: unknown run, a finished run, or a run that does not record its agents.
    """
    with store.pinned():
        row = store.search.get_row(run_id)
        if row.status == RunStatus.FINISHED:  # the cheap early answer; reopen decides under the write lock
            raise StorageError(f"run {run_id} is already finished ({row.stop_reason}); nothing to resume")
        run = store.runs.load(run_id)
        if not run.domain:  # stored before runs recorded their domain: the question still knows it
            run = replace(run, domain=store.questions.get(run.question_id).domain)
    missing = [kind for kind in AGENT_KINDS if kind not in run.adapter]
    if missing:
        raise StorageError(f"run {run_id} does not record its {missing[0]} id; it cannot be resumed")
    return run


def resume_run(
    store: Store, run_id: str, *, settings: Mapping[str, Any] | None = None, lease_seconds: float | None = None,
    buffered: bool = False, on_close: Callable[[], None] | None = None,
) -> LiveRun:
    """Continue an interrupted or failed run from its last completed turn (``buffered`` /
    ``on_close``: as :func:`start_run`).

    The run is claimed with ``store.runs.reopen``, which re-checks its status and turn count in
    the claiming transaction: of two concurrent resumes one wins, the other gets a StorageError.

    Raises:
        StorageError: unknown run, a finished run, an imported recording, a run another live
            process is still writing, or one that moved on while this resume was preparing.
    """
    with store.pinned():  # one connection for the checks, the load and the claim
        run = load_to_resume(store, run_id)
        agents = build_agents(store, {kind: run.adapter[kind] for kind in AGENT_KINDS}, settings)
        store.runs.reopen(run_id, turns=len(run.turns), lease_seconds=lease_seconds)
        sim = Simulation.resume(run, **agents)
        live = LiveRun(store, sim, run_id, leased=lease_seconds is not None, buffered=buffered, on_close=on_close)
        stop = stop_reason_of(run)
        if stop is not None:  # the writer died between its last turn and closing the run
            live.writer.end(sim.end(stop), sim.run)
        return live


# DEFAULT_USER / DEFAULT_EXTRACTOR are engine.config's, imported from here by the app, batch and tests
__all__ = ["LiveRun", "RunSetup", "RunWriter", "build_agents", "load_to_resume", "prepare_run", "resume_run",
           "start_run", "status_of", "stop_reason_of", "DEFAULT_USER", "DEFAULT_EXTRACTOR"]


def ensure_question(store: Store, question_id: str) -> None:
    """Sample questions are seeded on first use, so a fresh database can run them at once."""
    try:
        store.questions.get(question_id)
    except StorageError:
        if not any(s.id == question_id for s in load_samples()):
            raise
        store.questions.seed_samples()
