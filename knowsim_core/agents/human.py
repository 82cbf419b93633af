"""Turns typed by the researcher: the ``human`` agent, for either side of the conversation.

The Studio's page holds the agent, puts the next typed message into it (:meth:`put`) and then
steps the :class:`~knowsim_core.engine.session.Simulation` as usual — so a typed message goes through the
same extractor, rules, failure modes and storage as an agent's, and the run is stored with the
agent id ``human``. Stepping with nothing typed raises :class:`AwaitingInput` (nothing is played
or stored), never an empty message (which would end the run).

An agent built with a ``fallback`` answers from the typed text once and then hands over to the
fallback: that is how a fork replaces one turn's reply and lets the original agents continue, and
how :func:`next_user_turn` shows the simulated learner's message before you type the reply.
"""

from __future__ import annotations

from typing import Any

from knowsim_core.agents import registry
from knowsim_core.agents.registry import HUMAN_ID
from knowsim_core.errors import ConfigError, SessionError
from knowsim_core.engine.ports import AssistantContext, AssistantTurn, UserContext, UserTurn


class AwaitingInput(SessionError):
    """The next turn needs a message typed by the researcher."""


class _Typed:
    id = HUMAN_ID
    role = ""

    def __init__(self, fallback: Any = None, **_llm_settings: Any):
        # callers may pass LLM settings along with the fallback's; typing needs none
        self.fallback = fallback
        self._pending: dict[str, Any] | None = None

    @property
    def reads_state(self) -> bool:  # only when the agent it hands over to does (the oracle)
        return bool(getattr(self.fallback, "reads_state", False))

    @property
    def waiting(self) -> bool:
        """True while the next turn still needs typed text (an agent with a fallback never waits)."""
        return self._pending is None and self.fallback is None

    def bill_to(self, ledger: Any) -> None:
        """The agent this side hands over to bills the run's ledger (typing costs nothing)."""
        bill_to = getattr(self.fallback, "bill_to", None)
        if callable(bill_to):
            bill_to(ledger)

    def put(self, text: str, **extra: Any) -> None:
        """Hold ``text`` as this side's next message (used by the next step only).

        Raises:
            ConfigError: the text is empty.
        """
        if not text or not text.strip():
            raise ConfigError(f"type the {self.role}'s message first; an empty message cannot be sent")
        self._pending = {"text": text.strip(), **extra}

    def _take(self) -> dict[str, Any] | None:
        typed, self._pending = self._pending, None
        if typed is None and self.fallback is None:
            raise AwaitingInput(f"the next turn needs the {self.role}'s message, typed by you")
        return typed


class HumanAssistant(_Typed):
    """The assistant's replies come from the keyboard."""

    role = "assistant"

    def reply(self, ctx: AssistantContext) -> AssistantTurn:
        typed = self._take()
        if typed is None:
            return self.fallback.reply(ctx)
        return AssistantTurn(typed["text"])


class HumanUser(_Typed):
    """The learner's messages come from the keyboard (``attempt``: the message tries an answer)."""

    role = "user"

    def respond(self, ctx: UserContext) -> UserTurn:
        typed = self._take()
        if typed is None:
            return self.fallback.respond(ctx)
        return UserTurn(typed["text"], attempt=bool(typed.get("attempt", False)), thought=typed.get("thought", ""))


def next_user_turn(sim: Any) -> UserTurn:
    """The simulated learner's message for ``sim``'s next turn, asked now and played by its next step.

    The page shows it before you type the assistant's reply. The user agent is wrapped once in a
    :class:`HumanUser` that holds this message for one step and then hands back to the agent, so
    the message is asked for exactly once (an LLM user is not called twice) and the stored turn
    answers the message you read. Calling it again before the step returns the held message.
    """
    if not isinstance(sim.user, HumanUser) or sim.user.fallback is None:
        sim.user = HumanUser(fallback=sim.user)
    held = sim.user
    if held._pending is None:
        turn = len(sim.run.turns) + 1
        # the same context Simulation.step() would build for this turn
        u = held.fallback.respond(sim.user_context(turn, sim.history()))
        # what it cost is in the run's ledger already (the agent bills it): the step's record takes it
        held.put(u.message, attempt=u.attempt, thought=u.thought)
    return UserTurn(held._pending["text"], attempt=bool(held._pending.get("attempt")), thought=held._pending.get("thought", ""))


registry.register("assistant", HUMAN_ID, HumanAssistant, "You type the assistant's replies.")
registry.register("user", HUMAN_ID, HumanUser, "You type the learner's messages.")

__all__ = ["HUMAN_ID", "AwaitingInput", "HumanAssistant", "HumanUser", "next_user_turn"]
