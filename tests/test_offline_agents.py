"""Offline agents: registry, determinism, strategy shapes, what each agent may see."""

from __future__ import annotations

import pytest

from knowsim_core.agents import registry
from knowsim_core.text.profiles import sentences
from knowsim_core.engine.ports import AssistantContext, Message, UserContext
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.state import IUState, initial_state
from knowsim_core.engine.config import preset

ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")


def run(sample_id: str, assistant: str, level: str, seed: int, turns: int = 15):
    s = get_sample(sample_id)
    sim = Simulation(material=s.material, assistant=registry.resolve("assistant", assistant),
                     user=registry.resolve("user", "offline/knowsim"),
                     extractor=registry.resolve("extractor", "offline/lexical"), level=level)
    sim.reset(seed=seed, run_id="fixed")
    for _ in range(turns):
        if sim.done:
            break
        sim.step()
    return sim.run


def test_every_offline_id_is_registered_with_a_description():
    ids = {k: [e.id for e in registry.available(k)] for k in ("assistant", "user", "extractor")}
    assert set(ASSISTANTS) <= set(ids["assistant"])
    assert {"offline/knowsim", "offline/person"} <= set(ids["user"]) and "offline/lexical" in ids["extractor"]
    for kind in ("assistant", "user", "extractor"):
        for e in registry.available(kind):
            if e.id.startswith("offline/"):
                assert len(e.description) > 40, e.id
    oracle = next(e for e in registry.available("assistant") if e.id == "offline/oracle")
    assert "upper bound" in oracle.description.lower() and "hidden knowledge state" in oracle.description
    for a in ASSISTANTS:
        assert registry.resolve("assistant", a).reads_state == (a == "offline/oracle")


@pytest.mark.parametrize("assistant", ASSISTANTS)
def test_same_seed_same_run(assistant):
    a = run("sample_herd_immunity", assistant, "intermediate", 7, turns=6)
    b = run("sample_herd_immunity", assistant, "intermediate", 7, turns=6)
    assert a.to_data() == b.to_data()
    c = run("sample_herd_immunity", assistant, "intermediate", 8, turns=6)
    assert [t.user_message + t.assistant_message for t in c.turns] != [t.user_message + t.assistant_message for t in a.turns]


def _ctx(sample_id: str, text: str, seed: int = 1, turn: int = 1) -> AssistantContext:
    s = get_sample(sample_id)
    return AssistantContext(turn=turn, material=s.material, history=(Message("user", text),), seed=seed)


def test_strategies_see_no_state_and_reply_with_prose_from_the_descriptions():
    s = get_sample("sample_lava_lamps")
    descs = " ".join(n.description for n in s.graph.nodes)
    for a in ASSISTANTS[:4]:
        reply = registry.resolve("assistant", a).reply(_ctx(s.id, "I don't know where to start. How should I set this up?"))
        assert reply.message.strip()
        assert any(sent.rstrip("?.") in descs or sent[:30] in descs for sent in sentences(reply.message)) or a == "offline/socratic"


def test_comprehensive_covers_much_more_than_socratic_and_socratic_ends_on_its_question():
    """Lengths come from the measured distribution of real tutor replies (agents.tutor_shapes):
    comprehensive draws from its longer half, socratic from its shorter half. Check-ins pad a reply
    by at most MAX_FILLERS, so a reply may stop short of its drawn length (never below its plan)."""
    from knowsim_core.agents.tutor_shapes import REPLY_SENTENCES

    text = "I know probability as a ratio of equally likely counts. How should I set this up?"
    comp = registry.resolve("assistant", "offline/comprehensive").reply(_ctx("sample_lava_lamps", text)).message
    soc = registry.resolve("assistant", "offline/socratic").reply(_ctx("sample_lava_lamps", text)).message
    assert REPLY_SENTENCES[5] <= len(sentences(comp)) <= REPLY_SENTENCES[-1] + 10
    assert len(sentences(soc)) < len(sentences(comp)) and soc.rstrip().endswith("?")
    final = get_sample("sample_lava_lamps").graph.node("IU14").description
    assert "7/20" not in soc and final not in soc


def test_adaptive_sizes_its_reply_to_the_inferred_level():
    adaptive = registry.resolve("assistant", "offline/adaptive")
    novice = adaptive.reply(_ctx("sample_theatre_seats_series", "I'm lost, I don't understand any of this. Where do I start?")).message
    advanced = adaptive.reply(_ctx(
        "sample_theatre_seats_series",
        "I know the rows form an arithmetic sequence with common difference 2. The back row has 18 + 29·2 = 76 seats. "
        "The sum is 30·(18+76)/2 = 1410 by pairing terms.")).message
    assert len(sentences(novice)) < len(sentences(advanced))


def _oracle(sample_id, params, seed=3):
    s = get_sample(sample_id)
    s0 = initial_state(s.graph, "novice", preset(), seed=seed)
    oracle = registry.resolve("assistant", "offline/oracle")
    ctx = AssistantContext(turn=1, material=s.material, history=(Message("user", "hi"),), seed=1, state=s0, params=params)
    return s, s0, oracle.reply(ctx).message


