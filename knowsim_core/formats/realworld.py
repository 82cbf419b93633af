"""Real human–LLM tutoring conversations → questions, IU graphs and human runs (KnowSim readings).

Two inputs are read into one :class:`Conversation` form:

* ``simulatorarena`` — the SimulatorArena maths release: PATH is its annotations file
  (a JSON list with ``user_queries`` / ``ai_responses``); its companions are found beside it by
  their release names (:data:`CONCEPTS_NAME`, :data:`STATES_NAME`) and may be missing;
* ``conversations-jsonl`` — the generic form, one conversation per line (:mod:`realworld_jsonl`).

Decisions, stated once: expertise ``9-12`` → novice, ``undergrad`` → intermediate, ``grad`` →
advanced (:func:`level_of`); the graph's nodes are the problem's extracted concepts (``IU1…``, in
file order, abstraction level :data:`ABSTRACTION_LEVEL` for all — the release gives none) with
no prerequisite edges (the release gives none and we do not invent them); a conversation's
messages after ``problem_1_turns`` are about the person's second, similar problem (no concepts
or state are given for it), so they are kept in the run's metadata, not read as turns. A ``null``
reply is an empty tutor turn; a message that is an image path stays as recorded; both are counted.
A message is written by the release's collection app as text, ``null``, or a list of the paths of
files the person uploaded (possibly empty): :func:`message_text` reads each, and every shape is
counted (:data:`SHAPES`). A record without ``math_expertise`` reads as intermediate, as in the JSONL.

The people's judgments are kept: ``turn_level_vote`` (``{"[row, 1]": [reply text, liked]}``) becomes
one :class:`~.judgments.Judgment` per thumb on turn ``row + 1``, its text checked against that
reply (:func:`~.judgments.check_text`); votes in column 0 (on the person's own message), on the
second problem's turns, or without a verdict are counted, not mapped. Rating, correctness,
``solve_or_not``, ``why_stop``, ``strength_weakness``, the tutor model and the expertise go into
the run's metadata under the names of :data:`JUDGMENT_KEYS`.

Ids: a question id is a readable slug of the source id plus a short hash of the *whole*
source id (:func:`derived_id`), so ids differing anywhere — even only in characters the slug drops —
never meet; two records of one file with the same source id are refused naming both.

Both inputs go through the one validation layer of every import: the guarded JSON reader
(:mod:`.jsonio`: size, depth, NaN) and strict models in :mod:`.realworld_schema` (``ArenaConversationIn``,
``ArenaConceptsFile``, ``ArenaStatesFile``, ``ConversationLineIn``), so a wrong type, an unknown
status or an oversized list is refused in one line naming the file, the record and the field path.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowsim_core.errors import FormatError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.state import IUState
from knowsim_core.formats import realworld_schema as rws, schema
from knowsim_core.formats.judgments import Judgment, check_text, one_per_turn
from knowsim_core.formats.jsonio import parse_json, read_json, read_text

KIND_ARENA = "simulatorarena"
KIND_JSONL = "conversations-jsonl"
CONCEPTS_NAME = "math_tutoring_problems_extracted_concepts.json"
STATES_NAME = "knowledge_state.json"
ABSTRACTION_LEVEL = 0.5  # a stated constant: the release ranks no concept above another
AUTHOR = "simulatorarena"
GRAPH_NOTE = ("concepts extracted for this problem by the SimulatorArena release; no prerequisite edges "
              "(the release gives none); abstraction level 0.5 for every IU (not given either)")
STATE_OF = {s.key: s for s in IUState}  # a state name (schema.Status maps the release's wording onto these)
LEVELS = ("novice", "intermediate", "advanced")
REPORT_FIELDS = ("why_stop", "why_stop_other_reason", "strength_weakness", "solve_or_not", "problem_1_correctness",
                 "problem_1_turns", "why_ask_tutor", "turk_final_answer", "moved_to_problem_2")
DEFAULT_LEVEL = "intermediate"  # no expertise given (README: "no level → intermediate")
SHAPES = ("text", "null", "image_list", "empty_list")  # how a message was written in the file
# run metadata every import writes (None when the file does not say)
JUDGMENT_KEYS = ("rating", "correctness", "solve_or_not", "why_stop", "strength_weakness", "tutor_model", "expertise")
SLUG_MAX = 48  # characters of the readable part of an id; the hash covers the whole source id
IMAGE_PATH = re.compile(r"(?:^|[\s(\[\"'])(?:https?://|/|\.{0,2}/)?[\w./%-]*\.(?:png|jpe?g|gif|webp|bmp|heic|svg)\b",
                        re.IGNORECASE)


def level_of(expertise: str | None) -> str:
    """The KnowSim level of a self-reported expertise (``9-12``/K-12 → novice, ``undergrad`` →
    intermediate, ``grad`` → advanced; a KnowSim level name is kept).

    Raises:
        ValueError: an expertise none of these rules places.
    """
    e = (expertise or "").strip().lower()
    if e in LEVELS:
        return e
    if "under" in e or "college" in e or "bachelor" in e:
        return "intermediate"
    if "grad" in e or "phd" in e or "master" in e:
        return "advanced"
    if re.search(r"\d", e) or "high" in e or "school" in e or e.startswith("k"):
        return "novice"
    raise ValueError(f"expertise {expertise!r} is not 9-12, undergrad, grad or a KnowSim level")


def derived_id(prefix: str, source_id: str) -> str:
    """``<prefix>_<slug>_<hash>``: readable, and unique per *whole* source id.

    The slug keeps ASCII letters and digits of the source id (at most :data:`SLUG_MAX`, for
    reading only); the 12 hex digits are SHA-256 of the full id, so ``学生一``/``学生二``,
    ``ana@uni.edu``/``ana.uni.edu`` or two workers sharing a prefix get different ids.
    """
    slug = re.sub(r"[^A-Za-z0-9]+", "_", source_id).strip("_")[:SLUG_MAX].strip("_")
    digest = hashlib.sha256(source_id.encode("utf-8")).hexdigest()[:12]
    return f"{prefix}_{slug}_{digest}" if slug else f"{prefix}_{digest}"


def legacy_question_id(conv: "Conversation") -> str:
    """The id older versions of the Studio gave this conversation (truncated worker id / lossy slug):
    a database they wrote is checked under it too, so importing the file again adds nothing."""
    if conv.meta.get("source") == KIND_ARENA:
        return f"sa_math_{conv.meta.get('problem_id')}_{str(conv.meta.get('worker_id', ''))[:8]}"
    return f"conv_{re.sub(r'[^A-Za-z0-9_-]+', '_', conv.key)}"


def message_text(message: str | list[str] | None) -> tuple[str, str]:
    """(text, shape) of a message as the file wrote it: text as is; ``null`` and ``[]`` → ``""``;
    a list of uploaded files' paths → the paths, one a line (so it reads as an image-path message)."""
    if message is None:
        return "", "null"
    if isinstance(message, list):
        return ("\n".join(message), "image_list") if message else ("", "empty_list")
    return message, "text"


