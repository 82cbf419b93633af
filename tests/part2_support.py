"""Quick, deterministic runs for the part-2 tests (no dependency on the offline agents' wording).

A scripted assistant / user / extractor trio: the extractor labels a seeded random subset of IUs
each turn, so runs differ by seed and level and exercise every failure mode.
"""

from __future__ import annotations

import random

from knowsim_core.engine.config import preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import AssistantTurn, Extraction, QuestionMaterial, UserTurn
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.signals import AttemptType, IUSignal


class ScriptedUser:
    id = "test/user"

    def respond(self, ctx):
        return UserTurn(message=f"turn {ctx.turn}: could you explain more?")


class ScriptedAssistant:
    reads_state = False

    def __init__(self, assistant_id: str = "test/assistant"):
        self.id = assistant_id

    def reply(self, ctx):
        return AssistantTurn(message=f"answer {ctx.turn} about {ctx.material.question[:30]}")


class ScriptedExtractor:
    id = "test/extractor"

    def __init__(self, seed: int, share: float = 0.5):
        self.seed, self.share = seed, share

    def extract(self, ctx):
        rng = random.Random(self.seed * 1000 + ctx.turn)
        entries = []
        for n in ctx.material.graph.nodes:
            r = rng.random()
            q = "not_mentioned" if r > self.share else ("well_explained" if r < self.share * 0.6 else "shallow")
            entries.append(IUSignal.make(n.id, q, AttemptType.NONE, f"scripted {q}"))
        return Extraction(entries=tuple(entries))


def make_run(
    graph: IUGraph,
    *,
    question_id: str = "q1",
    question: str = "What is it?",
    level: str = "novice",
    assistant_id: str = "test/assistant",
    seed: int = 1,
    max_turns: int = 6,
    share: float = 0.5,
) -> RunRecord:
    """A finished run of ``max_turns`` turns on ``graph``."""
    sim = Simulation(
        material=QuestionMaterial(question_id, question, "the reference answer", graph),
        assistant=ScriptedAssistant(assistant_id),
        user=ScriptedUser(),
        extractor=ScriptedExtractor(seed, share),
        params=preset("paper-final", max_turns=max_turns),
        level=level,
    )
    sim.reset(seed=seed)
    return sim.run_to_end()


def runs_table_key(at) -> str:
    """The Saved runs table's current key in an AppTest (one key per list shown: ui.runs.run_list.table_key)."""
    return next(d.key for d in at.dataframe if d.key and d.key.startswith("runs_table"))
