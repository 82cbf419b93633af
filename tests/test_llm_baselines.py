"""The paper's LLM baseline users (zs, zs-cot, zs-cot-prof) against the local wire-format server."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from knowsim_core.agents import registry
from knowsim_core.agents.llm import LLMUser
from knowsim_core.agents.llm_baselines import DONE_NOTE, BaselineLLMUser
from knowsim_core.cli import main
from knowsim_core.engine.config import preset
from knowsim_core.errors import ConfigError
from knowsim_core.llm import LLMSettings
from knowsim_core.engine.ports import Message, UserContext
from knowsim_core.prompts import baseline_user as p
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.state import IUState, KnowledgeState, initial_state
from tests.fakes.llm_server import llm_server  # noqa: F401

PROVIDERS = ("openai", "anthropic", "compat")
SAMPLE = load_samples()[0]
GRAPH = SAMPLE.graph
STATE = initial_state(GRAPH, "novice", preset(), seed=3)
HISTORY = (Message("user", "Where do I start?"), Message("assistant", "First count the cases."))


def _env(srv) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "OPENAI_BASE_URL": srv.openai_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": srv.anthropic_url,
            "KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_MAX_RETRIES": "0", "KNOWSIM_LLM_CACHE": "0"}


def user(srv, agent_id: str, **kw):
    return registry.resolve("user", agent_id, settings=LLMSettings.from_sources(env=_env(srv)), **kw)


def ctx(turn: int, history=(), state: KnowledgeState = STATE) -> UserContext:
    return UserContext(turn=turn, material=SAMPLE.material, history=tuple(history), state=state, density=0.3,
                       articulation_mode="Vague", explained=(), stuck=False, stop_hint=False, seed=7)


def _unaware() -> list[str]:
    return [GRAPH.node(v).concept for v in GRAPH.index.ids
            if STATE.state_of(GRAPH.index.label_of[v]) == IUState.UNAWARE]


def _reply(done: bool = False):
    return lambda req: json.dumps({"reasoning": "I know counting", "message": " is it 6? ", "done": done})


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("method", p.METHODS)
def test_each_baseline_sends_what_its_definition_says(llm_server, provider, method):
    llm_server.reply = _reply()
    agent = user(llm_server, f"{provider}/m1:{method}")
    assert isinstance(agent, BaselineLLMUser) and agent.id == f"{provider}/m1:{method}"
    turn = agent.respond(ctx(2, HISTORY))
    assert turn.message == "is it 6?" and turn.terminate is False
    req = llm_server.requests[-1]
    prompt = req.last_user
    assert SAMPLE.question in prompt and p.LEVELS["novice"] in prompt
    assert "- You: Where do I start?" in prompt and "- AI Tutor: First count the cases." in prompt
    assert ('"reasoning"' in prompt) == (method != "zs")
    assert ("## Who you are" in prompt) == (method == "zs-cot-prof")
    unaware = _unaware()
    assert (f"- unaware: {', '.join(unaware)}" in prompt) == (method == "zs-cot-prof")
    assert "unaware" not in prompt.lower() or method == "zs-cot-prof"  # zs / zs-cot see no state
    assert req.body["temperature"] == p.TEMPERATURE
    assert turn.thought == ("" if method == "zs" else "I know counting")
    assert agent.describe()["method"] == method and agent.describe()["prompt_version"] == p.PROMPT_VERSION


def test_the_profile_and_initial_state_are_never_updated(llm_server):
    llm_server.reply = _reply()
    agent = user(llm_server, "compat/m1:zs-cot-prof")
    agent.respond(ctx(1))
    first = llm_server.requests[-1].last_user
    later_state = KnowledgeState.uniform(GRAPH, IUState.KNOWS_WELL)
    agent.respond(ctx(3, HISTORY, state=later_state))
    second = llm_server.requests[-1].last_user
    block = lambda text: text.split("## Who you are")[1].split("## The conversation")[0]  # noqa: E731
    unaware = _unaware()
    assert unaware and block(first) == block(second)
    assert f"- unaware: {', '.join(unaware)}" in block(second)  # the initial state, not the later one
    assert p.LEVELS["novice"] in second  # the level read at first sight is kept too


@pytest.mark.parametrize("method", p.METHODS)
def test_a_declared_end_is_a_recorded_judged_termination(llm_server, method):
    llm_server.reply = _reply(done=True)
    turn = user(llm_server, f"openai/m1:{method}").respond(ctx(4, HISTORY))
    assert turn.terminate is True and DONE_NOTE in turn.thought


def test_other_user_ids_still_build_the_knowsim_user(llm_server):
    assert isinstance(user(llm_server, "openai/m1"), LLMUser)
    assert isinstance(user(llm_server, "compat/llama3:8b"), LLMUser)  # a colon in a model name is no method
    assert user(llm_server, "openai/m1:zs", level="advanced").level == "advanced"
    with pytest.raises(ConfigError, match="unknown option"):
        user(llm_server, "openai/m1:zs", colour="red")


def test_realism_scores_an_llm_baseline_end_to_end(llm_server, tmp_path, monkeypatch):
    for k, v in _env(llm_server).items():
        monkeypatch.setenv(k, v)
    llm_server.reply = _reply()
    conv = {"id": "c1", "level": "novice", "model": "tutor-x",
            "messages": [{"role": "user", "content": "How many ways can 3 books stand in a row?"},
                         {"role": "assistant", "content": "Multiply the choices: 3 x 2 x 1."},
                         {"role": "user", "content": "is it 6?"},
                         {"role": "assistant", "content": "Yes."},
                         {"role": "user", "content": "thanks, that makes sense"}],
            "concepts": [{"name": "Factorial", "description": "n! is the product 1 x 2 x ... x n."}]}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    db = str(tmp_path / "r.db")
    assert main(["import", str(path), "--db", db]) == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["realism", "--db", db, "--json", "--user", "compat/m1:zs-cot-prof",
                     "--user", "baseline/generic"]) == 0
    report = json.loads(buf.getvalue())
    assert [t["turn"] for t in report["turns"]] == [2, 3]
    sims = [t["simulated"]["compat/m1:zs-cot-prof"] for t in report["turns"]]
    assert [s["text"] for s in sims] == ["is it 6?", "is it 6?"]
    assert sims[0]["rouge_l"] == pytest.approx(1.0) and sims[0]["act"] == report["turns"][0]["real_act"]
    assert report["summary"]["compat/m1:zs-cot-prof"]["n"] == 2
    assert len(llm_server.requests) == 2


def test_the_llm_act_tagger_tags_real_and_simulated_turns(llm_server, tmp_path, monkeypatch):
    for k, v in _env(llm_server).items():
        monkeypatch.setenv(k, v)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "c1", "messages": [
        {"role": "user", "content": "Where do I start?"}, {"role": "assistant", "content": "Count the cases."},
        {"role": "user", "content": "6"}], "concepts": [{"name": "Counting", "description": "Count cases."}]}) + "\n")
    db = str(tmp_path / "t.db")
    assert main(["import", str(path), "--db", db]) == 0
    llm_server.reply = lambda req: json.dumps(
        {"act": "acknowledge" if "explain that step" in req.last_user else "math_answer"})
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["realism", "--db", db, "--json", "--user", "baseline/generic", "--tagger", "compat/m1"]) == 0
    (turn,) = json.loads(buf.getvalue())["turns"]
    assert turn["real_act"] == "math_answer" and turn["simulated"]["baseline/generic"]["act"] == "acknowledge"
    prompts = [r.last_user for r in llm_server.requests]
    assert len(prompts) == 2 and any("\n6\n" in q for q in prompts)
    assert all("not_understanding" in q and "seek_information" in q for q in prompts)


def test_a_bad_act_from_the_llm_tagger_is_a_one_line_error(llm_server, tmp_path):
    from knowsim_core.agents.llm_acts import make_tagger
    from knowsim_core.errors import ProviderError

    llm_server.reply = lambda req: json.dumps({"act": "dancing"})
    tagger = make_tagger("compat/m1", settings=LLMSettings.from_sources(env=_env(llm_server)))
    with pytest.raises(ProviderError):
        tagger.tag("is it 6?")
    with pytest.raises(ConfigError, match="offline or <provider>/<model>"):
        make_tagger("gpt-4o")


# ---------------------------------------------------------------------- a declared end stops the run
def _done_at(turn: int):
    """Replies 'not done' until the user's ``turn``-th request, then 'done'."""
    seen = {"n": 0}

    def reply(req):
        seen["n"] += 1
        return json.dumps({"reasoning": "r", "message": f"message {seen['n']}", "done": seen["n"] >= turn})
    return reply


