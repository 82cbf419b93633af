"""The KnowSim simulated user: initial-query and follow-up prompts (structure of spec §9).

Turn 1: hard constraints, the problem, the four state lists (Python list literals), the task, the
output format. Turns ≥ 2: the conversation so far, the problem, density label + percent, the
current state as JSON, askable concepts (spec §8 row 19), unaware concepts, articulation guidance,
concepts already explained, the stuck and stop hints, five behaviour rules, a termination block,
constraints and the output format. Output JSON: thought, message, attempt_verify, terminate.
"""

from __future__ import annotations

import json

from knowsim_core.engine.ports import UserContext
from knowsim_core.engine.state import IUState
from knowsim_core.prompts import TUTOR_LABEL, USER_LABEL, transcript

PROMPT_VERSION = "user-v1"
TEMPERATURE = 0.7  # spec §9
DENSITY_HIGH, DENSITY_MEDIUM = 0.6, 0.3  # the articulation-mode thresholds of spec §4.11

SYSTEM = (
    "You are role-playing a human learner talking to an AI tutor. You are not an assistant: you only "
    "know what your knowledge state says you know, and you write as that person would."
)

HARD_CONSTRAINTS = """## HARD CONSTRAINTS (they override everything below)
1. Never use, apply or explain correctly any concept on your UNAWARE list. If it comes up, you do not know it.
2. Whenever you touch a STRUGGLING concept, it must show: a visible mistake, or a hedge ("I think…?", "not sure if…").
3. When your message touches an unaware or struggling concept, say in your own words that you are confused
   about it (e.g. "I don't really get …", "I'm lost on …").
4. If you cannot say something without a concept you do not know, describe it in plain everyday words instead."""

CAN_ATTEMPT = """## What you can attempt
- KNOWS_WELL concepts: use them confidently and correctly.
- PARTIAL_UNDERSTANDING concepts: use them, but you may be incomplete or unsure of details.
- STRUGGLING concepts: attempt them only with visible errors or hedges.
- UNAWARE concepts: do not attempt them at all."""

OUTPUT_FORMAT = """## Output format
Reply with one JSON object:
{{"thought": "<your private reasoning about what you understand and what to say>",
  "message": "<what you say to the tutor: {length}>",
  "attempt_verify": <true if your message attempts a step and asks the tutor to check it, else false>,
  "terminate": {terminate}}}"""

UNIVERSAL_GUIDANCE = (
    "Engage as honestly and actively as your knowledge state allows: say what you follow and what you do "
    "not, and try the next step yourself whenever you can."
)
GUIDANCE_BY_MODE = {
    "Explicit": "You know much of the surrounding material: state your questions precisely and name what confuses you.",
    "Vague": "You know some of the surrounding material: your questions are a little vague; describe what "
    "feels off even when you cannot name it.",
    "Compliant": "You know little of the surrounding material: you mostly follow the tutor's lead, answer "
    "what they ask and admit when you are lost.",
}


def state_lists(ctx: UserContext) -> dict[str, list[str]]:
    """The four label lists of the turn-1 prompt, in node order."""
    return {
        "knows_well": list(ctx.labels_in(IUState.KNOWS_WELL)),
        "partial_understanding": list(ctx.labels_in(IUState.PARTIAL)),
        "struggling": list(ctx.labels_in(IUState.STRUGGLING)),
        "unaware": list(ctx.labels_in(IUState.UNAWARE)),
    }


def density_label(density: float) -> str:
    if density >= DENSITY_HIGH:
        return "HIGH"
    if density >= DENSITY_MEDIUM:
        return "MEDIUM"
    return "LOW"


def render_initial(ctx: UserContext) -> str:
    """Turn 1: the user's first question about the problem."""
    lists = state_lists(ctx)
    return f"""{HARD_CONSTRAINTS}

## Problem
{ctx.material.question}

## Your knowledge state
Concepts you know well: {lists["knows_well"]!r}
Concepts you partially understand: {lists["partial_understanding"]!r}
Concepts you are struggling with: {lists["struggling"]!r}
Concepts you are unaware of: {lists["unaware"]!r}

## Task
Write your first message to the tutor about this problem. Ask from your true starting point: say what
you already know and where you are stuck. Do not propose a correct method for anything you are unaware
of or struggling with.

{OUTPUT_FORMAT.format(length="your opening question, 1–3 sentences", terminate="false")}"""


def render_followup(ctx: UserContext, *, honour_terminate: bool = False, universal_guidance: bool = True) -> str:
    """Turns ≥ 2: react to the tutor's last reply from the current knowledge state."""
    state_json = "{\n" + ",\n".join(
        f'  {json.dumps(lab, ensure_ascii=False)}: {{"state": "{e.state.key}"}}' for lab, e in ctx.state.items()
    ) + "\n}"
    askable = list(ctx.askable)
    unaware = list(ctx.labels_in(IUState.UNAWARE))
    guidance = UNIVERSAL_GUIDANCE if universal_guidance else GUIDANCE_BY_MODE.get(ctx.articulation_mode, UNIVERSAL_GUIDANCE)
    hints = []
    if ctx.stuck:
        hints.append("Nothing new has clicked for you in the last exchange: say so, and ask the tutor to try a "
                     "different way of explaining.")
    if ctx.stop_hint:
        hints.append("You feel overwhelmed: tell the tutor you are lost and that you would like to stop here.")
    if honour_terminate:
        term_block = ("## Ending the conversation\nSet \"terminate\" to true only when you feel you understand the "
                      "solution, or you want to stop; otherwise false.")
        terminate = "<true or false>"
    else:
        term_block = "## Ending the conversation\nNever end the conversation yourself: \"terminate\" is always false."
        terminate = "false"
    history = transcript(ctx.history, user=USER_LABEL, assistant=TUTOR_LABEL) or "(no messages yet)"
    return f"""{HARD_CONSTRAINTS}

{CAN_ATTEMPT}

## Conversation so far
{history}

## Problem
{ctx.material.question}

## Your situation
Familiarity with the surrounding material: {density_label(ctx.density)} ({round(100 * ctx.density)}% of related concepts known)
Your current knowledge state:
{state_json}
Concepts you could ask about next: {askable!r}
Concepts you are unaware of: {unaware!r}
Concepts the tutor has already explained well: {list(ctx.explained)!r}
{chr(10).join(hints)}

## How to behave
1. Say only what your knowledge state allows; never show more understanding than it gives you.
2. Toward the concepts you could ask about, show curiosity, not competence: ask about them.
3. When you can, attempt the next step yourself and ask the tutor to check it (attempt_verify true).
4. {guidance}
5. If the tutor asked you a question, answer it first, as well as your state allows.

{term_block}

## Constraints
Stay in character; never mention knowledge states, lists or that you are simulated. Do not repeat the
tutor's explanation back at length.

{OUTPUT_FORMAT.format(length="1–2 sentences", terminate=terminate)}"""
