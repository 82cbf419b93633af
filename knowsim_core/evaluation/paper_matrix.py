"""The offline matrix on the paper's own questions, in process (what the paper check runs).

Reads the paper's items, IU graphs and cached initial states from a reference folder with the
importers (:func:`knowsim_core.services.importing.read_items`), so the runs start from exactly the
states the paper's runs started from, and plays every (question × level × strategy) with the
offline user and labeller, all 15 turns with the stop recorded virtually, as the paper ran them.
No storage: the point is the figures, and the batch command already measures the stored path.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import quantiles
from typing import Callable, Iterable, Sequence

from knowsim_core.agents import registry
from knowsim_core.agents.learner_rates import recorded_turns
from knowsim_core.engine.ports import QuestionMaterial
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.evaluation.paper import TURN_FIGURES, RunOutcome, outcome_of, turn_figures
from knowsim_core.formats.jsonio import read_json
from knowsim_core.formats.reference import load_iu_cache
from knowsim_core.services.importing import DOMAINS, read_items
from knowsim_core.text.profiles import sentences

LEVELS = ("novice", "intermediate", "advanced")
STRATEGIES = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic")
PARENT_POLL_S = 0.2  # how often a worker of run_matrix(workers=N) checks that its parent lives


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
    on_run: Callable[[RunOutcome], None] | None = None, workers: int = 1,
) -> list[RunOutcome]:
    """Play every (question × level × assistant) once with ``seed``; one :class:`RunOutcome` each,
    in question, level, assistant order. ``workers`` > 1 plays the questions in that many processes:
    every run is seeded on its own, so the outcomes (and their order) are the same as in one process;
    ``on_run`` is still called in this process, in that order, as each question's runs come back."""
    jobs = [(q, tuple(levels), tuple(assistants), seed, user, extractor) for q in questions]
    out: list[RunOutcome] = []

    def collect(chunks: Iterable[list[RunOutcome]]) -> None:
        for chunk in chunks:
            for o in chunk:
                out.append(o)
                if on_run is not None:
                    on_run(o)

    if workers <= 1 or len(jobs) < 2:
        collect(map(_play_question, jobs))
        return out
    # fork where the platform has it (the workers inherit the imported engine: no re-import per
    # worker). A pool's worker waits on a queue whose other end it holds itself, so a parent killed
    # with SIGKILL would leave it waiting for ever: each worker watches its parent instead.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx,
                             initializer=_watch_parent, initargs=(os.getpid(),)) as pool:
        collect(pool.map(_play_question, jobs))
    return out