@pytest.mark.parametrize("stop_mode", ["virtual", "real"])
def test_a_declared_end_stops_the_run_after_that_turn(llm_server, tmp_path, stop_mode):
    from knowsim_core.services.runner import start_run
    from knowsim_core.engine.session import STOP_USER_DONE
    from knowsim_core.storage import Store

    llm_server.reply = _done_at(3)
    store = Store(tmp_path / "d.db")
    store.questions.seed_samples()
    live = start_run(store, question_id=SAMPLE.id, level="novice", assistant_id="offline/adaptive",
                     user_id="compat/m1:zs-cot", seed=5, max_turns=10, stop_mode=stop_mode,
                     settings={"settings": LLMSettings.from_sources(env=_env(llm_server))})
    run = live.run_to_end()
    assert [t.user_message for t in run.turns] == ["message 1", "message 2", "message 3"]
    assert run.stop_reason == STOP_USER_DONE and DONE_NOTE in run.turns[-1].user_thought
    assert DONE_NOTE not in run.turns[1].user_thought
    row = store.search.get_row(live.run_id)
    assert (row.status, row.stop_reason, row.turns) == ("finished", STOP_USER_DONE, 3)
    assert len(llm_server.requests) == 3  # no fourth user turn was asked for


def test_offline_runs_still_end_on_their_own_rules(tmp_path):
    from knowsim_core.services.runner import start_run
    from knowsim_core.engine.session import STOP_MAX_TURNS, STOP_USER_DONE
    from knowsim_core.storage import Store

    store = Store(tmp_path / "o.db")
    store.questions.seed_samples()
    run = start_run(store, question_id=SAMPLE.id, level="novice", assistant_id="offline/adaptive",
                    seed=5, max_turns=4).run_to_end()
    assert run.stop_reason == STOP_MAX_TURNS and len(run.turns) == 4
    assert all(t.user_message for t in run.turns) and run.stop_reason != STOP_USER_DONE


