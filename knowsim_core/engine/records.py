"""Frozen, versioned turn and run records with an exact JSON round-trip.

A :class:`TurnRecord` holds everything a viewer needs about one turn — messages, signals, state
before and after, per-IU ceilings / proposals / efficiencies / carries, load parts, η, failure
modes, termination votes, model usage — so the Studio renders stored, replayed and imported runs
with the same code. ``from_data(to_data(r)) == r`` for every record (a property test checks it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from knowsim_core.engine.agent_id import HUMAN_ID, RECORDED_PREFIX  # the ids a record may carry that no agent plays
from knowsim_core.engine.config import RuleParams
from knowsim_core.errors import FormatError
from knowsim_core.engine.failures import FailureMode, count_modes
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.metrics import REFERENCE_RUN_SOURCE, Metrics, legacy_proxy_dc, reference_metrics, summary
from knowsim_core.engine.rules import NodeTurn, TurnQuantities
from knowsim_core.engine.signals import AttemptType, IUSignal
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState
from knowsim_core.engine.termination import StopVotes, first_stop
from knowsim_core.vocab import EndReason

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Usage:
    """One model call's accounting (offline adapters report none)."""

    role: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    # calls billed whose token counts could not be read (a 200 whose body was unusable): counted
    # here, in neither the tokens nor the cost
    unknown_calls: int = 0


@dataclass(frozen=True, slots=True)
class Ending:
    """How a conversation's play ended, as data (what ``Simulation.step`` returns instead of a turn).

    ``reason``: :class:`~knowsim_core.vocab.EndReason`; ``stop_reason``: the run's stop reason
    when the conversation is over (``STOPPED``); ``error``: what went wrong or who stopped it;
    ``spent``: model calls billed in a turn that did not complete (no turn record holds them).
    """

    reason: EndReason  # compared with ==: a reason sent as its string (from another process) is the same
    stop_reason: str | None = None
    error: str = ""
    spent: tuple[Usage, ...] = ()

    @property
    def over(self) -> bool:
        """The conversation is over (nothing to resume), rather than cut short."""
        return self.reason == EndReason.STOPPED


