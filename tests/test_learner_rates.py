"""offline/knowsim, the stand-in for the paper's LLM-simulated learner (issue 29), and offline/person.

* The rates table (agents/learner_rates.RATES) and the recordings' per-turn figures
  (evaluation/paper.RECORDED_TURN_FIGURES) equal a fresh measurement from the shared recordings.
* The knowledge state limits the draws: an unaware IU the tutor never told about is never drawn,
  even at a rate of 1.
* Per turn against the recordings: the recorded side is the two MathQA recordings the shared data
  ships (30 turns; the ExpertQA recordings' per-turn labels are not distributed), so like with
  like is the learner on those two questions (math_003, math_004; novice; offline/adaptive, the
  recorded strategy; the paper's cached s_0; seeds 1–3), read by the offline labeller. Stated
  tolerance: each figure within 40 % of the recordings' per-turn mean (the relative tolerance
  the issue sets for KG). Articulated IUs is asserted only as present: the labeller reads a
  restatement as articulation only when every concept word was in the tutor's last reply, so it
  reads fewer than were recorded (README "The offline world against the paper" gives every figure
  and the four-question figures, from ``benchmarks/learner_rates.py``'s log).
* Leave one recording out: the rates measured on one MathQA recording, the learner played on the
  other recording's question. Baseline: the training recording's own reasoning per turn (what a
  learner copying it exactly would give). The learner must be no farther from the held-out
  recording than that baseline, with a stated margin of 0.1 IU per turn. The measured figures
  (seeds 1–3) are in ``benchmarks/logs/learner_rates.json`` (``benchmarks/learner_rates.py``) and the
  README; the two recordings differ by 48 %, so the 40 % tolerance of the in-sample check cannot
  hold out of sample.
"""

from __future__ import annotations

import random

import pytest

from knowsim_core.agents import learner_rates as lr
from knowsim_core.agents import registry
from knowsim_core.agents.offline_user import PaperLearner, VoiceUser
from knowsim_core.engine.config import preset
from knowsim_core.engine.ports import Message, UserContext
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.state import IUState, initial_state
from knowsim_core.evaluation.paper import RECORDED_TURN_FIGURES
from knowsim_core.formats.samples import get_sample

RELATIVE = 0.40


def test_each_domains_rates_table_is_what_its_recordings_measure(reference_dir):
    """Per domain (issue 48: the ExpertQA recording's arrival made the pooled table a mix of the two
    domains' learners): MathQA from math_003/004, ExpertQA from expertqa_001."""
    turns = lr.recorded_turns(reference_dir)
    by_domain = {d: [t for t in turns if t.domain == d] for d in ("math", "expert")}
    assert {t.problem_id for t in by_domain["math"]} == {"math_003", "math_004"} and len(by_domain["math"]) == 30
    assert {t.problem_id for t in by_domain["expert"]} == {"expertqa_001"} and len(by_domain["expert"]) == 15
    assert len(turns) == 45
    for domain, table in lr.RATES_BY_DOMAIN.items():
        assert lr.measure_rates(by_domain[domain]) == table, domain
    assert lr.rates_for("math") is lr.RATES and lr.rates_for("expert") is lr.EXPERT_RATES
    assert lr.rates_for("chemistry") is lr.RATES


def test_the_recorded_turn_figures_are_what_the_recordings_measure(reference_dir):
    from knowsim_core.evaluation.paper import RECORDED_TURN_FIGURES_BY_DOMAIN
    from knowsim_core.evaluation.paper_matrix import recorded_turn_stats

    for domain, figures in RECORDED_TURN_FIGURES_BY_DOMAIN.items():
        assert recorded_turn_stats(reference_dir, domain) == figures, domain
    assert RECORDED_TURN_FIGURES == RECORDED_TURN_FIGURES_BY_DOMAIN["math"]


