"""The shape of every file KnowSim Studio reads, as strict pydantic models (spec §1).

Importers validate parsed JSON against these models *before* building domain objects, so a
wrong type, a number that is not finite, an unknown level or state name, an oversized list or a
negative τ is refused with one line naming the file, the record and the field path — never a
traceback, never garbage stored. Scalars are strict (no ``"3"`` → 3, no ``true`` → 1); lists
may stand for tuples (JSON has no tuples). What the spec says to *tolerate* stays tolerated:
extractor entries that are not objects, ids that are not graph nodes and unknown teaching-quality
values are data (§3.1); the importers count them for the import summary.

The models describe files; the domain objects (:class:`~knowsim_core.engine.graph.IUGraph`,
:class:`~knowsim_core.engine.records.RunRecord`) are still built by their own ``from_data``.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import MISSING, fields
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, TypeAdapter, ValidationError, create_model

from knowsim_core.engine.config import LEVELS
from knowsim_core.errors import FormatError
from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.graph import visible_id
from knowsim_core.engine.records import SCHEMA_VERSION, Usage
from knowsim_core.engine.rules import TurnQuantities
from knowsim_core.engine.signals import AttemptType
from knowsim_core.engine.state import STATE_NAMES
from knowsim_core.engine.termination import StopVotes

MAX_TEXT = 2_000_000  # characters in one message or description
MAX_NAME = 1_000  # ids, labels, concepts, adapter ids
MAX_NODES = 1_000
MAX_EDGES = 20_000
MAX_TURNS = 1_000
MAX_ENTRIES = 5_000  # extractor entries in one turn
MAX_RECORDS = 100_000  # records / items / graphs in one file
MAX_TAU = 1_000_000
MAX_SEED = 2**63 - 1
CUSTOM_LEVEL = "custom"  # runner.CUSTOM_LEVEL: a hand-set initial state

Str = Annotated[str, Strict(), Field(max_length=MAX_TEXT)]
Name = Annotated[str, Strict(), Field(max_length=MAX_NAME)]
# ids (questions, runs, items, IUs, state labels): visible text only — U+200B or U+202E would make two
# ids that print the same, or one that prints reversed (the IU graph's own rule, one owner)
Id = Annotated[str, Strict(), Field(min_length=1, max_length=MAX_NAME), AfterValidator(visible_id)]
Int = Annotated[int, Strict(), Field(ge=-MAX_SEED, le=MAX_SEED)]
Count = Annotated[int, Strict(), Field(ge=0, le=MAX_SEED)]
Float = Annotated[float, Strict(), Field(allow_inf_nan=False)]
NonNegFloat = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0)]
Bool = Annotated[bool, Strict()]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty; a question needs its text")
    return value


Text = Annotated[Str, AfterValidator(_not_blank)]  # a question's text: the store refuses a blank one
Level = Literal["novice", "intermediate", "advanced"]
StateName = Literal["unaware", "struggling", "partial_understanding", "knows_well"]
StateInt = Annotated[int, Strict(), Field(ge=0, le=3)]
Attempt = Literal["reasoning", "articulation", "none"]
Mode = Literal[tuple(m.value for m in FailureMode)]  # the vocabulary's keys (one owner), checked by pydantic
Scalar = Optional[str | Bool | Int | Float]

assert typing.get_args(Level) == LEVELS and typing.get_args(StateName) == STATE_NAMES
assert set(typing.get_args(Attempt)) == {a.value for a in AttemptType}
assert set(typing.get_args(Mode)) == {m.value for m in FailureMode}


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


# ---------------------------------------------------------------------- IU graph (§1.1, §1.3)
class NodeIn(StrictModel):
    id: Id
    concept: Name
    abstraction_level: Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, le=1)]
    description: Str


class EdgeIn(StrictModel):
    from_: Id = Field(alias="from")
    to: Id
    delta_l: Optional[Float] = None
    reason: Optional[Str] = ""


class GraphIn(StrictModel):
    knowledge_areas: list[Name] = Field(default=[], max_length=MAX_NODES)
    nodes: list[NodeIn] = Field(min_length=1, max_length=MAX_NODES)
    edges: list[EdgeIn] = Field(default=[], max_length=MAX_EDGES)


# ---------------------------------------------------------------------- states (§1.4, §1.5)
class LabelStateIn(StrictModel):
    state: StateName
    evidence: Optional[Str] = None
    fractional_progress: Optional[NonNegFloat] = None


RefState = Annotated[dict[Id, LabelStateIn], Field(max_length=MAX_NODES)]
InitCacheTask = Annotated[dict[Id, dict[Level, RefState]], Field(max_length=MAX_RECORDS)]


# ---------------------------------------------------------------------- items JSONL (§1.2)
class MathItemIn(StrictModel):
    id: Id
    problem: Text
    solution: Optional[Str] = ""
    type: Optional[Name] = "Math"
    split: list[Name] = Field(default=[], max_length=100)
    source_index: Optional[Int] = None


class AnswerIn(StrictModel):
    answer_string: Optional[Str] = None
    revised_answer_string: Optional[Str] = None


class ExpertMetaIn(StrictModel):
    field: Optional[Name] = None


class ExpertItemIn(StrictModel):
    id: Id
    question: Text
    answers: Optional[dict[Name, AnswerIn]] = Field(default=None, max_length=100)
    metadata: Optional[ExpertMetaIn] = None
    split: list[Name] = Field(default=[], max_length=100)
    source_index: Optional[Int] = None


# ---------------------------------------------------------------------- reference run records (§1.5, §3.1)
class EntryIn(StrictModel):
    """One extractor entry: every field optional (the spec's aliases and fallbacks apply), but a
    field that is present has a usable type. ``id`` stays free: a non-string id is §3.1 data."""

    id: Any = None
    concept: Optional[Name | Int | Float] = None
    teaching_quality: Optional[Name] = None
    teaching_quality_reasoning: Optional[Str] = None
    user_attempt_type: Scalar = None
    user_attempt: Scalar = None
    user_attempt_reasoning: Optional[Str] = None
    attempted_by_user: Scalar = None
    assistant_response_role: Optional[Name] = None
    assistant_reasoning_role: Optional[Name] = None
    assistant_reason_role: Optional[Name] = None
    assistant_role: Optional[Name] = None
    assistant_response: Optional[Name] = None


class RecordIn(StrictModel):
    problem_id: Id
    task: Optional[Name] = ""
    knowledge_level: Level = "novice"
    assistant_strategy: Optional[Name] = "unknown"
    simulation_method: Optional[Name] = "structured"
    problem: Optional[Str] = ""
    reference_answer: Optional[Str] = ""
    initial_overload_threshold: Optional[Annotated[int, Strict(), Field(ge=1, le=MAX_TAU)]] = None
    initial_knowledge_state: Optional[RefState | Literal[""]] = None
    knowledge_state_history: list[RefState] = Field(default=[], max_length=MAX_TURNS + 1)
    iu_analysis_history: list[Optional[Annotated[list[Any], Field(max_length=MAX_ENTRIES)]]] = Field(
        default=[], max_length=MAX_TURNS
    )
    conversation: list[Annotated[list[Str], Field(min_length=2, max_length=2)]] = Field(
        default=[], max_length=2 * MAX_TURNS + 2
    )
    stop_reason: Optional[Name] = None


# ---------------------------------------------------------------------- Studio runs (records.py)
def _field_type(tp: Any) -> Any:
    """A record dataclass field's type as a strict schema type (tuples may come as lists)."""
    if typing.get_origin(tp) is tuple:
        (item, _ellipsis) = typing.get_args(tp)
        return list[_field_type(item)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):  # X | None
        (inner,) = (a for a in typing.get_args(tp) if a is not type(None))
        return Optional[_field_type(inner)]
    return {float: Float, int: Int, bool: Bool, str: Str}[tp]


def _schema_of(dc: type) -> type[BaseModel]:
    """A strict model with the fields of a record dataclass — one source for both."""
    hints = typing.get_type_hints(dc)
    spec = {
        f.name: (_field_type(hints[f.name]), ... if f.default is MISSING else f.default)
        for f in fields(dc)
    }
    return create_model(f"{dc.__name__}In", __base__=StrictModel, **spec)


QuantitiesIn = _schema_of(TurnQuantities)
VotesIn = _schema_of(StopVotes)
UsageIn = _schema_of(Usage)

StudioLabel = tuple[Id, StateInt, Optional[NonNegFloat], Optional[Str]]
StudioState = Annotated[list[StudioLabel], Field(max_length=MAX_NODES)]
NodeTurnIn = tuple[
    Name, Name, StateInt, StateInt, StateInt, Optional[Name], Attempt, StateInt, Optional[Float], NonNegFloat,
    StateInt, NonNegFloat,
]


class SignalIn(StrictModel):
    id: Optional[Name]
    teaching_quality: Optional[Name]
    attempt: Attempt
    concept: Name = ""
    reasoning: Optional[Str] = None
    attempt_reasoning: Str = ""
    response_role: Optional[Name] = None


class TurnIn(StrictModel):
    schema_version: Annotated[int, Strict(), Field(ge=1, le=SCHEMA_VERSION)] = SCHEMA_VERSION
    turn: Annotated[int, Strict(), Field(ge=1, le=MAX_TURNS)]
    user_message: Str
    assistant_message: Str
    user_attempt: Optional[Bool] = None
    user_thought: Str = ""
    extractor_failed: Bool = False
    signals: list[SignalIn] = Field(max_length=MAX_ENTRIES)
    state_before: StudioState
    state_after: StudioState
    nodes: list[NodeTurnIn] = Field(max_length=MAX_NODES)
    quantities: QuantitiesIn  # type: ignore[valid-type]
    modes: list[tuple[Name, Mode]] = Field(max_length=MAX_NODES)
    votes: VotesIn  # type: ignore[valid-type]
    notes: list[Str] = Field(default=[], max_length=MAX_ENTRIES)
    usage: list[UsageIn] = Field(default=[], max_length=100)  # type: ignore[valid-type]
    user_done: Bool = False


class RunIn(StrictModel):
    format: Literal["knowsim-studio-run"]
    schema_version: Annotated[int, Strict(), Field(ge=1, le=SCHEMA_VERSION)] = SCHEMA_VERSION
    run_id: Optional[Id] = None
    question_id: Id
    question: Str
    reference_answer: Str = ""
    domain: Optional[Name] = ""
    graph: GraphIn
    level: Literal["novice", "intermediate", "advanced", "custom"]
    initial_state: StudioState | RefState
    tau: Annotated[int, Strict(), Field(ge=1, le=MAX_TAU)]
    params: dict[Name, Any]
    seed: Int
    adapters: dict[Name, Name] = Field(default={}, max_length=20)
    stop_reason: Optional[Name] = None
    meta: dict[Name, Scalar] = Field(default={}, max_length=100)
    turns: list[TurnIn] = Field(default=[], max_length=MAX_TURNS)


# ---------------------------------------------------------------------- checking
# pydantic puts the member type of a union / wrapper into the error location; it is not a field
_TYPE_TAG = re.compile(
    r"^(str|int|float|bool|none|json-or-python\[.*|(list|dict|tuple|literal|nullable|union|tagged-union|"
    r"function-\w+|constrained-\w+)\[.*|constrained-\w+|[A-Z]\w*In)$"
)


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _TYPE_TAG.match(str(part)):
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def check(model: Any, data: Any, where: str, fix: str) -> Any:
    """Validate ``data`` against ``model`` (a model class or a type), or raise one FormatError line.

    The message names ``where`` (file and record), the first failing field path, what it holds,
    what was expected and ``fix``.
    """
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(data)
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = max(errors, key=lambda e: len(e["loc"]))  # the deepest: a union's closest member
        got = "nothing" if first["type"] == "missing" else repr(first.get("input"))  # not the whole parent
        got = got if len(got) <= 60 else got[:57] + "…"
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        msg = first["msg"].removeprefix("Value error, ")  # a validator's own message says it all
        raise FormatError(
            f"{where}: field {_path(first['loc'])}: {msg.lower()}, got {got}{more}; {fix}"
        ) from None