def count_shapes(*messages: list) -> dict[str, int]:
    """How many messages of each :data:`SHAPES` the lists hold."""
    out = dict.fromkeys(SHAPES, 0)
    for group in messages:
        for m in group:
            out[message_text(m)[1]] += 1
    return out


def unique_ids(convs: list["Conversation"], path: Path, labels: list[str]) -> None:
    """Refuse two conversations of one file that would share a question id (file, records, id)."""
    seen: dict[str, int] = {}
    for i, c in enumerate(convs):
        if c.question_id in seen:
            j = seen[c.question_id]
            raise FormatError(f"{path.name}: {labels[j]} and {labels[i]} have the same conversation id "
                              f"{c.key!r} (question id {c.question_id}); give each conversation its own id")
        seen[c.question_id] = i


def is_image_path(text: str) -> bool:
    """A message that points at a picture (an upload path or URL) rather than typing it out."""
    return bool(IMAGE_PATH.search(text or ""))


def stated_problem(user_messages: list[str], where: str) -> str:
    """The problem as the person stated it: their first non-empty message (a placeholder naming
    ``where`` when every message is empty — the release's problem text itself is redacted)."""
    first = next((m.strip() for m in user_messages if m and m.strip()), "")
    return first or f"(problem text not recorded: {where})"


# ---------------------------------------------------------------------- the common form
@dataclass(frozen=True)
class Conversation:
    key: str  # "<problem_id>:<workerId>" (SimulatorArena) or the JSONL record's id
    question_id: str
    question: str
    source: str
    field: str
    level: str
    model: str
    pairs: tuple[tuple[str, str | None], ...]  # (user message, recorded reply or None)
    concepts: tuple[tuple[str, str], ...]  # (name, explanation)
    initial: dict[str, IUState] | None  # concept name → state, None when no state was given
    meta: dict[str, Any] = field(default_factory=dict)
    later: tuple[tuple[str, str | None], ...] = ()  # messages about the second problem
    votes: tuple[Judgment, ...] = ()  # the person's thumbs, mapped to turns (module docstring)
    counts: dict[str, int] = field(default_factory=dict)  # message shapes and unmapped votes

    def graph(self) -> IUGraph:
        nodes = [{"id": f"IU{i}", "concept": n, "abstraction_level": ABSTRACTION_LEVEL, "description": d or n}
                 for i, (n, d) in enumerate(self.concepts, 1)]
        return IUGraph.from_data({"knowledge_areas": [self.field] if self.field else [], "nodes": nodes, "edges": []})