@dataclass(frozen=True, slots=True)
class TurnRecord:
    turn: int
    user_message: str
    assistant_message: str
    signals: tuple[IUSignal, ...]
    state_before: KnowledgeState
    state_after: KnowledgeState
    nodes: tuple[NodeTurn, ...]
    quantities: TurnQuantities
    modes: tuple[tuple[str, FailureMode], ...]
    votes: StopVotes
    user_attempt: bool | None = None
    user_thought: str = ""
    extractor_failed: bool = False
    notes: tuple[str, ...] = ()
    usage: tuple[Usage, ...] = ()
    schema_version: int = SCHEMA_VERSION
    user_done: bool = False  # the user declared the conversation over in this turn (stop ``user_done``)

    @property
    def transitions(self) -> tuple[tuple[str, IUState, IUState], ...]:
        """(id, before, after) of every IU that moved up this turn."""
        return tuple((n.id, n.pre, n.post) for n in self.nodes if n.post > n.pre)

    def mode_counts(self) -> dict[FailureMode, int]:
        return count_modes(self.modes)

    def node(self, node_id: str) -> NodeTurn:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    # ------------------------------------------------------------------ JSON
    def to_data(self) -> dict[str, Any]:
        data = {
            "schema_version": self.schema_version,
            "turn": self.turn,
            "user_message": self.user_message,
            "assistant_message": self.assistant_message,
            "user_attempt": self.user_attempt,
            "user_thought": self.user_thought,
            "extractor_failed": self.extractor_failed,
            "signals": [_signal_data(s) for s in self.signals],
            "state_before": _state_data(self.state_before),
            "state_after": _state_data(self.state_after),
            "nodes": [_node_data(n) for n in self.nodes],
            "quantities": _dc_data(self.quantities),
            "modes": [[i, m.value] for i, m in self.modes],
            "votes": _dc_data(self.votes),
            "notes": list(self.notes),
            # unknown_calls is written only when set: records without it read as before
            "usage": [{k: v for k, v in _dc_data(u).items() if k != "unknown_calls" or v} for u in self.usage],
        }
        if self.user_done:  # written only when set: records without it read as before
            data["user_done"] = True
        return data

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> "TurnRecord":
        try:
            version = d.get("schema_version", SCHEMA_VERSION)
            if version > SCHEMA_VERSION:
                raise FormatError(
                    f"turn record schema {version} is newer than this Studio ({SCHEMA_VERSION}); "
                    "upgrade KnowSim Studio to read it"
                )
            q = dict(d["quantities"])
            q["explained"] = tuple(q["explained"])
            v = dict(d["votes"])
            v["window"] = tuple(v["window"])
            return cls(
                turn=int(d["turn"]),
                user_message=d["user_message"],
                assistant_message=d["assistant_message"],
                user_attempt=d.get("user_attempt"),
                user_thought=d.get("user_thought", ""),
                extractor_failed=bool(d.get("extractor_failed", False)),
                signals=tuple(_signal_from(s) for s in d["signals"]),
                state_before=_state_from(d["state_before"]),
                state_after=_state_from(d["state_after"]),
                nodes=tuple(_node_from(n) for n in d["nodes"]),
                quantities=TurnQuantities(**q),
                modes=tuple((i, FailureMode(m)) for i, m in d["modes"]),
                votes=StopVotes(**v),
                notes=tuple(d.get("notes", ())),
                usage=tuple(Usage(**u) for u in d.get("usage", ())),
                schema_version=version,
                user_done=bool(d.get("user_done", False)),
            )
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"not a KnowSim turn record ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One conversation: its setup and its turn records."""

    question_id: str
    question: str
    reference_answer: str
    graph: IUGraph
    level: str
    initial_state: KnowledgeState
    tau: int
    params: RuleParams
    seed: int
    adapters: tuple[tuple[str, str], ...]  # (role, adapter id): assistant, user, extractor
    turns: tuple[TurnRecord, ...] = ()
    stop_reason: str | None = None
    run_id: str | None = None
    meta: tuple[tuple[str, Any], ...] = field(default=())  # JSON scalars only (e.g. source)
    # The question's domain ("math", "expert", …): the assistant's system prompt depends on it, so a
    # resumed run must not fall back to a default. Records written before it existed read as "".
    domain: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def final_state(self) -> KnowledgeState:
        return self.turns[-1].state_after if self.turns else self.initial_state

    @property
    def adapter(self) -> dict[str, str]:
        return dict(self.adapters)

    @property
    def virtual_stop(self) -> tuple[int | None, str | None]:
        return first_stop([t.votes for t in self.turns])

    def metrics(self) -> Metrics:
        return summary(self.initial_state, self.final_state, [t.quantities for t in self.turns])

    def reference_metrics(self, *, legacy_proxy: bool = False) -> dict[str, Any]:
        return reference_metrics(
            self.initial_state, self.final_state, [t.quantities for t in self.turns], legacy_proxy=legacy_proxy
        )

    def with_turns(self, turns: tuple[TurnRecord, ...], stop_reason: str | None = None) -> "RunRecord":
        return replace(self, turns=turns, stop_reason=stop_reason)

    # ------------------------------------------------------------------ JSON
    def to_data(self) -> dict[str, Any]:
        return {
            "format": "knowsim-studio-run",
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "question_id": self.question_id,
            "question": self.question,
            "reference_answer": self.reference_answer,
            "domain": self.domain,
            "graph": self.graph.to_data(),
            "level": self.level,
            "initial_state": _state_data(self.initial_state),
            "tau": self.tau,
            "params": self.params.model_dump(mode="json"),
            "seed": self.seed,
            "adapters": dict(self.adapters),
            "stop_reason": self.stop_reason,
            "meta": dict(self.meta),
            "metrics": self.metrics().to_data(),
            "turns": [t.to_data() for t in self.turns],
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_data(), ensure_ascii=False, **kw)

    @classmethod
    def from_data(cls, d: Any) -> "RunRecord":
        if not isinstance(d, dict) or d.get("format") != "knowsim-studio-run":
            raise FormatError("not a KnowSim Studio run file (expected \"format\": \"knowsim-studio-run\")")
        version = d.get("schema_version", SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise FormatError(
                f"run file schema {version} is newer than this Studio ({SCHEMA_VERSION}); upgrade to read it"
            )
        try:
            return cls(
                run_id=d.get("run_id"),
                question_id=d["question_id"],
                question=d["question"],
                reference_answer=d.get("reference_answer", ""),
                graph=IUGraph.from_data(d["graph"]),
                level=d["level"],
                initial_state=_state_from(d["initial_state"]),
                tau=int(d["tau"]),
                params=RuleParams.model_validate(d["params"]),
                seed=int(d["seed"]),
                adapters=tuple(d.get("adapters", {}).items()),
                turns=tuple(TurnRecord.from_data(t) for t in d.get("turns", ())),
                stop_reason=d.get("stop_reason"),
                meta=tuple(d.get("meta", {}).items()),
                domain=str(d.get("domain") or ""),
                schema_version=version,
            )
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"run file is incomplete or damaged ({type(exc).__name__}: {exc})") from None

    @classmethod
    def from_json(cls, text: str) -> "RunRecord":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(f"run file is not valid JSON (line {exc.lineno}: {exc.msg}); was it truncated?") from None
        return cls.from_data(data)


