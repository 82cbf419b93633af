"""Contract tests for every LLM agent × provider against the local wire-format server.

Prompts must carry what spec §9 says (state lists, askable unknowns, reference answer, history);
outputs must parse into the engine's types; usage and cache behave for every agent.
"""

from __future__ import annotations

import json

import pytest

from knowsim_core.agents import registry
from knowsim_core.engine.config import preset
from knowsim_core.errors import ConfigError, GraphError
from knowsim_core.llm import LLMSettings, MemoryCache
from knowsim_core.engine.ports import AssistantContext, ExtractorContext, Message, UserContext
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.signals import TeachingQuality
from knowsim_core.engine.state import IUState, initial_state
from tests.fakes.llm_server import Fault, KnowSimReplies, chain_graph, llm_server  # noqa: F401

PROVIDERS = ("openai", "anthropic", "compat")
SAMPLE = load_samples()[0]
GRAPH = SAMPLE.graph
STATE = initial_state(GRAPH, "novice", preset(), seed=3)
HISTORY = (Message("user", "What is a guide RNA?"), Message("assistant", "It is a short RNA that pairs with DNA."))


def agent(srv, kind: str, provider: str, spec: str = "m1", cache=None, **kw):
    env = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "OPENAI_BASE_URL": srv.openai_url,
           "ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": srv.anthropic_url,
           "KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_MAX_RETRIES": "0"}
    return registry.resolve(kind, f"{provider}/{spec}", settings=LLMSettings.from_sources(env=env), cache=cache, **kw)


def user_ctx(turn: int, history=()) -> UserContext:
    return UserContext(turn=turn, material=SAMPLE.material, history=tuple(history), state=STATE, density=0.42,
                       articulation_mode="Vague", explained=(GRAPH.index.labels[0],), stuck=False,
                       stop_hint=turn > 2, seed=11)