def test_oracle_teaches_a_teachable_iu_of_the_true_state():
    from knowsim_core.agents.offline_reading import own_coverage

    s, s0, msg = _oracle("sample_power_remainder_mod13", preset())
    idx = s.graph.index
    state = {v: s0.state_of(idx.label_of[v]) for v in idx.ids}

    def teachable(v):
        pre = [state[p] for p in idx.prereqs.get(v, ())]
        return state[v] < IUState.KNOWS_WELL and (not pre or min(pre) >= IUState.PARTIAL or state[v] == IUState.UNAWARE and min(pre) >= IUState.STRUGGLING)

    explained, _ = own_coverage(s.graph, msg)
    assert explained and all(teachable(v) for v in explained)


def test_oracle_budgets_with_the_runs_own_parameters():
    """A run whose capacity is tiny gets one unit per reply; the default preset allows two."""
    from knowsim_core.agents.offline_reading import own_coverage

    s, _, roomy = _oracle("sample_herd_immunity", preset())
    _, _, tight = _oracle("sample_herd_immunity", preset(capacity_ratio=0.01, capacity_min=1))
    assert len(own_coverage(s.graph, roomy)[0]) == 2
    assert len(own_coverage(s.graph, tight)[0]) == 1


def test_scripted_assistants_never_call_the_extractor(monkeypatch):
    """Grader and policy are apart: the assistants' modules do not import the labeller, and with
    the labeller broken every assistant still replies the same."""
    import ast
    import inspect

    from knowsim_core.agents import lexical, offline_assistants, offline_reading

    for mod in (offline_assistants, offline_reading):
        imported = {n.module for n in ast.walk(ast.parse(inspect.getsource(mod))) if isinstance(n, ast.ImportFrom)}
        assert not any(m and m.endswith("lexical") for m in imported), mod.__name__

    s = get_sample("sample_herd_immunity")
    s0 = initial_state(s.graph, "novice", preset(), seed=1)
    history = (Message("user", "What is herd immunity?"), Message("assistant", " ".join(
        registry.resolve("assistant", "offline/simple").reply(_ctx("sample_herd_immunity", "What is herd immunity?")).message
        for _ in range(1))), Message("user", "I'm not sure about R0, can you explain?"))
    before = {}
    for aid in ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle"):
        ctx = AssistantContext(turn=2, material=s.material, history=history, seed=7, state=s0, params=preset())
        before[aid] = registry.resolve("assistant", aid).reply(ctx).message

    def boom(*a, **k):
        raise AssertionError("an assistant called the extractor")

    for name in ("teaching_quality", "tq_features", "label_turn", "attempt_types"):
        monkeypatch.setattr(lexical, name, boom)
    for aid, msg in before.items():
        ctx = AssistantContext(turn=2, material=s.material, history=history, seed=7, state=s0, params=preset())
        assert registry.resolve("assistant", aid).reply(ctx).message == msg, aid


def test_own_coverage_reads_the_writers_units():
    from knowsim_core.agents.offline_reading import Writer, own_coverage

    g = get_sample("sample_herd_immunity").graph
    w = Writer(g, 1)
    text = " ".join([*w.teach("IU4"), w.brief("IU5"), w.point("IU7")])
    explained, mentioned = own_coverage(g, text)
    assert explained == {"IU4"}
    assert {"IU4", "IU5", "IU7"} <= mentioned


def test_user_turn_one_speaks_from_the_true_starting_point():
    s = get_sample("sample_crispr_gene_editing")
    user = registry.resolve("user", "offline/person")
    for level in ("novice", "advanced"):
        st = initial_state(s.graph, level, preset(), seed=5)
        ctx = UserContext(turn=1, material=s.material, history=(), state=st, density=0.7,
                          articulation_mode="Explicit", explained=(), stuck=False, stop_hint=False, seed=1)
        msg = user.respond(ctx).message
        known = [n.concept for n in s.graph.nodes if st.state_of(s.graph.index.label_of[n.id]) == IUState.KNOWS_WELL]
        assert any(c.lower() in msg.lower() for c in known), msg


def test_user_phrasing_follows_the_articulation_mode():
    s = get_sample("sample_fed_rate_hikes")
    st = initial_state(s.graph, "intermediate", preset(), seed=2)
    user = registry.resolve("user", "offline/person")
    msgs = {}
    for mode in ("Explicit", "Vague", "Compliant"):
        ctx = UserContext(turn=1, material=s.material, history=(), state=st, density=0.5,
                          articulation_mode=mode, explained=(), stuck=False, stop_hint=False, seed=4)
        msgs[mode] = user.respond(ctx)
    assert len(msgs["Compliant"].message) < len(msgs["Explicit"].message)
    assert "that " in msgs["Vague"].message and " thing" in msgs["Vague"].message
    assert not msgs["Compliant"].attempt


def test_user_attempts_and_asks_to_verify_on_known_ius():
    s = get_sample("sample_lava_lamps")
    st = initial_state(s.graph, "advanced", preset(), seed=1)
    user = registry.resolve("user", "offline/person")
    assistant_text = s.graph.node("IU6").description  # a known IU at this level and seed
    assert st.state_of(s.graph.index.label_of["IU6"]) >= IUState.PARTIAL
    ctx = UserContext(turn=2, material=s.material, history=(Message("user", "hi"), Message("assistant", assistant_text)),
                      state=st, density=0.9, articulation_mode="Explicit", explained=(), stuck=False,
                      stop_hint=False, seed=3)
    turn = user.respond(ctx)
    assert turn.attempt and "?" in turn.message