# ---------------------------------------------------------------------- SimulatorArena
ARENA_FIX = "the file is not the release's annotations format (see its README) or was edited by hand"
COMPANION_FIX = "fix or remove it (it is read as a companion of the annotations file)"


def refuse(path: Path, record: str, what: str) -> FormatError:
    """The one-line refusal of a record: file, record, field and what is wrong."""
    return FormatError(f"{path.name}: {record}: {what}")


def read_arena(path: Path) -> tuple[list[Conversation], list[str]]:
    """Conversations of a SimulatorArena annotations file (companions found beside it), plus notes.

    Every record is checked against :class:`~.realworld_schema.ArenaConversationIn` and both companions
    against theirs before any conversation is built.
    """
    data = read_json(path)
    if isinstance(data, dict):
        data = [data]  # one conversation on its own
    if not isinstance(data, list):
        raise FormatError(f"{path.name}: expected a JSON list of conversations, got {type(data).__name__}")
    if len(data) > schema.MAX_RECORDS:
        raise FormatError(f"{path.name}: {len(data)} conversations; at most {schema.MAX_RECORDS} per file — split it")
    notes: list[str] = []
    concepts = _read_concepts(path.parent / CONCEPTS_NAME, notes)
    states = _read_states(path.parent / STATES_NAME, notes)
    out, labels = [], []
    for i, raw in enumerate(data):
        rec = schema.check(rws.ArenaConversationIn, raw, f"{path.name}: record {i}", ARENA_FIX)
        key = f"{rec.problem_id}:{rec.workerId}"
        label = f"record {i} ({key})"
        queries = [message_text(m)[0] for m in rec.user_queries]
        replies_in = rec.ai_responses if rec.ai_responses is not None else [None] * len(rec.user_queries)
        if len(replies_in) != len(rec.user_queries):
            raise refuse(path, label, f"field ai_responses: {len(replies_in)} entries for {len(rec.user_queries)} "
                                       "user_queries; they must pair up (null for a missing reply)")
        replies = [None if m is None else message_text(m)[0] for m in replies_in]
        try:
            level = level_of(rec.math_expertise) if rec.math_expertise else DEFAULT_LEVEL
        except ValueError as exc:
            raise refuse(path, label, f"field math_expertise: {exc}") from None
        pairs = tuple(zip(queries, replies))
        n1 = rec.problem_1_turns
        cut = n1 if n1 is not None and 1 <= n1 < len(pairs) else len(pairs)
        counts = count_shapes(rec.user_queries, replies_in)
        votes = _arena_votes(rec.turn_level_vote, replies, cut, path, label, counts)
        counts["problem_2_votes"] = len(rec.problem_2_turn_level_vote or {})
        report = {k: getattr(rec, k) for k in REPORT_FIELDS if k in rec.model_fields_set or k == "problem_1_turns"}
        location, model = rec.question_location or "", rec.model or "unknown"
        labels.append(label)
        out.append(Conversation(
            key=key, question_id=derived_id(f"sa_math_{rec.problem_id}", rec.workerId),
            question=stated_problem(queries, f"MATH {location or rec.problem_id}"),
            source=f"SimulatorArena math (MATH {location or 'location not given'}"
                   f"{', ' + rec.level if rec.level else ''})",
            field=rec.type or "", level=level, model=model, pairs=pairs[:cut], later=pairs[cut:],
            concepts=concepts.get(str(rec.problem_id), ()), initial=states.get((str(rec.problem_id), rec.workerId)),
            votes=votes, counts=counts,
            meta={"source": KIND_ARENA, "conversation": key, "problem_id": str(rec.problem_id),
                  "worker_id": rec.workerId, "question_location": location,
                  "expertise": rec.math_expertise or "", "rating": rec.overall_rating,
                  "correctness": rec.problem_1_correctness, "solve_or_not": rec.solve_or_not,
                  "why_stop": rec.why_stop, "strength_weakness": rec.strength_weakness, "tutor_model": model,
                  "report": json.dumps(report, ensure_ascii=False),
                  # the second problem's thumbs, as recorded (its turns are not read, so not mapped)
                  "problem_2_turn_level_vote": json.dumps(rec.problem_2_turn_level_vote or {}, ensure_ascii=False)},
        ))
    unique_ids(out, path, labels)
    return out, notes


