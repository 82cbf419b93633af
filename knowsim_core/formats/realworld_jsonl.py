"""The generic conversations JSONL (one conversation per line), read into :class:`Conversation`.

Format (README, "Real conversations and realism")::

    {"id": "c1", "question": "...", "messages": [{"role": "user", "content": "..."},
     {"role": "assistant", "content": "..." | null}, ...], "level": "novice", "rating": 7,
     "model": "gpt-4o", "concepts": [{"name": "...", "description": "..."}],
     "initial_states": {"<concept name>": "struggling"},
     "votes": [{"turn": 1, "liked": true, "reply": "..."}], "correctness": "correct",
     "solve_or_not": "yes", "why_stop": "...", "strength_weakness": "..."}

Only ``messages`` is required; a missing level reads as intermediate. Each user message is paired
with the assistant message that follows it (``null`` or absent: no reply recorded). A message's
``content`` is text, ``null`` or a list of uploaded files' paths (possibly empty), as in the
SimulatorArena release; each shape is counted. The judgment fields are optional and mean what the
release's do: ``votes`` are the person's 👍/👎 on the tutor's reply of exchange ``turn`` (1-based;
``reply``, when given, is checked against it), ``rating`` 1–10, ``correctness`` of their final
answer, ``solve_or_not``, ``why_stop`` and ``strength_weakness`` their post-session answers.

Lines are split as JSON defines them (``\n`` only, so U+2028 / U+0085 inside a string are fine) and a
leading byte-order mark is accepted. Every line is
parsed by the guarded JSON reader and checked against :class:`~.realworld_schema.ConversationLineIn`, so a
bad line is refused with the file, the line and the field path before anything is stored.
"""

from __future__ import annotations

from pathlib import Path

from knowsim_core.errors import FormatError
from knowsim_core.formats import realworld_schema as rws, schema
from knowsim_core.formats.jsonio import parse_json, read_text
from knowsim_core.formats.judgments import Judgment, check_text, one_per_turn
from knowsim_core.formats.realworld import (
    DEFAULT_LEVEL, KIND_JSONL, Conversation, count_shapes, derived_id, json_lines, level_of, message_text, refuse,
    stated_problem, status_of, unique_ids,
)

JSONL_FIX = "each line is one conversation object (see the README's conversations JSONL format)"


def read_jsonl(path: Path) -> tuple[list[Conversation], list[str]]:
    """Conversations of the generic JSONL form (module docstring)."""
    out, labels = [], []
    lines = json_lines(read_text(path))
    if len(lines) > schema.MAX_RECORDS:
        raise FormatError(f"{path.name}: {len(lines)} lines; at most {schema.MAX_RECORDS} per file — split it")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        label = f"line {n}"
        rec = schema.check(rws.ConversationLineIn, parse_json(line, f"{path.name} {label}"),
                           f"{path.name}: {label}", JSONL_FIX)
        key = str(rec.id if rec.id is not None else n)
        pairs = _pair(rec.messages, path, label)
        try:
            level = level_of(rec.level) if rec.level else DEFAULT_LEVEL
        except ValueError as exc:
            raise refuse(path, label, f"field level: {exc}") from None
        counts = count_shapes([m.content for m in rec.messages])
        votes = _votes(rec.votes, pairs, path, label, counts)
        initial = {name.strip().lower(): status_of(v) for name, v in rec.initial_states.items()} or None
        model = rec.model or "unknown"
        labels.append(f"{label} (id {key!r})")
        out.append(Conversation(
            key=key, question_id=derived_id("conv", key),
            question=rec.question or stated_problem([u for u, _ in pairs], f"conversation {key}"),
            source=f"conversations {path.name}", field="",
            level=level, model=model, pairs=pairs,
            concepts=tuple((c.name, c.description or "") for c in rec.concepts), initial=initial,
            votes=votes, counts=counts,
            meta={"source": KIND_JSONL, "conversation": key, "expertise": rec.level or "", "rating": rec.rating,
                  "correctness": rec.correctness, "solve_or_not": rec.solve_or_not, "why_stop": rec.why_stop,
                  "strength_weakness": rec.strength_weakness, "tutor_model": model},
        ))
    unique_ids(out, path, labels)
    if not out:
        raise FormatError(f"{path.name}: no conversations (one JSON object per line expected)")
    return out, []


def _votes(votes: list[rws.TurnVoteIn], pairs: tuple[tuple[str, str | None], ...], path: Path, label: str,
           counts: dict[str, int]) -> tuple[Judgment, ...]:
    """The line's ``votes`` as judgments of their turns, each checked against the reply when given."""
    out = []
    for j, v in enumerate(votes):
        if v.turn > len(pairs):
            raise refuse(path, label, f"field votes[{j}].turn: {v.turn}, but the conversation has {len(pairs)} "
                                      "exchange(s) (a turn is a user message and the reply that follows it)")
        match = check_text(v.reply, pairs[v.turn - 1][1])
        out.append(Judgment(turn=v.turn, liked=v.liked, source="person", who="person", match=match))
    return one_per_turn(out, counts)


def _pair(messages: list[rws.ChatMessageIn], path: Path, label: str) -> tuple[tuple[str, str | None], ...]:
    """(user message, the reply that follows it or None), checking that the roles alternate sensibly."""
    pairs: list[list[str | None]] = []
    for j, m in enumerate(messages):
        if m.role == "user":
            pairs.append([message_text(m.content)[0], None])
        elif not pairs or pairs[-1][1] is not None:
            raise refuse(path, label, f"field messages[{j}].role: an assistant message must answer a user message")
        else:
            pairs[-1][1] = None if m.content is None else message_text(m.content)[0]
    if not pairs:
        raise refuse(path, label, "field messages: no user message")
    return tuple((str(u), a) for u, a in pairs)
