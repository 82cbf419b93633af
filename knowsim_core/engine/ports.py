"""The small protocols every agent implements, and the contexts they are given.

One method each. The assistant sees only the visible conversation and the question's material —
never the simulated user's hidden state — unless it declares ``reads_state = True`` (the offline
oracle, labelled as an upper bound; it also gets the run's rule parameters). Randomness comes in
as a per-call ``seed`` derived from the run's seed, so a rewound or resumed run regenerates
exactly the same turn.

**Billing.** An agent that calls a billed model implements ``bill_to(ledger)``: the
:class:`~knowsim_core.engine.session.Simulation` hands it the run's :class:`UsageLedger`, and the
agent records every call there when it is made — a call billed in a turn that never completes is
in the ledger all the same, so no cost has to travel on an exception. The ``usage`` of a reply is
for callers that play an agent outside a run (a judge, a relabel); a run reads its ledger.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import Usage
from knowsim_core.engine.signals import IUSignal
from knowsim_core.engine.state import IUState, KnowledgeState

if TYPE_CHECKING:
    from knowsim_core.engine.config import RuleParams
    from knowsim_core.engine.records import RunRecord


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "user" | "assistant"
    text: str


@dataclass(frozen=True, slots=True)
class QuestionMaterial:
    """What every agent may know about the item: the question, its answer and its IU graph."""

    question_id: str
    question: str
    reference_answer: str
    graph: IUGraph
    domain: str = ""


@dataclass(frozen=True, slots=True)
class UserContext:
    """Inputs of the simulated user for one turn (spec §9)."""

    turn: int
    material: QuestionMaterial
    history: tuple[Message, ...]
    state: KnowledgeState
    density: float
    articulation_mode: str
    explained: tuple[str, ...]  # labels ever taught well_explained
    stuck: bool
    stop_hint: bool
    seed: int

    def labels_in(self, *states: IUState) -> tuple[str, ...]:
        """Labels (node order) whose current state is one of ``states``."""
        return tuple(lab for lab in self.material.graph.index.labels if self.state.state_of(lab) in states)

    @property
    def askable(self) -> tuple[str, ...]:
        """The reference's connectable unknowns: struggling IUs + partial IUs never explained (§8 row 19)."""
        explained = set(self.explained)
        return tuple(
            lab
            for lab in self.material.graph.index.labels
            if self.state.state_of(lab) == IUState.STRUGGLING
            or (self.state.state_of(lab) == IUState.PARTIAL and lab not in explained)
        )


@dataclass(frozen=True, slots=True)
class UserTurn:
    message: str
    attempt: bool = False  # the message attempts something and asks to verify it
    thought: str = ""
    terminate: bool = False
    usage: tuple[Usage, ...] = ()


@dataclass(frozen=True, slots=True)
class AssistantContext:
    turn: int
    material: QuestionMaterial
    history: tuple[Message, ...]  # ends with the user's latest message
    seed: int
    state: KnowledgeState | None = None  # only for assistants with reads_state = True
    params: RuleParams | None = None  # the run's rule parameters, likewise only with reads_state


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    message: str
    usage: tuple[Usage, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtractorContext:
    """Inputs of the signal extractor (spec §9): pre-turn state, prior lines, the new pair."""

    turn: int
    material: QuestionMaterial
    state: KnowledgeState
    history: tuple[Message, ...]  # before the current pair
    user_message: str
    assistant_message: str
    seed: int


@dataclass(frozen=True, slots=True)
class Extraction:
    entries: tuple[IUSignal, ...]
    failed: bool = False
    error: str = ""
    usage: tuple[Usage, ...] = ()


@dataclass(frozen=True, slots=True)
class Judgement:
    score: float  # IQ, 1–10
    rationale: str
    usage: tuple[Usage, ...] = ()


@runtime_checkable
class Assistant(Protocol):
    id: str
    reads_state: bool

    def reply(self, ctx: AssistantContext) -> AssistantTurn: ...


@runtime_checkable
class UserSimulator(Protocol):
    id: str

    def respond(self, ctx: UserContext) -> UserTurn: ...


@runtime_checkable
class SignalExtractor(Protocol):
    id: str

    def extract(self, ctx: ExtractorContext) -> Extraction: ...


@runtime_checkable
class GraphExtractor(Protocol):
    id: str

    def extract_graph(self, question: str, reference_answer: str) -> IUGraph: ...


@runtime_checkable
class Judge(Protocol):
    id: str

    def judge(self, run: "RunRecord") -> Judgement: ...


class UsageLedger:
    """Every model call of one run, recorded when it is made (billed, or answered from the cache).

    :meth:`take` hands over the calls no record holds yet: a turn's record takes them when the turn
    completes, and an :class:`~knowsim_core.engine.records.Ending` takes what a cut-short turn spent.
    Each call is taken once. Thread-safe (an agent may record from a helper thread).
    """

    __slots__ = ("_open", "_lock")

    def __init__(self) -> None:
        self._open: list[Usage] = []
        self._lock = threading.Lock()

    def record(self, *usages: Usage) -> None:
        with self._lock:
            self._open.extend(usages)

    def take(self) -> tuple[Usage, ...]:
        """The calls recorded since the last take, in the order they were made."""
        with self._lock:
            out, self._open = tuple(self._open), []
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def __getstate__(self) -> tuple[Usage, ...]:  # a lock does not pickle; the calls do
        with self._lock:
            return tuple(self._open)

    def __setstate__(self, state: tuple[Usage, ...]) -> None:
        self._open, self._lock = list(state), threading.Lock()
