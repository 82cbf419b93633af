"""The offline learners per turn against the paper's recordings, per domain: the README's learner-rates table.

For the offline adaptive tutor × novice (the recorded cell), each learner's per-turn figures as
the offline labeller reads them (``evaluation.paper_matrix.run_turn_stats``: reasoning IUs,
articulated IUs, attempt and comprehension load / τ, IUs the tutor mentions), from the paper's
cached novice s_0, seeds 1–3, beside the recordings' own per-turn labels of the same domain
(``evaluation.paper.RECORDED_TURN_FIGURES_BY_DOMAIN``: MathQA from math_003 and math_004, ExpertQA
from expertqa_001):

* ``offline/knowsim`` on each domain's recorded questions (MathQA: math_003, math_004 — key
  ``knowsim_labelled``; ExpertQA: expertqa_001 — key ``knowsim_expert``), like with like, what
  ``tests/test_learner_rates.py`` holds to its tolerance of the recorded figure;
* ``offline/knowsim`` and ``offline/person`` on all four recorded questions (expertqa_002's
  recording is not distributed, so these columns have no single recorded counterpart);
* leave one recording out (MathQA, the domain with two recordings): the rates measured on one
  recording, the learner played on the other one's question; reasoning IUs per turn beside the
  held-out recording's and beside the training recording's own figure (the baseline: a learner
  copying it exactly). ExpertQA has one recording, so its table is in-sample only.

Usage: ``python benchmarks/learner_rates.py [--reference ../shared/reference]``; writes
``benchmarks/logs/learner_rates.json`` (deterministic: same code, same figures).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.agents import learner_rates as lr  # noqa: E402
from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.agents.offline_user import PaperLearner  # noqa: E402
from knowsim_core.engine.session import Simulation  # noqa: E402
from knowsim_core.evaluation.paper import RECORDED_TURN_FIGURES_BY_DOMAIN  # noqa: E402
from knowsim_core.evaluation.paper_matrix import RECORDED_QUESTIONS, load_paper_questions, run_turn_stats  # noqa: E402

SEEDS = (1, 2, 3)
LABELLED = ("math_003", "math_004")  # the MathQA recordings whose per-turn labels the shared data ships
EXPERT_LABELLED = ("expertqa_001",)  # the ExpertQA one
KEYS = {"reasoning IUs": "reasoning", "articulated IUs": "articulated", "attempt load / tau": "attempt_load",
        "comprehension load / tau": "comprehension_load", "IUs mentioned": "mentioned"}


def play(question, user, seed: int):
    sim = Simulation(material=question.material, assistant=registry.resolve("assistant", "offline/adaptive"),
                     user=user, extractor=registry.resolve("extractor", "offline/lexical"), level="novice")
    sim.reset(seed=seed, initial=question.initial["novice"])
    return sim.run_to_end()


def column(questions, ids, user_id: str) -> dict[str, float]:
    runs = [play(questions[q], registry.resolve("user", user_id), seed) for q in ids for seed in SEEDS]
    return {KEYS[name]: round(value, 3) for name, value in run_turn_stats(runs).items()}


def leave_one_out(reference: Path, questions) -> dict[str, dict[str, float]]:
    turns = [t for t in lr.recorded_turns(reference) if t.domain == "math"]
    out = {}
    for held in LABELLED:
        train = [t for t in turns if t.problem_id != held]
        own = [t for t in turns if t.problem_id == held]

        class HeldOutLearner(PaperLearner):
            rates = lr.measure_rates(train)

        runs = [play(questions[held], HeldOutLearner(), seed) for seed in SEEDS]
        reasoning = sum(sum(1 for s in t.signals if s.attempt.value == "reasoning") for r in runs for t in r.turns)
        out[held] = {"learner": round(reasoning / sum(len(r.turns) for r in runs), 2),
                     "recorded": round(sum(len(t.reasoning) for t in own) / len(own), 2),
                     "baseline": round(sum(len(t.reasoning) for t in train) / len(train), 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    args = ap.parse_args()
    questions = {q.material.question_id: q for q in load_paper_questions(args.reference)}
    figures = {
        "recorded": {KEYS[k]: round(v, 2) for k, v in RECORDED_TURN_FIGURES_BY_DOMAIN["math"].items()},
        "knowsim_labelled": column(questions, LABELLED, "offline/knowsim"),
        "recorded_expert": {KEYS[k]: round(v, 2) for k, v in RECORDED_TURN_FIGURES_BY_DOMAIN["expert"].items()},
        "knowsim_expert": column(questions, EXPERT_LABELLED, "offline/knowsim"),
        "knowsim_all_four": column(questions, RECORDED_QUESTIONS, "offline/knowsim"),
        "person_all_four": column(questions, RECORDED_QUESTIONS, "offline/person"),
        "leave_one_out": leave_one_out(args.reference, questions),
    }
    for name, col in figures.items():
        print(f"{name:<18} {col}")
    write_log("learner_rates", figures, seeds=list(SEEDS),
              split="offline/adaptive x novice from the paper's cached s_0; each domain's rates measured on its "
                    "recordings (MathQA: math_003, math_004; ExpertQA: expertqa_001) and compared on the same "
                    "questions (in-sample); leave one recording out within MathQA; all four = "
                    + ", ".join(RECORDED_QUESTIONS),
              extra={"reference": "../shared/reference"})


if __name__ == "__main__":
    main()
