"""Prompts of the three LLM baseline user simulators the KnowSim paper compares with (our wording).

* ``zs`` — the question, a knowledge-level descriptor and the conversation so far;
* ``zs-cot`` — the same, plus a private reasoning step before each message, written afresh every
  turn (the previous turns' reasoning is never shown back);
* ``zs-cot-prof`` — ``zs-cot`` plus a synthetic learner profile and the learner's initial
  knowledge state, both fixed for the whole conversation (never updated).

Every variant may end the conversation by declaring it is done (``done``: a judged termination).
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from knowsim_core.engine.agent_id import METHODS  # the names a baseline user's id takes
from knowsim_core.engine.ports import Message
from knowsim_core.prompts import TUTOR_LABEL, USER_LABEL, transcript

PROMPT_VERSION = "baseline-user-v1"
TEMPERATURE = 0.7  # as the KnowSim user (spec §9)

SYSTEM = ("You are playing a person who is learning with an AI tutor. Write only what that person would "
          "type in the chat: short, informal, sometimes unsure. You are not the tutor and you do not know the answer.")

LEVELS = {
    "novice": "You have little background in this topic: basic ideas are shaky and you often need a worked example.",
    "intermediate": "You know the common basics of this topic but get stuck on the less familiar steps.",
    "advanced": "You know this topic well; you mostly want to check a step or a detail.",
}

_AGES = ("a high-school student", "a first-year college student", "an adult returning to study", "a graduate student")
_GOALS = ("wants to pass an exam", "is curious and wants to really understand", "wants the answer quickly",
          "is preparing to tutor a sibling")
_STYLES = ("types short replies", "writes full sentences", "is a little impatient", "is polite and careful")


def synthetic_profile(seed: int) -> str:
    """A fixed, seeded learner profile (no model call): who, why, how they write."""
    rng = random.Random(seed)
    return f"You are {rng.choice(_AGES)} who {rng.choice(_GOALS)} and {rng.choice(_STYLES)}."


def render(
    method: str,
    *,
    question: str,
    level: str,
    history: Sequence[Message],
    profile: str = "",
    initial_state: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The user-turn prompt of one baseline turn (``initial_state``: state name → concept names)."""
    parts = [f"## The problem you are working on\n{question}",
             f"## Your level\n{LEVELS.get(level, LEVELS['intermediate'])}"]
    if method == "zs-cot-prof":
        parts.append(f"## Who you are\n{profile}")
        lines = [f"- {name.replace('_', ' ')}: {', '.join(c) if c else '(none)'}"
                 for name, c in (initial_state or {}).items()]
        parts.append("## What you knew when you started (how you began; it does not change)\n" + "\n".join(lines))
    if history:
        parts.append("## The conversation so far\n" + transcript(history, user=USER_LABEL, assistant=TUTOR_LABEL))
        task = "Write your next message to the tutor, reacting to what they just said."
    else:
        parts.append("## The conversation so far\n(nothing yet)")
        task = "Write your first message to the tutor about this problem."
    parts.append(f"## Task\n{task} One to three sentences. If you feel finished (you solved it, gave up, or "
                 "have nothing more to ask), say so and set \"done\" to true.")
    fields = '"message": "<what you type>", "done": <true|false>'
    if method != "zs":
        fields = '"reasoning": "<private: what you understand and what you want now>", ' + fields
    parts.append("## Output format\nReply with one JSON object: {" + fields + "}")
    return "\n\n".join(parts)