def test_the_learner_draws_from_its_questions_domain_table(monkeypatch):
    """offline/knowsim on an ExpertQA question uses the ExpertQA table (old code: one table for all)."""
    from dataclasses import replace

    s = get_sample("sample_lava_lamps")
    reply = " ".join(n.concept + ": " + n.description for n in s.graph.nodes)
    history = (Message("user", "How do I start?"), Message("assistant", reply))
    st = initial_state(s.graph, "novice", preset(), seed=2)
    seen = []

    def spy(rng, state, told, order, rates):
        seen.append(rates)
        return [], []

    monkeypatch.setattr(lr, "draw_attempts", spy)
    for domain in ("math", "expert", ""):
        mat = replace(s.material, domain=domain)
        ctx = UserContext(turn=2, material=mat, history=history, state=st, density=0.5,
                          articulation_mode="Explicit", explained=(), stuck=False, stop_hint=False, seed=1)
        registry.resolve("user", "offline/knowsim").respond(ctx)
    assert seen == [lr.MATH_RATES, lr.EXPERT_RATES, lr.MATH_RATES]


def test_an_unaware_iu_never_told_about_is_never_drawn_even_at_rate_one():
    """Planted: every cell at P(reasoning) = 1. Unaware IUs never told about stay out; the rest
    (told, or not unaware) are all drawn."""
    ones = {k: (1.0, 0.0, 1) for k in lr.RATES}
    ius = [f"IU{i}" for i in range(8)]
    state = {iu: IUState(i % 4) for i, iu in enumerate(ius)}
    told = {iu: (lr.NEVER if i < 4 else lr.LAST) for i, iu in enumerate(ius)}
    reasoning, articulation = lr.draw_attempts(random.Random(1), state, told, ius, ones)
    assert "IU0" not in reasoning and "IU4" in reasoning  # unaware: never told vs told
    assert set(reasoning) == set(ius) - {"IU0"} and not articulation


def test_draws_are_deterministic_per_seed():
    ius = [f"IU{i}" for i in range(12)]
    state = {iu: IUState.STRUGGLING for iu in ius}
    told = dict.fromkeys(ius, lr.LAST)
    a = [lr.draw_attempts(random.Random(s), state, told, ius) for s in range(30)]
    b = [lr.draw_attempts(random.Random(s), state, told, ius) for s in range(30)]
    assert a == b and len({str(x) for x in a}) > 1


def _ctx(seed: int, history=()):
    s = get_sample("sample_lava_lamps")
    st = initial_state(s.graph, "novice", preset(), seed=2)
    return UserContext(turn=len(history) // 2 + 1, material=s.material, history=tuple(history), state=st,
                       density=0.5, articulation_mode="Explicit", explained=(), stuck=False, stop_hint=False, seed=seed)


def test_person_is_todays_voice_and_knowsim_adds_attempts_to_it():
    """offline/person is registered with the offline agents and builds on the people-like voice
    (old code: the voice was offline/knowsim); offline/knowsim writes the same voice message after
    its attempt sentences."""
    from knowsim_core.agents.person_user import PersonUser

    s = get_sample("sample_lava_lamps")
    reply = " ".join(n.concept + ": " + n.description for n in s.graph.nodes)
    history = (Message("user", "How do I start?"), Message("assistant", reply))
    person = registry.resolve("user", "offline/person")
    knowsim = registry.resolve("user", "offline/knowsim")
    assert isinstance(person, PersonUser) and isinstance(person.voice, VoiceUser)
    assert isinstance(knowsim, PaperLearner)
    added = 0
    for seed in range(12):
        voice = VoiceUser().respond(_ctx(seed, history)).message
        mine = knowsim.respond(_ctx(seed, history))
        assert mine.message.endswith(voice)
        added += mine.message != voice
    assert added >= 6  # a reply naming every IU: the learner attempts something in most turns


def _play(material, initial, user, seed):
    sim = Simulation(material=material, assistant=registry.resolve("assistant", "offline/adaptive"), user=user,
                     extractor=registry.resolve("extractor", "offline/lexical"), level="novice")
    sim.reset(seed=seed, initial=initial)
    return sim.run_to_end()


@pytest.fixture(scope="module")
def paper_questions(reference_dir):
    from knowsim_core.evaluation.paper_matrix import load_paper_questions

    return {q.material.question_id: q for q in load_paper_questions(reference_dir)}


