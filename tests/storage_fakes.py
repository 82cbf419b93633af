"""Tiny deterministic agents for the storage / runner / format tests (no offline module needed).

They are registered under ``test/…`` ids so the runner can rebuild them by id on resume.
"""

from __future__ import annotations

from knowsim_core.agents import registry
from knowsim_core.engine.ports import AssistantTurn, Extraction, UserTurn
from knowsim_core.engine.signals import AttemptType, IUSignal

ASSISTANT = "test/teacher"
USER = "test/learner"
EXTRACTOR = "test/labeller"
FAILING_ASSISTANT = "test/broken"


class FakeAssistant:
    id = ASSISTANT
    reads_state = False

    def reply(self, ctx):
        labels = ctx.material.graph.index.labels
        lab = labels[(ctx.turn - 1) % len(labels)]
        return AssistantTurn(f"Turn {ctx.turn}: let me explain {lab} step by step (zebra{ctx.turn}).")


class FakeUser:
    id = USER

    def respond(self, ctx):
        return UserTurn(f"Question {ctx.turn}: I am confused about {ctx.material.question[:30]}")


class FakeExtractor:
    id = EXTRACTOR

    def extract(self, ctx):
        ids = ctx.material.graph.index.update_order
        pick = ids[(ctx.turn - 1) % len(ids)]
        quality = "well_explained" if ctx.turn % 3 else "shallow"
        return Extraction((IUSignal.make(pick, quality, AttemptType.NONE, "fake"),))


class BrokenAssistant(FakeAssistant):
    id = FAILING_ASSISTANT

    def reply(self, ctx):
        from knowsim_core.errors import ProviderError

        if ctx.turn >= 2:
            raise ProviderError("fake provider: rate limited (HTTP 429); wait and resume the run")
        return super().reply(ctx)


def register_fakes() -> None:
    registry.register("assistant", ASSISTANT, lambda **_: FakeAssistant(), "test teacher")
    registry.register("assistant", FAILING_ASSISTANT, lambda **_: BrokenAssistant(), "fails on turn 2")
    registry.register("user", USER, lambda **_: FakeUser(), "test learner")
    registry.register("extractor", EXTRACTOR, lambda **_: FakeExtractor(), "test labeller")


register_fakes()


class Clock:
    """A hand-moved Unix clock for lease tests (``Store(path, clock=Clock())``; move it with ``clock.t += s``)."""

    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t
