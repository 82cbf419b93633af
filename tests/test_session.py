"""Simulation, replay and what-if with small scripted adapters (no model, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from knowsim_core.engine.records import Ending
from knowsim_core.vocab import EndReason

from knowsim_core.engine.config import preset
from knowsim_core.errors import SessionError
from knowsim_core.engine.ports import AssistantTurn, Extraction, UserTurn
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.session import Simulation, replay
from knowsim_core.engine.whatif import what_if
from knowsim_core.engine.signals import IUSignal


@dataclass
class EchoUser:
    id: str = "test/user"

    def respond(self, ctx):
        return UserTurn(message=f"turn {ctx.turn}: what next?", attempt=ctx.turn % 2 == 0)


@dataclass
class ListAssistant:
    """Teaches every IU in node order, `per_turn` at a time."""

    per_turn: int = 3
    id: str = "test/assistant"
    reads_state: bool = False

    def reply(self, ctx):
        ids = ctx.material.graph.index.ids
        start = (ctx.turn - 1) * self.per_turn % len(ids)
        return AssistantTurn(message="Let me explain " + ", ".join(ids[start : start + self.per_turn]))


@dataclass
class ParseExtractor:
    """Reads back the ids the ListAssistant named; fails on a chosen turn."""

    fail_on: int | None = None
    id: str = "test/extractor"

    def extract(self, ctx):
        if ctx.turn == self.fail_on:
            return Extraction(entries=(), failed=True, error="unparseable")
        named = ctx.assistant_message.removeprefix("Let me explain ").split(", ")
        return Extraction(
            entries=tuple(IUSignal.make(i, "well_explained" if i in named else "not_mentioned") for i in ctx.material.graph.index.ids)
        )


def make_sim(**kw):
    sample = get_sample("sample_lava_lamps")
    kw.setdefault("params", preset("paper-final", max_turns=6))
    return Simulation(
        material=sample.material, assistant=kw.pop("assistant", ListAssistant()), user=EchoUser(),
        extractor=kw.pop("extractor", ParseExtractor()), **kw,
    )


def test_step_before_reset_is_a_named_error():
    with pytest.raises(SessionError, match="reset"):
        make_sim().step()


def test_a_run_plays_to_max_turns_and_is_deterministic():
    a, b = make_sim(), make_sim()
    a.reset(seed=7)
    b.reset(seed=7)
    ra, rb = a.run_to_end(), b.run_to_end()
    assert len(ra.turns) == 6 and ra.stop_reason == "max_turns"
    assert ra == rb
    # a step after the end plays nothing and says how it ended, as data
    assert a.step() == a.ending == Ending(EndReason.STOPPED, "max_turns") and len(a.run.turns) == 6


def test_turn_records_chain_states():
    sim = make_sim()
    sim.reset(seed=1)
    first, second = sim.step(), sim.step()
    assert second.state_before == first.state_after
    assert [t.turn for t in sim.records] == [1, 2]


def test_replay_of_own_signals_reproduces_the_run():
    sim = make_sim()
    sim.reset(seed=3)
    run = sim.run_to_end()
    assert replay(run) == run


def test_what_if_changes_exactly_the_turns_from_the_edit():
    sim = make_sim(assistant=ListAssistant(per_turn=2))
    sim.reset(seed=3)
    run = sim.run_to_end()
    k = 3
    edited = tuple(IUSignal.make(i, "well_explained") for i in run.graph.index.ids)
    alt = what_if(run, k, signals=edited)
    assert alt.turns[: k - 1] == run.turns[: k - 1]
    assert alt.turns[k - 1].signals == edited
    assert alt.turns[k - 1].quantities.effective_load > run.turns[k - 1].quantities.effective_load
    assert alt.turns[k - 1].state_after != run.turns[k - 1].state_after


def test_extractor_failure_is_flagged_applied_and_ends_the_run():
    sim = make_sim(extractor=ParseExtractor(fail_on=2))
    sim.reset(seed=1)
    sim.step()
    rec = sim.step()
    assert rec.extractor_failed and "no usable labels" in rec.notes[0]
    assert rec.quantities.effective_load == 0.0
    assert all(e.carry == 0.0 and e.evidence == "" for e in rec.state_after.values())
    assert sim.done and sim.run.stop_reason == "phase_b_empty"


def test_real_stop_mode_ends_on_the_firing_turn():
    sim = make_sim(assistant=ListAssistant(per_turn=14), stop_mode="real", params=preset("paper-final", max_turns=15))
    sim.reset(seed=2)
    run = sim.run_to_end()
    stop, reason = run.virtual_stop
    assert reason is not None and len(run.turns) == stop + 1 and run.stop_reason == reason


def test_resume_continues_exactly_like_an_uninterrupted_run():
    full = make_sim()
    full.reset(seed=5)
    whole = full.run_to_end()
    part = make_sim()
    part.reset(seed=5)
    part.step()
    part.step()
    resumed = Simulation.resume(part.run, assistant=ListAssistant(), user=EchoUser(), extractor=ParseExtractor())
    assert resumed.run_to_end() == whole