def _watch_parent(parent: int) -> None:
    """A worker's first act: a thread that ends the worker once ``parent`` is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _play_question(job: tuple[PaperQuestion, tuple[str, ...], tuple[str, ...], int, str, str]) -> list[RunOutcome]:
    """One question's runs (every level with a cached s_0 × every assistant) — a worker's unit."""
    q, levels, assistants, seed, user, extractor = job
    out = []
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
            out.append(outcome_of(sim.run_to_end(), assistant=a))
    return out


# ---------------------------------------------------------------------- the measured reply shapes
RECORDINGS = "examples/mathqa_structured_adaptive_novice.json"
EXPERT_RECORDINGS = "examples/expertqa_structured_adaptive_novice_001.json"
ARENA = "simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"


def measure_reply_shapes(reference: str | Path, realworld: str | Path) -> dict[str, tuple]:
    """What :mod:`knowsim_core.agents.tutor_shapes` holds, measured again from the shared data:
    ``turns`` — per recorded structured MathQA tutor turn (the paper's LLM labels), (share of the
    graph's IUs mentioned, share of those well explained), rounded to 3 places and sorted;
    ``expert_turns`` — the same pairs from the ExpertQA recording (expertqa_001, the paper's LLM
    labels); ``sentences`` — the 20-quantiles of sentences per reply over the MathQA recordings' and
    the real conversations' tutor replies (:func:`~knowsim_core.text.profiles.sentences`, as the
    agents count them); ``expert_sentences`` — the same over the ExpertQA recording's replies
    (length-controlled in the paper's ExpertQA runs)."""
    reference, realworld = Path(reference), Path(realworld)

    def shapes(runs: Path, graphs_path: Path, lengths: list[int] | None) -> list[tuple[float, float]]:
        graphs = load_iu_cache(graphs_path)
        out: list[tuple[float, float]] = []
        for rec in read_json(runs):
            if rec.get("run_type") != "KS-based":
                continue
            n = len(graphs[rec["problem_id"]].nodes)
            replies = [text for role, text in rec["conversation"] if role == "assistant"]
            for text, entries in zip(replies, rec["iu_analysis_history"]):
                mentioned = {e["id"] for e in entries if e.get("teaching_quality") not in ("not_mentioned", None)}
                well = {e["id"] for e in entries if e.get("teaching_quality") == "well_explained"}
                out.append((round(len(mentioned) / n, 3), round(len(well) / max(1, len(mentioned)), 3)))
                if lengths is not None:
                    lengths.append(len(sentences(text)))
        return out

    lengths: list[int] = []
    expert_lengths: list[int] = []
    turns = shapes(reference / RECORDINGS, reference / "iu_cache" / "math.json", lengths)
    expert = shapes(reference / EXPERT_RECORDINGS, reference / "iu_cache" / "expertqa.json", expert_lengths)
    for conv in read_json(realworld / ARENA):
        lengths.extend(len(sentences(a)) for a in conv.get("ai_responses") or () if isinstance(a, str))
    return {"turns": tuple(sorted(turns)), "expert_turns": tuple(sorted(expert)),
            "sentences": tuple(round(q, 1) for q in quantiles(lengths, n=20)), "replies": (len(lengths),),
            "expert_sentences": tuple(round(q, 1) for q in quantiles(expert_lengths, n=20))}


def labelled_shape(runs_of: Callable[[], Iterable], ) -> tuple[float, float]:
    """(mean share of the graph's IUs the labeller marks mentioned, mean share of those well
    explained) per turn over the runs ``runs_of()`` yields — the offline tutors' replies as the
    offline labeller reads them, to set beside the recorded turns' labels."""
    cov: list[float] = []
    well: list[float] = []
    for run in runs_of():
        n = len(run.graph.nodes)
        for t in run.turns:
            m = [s for s in t.signals if s.mentioned]
            cov.append(len({s.id for s in m}) / n)
            well.append(sum(1 for s in m if s.teaching_quality == "well_explained") / max(1, len(m)))
    return (sum(cov) / len(cov), sum(well) / len(well)) if cov else (0.0, 0.0)


def play(q: PaperQuestion, level: str, assistant: str, seed: int = 1, user: str = "offline/knowsim"):
    """One run of the matrix, whole (for figures that need the turns, e.g. :func:`labelled_shape`)."""
    sim = Simulation(material=q.material, assistant=registry.resolve("assistant", assistant),
                     user=registry.resolve("user", user),
                     extractor=registry.resolve("extractor", "offline/lexical"), level=level)
    sim.reset(seed=seed, initial=q.initial[level])
    return sim.run_to_end()


# ---------------------------------------------------------------------- the learner, per turn
RECORDED_QUESTIONS = ("expertqa_001", "expertqa_002", "math_003", "math_004")  # the four recorded (spec §5.1)


def run_turn_stats(runs: Iterable) -> dict[str, float]:
    """Per-turn means over every turn of ``runs`` (as their labeller read them) of
    :data:`~knowsim_core.evaluation.paper.TURN_FIGURES`: IUs with a reasoning entry, with an
    articulation entry, attempt load / τ, comprehension load / τ, IUs the tutor's reply mentions."""
    sums = [0.0] * len(TURN_FIGURES)
    n = 0
    for run in runs:
        for i, v in enumerate(turn_figures(run)):
            sums[i] += v
        n += len(run.turns)
    return {name: sums[i] / n for i, name in enumerate(TURN_FIGURES)} if n else {}


def recorded_turn_stats(reference: str | Path, domain: str | None = None) -> dict[str, float]:
    """:data:`~knowsim_core.evaluation.paper.TURN_FIGURES` per turn over the structured recordings
    the reference folder ships of ``domain`` (``math`` / ``expert``; None: all), the paper's own labels,
    rounded to 3 places as :data:`~knowsim_core.evaluation.paper.RECORDED_TURN_FIGURES_BY_DOMAIN`
    holds them."""
    turns = [t for t in recorded_turns(reference) if domain is None or t.domain == domain]
    rows = [(len(t.reasoning), len(t.articulation), t.attempt_load / t.tau, t.comprehension_load / t.tau, t.mentioned)
            for t in turns]
    return {name: round(sum(r[i] for r in rows) / len(rows), 3) for i, name in enumerate(TURN_FIGURES)} if rows else {}
