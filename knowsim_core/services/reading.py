"""A KnowSim reading of a recorded conversation: the extractor and the rules, no model writing.

A real person's conversation with a tutor has no simulated state, but KnowSim can still *read*
it: start from the person's initial state, let the chosen extractor label every recorded turn
(teaching quality of the tutor's reply, the person's attempt), and apply the same rules a
simulation applies. The result is an ordinary :class:`RunRecord` — trajectory, KG / DC / CO,
failure modes, stop votes — so the Simulate, Runs and Failure views show it unchanged. Its
``meta`` says it is a reading (``kind = human-reading``) and the user adapter is ``human``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from knowsim_core.agents.registry import HUMAN_ID, RECORDED_PREFIX, spec_of
from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.engine.ports import ExtractorContext, Message, QuestionMaterial, SignalExtractor
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.session import derive_seed, play_turn
from knowsim_core.engine.signals import IUSignal
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.vocab import STOP_END_OF_RECORDING

# A reading rule: adjusts the extractor's labels of one turn from what the reading knows (the turn's
# context and the labels), e.g. :mod:`.reading_evidence`. None: the extractor's labels as they are.
Adjust = Callable[[ExtractorContext, tuple[IUSignal, ...]], tuple[IUSignal, ...]]

KIND_KEY = "kind"
HUMAN_READING = "human-reading"
NO_READING_KEY = "no_reading"  # meta: why a stored human conversation has no KnowSim reading
NO_REPLY_NOTE = "no recorded reply (null in the source): the tutor's side of this turn is empty"


def is_human_reading(run: RunRecord) -> bool:
    """True for a run that reads a recorded human conversation (not a simulation, nor a run where the
    researcher typed the user's side, whose user is ``human`` too)."""
    recorded = spec_of(run.adapter.get("assistant", "")).recorded  # ``recorded/<tutor model>``
    return dict(run.meta).get(KIND_KEY) == HUMAN_READING or recorded


def read_turns(
    material: QuestionMaterial,
    pairs: Sequence[tuple[str, str | None]],
    initial: KnowledgeState,
    *,
    extractor: SignalExtractor,
    params: RuleParams,
    seed: int = 0,
    turn_notes: Sequence[Sequence[str]] = (),
    adjust: Adjust | None = None,
) -> tuple[TurnRecord, ...]:
    """Turn records of the recorded (user message, reply) pairs, chained from ``initial``.

    A ``None`` reply is read as an empty tutor turn (nothing taught) and noted on the turn.
    ``turn_notes[i]`` adds notes to turn i+1 (e.g. "image-path message").
    """
    graph = material.graph
    tau = params.capacity(len(graph.nodes))
    state = initial
    history: list[Message] = []
    records: list[TurnRecord] = []
    for i, (user, reply) in enumerate(pairs):
        turn = i + 1
        answer = reply or ""
        ctx = ExtractorContext(
            turn=turn, material=material, state=state, history=tuple(history), user_message=user,
            assistant_message=answer, seed=derive_seed(seed, turn, "extractor"),
        )
        ex = extractor.extract(ctx)
        failed = ex.failed or not ex.entries
        entries = () if failed else (adjust(ctx, ex.entries) if adjust else ex.entries)
        rec = play_turn(
            graph, state, entries, turn=turn, tau=tau, params=params,
            history=[r.quantities for r in records], user_message=user, assistant_message=answer,
            extractor_failed=failed, usage=ex.usage,
        )
        extra = list(turn_notes[i]) if i < len(turn_notes) else []
        if reply is None:
            extra.insert(0, NO_REPLY_NOTE)
        if extra:
            rec = replace(rec, notes=(*extra, *rec.notes))
        records.append(rec)
        state = rec.state_after
        history += [Message("user", user), Message("assistant", answer)]
    return tuple(records)


def read_conversation(
    material: QuestionMaterial,
    pairs: Sequence[tuple[str, str | None]],
    initial: KnowledgeState,
    *,
    level: str,
    extractor: SignalExtractor,
    assistant_id: str,
    params: RuleParams | None = None,
    meta: Sequence[tuple[str, Any]] = (),
    turn_notes: Sequence[Sequence[str]] = (),
) -> RunRecord:
    """The whole reading as a run record (user ``human``, assistant ``assistant_id``)."""
    params = params or preset()
    turns = read_turns(material, pairs, initial, extractor=extractor, params=params, turn_notes=turn_notes)
    return RunRecord(
        question_id=material.question_id,
        question=material.question,
        reference_answer=material.reference_answer,
        graph=material.graph,
        level=level,
        initial_state=initial,
        tau=params.capacity(len(material.graph.nodes)),
        params=params,
        seed=0,
        adapters=(("assistant", assistant_id), ("user", HUMAN_ID), ("extractor", extractor.id)),
        turns=turns,
        stop_reason=STOP_END_OF_RECORDING,
        meta=((KIND_KEY, HUMAN_READING), ("stop_mode", "virtual"), *meta),
        domain=material.domain,
    )


def transcript_run(
    material: QuestionMaterial,
    pairs: Sequence[tuple[str, str | None]],
    *,
    level: str,
    assistant_id: str,
    reason: str,
    meta: Sequence[tuple[str, Any]] = (),
    turn_notes: Sequence[Sequence[str]] = (),
) -> RunRecord:
    """A recorded conversation kept without a KnowSim reading (e.g. its problem has no concepts):
    its messages (and so its judgments) are stored and shown, but ``material.graph`` has no IUs,
    so nothing is labelled and no IU moves; ``meta[no_reading]`` says why, and every view that
    reads metrics (agreement, realism) must skip such a run."""
    params = preset()
    graph = material.graph
    state = KnowledgeState.from_ids(graph, {})
    records: list[TurnRecord] = []
    for i, (user, reply) in enumerate(pairs):
        rec = play_turn(graph, state, (), turn=i + 1, tau=params.capacity(len(graph.nodes)), params=params,
                        history=[r.quantities for r in records], user_message=user, assistant_message=reply or "")
        extra = [f"no KnowSim reading: {reason}", *(turn_notes[i] if i < len(turn_notes) else ())]
        if reply is None:
            extra.insert(0, NO_REPLY_NOTE)
        records.append(replace(rec, notes=(*extra, *rec.notes)))
    return RunRecord(
        question_id=material.question_id, question=material.question, reference_answer="", graph=graph,
        level=level, initial_state=state, tau=params.capacity(len(graph.nodes)), params=params, seed=0,
        adapters=(("assistant", assistant_id), ("user", HUMAN_ID), ("extractor", "none")),
        turns=tuple(records), stop_reason=STOP_END_OF_RECORDING,
        meta=((KIND_KEY, HUMAN_READING), ("stop_mode", "virtual"), (NO_READING_KEY, reason), *meta),
    )


def has_reading(run: RunRecord) -> bool:
    """False for a stored conversation kept without a KnowSim reading (:func:`transcript_run`)."""
    return not dict(run.meta).get(NO_READING_KEY) and bool(run.graph.nodes)