def extractor_ctx(history=HISTORY) -> ExtractorContext:
    return ExtractorContext(turn=len(history) // 2 + 1, material=SAMPLE.material, state=STATE, history=tuple(history),
                            user_message="So the guide finds the gene?", assistant_message="Yes: it base-pairs.",
                            seed=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_assistant_sends_strategy_and_visible_conversation_only(llm_server, provider):
    llm_server.reply = KnowSimReplies()
    a = agent(llm_server, "assistant", provider, "m1:socratic")
    assert a.id == f"{provider}/m1:socratic" and a.reads_state is False
    turn = a.reply(AssistantContext(turn=2, material=SAMPLE.material, seed=1,
                                    history=(*HISTORY, Message("user", "Why a PAM?"))))
    assert turn.message.startswith("Explanation number 1")
    req = llm_server.requests[-1]
    assert "SOCRATIC" in req.system
    assert req.turns == [{"role": "user", "content": "What is a guide RNA?"},
                         {"role": "assistant", "content": "It is a short RNA that pairs with DNA."},
                         {"role": "user", "content": "Why a PAM?"}]
    assert SAMPLE.reference_answer[:40] not in req.text  # the assistant never sees the answer key
    assert "unaware" not in req.text.lower()  # nor the hidden state
    assert turn.usage[0].role == "assistant" and turn.usage[0].output_tokens == len(turn.message.split())
    d = a.describe()
    assert d["prompt_version"] == "assistant-v1" and d["strategy"] == "socratic" and d["max_tokens"] == 3000
    assert d["temperature"] == 0.0 and req.body["temperature"] == 0.0  # spec §9, on every provider
    assert d["seed_sent"] == (provider != "anthropic") and ("seed" in req.body) == (provider != "anthropic")


def test_assistant_default_strategy_and_model_names_with_colons(llm_server):
    assert agent(llm_server, "assistant", "compat", "llama3:8b").id == "compat/llama3:8b:adaptive"
    with pytest.raises(ConfigError, match="unknown option"):
        agent(llm_server, "assistant", "compat", "m1", colour="red")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_user_initial_query_carries_the_four_state_lists(llm_server, provider):
    llm_server.reply = KnowSimReplies()
    turn = agent(llm_server, "user", provider).respond(user_ctx(1))
    assert turn.message == "I don't really get step 1, can you explain?" and turn.attempt is False
    prompt = llm_server.requests[-1].last_user
    assert SAMPLE.question in prompt
    for st in IUState:
        labels = [lab for lab in GRAPH.index.labels if STATE.state_of(lab) == st]
        assert repr(labels) in prompt  # rendered as Python list literals (spec §9)
    assert "HARD CONSTRAINTS" in prompt and '"attempt_verify"' in prompt
    assert llm_server.requests[-1].schema is not None or provider == "compat"
    assert llm_server.requests[-1].body["temperature"] == 0.7  # the user simulator's sampling (spec §9)
    assert turn.usage[0].role == "user"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_user_followup_carries_history_state_askable_and_hints(llm_server, provider):
    llm_server.reply = lambda req: json.dumps({"thought": "t", "message": " Is it 2? ", "attempt_verify": True,
                                               "terminate": True})
    ctx = user_ctx(3, HISTORY)
    turn = agent(llm_server, "user", provider).respond(ctx)
    assert (turn.message, turn.attempt, turn.terminate) == ("Is it 2?", True, False)  # paper runs ignore terminate
    prompt = llm_server.requests[-1].last_user
    assert "- You: What is a guide RNA?" in prompt and "- AI Tutor: It is a short RNA" in prompt
    assert "MEDIUM (42%" in prompt
    assert repr(list(ctx.askable)) in prompt and ctx.askable
    assert repr(list(ctx.labels_in(IUState.UNAWARE))) in prompt
    assert all(f'"{lab}": {{"state": "{STATE.state_of(lab).key}"}}' in prompt for lab in GRAPH.index.labels)
    assert "overwhelmed" in prompt  # the pending overload stop hint
    assert "Never end the conversation" in prompt
    honest = agent(llm_server, "user", provider, honour_terminate=True).respond(ctx)
    assert honest.terminate is True and "only when you feel you understand" in llm_server.requests[-1].last_user


@pytest.mark.parametrize("provider", PROVIDERS)
def test_extractor_prompt_and_normalised_labels(llm_server, provider):
    llm_server.reply = KnowSimReplies(explain=2)
    ex = agent(llm_server, "extractor", provider).extract(extractor_ctx())
    assert not ex.failed and [s.id for s in ex.entries] == list(GRAPH.index.ids)
    assert [s.teaching_quality for s in ex.entries[:3]] == ["well_explained", "well_explained", "not_mentioned"]
    req = llm_server.requests[-1]
    assert req.system.startswith("You are a careful learning assessment analyst")
    prompt = req.last_user
    for key in ('"concept_areas"', '"concepts"', '"prerequisite_pairs"'):
        assert key in prompt
    assert json.dumps({v: {"state": STATE.state_of(GRAPH.index.label_of[v]).key} for v in GRAPH.index.ids}) in prompt
    assert "- User: What is a guide RNA?" in prompt and "- Assistant: It is a short RNA" in prompt
    assert "So the guide finds the gene?" in prompt and "Yes: it base-pairs." in prompt
    assert SAMPLE.reference_answer in prompt
    assert ex.usage and ex.usage[0].role == "extractor"


def test_extractor_first_turn_note_and_lenient_normalisation(llm_server):
    entries = [{"id": "IU1", "teaching_quality_reasoning": "covered -> shallow", "assistant_role": "ignored",
                "user_attempt": "articulation", "teaching_quality_extra": 1}]
    llm_server.reply = lambda req: json.dumps({"iu_analysis": entries})  # valid JSON, not the strict schema
    ex = agent(llm_server, "extractor", "compat").extract(extractor_ctx(history=()))
    assert "This is the first turn" in llm_server.requests[0].last_user
    assert len(llm_server.requests) == 2  # one repair request, then the spec §3.1 reading is used
    (sig,) = ex.entries
    assert (sig.teaching_quality, sig.response_role, sig.attempt.value) == ("shallow", "ignored", "articulation")
    assert not ex.failed and len(ex.usage) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_extractor_garbage_is_retried_then_flagged(llm_server, provider):
    llm_server.reply = lambda req: "I cannot do that."
    ex = agent(llm_server, "extractor", provider).extract(extractor_ctx())
    assert ex.failed and ex.entries == () and "no usable IU labels after 3 attempts" in ex.error
    temps = [r.body.get("temperature") for r in llm_server.requests]
    assert len(llm_server.requests) == 6  # 3 attempts × (call + repair)
    assert temps == [0.0, 0.0, 0.4, 0.4, 0.4, 0.4]  # spec §9: retries at 0.4, Anthropic included
    assert len(ex.usage) == 3 and all(u.input_tokens > 0 for u in ex.usage)


def _compat_simulation(llm_server, *, max_turns: int) -> Simulation:
    """A simulation whose assistant, user and extractor all talk to the local compat server."""
    kw = {"settings": LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": llm_server.openai_url})}
    return Simulation(material=SAMPLE.material, assistant=registry.resolve("assistant", "compat/m", **kw),
                      user=registry.resolve("user", "compat/m", **kw),
                      extractor=registry.resolve("extractor", "compat/m", **kw), params=preset(max_turns=max_turns))


def test_extractor_failure_is_recorded_as_a_flagged_turn(llm_server):
    replies = KnowSimReplies()
    llm_server.reply = lambda req: "{broken" if replies.role_of(req) == "extractor" else replies(req)
    sim = _compat_simulation(llm_server, max_turns=3)
    sim.reset(seed=2)
    rec = sim.step()
    assert rec.extractor_failed and sim.run.stop_reason == "phase_b_empty"
    assert rec.state_after.counts() == rec.state_before.counts()
    assert any("extractor returned no usable labels" in n for n in rec.notes)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_graph_extraction_validates_and_computes_delta_l(llm_server, provider):
    llm_server.reply = KnowSimReplies(graph=chain_graph(12))
    gx = agent(llm_server, "graph_extractor", provider)
    g = gx.extract_graph("How do lava lamps work?", "Wax melts, rises, cools and sinks.")
    assert len(g.nodes) == 12 and not g.errors() and len(llm_server.requests) == 1
    assert all(e.delta_l == pytest.approx(0.9 / 11, abs=1e-3) for e in g.edges)
    prompt = llm_server.requests[0].last_user
    assert "How do lava lamps work?" in prompt and "Wax melts, rises" in prompt and "bridging IU" in prompt
    assert gx.last_usage[0].role == "graph_extractor"


def test_graph_cycle_is_sent_back_once_then_refused(llm_server):
    replies = iter([chain_graph(10, cycle=True), chain_graph(10)])
    llm_server.reply = lambda req: json.dumps(next(replies))
    gx = agent(llm_server, "graph_extractor", "compat")
    g = gx.extract_graph("q", "a")
    assert not g.cycles() and len(llm_server.requests) == 2
    repair = llm_server.requests[1].last_user
    assert "cycle" in repair and "IU2" in repair and len(gx.last_usage) == 2
    llm_server.reply = lambda req: json.dumps(chain_graph(10, cycle=True))
    with pytest.raises(GraphError, match="still invalid after one repair.*cycle"):
        gx.extract_graph("q2", "a")


def test_graph_too_small_is_sent_back_but_accepted_when_usable(llm_server):
    llm_server.reply = lambda req: json.dumps(chain_graph(4))
    gx = agent(llm_server, "graph_extractor", "compat")
    g = gx.extract_graph("q", "a")
    assert len(g.nodes) == 4 and len(llm_server.requests) == 2
    assert "between 10 and 30" in llm_server.requests[1].last_user and gx.last_notes


@pytest.mark.parametrize("provider", PROVIDERS)
def test_judge_reads_the_transcript_and_scores(llm_server, provider):
    llm_server.reply = KnowSimReplies(score=8)
    sim = _compat_simulation(llm_server, max_turns=2)
    sim.reset(seed=1)
    run = sim.run_to_end()
    llm_server.clear()
    j = agent(llm_server, "judge", provider).judge(run)
    assert j.score == 8.0 and j.rationale.startswith("Clear")
    prompt = llm_server.requests[-1].last_user
    assert run.turns[1].user_message in prompt and run.turns[1].assistant_message in prompt
    assert SAMPLE.reference_answer in prompt and j.usage[0].role == "judge"


def test_judge_score_out_of_range_is_repaired(llm_server):
    answers = iter([json.dumps({"rationale": "r", "score": 11}), json.dumps({"rationale": "r", "score": 9})])
    llm_server.reply = lambda req: next(answers)
    run = _make_run()
    assert agent(llm_server, "judge", "compat").judge(run).score == 9.0
    assert "score must be an integer from 1 to 10" in llm_server.requests[1].last_user


@pytest.mark.parametrize("kind", ["assistant", "user", "extractor", "graph_extractor", "judge"])
def test_every_agent_uses_the_cache(llm_server, kind):
    llm_server.reply = KnowSimReplies()
    cache = MemoryCache()
    a1 = agent(llm_server, kind, "compat", cache=cache)
    a2 = agent(llm_server, kind, "compat", cache=cache)
    calls = {
        "assistant": lambda a: a.reply(AssistantContext(turn=1, material=SAMPLE.material, history=HISTORY[:1], seed=1)),
        "user": lambda a: a.respond(user_ctx(1)),
        "extractor": lambda a: a.extract(extractor_ctx()),
        "graph_extractor": lambda a: a.extract_graph("q", "a"),
        "judge": lambda a: a.judge(_make_run()),
    }
    first = calls[kind](a1)
    n = len(llm_server.requests)
    second = calls[kind](a2)
    assert len(llm_server.requests) == n, "an identical request must come from the cache"
    if kind != "graph_extractor":
        assert _content(first) == _content(second)
        assert all(u.cached and u.input_tokens == 0 for u in second.usage)
        assert not any(u.cached for u in first.usage)


def _content(result):
    """An agent result without its usage (which differs: the second one is marked cached)."""
    from dataclasses import replace

    return replace(result, usage=())


def _make_run():
    """A one-turn run built from the pure rules (no agent needed)."""
    from knowsim_core.engine.records import RunRecord
    from knowsim_core.engine.session import play_turn
    from knowsim_core.engine.signals import IUSignal

    params = preset(max_turns=2)
    tau = params.capacity(len(GRAPH.nodes))
    rec = play_turn(GRAPH, STATE, [IUSignal.make(GRAPH.index.ids[0], TeachingQuality.WELL_EXPLAINED)], turn=1,
                    tau=tau, params=params, user_message="Help me start?", assistant_message="Start with DNA.")
    return RunRecord(question_id=SAMPLE.id, question=SAMPLE.question, reference_answer=SAMPLE.reference_answer,
                     graph=GRAPH, level="novice", initial_state=STATE, tau=tau, params=params, seed=1,
                     adapters=(), turns=(rec,))
