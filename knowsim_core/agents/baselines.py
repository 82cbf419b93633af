"""Floor baselines for realism: user simulators that show what a trivial simulator scores.

* ``baseline/copy-last`` repeats the person's previous message (at turn 1 it states the question);
* ``baseline/generic`` always says :data:`GENERIC_MESSAGE` (at turn 1 it states the question).

They ignore the knowledge state on purpose. Any realism table lists them beside the simulator
under test, so a score is read against what copying or a stock phrase already gets.
"""

from __future__ import annotations

from knowsim_core.agents import registry
from knowsim_core.engine.ports import UserContext, UserTurn

GENERIC_MESSAGE = "Could you explain that step again?"


def _opening(ctx: UserContext) -> str:
    return ctx.material.question


class CopyLastUser:
    """Repeats the user's own previous message."""

    id = "baseline/copy-last"

    def __init__(self, **_settings: object):  # LLM settings a caller passes to every non-offline id
        pass

    def respond(self, ctx: UserContext) -> UserTurn:
        last = next((m.text for m in reversed(ctx.history) if m.role == "user" and m.text.strip()), "")
        return UserTurn(message=last or _opening(ctx), thought="floor baseline: repeats the previous user message")


class GenericUser:
    """Says the same stock request every turn."""

    id = "baseline/generic"

    def __init__(self, **_settings: object):
        pass

    def respond(self, ctx: UserContext) -> UserTurn:
        message = GENERIC_MESSAGE if ctx.history else _opening(ctx)
        return UserTurn(message=message, thought="floor baseline: a fixed request")


registry.register("user", CopyLastUser.id, CopyLastUser,
                  "Floor baseline for realism: repeats the person's previous message (turn 1: the question).")
registry.register("user", GenericUser.id, GenericUser,
                  f"Floor baseline for realism: always says {GENERIC_MESSAGE!r} (turn 1: the question).")
