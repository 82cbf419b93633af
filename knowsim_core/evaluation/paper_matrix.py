"""The offline matrix on the paper's own questions, in process (what the paper check runs).

Reads the paper's items, IU graphs and cached initial states from a reference folder with the
importers (:func:`knowsim_core.services.importing.read_items`), so the runs start from exactly the
states the paper's runs started from, and plays every (question × level × strategy) with the
offline user and labeller, all 15 turns with the stop recorded virtually, as the paper ran them.
No storage: the point is the figures, and the batch command already measures the stored path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from knowsim_core.agents import registry
from knowsim_core.engine.ports import QuestionMaterial
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.evaluation.paper import RunOutcome, outcome_of
from knowsim_core.services.importing import DOMAINS, read_items

LEVELS = ("novice", "intermediate", "advanced")
STRATEGIES = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic")


@dataclass(frozen=True, slots=True)
class PaperQuestion:
    material: QuestionMaterial
    initial: dict[str, KnowledgeState]  # level → the paper's cached s_0
    task: str


def load_paper_questions(reference: str | Path) -> list[PaperQuestion]:
    """The paper's 60 questions (file order: math then ExpertQA) with graphs and cached s_0."""
    items, graph_of, init = read_items(Path(reference), None)
    out = []
    for it in items:
        graph = graph_of.get(it.id)
        if graph is None or not init.get(it.id):
            continue
        mat = QuestionMaterial(it.id, it.question, it.reference_answer, graph, DOMAINS.get(it.task, it.task))
        out.append(PaperQuestion(mat, dict(init[it.id]), it.task))
    return out


def split_halves(questions: Sequence[PaperQuestion]) -> tuple[list[PaperQuestion], list[PaperQuestion]]:
    """The stated split for anything tuned against the paper's figures: within each task, questions
    at even positions of the file (``math_001``, ``math_003``, … — 0-based 0, 2, …) are the tuning
    half, odd positions the held-out half; 15 math + 15 ExpertQA in each."""
    tune, held = [], []
    for task in sorted({q.task for q in questions}):
        for i, q in enumerate(q for q in questions if q.task == task):
            (tune if i % 2 == 0 else held).append(q)
    return tune, held


def run_matrix(
    questions: Iterable[PaperQuestion], *, levels: Sequence[str] = LEVELS, assistants: Sequence[str] = STRATEGIES,
    seed: int = 1, user: str = "offline/knowsim", extractor: str = "offline/lexical",
    on_run: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Play every (question × level × assistant) once with ``seed``; one :class:`RunOutcome` each."""
    out = []
    for q in questions:
        for level in levels:
            s0 = q.initial.get(level)
            if s0 is None:
                continue
            for a in assistants:
                sim = Simulation(
                    material=q.material, assistant=registry.resolve("assistant", a),
                    user=registry.resolve("user", user), extractor=registry.resolve("extractor", extractor),
                    level=level,
                )
                sim.reset(seed=seed, initial=s0)
                o = outcome_of(sim.run_to_end(), assistant=a)
                out.append(o)
                if on_run is not None:
                    on_run(o)
    return out
