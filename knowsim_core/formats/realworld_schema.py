"""The shape of the real-conversation files, as strict models in :mod:`.schema`'s style.

The SimulatorArena release's annotations file and its two companions, and the generic
conversations JSONL, are checked here before :mod:`.realworld` builds anything: strict scalars,
finite numbers, statuses from a known list, bounded list sizes. :func:`.schema.check` turns a
failure into one line naming the file, the record and the field path. Extra fields are ignored
(the release has many the Studio does not read); the post-session report fields that are kept as
metadata must be scalars.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BeforeValidator, Field, Strict, StringConstraints

from knowsim_core.engine.graph import MAX_IU_TEXT
from knowsim_core.engine.state import STATE_NAMES
from knowsim_core.formats.schema import (
    MAX_NAME, MAX_NODES, MAX_RECORDS, MAX_TURNS, Bool, Count, Float, Id, Int, Name, Str, StrictModel,
)

# How people's understanding is written in the SimulatorArena knowledge-state file (and accepted in
# the conversations JSONL), case-insensitive, mapped onto KnowSim's four states.
REAL_STATUS: dict[str, str] = {
    "not introduced": "unaware", "unaware": "unaware", "struggling": "struggling",
    "partial understanding": "partial_understanding", "partial_understanding": "partial_understanding",
    "knows well": "knows_well", "knows_well": "knows_well",
}
assert set(REAL_STATUS.values()) == set(STATE_NAMES)


def _real_status(value: str) -> str:
    state = REAL_STATUS.get(value.strip().lower())
    if state is None:
        raise ValueError("not a status (expected Not introduced, Struggling, Partial understanding or Knows well)")
    return state


Status = Annotated[Name, AfterValidator(_real_status)]  # → a KnowSim state name
ConceptName = Annotated[str, Strict(), StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME)]
# a concept's explanation becomes its IU's description: bounded as the graph bounds it, so an over-long
# one is refused here, naming the file and the record, not later by the graph without either
IUText = Annotated[str, Strict(), Field(max_length=MAX_IU_TEXT)]
Report = Optional[Str | Bool | Int | Float]  # a post-session answer, kept as metadata as it is
# A message as the release's collection app writes it: text, null (nothing recorded), or the list of
# paths of files the person uploaded (possibly empty). :func:`.realworld.message_text` reads each.
Message = Optional[Str | Annotated[list[Str], Field(max_length=100)]]
# ``turn_level_vote``: {"[row, column]": [the reply text as shown, liked]} (column 1: the tutor's reply)
VoteKey = Annotated[str, Strict(), StringConstraints(max_length=40)]
Votes = Optional[Annotated[dict[VoteKey, tuple[Optional[Str], Optional[Bool]]], Field(max_length=2 * MAX_TURNS)]]


class ArenaConversationIn(StrictModel):
    """One SimulatorArena annotations record (the release's README names the fields)."""

    problem_id: Int | Id
    workerId: Id
    user_queries: list[Message] = Field(min_length=1, max_length=MAX_TURNS)
    ai_responses: Optional[list[Message]] = Field(max_length=MAX_TURNS)  # null: no reply recorded
    model: Optional[Name] = "unknown"
    math_expertise: Optional[Name] = None
    overall_rating: Optional[Float] = None
    problem_1_turns: Optional[Count] = None
    question_location: Optional[Name] = ""
    level: Optional[Name] = ""
    type: Optional[Name] = ""
    why_stop: Report = None
    why_stop_other_reason: Report = None
    strength_weakness: Report = None
    solve_or_not: Report = None
    problem_1_correctness: Report = None
    why_ask_tutor: Report = None
    turk_final_answer: Report = None
    moved_to_problem_2: Report = None
    turn_level_vote: Votes = None
    problem_2_turn_level_vote: Votes = None


class ArenaConceptIn(StrictModel):
    name: ConceptName = Field(alias="Concept Name")
    explanation: Optional[IUText] = Field(default="", alias="Concept Explanation")


class ArenaProblemConceptsIn(StrictModel):
    extracted_concepts: list[ArenaConceptIn] = Field(max_length=MAX_NODES)


ArenaConceptsFile = Annotated[dict[Name, ArenaProblemConceptsIn], Field(max_length=MAX_RECORDS)]


class ArenaStateConceptIn(StrictModel):
    name: Name = Field(alias="Concept Name")
    status: Status = Field(alias="Status")


class ArenaStateIn(StrictModel):
    concepts: list[ArenaStateConceptIn] = Field(default=[], max_length=MAX_NODES)


ArenaStatesFile = Annotated[dict[Name, ArenaStateIn], Field(max_length=MAX_RECORDS)]


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


class ChatMessageIn(StrictModel):
    role: Annotated[Literal["user", "assistant"], BeforeValidator(_lower)]  # "User" as some exports write it
    content: Message  # null: nothing recorded; a list: paths of uploaded files


class TurnVoteIn(StrictModel):
    """A person's 👍/👎 on the tutor's reply of exchange ``turn`` (1-based: the turn-th user message
    and the reply that follows it); ``reply``, when given, is checked against that reply."""

    turn: Annotated[int, Strict(), Field(ge=1, le=MAX_TURNS)]
    liked: Bool
    reply: Optional[Str] = None


class ConceptIn(StrictModel):
    name: ConceptName
    description: Optional[IUText] = ""


class ConversationLineIn(StrictModel):
    """One line of the generic conversations JSONL (``realworld_jsonl``'s docstring)."""

    id: Optional[Id | Int] = None
    question: Optional[Str] = None
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=2 * MAX_TURNS)
    level: Optional[Name] = None
    rating: Optional[Float] = None
    model: Optional[Name] = "unknown"
    concepts: list[ConceptIn] = Field(default=[], max_length=MAX_NODES)
    initial_states: dict[Name, Status] = Field(default={}, max_length=MAX_NODES)
    votes: list[TurnVoteIn] = Field(default=[], max_length=MAX_TURNS)
    correctness: Report = None
    solve_or_not: Report = None
    why_stop: Report = None
    strength_weakness: Report = None