def _arena_votes(votes: dict | None, replies: list[str | None], cut: int, path: Path, label: str,
                 counts: dict[str, int]) -> tuple[Judgment, ...]:
    """The person's thumbs on problem-1 tutor replies as judgments of turns ``row + 1``; the rest
    counted in ``counts`` (``votes_on_user``, ``votes_later``, ``votes_unrated``) and each mapped
    thumb's text match counted (``votes_exact``, ``votes_prefix``, ``votes_mismatch``; ``votes_unchecked``
    when the vote has no reply text)."""
    for k in ("votes_on_user", "votes_later", "votes_unrated"):
        counts.setdefault(k, 0)
    out = []
    for key, (text, liked) in (votes or {}).items():
        try:
            row, col = json.loads(key)
            ok = isinstance(row, int) and isinstance(col, int) and not isinstance(row, bool) and row >= 0
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise refuse(path, label, f"field turn_level_vote: key {key[:40]!r} is not \"[row, column]\" "
                                      "with a row ≥ 0; the file was edited by hand")
        if liked is None:
            counts["votes_unrated"] += 1
        elif col != 1:
            counts["votes_on_user"] += 1
        elif row >= cut or row >= len(replies):
            counts["votes_later"] += 1
        else:
            match = check_text(text, replies[row])  # "": the vote carries no reply text to check
            out.append(Judgment(turn=row + 1, liked=liked, source="person", who="person", match=match))
    return one_per_turn(out, counts)


def _read_concepts(path: Path, notes: list[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    if not path.exists():
        notes.append(f"{path.name} not found beside the annotations: no IU graphs, so no readings")
        return {}
    data = schema.check(rws.ArenaConceptsFile, read_json(path), path.name,
                        f"expected {{problem_id: {{extracted_concepts: [...]}}}}; {COMPANION_FIX}")
    return {pid: tuple((c.name, (c.explanation or "").strip()) for c in entry.extracted_concepts)
            for pid, entry in data.items()}


def _read_states(path: Path, notes: list[str]) -> dict[tuple[str, str], dict[str, IUState]]:
    if not path.exists():
        notes.append(f"{path.name} not found beside the annotations: initial states sampled for each level")
        return {}
    data = schema.check(rws.ArenaStatesFile, read_json(path), path.name,
                        f"expected {{\"(problem_id, workerId, model)\": {{concepts: [...]}}}}; {COMPANION_FIX}")
    out = {}
    for key, entry in data.items():
        out[_state_key(key, path)] = {c.name.strip().lower(): STATE_OF[c.status] for c in entry.concepts}
    return out


def _state_key(key: str, path: Path) -> tuple[str, str]:
    """(problem_id, workerId) of a knowledge-state key written as a Python tuple literal."""
    try:
        parts = ast.literal_eval(key)  # literals only; the key is at most schema.MAX_NAME characters
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        parts = None
    if not (isinstance(parts, tuple) and len(parts) >= 2 and all(isinstance(x, (str, int)) for x in parts[:2])):
        raise FormatError(f"{path.name}: key {key[:60]!r} is not \"(problem_id, workerId, model)\"; {COMPANION_FIX}")
    return str(parts[0]), str(parts[1])


def json_lines(text: str) -> list[str]:
    """The lines of a JSONL text as JSON defines them: split on ``\\n`` only (``\\r\\n`` too),
    never on U+2028, U+0085 or the other breaks ``str.splitlines`` knows, which JSON strings may
    hold raw (a leading byte-order mark is dropped by :func:`~.jsonio.read_text`)."""
    return [ln.removesuffix("\r") for ln in text.split("\n")]


def status_of(state_name: str) -> IUState:
    """The :class:`IUState` of a state name checked by :data:`schema.Status`."""
    return STATE_OF[state_name]


# ---------------------------------------------------------------------- detection
def detect(path: Path) -> str | None:
    """``simulatorarena``, ``conversations-jsonl`` or None (not a real-conversation file)."""
    if not path.is_file():
        return None
    if path.suffix == ".jsonl":
        try:  # guarded: an unreadable file or a hostile first line is "not this format", not a crash
            first = next((ln for ln in json_lines(read_text(path)) if ln.strip()), "")
            obj = parse_json(first)
        except FormatError:
            return None
        return KIND_JSONL if isinstance(obj, dict) and "messages" in obj else None
    if path.suffix != ".json" or path.name in (CONCEPTS_NAME, STATES_NAME):
        return None
    try:
        data = read_json(path)
    except FormatError:
        return None
    if isinstance(data, dict) and "user_queries" in data:
        return KIND_ARENA
    if isinstance(data, list) and data and all(isinstance(r, dict) and "user_queries" in r for r in data):
        return KIND_ARENA
    return None
