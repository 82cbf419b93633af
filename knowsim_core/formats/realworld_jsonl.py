"""The generic conversations JSONL (one conversation per line), read into :class:`Conversation`.

Format (README, "Real conversations and realism")::

    {"id": "c1", "question": "...", "messages": [{"role": "user", "content": "..."},
     {"role": "assistant", "content": "..." | null}, ...], "level": "novice", "rating": 7,
     "model": "gpt-4o", "concepts": [{"name": "...", "description": "..."}],
     "initial_states": {"<concept name>": "struggling"}}

Only ``messages`` is required; a missing level reads as intermediate. Each user message is paired
with the assistant message that follows it (``null`` or absent: no reply recorded). Every line is
parsed by the guarded JSON reader and checked against :class:`~.realworld_schema.ConversationLineIn`, so a
bad line is refused with the file, the line and the field path before anything is stored.
"""

from __future__ import annotations

import re
from pathlib import Path

from knowsim_core.errors import FormatError
from knowsim_core.formats import realworld_schema as rws, schema
from knowsim_core.formats.jsonio import parse_json, read_text
from knowsim_core.formats.realworld import KIND_JSONL, Conversation, level_of, refuse, stated_problem, status_of

JSONL_FIX = "each line is one conversation object (see the README's conversations JSONL format)"


def read_jsonl(path: Path) -> tuple[list[Conversation], list[str]]:
    """Conversations of the generic JSONL form (module docstring)."""
    out = []
    lines = read_text(path).splitlines()
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
            level = level_of(rec.level) if rec.level else "intermediate"
        except ValueError as exc:
            raise refuse(path, label, f"field level: {exc}") from None
        initial = {name.strip().lower(): status_of(v) for name, v in rec.initial_states.items()} or None
        out.append(Conversation(
            key=key, question_id=f"conv_{re.sub(r'[^A-Za-z0-9_-]+', '_', key)}",
            question=rec.question or stated_problem([u for u, _ in pairs], f"conversation {key}"),
            source=f"conversations {path.name}", field="",
            level=level, model=rec.model or "unknown", pairs=pairs,
            concepts=tuple((c.name, c.description or "") for c in rec.concepts), initial=initial,
            meta={"source": KIND_JSONL, "conversation": key, "expertise": rec.level or "", "rating": rec.rating},
        ))
    if not out:
        raise FormatError(f"{path.name}: no conversations (one JSON object per line expected)")
    return out, []


def _pair(messages: list[rws.ChatMessageIn], path: Path, label: str) -> tuple[tuple[str, str | None], ...]:
    """(user message, the reply that follows it or None), checking that the roles alternate sensibly."""
    pairs: list[list[str | None]] = []
    for j, m in enumerate(messages):
        if m.role == "user":
            if m.content is None:
                raise refuse(path, label, f"field messages[{j}].content: a user message cannot be null")
            pairs.append([m.content, None])
        elif not pairs or pairs[-1][1] is not None:
            raise refuse(path, label, f"field messages[{j}].role: an assistant message must answer a user message")
        else:
            pairs[-1][1] = m.content
    if not pairs:
        raise refuse(path, label, "field messages: no user message")
    return tuple((str(u), a) for u, a in pairs)
