"""Offline tutors: reply shapes drawn from measured distributions, text that reads right, deep graphs.

The per-level picture on the paper's questions is in tests/test_paper_check.py.
"""

from __future__ import annotations

import random
import re

import pytest

from knowsim_core.agents import registry
from knowsim_core.agents.offline_reading import Belief, Writer, description_sentences, next_units
from knowsim_core.agents.tutor_shapes import RECORDED_TURNS, REPLY_SENTENCES, draw_shape
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import AssistantContext, Message
from knowsim_core.engine.session import Simulation
from knowsim_core.formats.samples import get_sample
from knowsim_core.text.profiles import sentences

STRATEGIES = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic")


def chain(n: int) -> IUGraph:
    return IUGraph.from_data({
        "knowledge_areas": ["chain"],
        "nodes": [{"id": f"IU{i}", "concept": f"Step {i} idea", "abstraction_level": 0.5,
                   "description": f"Step {i} builds on the one before. It is needed for step {i + 1}."}
                  for i in range(1, n + 1)],
        "edges": [{"from": f"IU{i}", "to": f"IU{i + 1}", "delta_l": 0.0, "reason": "next"} for i in range(1, n)],
    })


def test_a_1000_iu_prerequisite_chain_does_not_overflow_the_stack():
    """Issue 23 item 8: root_gap recursed once per prerequisite (RecursionError at ~1000)."""
    g = chain(1000)
    assert next_units(g, Belief(asked=["IU1000"]), 1) == ["IU1"]  # the root of the unknown chain
    # and through a whole reply, as a Batch-page cell runs it
    for a in STRATEGIES:
        ctx = AssistantContext(turn=1, material=get_sample("sample_lava_lamps").material.__class__(
            "chain", "How do I reach step 1000?", "", g), history=(Message("user", "What is step 1000 idea? I'm lost."),),
            seed=3)
        assert registry.resolve("assistant", a).reply(ctx).message.strip()


def test_a_formula_with_factorials_is_not_cut_into_a_sentence_without_a_subject():
    """Issue 24: "This matters because is the number of …" — the splitter cut after "!)"."""
    g = get_sample("sample_lava_lamps").material.graph
    iu = next(n.id for n in g.nodes if "n!/(k!" in n.description)
    parts = description_sentences(g.node(iu).description)
    assert parts[0].startswith("C(n,k)") and "is the number of" in parts[0]
    for seed in range(40):
        w = Writer(g, seed)
        for text in (*w.teach(iu), *w.teach(iu, plain=True), *w.explain_briefly(iu)):
            assert not re.search(r"\b(because|that|why) (is|are)\b", text), text
            assert not text[:1].islower(), text


def test_shapes_come_from_the_measured_tables_and_stay_in_the_band():
    rng = random.Random(5)
    covs = sorted(c for c, _ in RECORDED_TURNS)
    lo_half = [draw_shape(rng, (0.0, 0.5), 100) for _ in range(200)]
    hi_half = [draw_shape(rng, (0.5, 1.0), 100) for _ in range(200)]
    assert max(s.sentences for s in lo_half) <= min(s.sentences for s in hi_half)
    assert max(s.mentions for s in lo_half) <= min(s.mentions for s in hi_half)
    assert all(0 <= s.explained <= s.mentions for s in lo_half + hi_half)
    assert set(round(s.sentences) for s in lo_half + hi_half) <= {round(q) for q in REPLY_SENTENCES}
    assert covs == list(covs) and 0 < covs[0] < covs[-1] <= 1


def test_shapes_are_drawn_per_domain():
    """Issue 29: the shape constants were MathQA's for every question, and the offline tutors
    covered 0.53–0.59 of an ExpertQA graph per turn. An ExpertQA question now draws from the
    ExpertQA table and scale; any other domain from the MathQA one."""
    from knowsim_core.agents.tutor_shapes import EXPERT_TURNS, RECORDED_TURNS, SCALES

    def draws(domain):
        rng = random.Random(9)
        return [draw_shape(rng, (0.0, 1.0), 100, domain) for _ in range(300)]

    expert, math, other = draws("expert"), draws("math"), draws("")
    assert other == math
    mean = sum(s.mentions for s in expert) / len(expert)
    want = SCALES["expert"] * sum(c for c, _ in EXPERT_TURNS) / len(EXPERT_TURNS) * 100
    math_mean = sum(s.mentions for s in math) / len(math)
    math_want = SCALES["math"] * sum(c for c, _ in RECORDED_TURNS) / len(RECORDED_TURNS) * 100
    # each domain its own table and scale (the scales were re-set on the tuning half after issue 34
    # item 17, so ExpertQA is no longer under half of MathQA: 0.80 x 0.276 vs 0.58 x 0.596)
    assert abs(mean - want) < 2.0 and abs(math_mean - math_want) < 2.0 and mean < math_mean


def run(assistant: str, level: str, seed: int = 1):
    s = get_sample("sample_lava_lamps")
    sim = Simulation(material=s.material, assistant=registry.resolve("assistant", assistant),
                     user=registry.resolve("user", "offline/knowsim"),
                     extractor=registry.resolve("extractor", "offline/lexical"), level=level)
    sim.reset(seed=seed)
    return sim.run_to_end()