# ---------------------------------------------------------------------- import --extractor
CONV = {"id": "c1", "level": "novice", "model": "tutor-x",
        "messages": [{"role": "user", "content": "How many ways can 3 books stand in a row?"},
                     {"role": "assistant", "content": "Multiply the choices: 3 x 2 x 1, the factorial of 3."},
                     {"role": "user", "content": "is it 6?"}],
        "concepts": [{"name": "Factorial", "description": "n! is the product 1 x 2 x ... x n."},
                     {"name": "Counting", "description": "Independent choices multiply."}]}


def _import(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["import", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_import_reads_real_conversations_with_the_chosen_extractor(llm_server, tmp_path, monkeypatch, capsys):
    from tests.fakes.llm_server import KnowSimReplies

    for k, v in _env(llm_server).items():
        monkeypatch.setenv(k, v)
    llm_server.reply = replies = KnowSimReplies(explain=1)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CONV) + "\n")
    db = tmp_path / "x.db"
    code, out, err = _import([str(path), "--db", str(db), "--extractor", "compat/m1", "--json"], capsys)
    assert code == 0, err
    from knowsim_core.storage import Store

    (run_id,) = json.loads(out)["runs"]
    run = Store(db).runs.load(run_id)
    assert run.adapter["extractor"] == "compat/m1" and replies.calls == {"extractor": 2}
    assert run.turns[0].signals[0].teaching_quality == "well_explained"  # the model's label, not the lexical one
    # the default is still the offline extractor: no request at all
    path2 = tmp_path / "d.jsonl"
    path2.write_text(json.dumps({**CONV, "id": "c2"}) + "\n")
    code, out, _ = _import([str(path2), "--db", str(db), "--json"], capsys)
    assert code == 0 and replies.calls == {"extractor": 2}
    assert Store(db).runs.load(json.loads(out)["runs"][0]).adapter["extractor"] == "offline/lexical"


def test_import_refuses_an_unknown_extractor_or_one_for_other_files(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CONV) + "\n")
    db = tmp_path / "y.db"
    code, _, err = _import([str(path), "--db", str(db), "--extractor", "offline/lexcal"], capsys)
    assert code == 2 and "did you mean 'offline/lexical'" in err and err.strip().count("\n") == 0
    assert not db.exists()  # refused before the database was opened
    graph = tmp_path / "cache.json"
    graph.write_text(json.dumps({SAMPLE.id: GRAPH.to_data()}))
    code, _, err = _import([str(graph), "--db", str(db), "--extractor", "offline/lexical"], capsys)
    assert code == 2 and "--extractor reads real conversations" in err
