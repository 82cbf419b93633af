"""Read a file of real human–tutor conversations, whichever of the two supported forms it is
(the SimulatorArena annotations file, :mod:`.realworld`; the generic JSONL, :mod:`.realworld_jsonl`)."""

from __future__ import annotations

from pathlib import Path

from knowsim_core.errors import FormatError
from knowsim_core.formats.realworld import KIND_ARENA, KIND_JSONL, Conversation, detect, read_arena
from knowsim_core.formats.realworld_jsonl import read_jsonl


def read_conversations(path: Path) -> tuple[str, list[Conversation], list[str]]:
    """(kind, conversations, notes) of a real-conversation file; nothing is stored."""
    kind = detect(path)
    if kind == KIND_ARENA:
        return (kind, *read_arena(path))
    if kind == KIND_JSONL:
        return (kind, *read_jsonl(path))
    raise FormatError(f"{path} is neither a SimulatorArena annotations file nor a conversations .jsonl")