def test_strategies_keep_their_shapes_socratic_shortest_comprehensive_longest():
    words = {a: sum(len(t.assistant_message.split()) for lv in ("novice", "advanced") for t in run(a, lv).turns)
             for a in STRATEGIES}
    assert words["offline/socratic"] < words["offline/simple"] < words["offline/comprehensive"]
    assert words["offline/socratic"] < words["offline/adaptive"] < words["offline/comprehensive"]


def test_replies_are_deterministic_per_seed_and_vary_across_seeds():
    a = [t.assistant_message for t in run("offline/adaptive", "novice", seed=4).turns]
    b = [t.assistant_message for t in run("offline/adaptive", "novice", seed=4).turns]
    c = [t.assistant_message for t in run("offline/adaptive", "novice", seed=5).turns]
    assert a == b and a != c


def test_reply_length_is_in_the_range_of_real_tutor_replies():
    """Sentences per reply: within the measured 5–95 % range of real LLM tutor replies, give or
    take the plan's own sentences (the measured range is the target, not a fitted number)."""
    lengths = [len(sentences(t.assistant_message)) for a in STRATEGIES for t in run(a, "intermediate").turns]
    mean = sum(lengths) / len(lengths)
    assert REPLY_SENTENCES[0] <= mean <= REPLY_SENTENCES[-1]


def _with_empty_descriptions(empty: set[int]) -> IUGraph:
    return IUGraph.from_data({
        "nodes": [{"id": f"IU{i}", "concept": f"Concept {i}", "abstraction_level": 0.5,
                   "description": "" if i in empty else f"Concept {i} is a rule. It matters here. Apply it to X."}
                  for i in range(1, 8)],
        "edges": [{"from": f"IU{i}", "to": f"IU{i + 1}", "delta_l": 0.0} for i in range(1, 7)],
    })


OFFLINE_ASSISTANTS = tuple(sorted(e.id for e in registry.available("assistant") if e.id.startswith("offline/")))


@pytest.mark.parametrize("assistant", OFFLINE_ASSISTANTS)
@pytest.mark.parametrize("empty", [{1}, {3}, set(range(1, 8))], ids=["root", "middle", "all"])
def test_every_offline_assistant_plays_a_graph_with_an_empty_description(assistant, empty):
    """Such a graph loads (with a warning) and is runnable; the Writer read the description's first
    sentence and raised IndexError on an empty one. It now states the concept name instead."""
    g = _with_empty_descriptions(empty)
    assert any("empty description" in i.message for i in g.issues())
    g.require_runnable()
    material = get_sample("sample_lava_lamps").material.__class__("q", "What is X?", "X", g, "math")
    for level in ("novice", "intermediate"):
        sim = Simulation(material=material, assistant=registry.resolve("assistant", assistant),
                         user=registry.resolve("user", "offline/knowsim"),
                         extractor=registry.resolve("extractor", "offline/lexical"), level=level)
        sim.reset(seed=1)
        run = sim.run_to_end()
        assert run.turns and all(t.assistant_message.strip() for t in run.turns)


def test_an_empty_description_is_stated_by_its_concept_name():
    g = _with_empty_descriptions({3})
    w = Writer(g, 0)
    assert w.parts("IU3") == ["Concept 3."]
    assert w.brief("IU3") == "Concept 3." and w.explain_briefly("IU3") == ["Concept 3."]
    assert "Concept 3." in w.teach("IU3")
    assert w.parts("IU2") == description_sentences(g.node("IU2").description)  # a real description is unchanged


def test_the_docstrings_state_the_figures_the_tables_give():
    """Stale text (a review found 58 % beside a table whose mean is 0.596, "three tables" beside two,
    and "~10 sentences" for replies widen() pads to 26): the stated figures are the tables'."""
    import math

    from knowsim_core.agents import offline_assistants, tutor_shapes

    coverage = sum(c for c, _ in RECORDED_TURNS) / len(RECORDED_TURNS)
    well = sum(w for _, w in RECORDED_TURNS) / len(RECORDED_TURNS)
    shapes_doc = " ".join(tutor_shapes.__doc__.split())
    assert f"({coverage:.3f}, the mean over the {len(RECORDED_TURNS)} recorded turns" in shapes_doc
    assert f"{round(well * 100)} % of what it touches ({well:.3f})" in shapes_doc
    assert "The two tables are measured by" in shapes_doc
    assert f"({coverage:.3f}, the mean over the {len(RECORDED_TURNS)} recorded turns" in " ".join(
        offline_assistants.__doc__.split())
    n = len(REPLY_SENTENCES)
    for cls in (offline_assistants.ComprehensiveAssistant, offline_assistants.SocraticAssistant):
        lo, hi = cls.band
        qs = range(int(lo * (n + 1)), min(n - 1, math.ceil(hi * (n + 1)) - 1) + 1)  # as draw_shape indexes
        lengths = [round(REPLY_SENTENCES[q]) for q in qs]
        assert f"({min(lengths)} to {max(lengths)} sentences" in " ".join(cls.__doc__.split()), cls.__name__