def test_per_turn_figures_on_the_recorded_math_questions(paper_questions):
    from knowsim_core.evaluation.paper_matrix import RECORDED_QUESTIONS, run_turn_stats

    runs = [_play(paper_questions[q].material, paper_questions[q].initial["novice"],
                  registry.resolve("user", "offline/knowsim"), seed)
            for q in ("math_003", "math_004") for seed in (1, 2, 3)]
    ours = run_turn_stats(runs)
    for name in ("reasoning IUs", "attempt load / tau", "comprehension load / tau", "IUs mentioned"):
        rec = RECORDED_TURN_FIGURES[name]
        assert abs(ours[name] - rec) <= RELATIVE * rec, (name, ours[name], rec)
    assert ours["articulated IUs"] > 0
    # the people-like voice, for contrast, hardly attempts at all (real people: 3 % of novice answers)
    person = run_turn_stats(_play(paper_questions[q].material, paper_questions[q].initial["novice"],
                                  registry.resolve("user", "offline/person"), 1) for q in RECORDED_QUESTIONS)
    assert person["reasoning IUs"] < 0.25 * ours["reasoning IUs"]


@pytest.mark.parametrize("held", ["math_003", "math_004"])
def test_leave_one_recording_out_reasoning_per_turn(reference_dir, paper_questions, held):
    turns = [t for t in lr.recorded_turns(reference_dir) if t.domain == "math"]
    table = lr.measure_rates(t for t in turns if t.problem_id != held)
    own = [t for t in turns if t.problem_id == held]
    recorded = sum(len(t.reasoning) for t in own) / len(own)

    class Learner(PaperLearner):
        rates = table

    other = [t for t in turns if t.problem_id != held]
    baseline = sum(len(t.reasoning) for t in other) / len(other)
    q = paper_questions[held]
    runs = [_play(q.material, q.initial["novice"], Learner(), seed) for seed in (1, 2, 3)]
    ours = sum(sum(1 for s in t.signals if s.attempt.value == "reasoning") for r in runs for t in r.turns) / sum(
        len(r.turns) for r in runs)
    assert abs(ours - recorded) <= abs(baseline - recorded) + 0.1, (held, ours, recorded, baseline)


def test_the_learner_is_deterministic_per_seed(paper_questions):
    q = paper_questions["math_003"]
    a = _play(q.material, q.initial["novice"], registry.resolve("user", "offline/knowsim"), 7)
    b = _play(q.material, q.initial["novice"], registry.resolve("user", "offline/knowsim"), 7)
    c = _play(q.material, q.initial["novice"], registry.resolve("user", "offline/knowsim"), 8)
    assert [t.user_message for t in a.turns] == [t.user_message for t in b.turns]
    assert [t.user_message for t in a.turns] != [t.user_message for t in c.turns]


@pytest.mark.parametrize("domain, questions", [
    pytest.param("math", ("math_003", "math_004"), marks=pytest.mark.xfail(
        strict=True, reason="attempt load 0.265 vs 0.40 tau recorded (-34 %; reasoning IUs 1.64 vs 2.07, -21 %, is "
                            "within): benchmarks/logs/learner_rates.json")),
    pytest.param("expert", ("expertqa_001",), marks=pytest.mark.xfail(
        strict=True, reason="reasoning IUs 3.64 vs 2.67 recorded (+36 %; attempt load 0.458 vs 0.37 tau, +24 %, is "
                            "within): the reader reads one offline ExpertQA description sentence as touching several "
                            "IUs (shared domain words), so the learner is 'told' about more IUs than the recording's")),
])
def test_the_offline_world_is_within_30_percent_of_each_domains_recordings(paper_questions, domain, questions):
    """Issue 48's target: offline/knowsim with the offline adaptive tutor within 30 % of the recorded
    attempt load and reasoning IUs per turn on each domain's recorded questions (novice, the paper's
    cached s_0, seeds 1–3). Not met on either domain: strict xfails with the measured figures."""
    from knowsim_core.evaluation.paper import RECORDED_TURN_FIGURES_BY_DOMAIN
    from knowsim_core.evaluation.paper_matrix import run_turn_stats

    runs = [_play(paper_questions[q].material, paper_questions[q].initial["novice"],
                  registry.resolve("user", "offline/knowsim"), seed) for q in questions for seed in (1, 2, 3)]
    ours = run_turn_stats(runs)
    for name in ("reasoning IUs", "attempt load / tau"):
        rec = RECORDED_TURN_FIGURES_BY_DOMAIN[domain][name]
        assert abs(ours[name] - rec) <= 0.30 * rec, (domain, name, ours[name], rec)
