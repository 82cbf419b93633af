"""Prompt templates for the LLM agents, written for KnowSim Studio following the structure of the
paper's appendix (spec §9): which inputs each prompt carries and in which blocks.

One module per agent. Each exposes ``PROMPT_VERSION`` (bump it whenever the wording changes: runs
record it, and it is part of every cached request through the text itself) and pure ``render_*``
functions that take engine objects and return strings — no I/O, no model calls.
"""

from __future__ import annotations

from typing import Sequence

from knowsim_core.engine.ports import Message

USER_LABEL = "You"  # the simulated user's own lines, as in the recorded conversation_history (§1.5)
TUTOR_LABEL = "AI Tutor"


def transcript(history: Sequence[Message], *, user: str = "User", assistant: str = "Assistant") -> str:
    """``- User: …`` / ``- Assistant: …`` lines, one per message."""
    names = {"user": user, "assistant": assistant}
    return "\n".join(f"- {names.get(m.role, m.role)}: {m.text}" for m in history)
