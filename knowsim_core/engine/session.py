"""The one stateful shell: :class:`Simulation` (reset / step), plus replay and what-if.

``Simulation`` drives user → assistant → extractor → rules for one turn and returns what happened
as data (Gymnasium's habit): a frozen :class:`TurnRecord`, or an :class:`Ending` saying how the
conversation ended and what the cut-short turn cost. Nothing here touches storage: playing a turn is
separate from storing it (``knowsim_core.services.runner``), so a turn can be played anywhere and
stored by whoever holds the database. :func:`replay` (and :func:`knowsim_core.engine.whatif.what_if`,
built on it) re-apply the pure rules to stored signals (no model call): a replayed, imported or
edited run is just a list of records.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.errors import ConfigError, ProviderError, SessionError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import (
    Assistant, AssistantContext, ExtractorContext, Message, QuestionMaterial, SignalExtractor, UserContext,
    UsageLedger, UserSimulator,
)
from knowsim_core.engine.records import Ending, RunRecord, TurnRecord, Usage
from knowsim_core.engine.rules import TurnQuantities, apply_turn, articulation_mode, overall_density
from knowsim_core.engine.signals import IUSignal, signal_warnings
from knowsim_core.engine.state import KnowledgeState, initial_state
from knowsim_core.engine.termination import stop_votes
from knowsim_core.vocab import (  # the stop reasons' words are the vocabulary's
    STOP_EMPTY_ASSISTANT, STOP_EMPTY_USER, STOP_EXTRACTOR, STOP_MAX_TURNS, STOP_USER_DONE, EndReason,
)



def derive_seed(seed: int, turn: int, role: str) -> int:
    """A stable per-call seed: the same run, turn and role always get the same number."""
    return zlib.crc32(f"{seed}:{turn}:{role}".encode())


def play_turn(
    graph: IUGraph,
    pre: KnowledgeState,
    signals: Sequence[IUSignal],
    *,
    turn: int,
    tau: int,
    params: RuleParams,
    history: Sequence[TurnQuantities] = (),
    user_message: str = "",
    assistant_message: str = "",
    user_attempt: bool | None = None,
    user_thought: str = "",
    extractor_failed: bool = False,
    usage: tuple[Usage, ...] = (),
    user_done: bool = False,
) -> TurnRecord:
    """Rules + failure modes + termination votes for one turn, as a record (pure)."""
    outcome = apply_turn(graph, pre, signals, tau=tau, params=params)
    votes = stop_votes(graph, [*history, outcome.quantities], outcome.state, params)
    notes = signal_warnings(signals, graph.index.ids)
    if extractor_failed:
        notes = ["the extractor returned no usable labels; every IU was treated as not mentioned", *notes]
    return TurnRecord(
        turn=turn,
        user_message=user_message,
        assistant_message=assistant_message,
        signals=tuple(signals),
        state_before=pre,
        state_after=outcome.state,
        nodes=outcome.nodes,
        quantities=outcome.quantities,
        modes=outcome.modes,
        votes=votes,
        user_attempt=user_attempt,
        user_thought=user_thought,
        extractor_failed=extractor_failed,
        notes=tuple(notes),
        usage=usage,
        user_done=user_done,
    )


def replay(
    run: RunRecord,
    *,
    params: RuleParams | None = None,
    graph: IUGraph | None = None,
    edits: Mapping[int, Sequence[IUSignal]] | None = None,
    from_turn: int = 1,
) -> RunRecord:
    """Re-apply the rules to the run's stored signals, chained from ``from_turn`` (1-based).

    Turns before ``from_turn`` are kept as recorded; ``edits`` replaces the signals of given turns.
    No model is called. ``graph`` must carry the run's own ids and labels (states are keyed by
    label); for another version of the graph use :func:`knowsim_core.engine.whatif.what_if_version`.
    """
    params = params or run.params
    graph = graph or run.graph
    edits = edits or {}
    if not 1 <= from_turn <= max(1, len(run.turns)):
        raise SessionError(f"from_turn must be between 1 and {len(run.turns)}, got {from_turn}")
    kept = list(run.turns[: from_turn - 1])
    state = kept[-1].state_after if kept else run.initial_state
    history = [t.quantities for t in kept]
    for old in run.turns[from_turn - 1 :]:
        signals = tuple(edits.get(old.turn, old.signals))
        rec = play_turn(
            graph, state, signals, turn=old.turn, tau=run.tau, params=params, history=history,
            user_message=old.user_message, assistant_message=old.assistant_message,
            user_attempt=old.user_attempt, user_thought=old.user_thought,
            extractor_failed=old.extractor_failed, usage=old.usage, user_done=old.user_done,
        )
        kept.append(rec)
        history.append(rec.quantities)
        state = rec.state_after
    return replace(run, turns=tuple(kept), graph=graph, params=params)


def user_context_of(run: RunRecord, material: QuestionMaterial, turn: int,
                    history: tuple[Message, ...]) -> UserContext:
    """The user's view before ``turn`` of a run whose ``turns`` are the ones played so far.

    One derivation for a live simulation and for realism, which replays a real conversation's
    first turns and asks each simulator for the person's next message from the same view.
    """
    graph = run.graph
    if run.turns:
        last = run.turns[-1].quantities
        density, mode = last.overall_density, last.articulation_mode
    else:
        s = {v: int(run.initial_state.state_of(graph.index.label_of[v])) for v in graph.index.ids}
        density = overall_density(graph, s)
        mode = articulation_mode(density)
    explained = sorted({lab for t in run.turns for lab in t.quantities.explained})
    states = [run.initial_state, *(t.state_after for t in run.turns)]
    stuck = (
        len(states) >= 2
        and states[-1] == states[-2]
        and any(e.state == 0 for e in states[-1].values())
    )
    hint = any(t.votes.persistent_overload for t in run.turns)
    return UserContext(
        turn=turn, material=material, history=history, state=run.final_state,
        density=density, articulation_mode=mode, explained=tuple(explained), stuck=stuck,
        stop_hint=hint, seed=derive_seed(run.seed, turn, "user"),
    )


class Simulation:
    """One simulated conversation: ``reset(seed=…)``, then ``step()`` until ``done``.

    Stop modes: ``"virtual"`` (paper runs: play all ``max_turns``, record where the stop rule
    fired) or ``"real"`` (end after the firing turn). In both, a user turn with ``terminate`` (a
    baseline or an LLM user that declares it is done) ends the run after that turn with
    :data:`STOP_USER_DONE` — the user's own judgement, kept apart from the rules' votes.
    """

    def __init__(
        self,
        *,
        material: QuestionMaterial,
        assistant: Assistant,
        user: UserSimulator,
        extractor: SignalExtractor,
        params: RuleParams | None = None,
        level: str = "novice",
        stop_mode: str = "virtual",
        on_turn: Callable[[TurnRecord], None] | None = None,
        ledger: UsageLedger | None = None,
    ):
        if stop_mode not in ("virtual", "real"):
            raise ConfigError(f"stop_mode must be 'virtual' or 'real', got {stop_mode!r}")
        material.graph.require_runnable()
        self.material = material
        self.assistant = assistant
        self.user = user
        self.extractor = extractor
        self.params = params or preset()
        self.level = level
        self.stop_mode = stop_mode
        self.on_turn = on_turn
        self._run: RunRecord | None = None
        self._ending: Ending | None = None
        # every model call of this run, recorded by the agents as it is made (see ports.UsageLedger)
        self.ledger = ledger if ledger is not None else UsageLedger()
        for agent in (assistant, user, extractor):
            bill_to = getattr(agent, "bill_to", None)
            if callable(bill_to):
                bill_to(self.ledger)

    # ------------------------------------------------------------------ lifecycle
    def reset(self, *, seed: int, initial: KnowledgeState | None = None, run_id: str | None = None) -> KnowledgeState:
        """Start a new conversation; s_0 is sampled from ``seed`` unless ``initial`` is given."""
        graph = self.material.graph
        s0 = initial if initial is not None else initial_state(graph, self.level, self.params, seed=seed)
        self._run = RunRecord(
            question_id=self.material.question_id,
            question=self.material.question,
            reference_answer=self.material.reference_answer,
            graph=graph,
            level=self.level,
            initial_state=s0,
            tau=self.params.capacity(len(graph.nodes)),
            params=self.params,
            seed=seed,
            adapters=(
                ("assistant", self.assistant.id),
                ("user", self.user.id),
                ("extractor", self.extractor.id),
            ),
            run_id=run_id,
            meta=(("stop_mode", self.stop_mode), *self._agent_settings()),
            domain=self.material.domain,
        )
        self._ending = None
        return s0

    def _agent_settings(self) -> tuple[tuple[str, str], ...]:
        """Model ids, prompt versions and sampling of agents that describe themselves (LLM agents)."""
        described = {
            role: agent.describe()
            for role, agent in (("assistant", self.assistant), ("user", self.user), ("extractor", self.extractor))
            if callable(getattr(agent, "describe", None))
        }
        return (("agents", json.dumps(described, sort_keys=True)),) if described else ()

    def end(self, stop_reason: str) -> Ending:
        """Mark the conversation as over (e.g. a stored run found already complete); its ending."""
        self._run = replace(self.run, stop_reason=stop_reason)
        self._ending = Ending(EndReason.STOPPED, stop_reason)
        return self._ending

    @classmethod
    def resume(cls, run: RunRecord, **kwargs) -> "Simulation":
        """Continue a stored run from its last completed turn (same seed, same adapters)."""
        sim = cls(
            material=QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph, run.domain),
            params=run.params,
            level=run.level,
            stop_mode=dict(run.meta).get("stop_mode", "virtual"),
            **kwargs,
        )
        sim._run = replace(run, stop_reason=None)
        sim._ending = None
        return sim

    @property
    def run(self) -> RunRecord:
        if self._run is None:
            raise SessionError("call reset(seed=...) before using the simulation")
        return self._run

    @property
    def records(self) -> tuple[TurnRecord, ...]:
        return self.run.turns

    @property
    def state(self) -> KnowledgeState:
        return self.run.final_state

    @property
    def done(self) -> bool:
        """The conversation is over (its ``stop_reason`` is set); a failed model call leaves it open."""
        return self.run.stop_reason is not None

    @property
    def ending(self) -> Ending | None:
        """How the conversation ended once it is over, else None."""
        if self._ending is None and self.done:
            self._ending = Ending(EndReason.STOPPED, self.run.stop_reason)
        return self._ending

    # ------------------------------------------------------------------ one turn
    def user_context(self, turn: int, history: tuple[Message, ...]) -> UserContext:
        """What the user agent is given for ``turn`` (see :func:`user_context_of`)."""
        return user_context_of(self.run, self.material, turn, history)

    def history(self) -> tuple[Message, ...]:
        msgs: list[Message] = []
        for t in self.run.turns:
            msgs.append(Message("user", t.user_message))
            msgs.append(Message("assistant", t.assistant_message))
        return tuple(msgs)

    def step(self) -> TurnRecord | Ending:
        """Play one turn: user, assistant, extractor, rules. Returns the turn's record, or how the
        conversation ended instead of a turn:

        * ``STOPPED`` — an agent wrote an empty message (the run is over with that stop reason), or
          the conversation was already over (its ending again);
        * ``PROVIDER_ERROR`` — a model call failed; completed turns are kept and ``step()`` plays
          the same turn again.

        Either way the ending's ``spent`` holds the calls billed in the cut-short turn. A turn that
        completes records the calls made for it (``usage``), the last turn sets :attr:`ending`.

        Raises:
            SessionError: before reset(); anything an agent raises besides ProviderError (a bug, a
                typed side with nothing typed, Ctrl-C) propagates, and what it had billed stays in
                :attr:`ledger` for whoever closes the run.
        """
        run = self.run
        if self.ending is not None:
            return self.ending
        turn = len(run.turns) + 1
        prior = self.history()
        try:
            u = self.user.respond(self.user_context(turn, prior))
            if not u.message.strip():
                return self._over(STOP_EMPTY_USER, "the simulated user returned an empty message; the run was stopped")
            with_user = (*prior, Message("user", u.message))
            a = self.assistant.reply(
                AssistantContext(
                    turn=turn, material=self.material, history=with_user,
                    seed=derive_seed(run.seed, turn, "assistant"),
                    state=run.final_state if getattr(self.assistant, "reads_state", False) else None,
                    params=run.params if getattr(self.assistant, "reads_state", False) else None,
                )
            )
            if not a.message.strip():
                return self._over(STOP_EMPTY_ASSISTANT, "the assistant returned an empty message; the run was stopped")
            ex = self.extractor.extract(
                ExtractorContext(
                    turn=turn, material=self.material, state=run.final_state, history=prior,
                    user_message=u.message, assistant_message=a.message,
                    seed=derive_seed(run.seed, turn, "extractor"),
                )
            )
        except ProviderError as exc:  # the service failed, not the simulation: an ending, retryable
            return Ending(EndReason.PROVIDER_ERROR, error=str(exc), spent=self.ledger.take())
        failed = ex.failed or not ex.entries
        rec = play_turn(
            run.graph, run.final_state, () if failed else ex.entries, turn=turn, tau=run.tau,
            params=run.params, history=[t.quantities for t in run.turns],
            user_message=u.message, assistant_message=a.message, user_attempt=u.attempt,
            user_thought=u.thought, extractor_failed=failed, usage=self.ledger.take(),
            user_done=bool(u.terminate),
        )
        if failed and ex.error:  # why: kept with the turn (the note above says only that it failed)
            rec = replace(rec, notes=(*rec.notes, f"extractor: {ex.error}"))
        stop = None
        if failed:
            stop = STOP_EXTRACTOR
        elif u.terminate:  # in either stop mode: a user who has said goodbye writes no further turn
            stop = STOP_USER_DONE
        elif self.stop_mode == "real" and rec.votes.fired:
            stop = rec.votes.fired
        elif turn >= run.params.max_turns:
            stop = STOP_MAX_TURNS
        self._run = replace(run, turns=run.turns + (rec,), stop_reason=stop)
        if self.on_turn is not None:
            self.on_turn(rec)
        return rec

    def _over(self, stop_reason: str, error: str) -> Ending:
        """The conversation ends without this turn (an empty message): over, with what the turn spent."""
        self._run = replace(self.run, stop_reason=stop_reason)
        self._ending = Ending(EndReason.STOPPED, stop_reason, error, spent=self.ledger.take())
        return self._ending

    def run_to_end(self) -> RunRecord:
        """Step until the conversation ends (offline matrices, no storage); the run as it stands.

        A failed model call ends this too (the run is returned unfinished: ``done`` is False)."""
        while not isinstance(self.step(), Ending):
            pass
        return self.run