# ---------------------------------------------------------------------- helpers
def _dc_data(obj: Any) -> dict[str, Any]:
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


def _state_data(s: KnowledgeState) -> list[list[Any]]:
    # a list keeps key order and the absent/None distinction explicit
    return [[lab, int(e.state), e.carry, e.evidence] for lab, e in s.items()]


def _state_from(d: Any) -> KnowledgeState:
    if isinstance(d, dict):
        return KnowledgeState.from_data(d)
    return KnowledgeState({lab: LabelState(IUState(st), carry, ev) for lab, st, carry, ev in d})


def _signal_data(s: IUSignal) -> dict[str, Any]:
    return {
        "id": s.id,
        "teaching_quality": s.teaching_quality,
        "attempt": s.attempt.value,
        "concept": s.concept,
        "reasoning": s.reasoning,
        "attempt_reasoning": s.attempt_reasoning,
        "response_role": s.response_role,
    }


def _signal_from(d: Mapping[str, Any]) -> IUSignal:
    return IUSignal(
        id=d["id"],
        teaching_quality=d["teaching_quality"],
        attempt=AttemptType(d["attempt"]),
        concept=d.get("concept", ""),
        reasoning=d.get("reasoning"),
        attempt_reasoning=d.get("attempt_reasoning", ""),
        response_role=d.get("response_role"),
    )


def _node_data(n: NodeTurn) -> list[Any]:
    return [
        n.id, n.label, int(n.pre), int(n.ceiling_pre), int(n.ceiling), n.quality, n.attempt.value,
        int(n.proposed), n.efficiency, n.prior_carry, int(n.post), n.carry,
    ]


def _node_from(d: list[Any]) -> NodeTurn:
    i, lab, pre, cp, c, q, a, prop, e, prior, post, carry = d
    return NodeTurn(
        i, lab, IUState(pre), IUState(cp), IUState(c), q, AttemptType(a), IUState(prop), e, prior,
        IUState(post), carry,
    )


def recorded_proxy_dc(run: RunRecord, turns: int | None = None) -> float | None:
    """The proxy DC to show beside strict DC, over the first ``turns`` turns (default: all).

    Only for a run that came from a reference recording, whose own ``metrics`` carry the proxy
    value; a Studio run has no recorded value to explain, so it gets None.
    """
    if dict(run.meta).get("source") != REFERENCE_RUN_SOURCE:
        return None
    return legacy_proxy_dc([t.quantities for t in run.turns[:turns]])
