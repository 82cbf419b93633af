"""The generic conversations JSONL (one conversation per line), read into :class:`Conversation`.

Format (README, "Real conversations and realism")::

    {"id": "c1", "question": "...", "messages": [{"role": "user", "content": "..."},
     {"role": "assistant", "content": "..." | null}, ...], "level": "novice", "rating": 7,
     "model": "gpt-4o", "concepts": [{"name": "...", "description": "..."}],
     "initial_states": {"<concept name>": "struggling"}}

Only ``messages`` is required; a missing level reads as intermediate. Each user message is paired
with the assistant message that follows it (``null`` or absent: no reply recorded).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import FormatError
from .realworld import KIND_JSONL, Conversation, level_of, refuse, stated_problem, status_of, where_of


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | None


class _JsonlConcept(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    description: str = ""


class _JsonlConversation(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | int | None = None
    question: str | None = None
    messages: list[_Message] = Field(min_length=1)
    level: str | None = None
    rating: float | None = None
    model: str = "unknown"
    concepts: list[_JsonlConcept] = []
    initial_states: dict[str, str] = {}


def read_jsonl(path: Path) -> tuple[list[Conversation], list[str]]:
    """Conversations of the generic JSONL form (module docstring)."""
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        label = f"line {n}"
        try:
            rec = _JsonlConversation.model_validate_json(line)
        except ValidationError as exc:
            raise refuse(path, label, where_of(exc)) from None
        key = str(rec.id if rec.id is not None else n)
        pairs = _pair(rec.messages, path, label)
        try:
            level = level_of(rec.level) if rec.level else "intermediate"
        except ValueError as exc:
            raise refuse(path, label, f"field 'level': {exc}") from None
        initial = {name.strip().lower(): status_of(v, path, label) for name, v in rec.initial_states.items()} or None
        out.append(Conversation(
            key=key, question_id=f"conv_{re.sub(r'[^A-Za-z0-9_-]+', '_', key)}",
            question=rec.question or stated_problem([u for u, _ in pairs], f"conversation {key}"),
            source=f"conversations {path.name}", field="",
            level=level, model=rec.model, pairs=pairs, concepts=tuple((c.name, c.description) for c in rec.concepts),
            initial=initial,
            meta={"source": KIND_JSONL, "conversation": key, "expertise": rec.level or "", "rating": rec.rating},
        ))
    if not out:
        raise FormatError(f"{path.name}: no conversations (one JSON object per line expected)")
    return out, []


def _pair(messages: list[_Message], path: Path, label: str) -> tuple[tuple[str, str | None], ...]:
    pairs: list[list[Any]] = []
    for j, m in enumerate(messages):
        role = m.role.strip().lower()
        if role == "user":
            if m.content is None:
                raise refuse(path, label, f"field 'messages.{j}.content': a user message cannot be null")
            pairs.append([m.content, None])
        elif role == "assistant":
            if not pairs or pairs[-1][1] is not None:
                raise refuse(path, label, f"field 'messages.{j}.role': an assistant message must answer a user message")
            pairs[-1][1] = m.content
        else:
            raise refuse(path, label, f"field 'messages.{j}.role' is {m.role!r}; expected user or assistant")
    if not pairs:
        raise refuse(path, label, "field 'messages': no user message")
    return tuple((u, a) for u, a in pairs)
