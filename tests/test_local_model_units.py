"""The local-model path without the model: the launcher's checks, the prompt-size check, per-role reply
caps, the local server's ids and price, and each error the real server (llama-cpp-python 0.3.36 with
Gemma 3 270M) showed, reproduced against the stand-in server ``tests/fakes/llm_server.py``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from knowsim_core.agents import registry
from knowsim_core.engine.config import preset
from knowsim_core.engine.session import Simulation
from knowsim_core.formats.samples import get_sample
from knowsim_core.llm import LLMSettings, ProviderCallError, as_messages
from knowsim_core.llm.chat import ChatModel, ModelRef
from knowsim_core.llm.local_server import (
    GEMMA_TOKENIZER_CONFIG, LocalModelError, check_build, find_model, free_port, main, running,
    server_command, start,
)
from knowsim_core.llm.settings import LOCAL_MAX_TOKENS, llm_agent_ids, parse_max_tokens, provider_status
from knowsim_core.errors import ConfigError
from knowsim_core.services.runner import resume_run, start_run
from knowsim_core.storage import Store
from tests.fakes.llama_stand_in import shim
from tests.fakes.llm_server import Fault, FakeLLMServer, KnowSimReplies, Reply, llm_server  # noqa: F401

QID = "sample_theatre_seats_series"
ROOT = Path(__file__).resolve().parent.parent
# what llama-cpp-python 0.3.36 answers to a Chat Completions json_schema response_format (seen here)
LLAMA_CPP_500 = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                 "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


class Pair(BaseModel):
    a: int
    b: str


def settings(srv, **env) -> LLMSettings:
    return LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_CACHE": "0",
                                         "KNOWSIM_LOCAL_MODEL_FILE": "/nonexistent/local.json", **env})


def record(tmp_path, url: str, *, pid: int | None = None, n_ctx: int = 8192, name: str = "forged.json", **more):
    """A record written by hand (not by the launcher)."""
    path = tmp_path / name
    path.write_text(json.dumps({"url": url, "model": "gemma3-270m", "n_ctx": n_ctx,
                                "pid": os.getpid() if pid is None else pid, "threads": 2, **more}))
    return path


@pytest.fixture()
def local(llm_server, tmp_path, monkeypatch):
    """The launcher's own start, with a stand-in for llama_cpp.server that passes every connection to
    the test's in-process server (``llm_server``): a genuine record, whose URL is the stand-in's."""
    monkeypatch.setenv("STAND_IN_TARGET", f"127.0.0.1:{llm_server.url.rsplit(':', 1)[1]}")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    live = start(model, record=tmp_path / "local-model.json", python=str(shim(tmp_path)))
    try:
        yield live
    finally:
        live.stop()


# ---------------------------------------------------------------------- the launcher
def test_free_port_is_one_nothing_listens_on():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # would raise if something held it


def test_a_missing_model_file_is_refused_with_what_to_do(tmp_path, capsys):
    with pytest.raises(LocalModelError, match=r"no model file at .*nothing\.gguf"):
        find_model(tmp_path / "nothing.gguf")
    try:
        check_build()
    except LocalModelError:
        pytest.skip("llama-cpp-python is not installed here (requirements-local.txt)")
    assert main(["--model", str(tmp_path / "nothing.gguf"), "--record", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no model file at")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("absent, words", [
    ("llama_cpp", "the llama.cpp build is missing"),
    ("uvicorn", "installed without its server (missing uvicorn)"),
])
def test_a_missing_build_says_what_to_install(absent, words):
    def find(name):
        return None if name == absent else object()

    with pytest.raises(LocalModelError) as err:
        check_build(find)
    assert words in str(err.value) and "requirements-local.txt" in str(err.value) and "cmake" in str(err.value)


def test_the_record_counts_only_while_its_process_lives(local, tmp_path):
    server = running(local.record)
    assert server == local.server and server.pid == local.pid and server.url != ""
    dead = 2 ** 22 + 12345  # beyond pid_max: no such process
    assert running(record(tmp_path, local.server.url, pid=dead)) is None
    (tmp_path / "broken.json").write_text("{not json")
    assert running(tmp_path / "broken.json") is None
    local.stop()
    assert running(local.record) is None and not local.record.exists()


def test_the_server_keeps_no_logits_for_every_token(tmp_path):
    """llama-cpp-python's server defaults to logits_all: a context x 262k-vocabulary float array filled for
    every prompt token (seen: 5 GB resident at a context of 8192). The Studio asks for no logprobs."""
    cmd = server_command(tmp_path / "m.gguf", port=1, alias="a", n_ctx=8192, threads=2, template=tmp_path / "t")
    assert cmd[cmd.index("--logits_all") + 1] == "false"


def test_the_chat_template_keeps_the_system_prompt():
    """llama-cpp-python's built-in ``gemma`` format drops system messages (every Studio prompt is
    there); the launcher's template folds them into the first user turn, as Gemma's own does."""
    sandbox = pytest.importorskip("jinja2.sandbox")  # the template engine llama-cpp-python renders it with
    template = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
        GEMMA_TOKENIZER_CONFIG["chat_template"])
    msgs = [{"role": "system", "content": "You are a tutor."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": ""}]  # llama-cpp-python appends the empty generation turn
    out = template.render(messages=msgs, bos_token="<bos>", eos_token="<end_of_turn>")
    assert out == ("<bos><start_of_turn>user\nYou are a tutor.\n\nHi<end_of_turn>\n"
                   "<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\n2+2?<end_of_turn>\n"
                   "<start_of_turn>model\n")


# ---------------------------------------------------------------------- settings: caps, ids, price
def test_max_tokens_per_role_are_read_and_checked():
    assert parse_max_tokens("assistant=300, extractor=1500") == {"assistant": 300, "extractor": 1500}
    assert parse_max_tokens("64")["judge"] == 64
    for bad in ("tutor=3", "user=0", "user=ten", "user"):
        with pytest.raises(ConfigError, match="KNOWSIM_LLM_MAX_TOKENS"):
            parse_max_tokens(bad)


def test_max_tokens_per_role_reach_the_requests(llm_server):
    """Old behaviour: every role sent its built-in cap (3000 / 1000 / 8000) whatever was configured."""
    replies = KnowSimReplies()
    llm_server.reply = replies
    kw = {"settings": settings(llm_server, KNOWSIM_LLM_MAX_TOKENS="assistant=111,user=77,extractor=333")}
    ids = {"assistant": "compat/m:adaptive", "user": "compat/m", "extractor": "compat/m"}
    sim = Simulation(material=get_sample(QID).material, params=preset(max_turns=1),
                     **{k: registry.resolve(k, v, **kw) for k, v in ids.items()})
    sim.reset(seed=1)
    sim.run_to_end()
    sent = {replies.role_of(r): r.body.get("max_tokens") for r in llm_server.requests}
    assert sent == {"assistant": 111, "user": 77, "extractor": 333}


def test_the_local_server_is_offered_for_every_role_with_its_caps_and_no_price(local, tmp_path):
    url = local.server.url
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(local.record)})
    compat = {p.name: p for p in provider_status(s)}["compat"]
    assert compat.available and "small local model" in compat.detail
    ids = llm_agent_ids(s)
    base = f"compat/gemma3-270m@{url}"
    # the strategy before the URL, as the registry spells ids (was after it: "…/v1:adaptive")
    assert ids["user"][0] == base and ids["extractor"][0] == base
    assert ids["assistant"][0] == f"compat/gemma3-270m:adaptive@{url}"
    assert registry.parse_id(ids["assistant"][0]).id == ids["assistant"][0]
    assert "compat/gemma3-270m:zs@" + url in ids["user"]
    agent = registry.resolve("extractor", base, settings=s)
    assert agent.max_tokens == LOCAL_MAX_TOKENS["extractor"]
    d = agent.describe()
    assert d["price"].startswith("0: a local model") and "small local model" in d["local_model"]
    assert d["context_tokens"] == 8192 and d["max_concurrency"] == 1
    # a dead server's record offers nothing
    gone = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(record(tmp_path, "x", pid=2 ** 22 + 7))})
    assert not any(i.startswith("compat/") for v in llm_agent_ids(gone).values() for i in v)


# ---------------------------------------------------------------------- prompt size against the context
@pytest.mark.parametrize("counted", [True, False], ids=["server-tokenizer", "estimate"])
def test_a_prompt_too_big_for_the_context_is_refused_before_sending(llm_server, counted):
    llm_server.tokenizer = counted
    m = ChatModel(ModelRef.parse("compat", "m"), settings=settings(llm_server, KNOWSIM_LLM_CONTEXT="600"))
    big = as_messages("rules " * 300, user="the graph " * 200)
    with pytest.raises(ProviderCallError) as err:
        m.complete(big, max_tokens=100, role="extractor")
    msg = str(err.value)
    assert err.value.reason == "context" and "\n" not in msg
    assert ("counted by the server" if counted else "estimated") in msg
    assert "over the server's context of 600 tokens" in msg and "too big for this model's context" in msg
    assert not llm_server.requests  # nothing was sent to the model
    assert bool(llm_server.token_counts) == counted
    small = m.complete(as_messages("s", user="short"), max_tokens=100, role="user")  # fits: sent
    assert small.text == "short" and len(llm_server.requests) == 1


def test_a_graph_too_big_for_the_context_fails_the_run_in_one_line_and_it_resumes(llm_server, tmp_path):
    llm_server.reply = KnowSimReplies()
    llm_server.tokenizer = True
    store = Store(tmp_path / "s.db")
    store.questions.seed_samples()
    ids = dict(assistant_id="offline/adaptive", user_id="offline/knowsim", extractor_id="compat/m")
    tight = {"settings": settings(llm_server, KNOWSIM_LLM_CONTEXT="700"), "cache": None}
    live = start_run(store, question_id=QID, level="novice", seed=1, max_turns=2, settings=tight, **ids)
    ending = live.step()  # the failed call, as data
    assert not ending.over and "too big for this model's context" in ending.error
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("failed", 0) and "\n" not in row.error
    roomy = {"settings": settings(llm_server, KNOWSIM_LLM_CONTEXT="32000"), "cache": None}
    final = resume_run(store, live.run_id, settings=roomy).run_to_end()
    assert final.stop_reason == "max_turns" and len(final.turns) == 2


# ---------------------------------------------------------------------- what the real server did
def test_a_500_naming_response_format_switches_to_json_with_a_schema_without_retrying(llm_server):
    """llama-cpp-python answers a json_schema request with HTTP 500 (a validation error). Old code
    retried the 500 twice and failed the run ("server error 500 … try again later")."""
    llm_server.reply = lambda req: '{"a": 1, "b": "x"}'
    llm_server.push(Fault(status=500, message=LLAMA_CPP_500))
    m = ChatModel(ModelRef.parse("compat", "llama-cpp-500"), settings=settings(llm_server))
    assert m.complete(as_messages("s", user="q"), json_schema=Pair).parsed == Pair(a=1, b="x")
    first, second = llm_server.requests
    assert first.schema is not None
    assert second.body["response_format"]["type"] == "json_object"
    assert second.body["response_format"]["schema"]["required"] == ["a", "b"]  # the grammar's schema
    m.complete(as_messages("s", user="again"), json_schema=Pair)  # remembered: no 500 again
    assert llm_server.requests[2].body["response_format"]["type"] == "json_object"


def test_a_server_refusing_json_with_a_schema_too_gets_plain_json_mode(llm_server):
    llm_server.reply = lambda req: '{"a": 2, "b": "y"}'
    llm_server.push(Fault(status=400, message="json_schema is not supported"),
                    Fault(status=400, message="unknown field response_format.schema"))
    m = ChatModel(ModelRef.parse("compat", "strict-json-only"), settings=settings(llm_server))
    assert m.complete(as_messages("s", user="q"), json_schema=Pair).parsed == Pair(a=2, b="y")
    assert [r.body["response_format"] for r in llm_server.requests[1:]] == [
        {"type": "json_object", "schema": llm_server.requests[1].body["response_format"]["schema"]},
        {"type": "json_object"}]


def test_an_ordinary_500_is_still_retried(llm_server):
    llm_server.reply = lambda req: '{"a": 3, "b": "z"}'
    llm_server.push(Fault(status=500, message="llama_decode returned -1"))
    m = ChatModel(ModelRef.parse("compat", "flaky"), settings=settings(llm_server))
    assert m.complete(as_messages("s", user="q"), json_schema=Pair).parsed == Pair(a=3, b="z")
    assert [r.schema is not None for r in llm_server.requests] == [True, True]


def test_json_cut_at_the_cap_under_a_grammar_is_not_repaired_nor_retried(llm_server):
    """A 270M model fills a string until max_tokens: under the server's grammar the reply is then
    valid JSON up to the cut. Old behaviour: one repair request, then two extractor retries at 0.4 —
    six capped generations (minutes each on this machine) for the same cut."""
    llm_server.reply = lambda req: Reply('{"iu_analysis": [{"id": "IU1", "concept": "sequences sequences',
                                         finish="length")
    llm_server.push(Fault(status=500, message=LLAMA_CPP_500))
    agent = registry.resolve("extractor", "compat/cut-model", settings=settings(llm_server))
    sim = Simulation(material=get_sample(QID).material, params=preset(max_turns=2),
                     assistant=registry.resolve("assistant", "offline/adaptive"),
                     user=registry.resolve("user", "offline/knowsim"), extractor=agent)
    sim.reset(seed=1)
    run = sim.run_to_end()
    assert len(llm_server.requests) == 2  # the refused schema request + one capped reply
    turn = run.turns[0]
    assert run.stop_reason == "phase_b_empty" and turn.extractor_failed
    why = [n for n in turn.notes if n.startswith("extractor: ")]
    assert why and "after 1 attempts" in why[0] and "not sent back for repair" in why[0]
    assert "KNOWSIM_LLM_MAX_TOKENS" in why[0]


def test_a_cut_reply_in_plain_json_mode_still_gets_its_repair_request(llm_server):
    llm_server.reply = lambda req: Reply('{"a": 1, "b": "x"}' if len(llm_server.requests) > 1 else '{"a": 1,',
                                         finish="length" if len(llm_server.requests) == 1 else "stop")
    m = ChatModel(ModelRef.parse("compat", "m"), settings=settings(llm_server, KNOWSIM_LLM_STRUCTURED="json"))
    assert m.complete(as_messages("s", user="q"), json_schema=Pair).parsed == Pair(a=1, b="x")
    assert len(llm_server.requests) == 2


def test_a_server_500_mid_run_is_one_line_and_the_run_resumes(llm_server, tmp_path):
    llm_server.reply = KnowSimReplies()
    store = Store(tmp_path / "s.db")
    store.questions.seed_samples()
    kw = {"settings": settings(llm_server, KNOWSIM_LLM_MAX_RETRIES="1"), "cache": None}
    live = start_run(store, question_id=QID, level="novice", assistant_id="compat/m", user_id="compat/m",
                     extractor_id="offline/lexical", seed=1, max_turns=2, settings=kw)
    live.step()
    llm_server.push(Fault(status=500, message="llama_decode returned -3"), Fault(status=500))
    ending = live.step()
    assert not ending.over and "server error 500 after 1 retry" in ending.error
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("failed", 1) and "\n" not in row.error
    final = resume_run(store, live.run_id, settings=kw).run_to_end()
    assert [t.turn for t in final.turns] == [1, 2]


# ---------------------------------------------------------------------- the app's selectors
def test_the_app_offers_the_running_local_model_for_all_three_roles_labelled(local, tmp_path, monkeypatch):
    """With `make local-model` running (its record names a live process), the Simulate page's three
    selectors offer its ids, labelled as a small local model, with no KNOWSIM_COMPAT_* set."""
    from tests.test_app_llm import simulate_page

    for k in list(os.environ):
        if k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("KNOWSIM_DB", str(tmp_path / "studio.db"))
    monkeypatch.setenv("KNOWSIM_LOCAL_MODEL_FILE", str(local.record))
    at = simulate_page()
    base = f"compat/gemma3-270m@{local.server.url}"
    tutor = f"compat/gemma3-270m:adaptive@{local.server.url}"
    for key, wanted in (("setup_assistant", tutor), ("setup_user", base), ("setup_extractor", base)):
        labels = [o for o in at.selectbox(key=key).options if o.startswith(wanted + " — ")]
        assert labels and "small local model" in labels[0], at.selectbox(key=key).options


def test_the_local_server_gets_the_schema_as_a_grammar_only(llm_server, local):
    """Elsewhere JSON mode with a schema also carries the schema as an instruction (a server may
    ignore the ``schema`` key); the local server enforces it, so its prompts stay ~400 tokens shorter."""
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(local.record), "KNOWSIM_LLM_CACHE": "0"})
    with FakeLLMServer() as other_server:
        sent = {}
        for name, srv, url in (("local", llm_server, local.server.url), ("other", other_server, other_server.openai_url)):
            srv.reply = lambda req: '{"a": 1, "b": "x"}'
            srv.push(Fault(status=500, message=LLAMA_CPP_500))
            m = ChatModel(ModelRef.parse("compat", f"gemma3-270m@{url}"), settings=s)
            m.complete(as_messages("system text", user="q"), json_schema=Pair)
            sent[name] = srv.requests[1]
    assert sent["local"].system == "system text" and sent["local"].body["response_format"]["schema"]
    assert '"required": ["a", "b"]' in sent["other"].system and sent["other"].body["response_format"]["schema"]


def test_a_timed_out_request_to_the_local_server_is_not_retried(llm_server, local, monkeypatch):
    """Seen in the benchmark: a 13-IU extractor call ran past the deadline and was retried — while
    the single-slot server went on generating the abandoned request, so the retry queued behind it
    (another 1,000 s). A hosted or other server's timeout is still retried."""
    from knowsim_core.llm import chat

    monkeypatch.setattr(chat, "local_timeout_s", lambda: 0.5)
    llm_server.push(Fault(delay=1.5), Fault(delay=1.5))
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(local.record),
                                      "KNOWSIM_LLM_TIMEOUT": "0.5", "KNOWSIM_LLM_CACHE": "0"})
    m = ChatModel(ModelRef.parse("compat", f"gemma3-270m@{local.server.url}"), settings=s)
    with pytest.raises(ProviderCallError, match="still generating the abandoned request") as err:
        m.complete(as_messages("s", user="q"))
    assert err.value.reason == "timeout" and len(llm_server.requests) == 1


# ---------------------------------------------------------------------- the compact extractor format
LABELS = [("well_explained", "reasoning", "confirmed_correct"), ("shallow", "articulation", "ignored"),
          ("not_mentioned", "none", "not_applicable")]


def compact_reply(req) -> str:
    """What the grammar of a compact schema lets a model write: one object per required IU id, in order."""
    schema = req.body["response_format"]["schema"]
    return json.dumps({iu: dict(zip(("quality", "attempt", "role"), LABELS[k % 3]))
                       for k, iu in enumerate(schema["required"])})


def one_turn_with_the_extractor(url, s):
    agent = registry.resolve("extractor", f"compat/gemma3-270m@{url}", settings=s)
    sim = Simulation(material=get_sample(QID).material, params=preset(max_turns=1),
                     assistant=registry.resolve("assistant", "offline/adaptive"),
                     user=registry.resolve("user", "offline/knowsim"), extractor=agent)
    sim.reset(seed=1)
    return agent, sim.step()


def test_the_local_extractor_asks_for_the_compact_format_and_reads_it_into_the_same_labels(llm_server, local):
    """Old behaviour: the local model got the full format (~75 tokens per IU before any reasoning text, under
    a grammar at 0.3–1.5 s a token), so a 4-IU reply was cut at CI's cap and every all-local run stopped after
    turn 1. Now: a schema with one required property per IU id (in graph order) and three enums each."""
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(local.record), "KNOWSIM_LLM_CACHE": "0"})
    llm_server.reply = compact_reply
    llm_server.push(Fault(status=500, message=LLAMA_CPP_500))  # what llama-cpp-python answers to json_schema
    agent, rec = one_turn_with_the_extractor(local.server.url, s)
    ids = list(get_sample(QID).material.graph.index.ids)
    sent = llm_server.requests[-1]
    schema = sent.body["response_format"]["schema"]
    assert sent.json_mode and schema["required"] == ids and schema["additionalProperties"] is False
    labels = schema["$defs"]["CompactLabels"]
    assert labels["required"] == ["quality", "attempt", "role"] and labels["additionalProperties"] is False
    assert [labels["properties"][k]["enum"] for k in ("quality", "attempt")] == [
        ["well_explained", "shallow", "not_mentioned"], ["reasoning", "articulation", "none"]]
    assert "one key per IU id" in sent.last_user and "teaching_quality_reasoning" not in sent.last_user
    assert not rec.extractor_failed and len(llm_server.requests) == 2
    got = [(x.id, x.teaching_quality, x.attempt.value, x.response_role) for x in rec.signals]
    assert got == [(iu, *LABELS[k % 3]) for k, iu in enumerate(ids)]
    assert all(x.reasoning is None for x in rec.signals)  # no reasoning asked for, none invented
    d = agent.describe()
    assert d["output_format"].startswith("compact (small local model)")
    assert d["prompt_version"] == "extractor-v1-compact"


def test_other_servers_keep_the_full_extractor_format(llm_server):
    """The compact format is for the recorded local server only: a compatible server elsewhere (and every
    hosted provider) is asked for ``iu_analysis`` entries with their reasoning, as before."""
    llm_server.reply = KnowSimReplies()
    agent, rec = one_turn_with_the_extractor(llm_server.openai_url, settings(llm_server))
    sent = llm_server.requests[-1]
    assert "iu_analysis" in sent.schema["properties"] and "teaching_quality_reasoning" in sent.last_user
    assert not rec.extractor_failed and "output_format" not in agent.describe()
    assert agent.describe()["prompt_version"] == "extractor-v1"


def test_a_compact_reply_that_fails_validation_is_still_read_leniently(llm_server, local):
    """A server that ignores the grammar may write a label outside the enums: the reply fails validation,
    gets its repair request, and is then read like any extractor output (an unknown quality is kept, flagged)."""
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(local.record),
                                      "KNOWSIM_LLM_CACHE": "0", "KNOWSIM_LLM_STRUCTURED": "json"})
    ids = list(get_sample(QID).material.graph.index.ids)
    llm_server.reply = lambda req: json.dumps({iu: {"quality": "great", "attempt": "none", "role": "ignored"}
                                               for iu in ids})
    agent, rec = one_turn_with_the_extractor(local.server.url, s)
    assert not rec.extractor_failed and [x.id for x in rec.signals] == ids
    assert {x.teaching_quality for x in rec.signals} == {"great"}
    assert any("is not one of" in n for n in rec.notes)


# ---------------------------------------------------------------------- stopping: Ctrl-C, SIGTERM, a dead parent
# A stand-in for `python -m llama_cpp.server` (the launcher runs `<python> -m llama_cpp.server …`): it answers
# GET /v1/models, touches a file when a POST arrives and then holds it (a long generation), and on SIGINT or
# SIGTERM does what uvicorn does while a request runs — waits for it to end, i.e. does not exit. (It ends
# itself after 120 s, so a test that fails on a server left behind does not leave it running for good.)
FAKE_SERVER = '''#!{python}
import http.server, os, pathlib, signal, sys, threading
threading.Timer(120, lambda: os._exit(3)).start()
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
seen = pathlib.Path({seen!r})
signal.signal(signal.SIGINT, lambda *a: print("Waiting for connections to close.", flush=True))
signal.signal(signal.SIGTERM, lambda *a: print("Waiting for connections to close.", flush=True))

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{{"object": "list", "data": []}}')

    def do_POST(self):
        seen.touch()
        signal.pause()

    def log_message(self, *a):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
'''
STOP_BOUND_S = 10.0  # a liveness bound (the stop grace is 2 s), not a speed measurement
# what a parent process that started the server does: start it, say its pid, wait to be killed
PARENT = """import sys, time
from knowsim_core.llm.local_server import start
live = start(sys.argv[1], record=sys.argv[2], python=sys.argv[3])
print(live.pid, flush=True)
time.sleep(3600)
"""
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux")


@pytest.fixture()
def busy_server(tmp_path):
    """(the fake interpreter, a dummy model file, the file a POST touches)."""
    seen = tmp_path / "post-seen"
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_SERVER.format(python=sys.executable, seen=str(seen)))
    fake.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return fake, model, seen


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting for whoever adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_until(check, bound: float = STOP_BOUND_S) -> bool:
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def python_child(args: list[str], **kw) -> subprocess.Popen:
    """A Python child that gets SIGINT as from a terminal (a test runner started in the background may
    ignore SIGINT, and Python then installs no KeyboardInterrupt handler)."""
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=child_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def read_until(stream, words: str) -> str:
    seen = []
    for line in stream:
        seen.append(line)
        if words in line:
            return "".join(seen)
    raise AssertionError(f"{words!r} never printed; got {''.join(seen)!r}")


@linux_only
@pytest.mark.timeout(60)
def test_stopping_a_server_that_waits_on_its_request_does_not_wait_for_it(busy_server, tmp_path):
    """uvicorn answers SIGINT and SIGTERM alike by waiting for the request in progress (minutes here).
    Old behaviour: SIGINT, 10 s, SIGTERM, 5 s, then SIGKILL — 15 s for every stop of a busy server."""
    fake, model, _ = busy_server
    live = start(model, record=tmp_path / "rec.json", python=str(fake))
    assert (tmp_path / "rec.json").exists()
    t0 = time.monotonic()
    code = live.stop()
    assert time.monotonic() - t0 < STOP_BOUND_S and code == -signal.SIGKILL
    assert gone(live.pid) and not (tmp_path / "rec.json").exists()


@linux_only
@pytest.mark.timeout(90)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_launcher_stops_its_server_on_ctrl_c_and_sigterm(busy_server, tmp_path, sig):
    """What `make local-model` runs. Old behaviour: Ctrl-C took 15 s with a busy server, and SIGTERM
    killed the launcher at once and left the server running, its record file behind."""
    fake, model, seen = busy_server
    rec = tmp_path / "rec.json"
    proc = python_child(["-m", "knowsim_core.llm.local_server", "--model", str(model), "--record", str(rec),
                         "--python", str(fake)])
    try:
        read_until(proc.stdout, "stops the server")
        server = json.loads(rec.read_text())
        urllib_post(server["url"])  # the server is busy with a request from now on
        assert wait_until(seen.exists)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out and wait_until(lambda: gone(server["pid"]), 2) and not rec.exists()


@linux_only
@pytest.mark.timeout(90)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_server_does_not_outlive_the_process_that_started_it(busy_server, tmp_path, sig):
    """Seen: SIGTERM to the benchmark killed it and left llama_cpp.server running (5 GB). The kernel now
    kills the server when its parent dies (PR_SET_PDEATHSIG), whatever killed the parent."""
    fake, model, _ = busy_server
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    proc = python_child([str(script), str(model), str(tmp_path / "rec.json"), str(fake)])
    try:
        pid = int(proc.stdout.readline())
        assert not gone(pid)
        proc.send_signal(sig)
        proc.wait(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_until(lambda: gone(pid)), f"the server {pid} outlived its parent"


@linux_only
@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_benchmark_stops_with_its_server_while_a_call_waits(busy_server, tmp_path, sig):
    """Seen: Ctrl-C to benchmarks/local_model.py while the server evaluated the first prompt did not
    stop it within 15 s (the stop waited 10 s on SIGINT, then 5 s on SIGTERM, for a busy server); SIGTERM
    killed it and orphaned the server."""
    fake, model, seen = busy_server
    proc = python_child(["benchmarks/local_model.py", "--model", str(model), "--python", str(fake),
                         "--questions", QID])
    try:
        assert wait_until(seen.exists, 60), proc.poll()  # the first call is in progress
        server_pids = [p for p in children_of(proc.pid)]
        assert server_pids
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err
    assert all(wait_until(lambda: gone(p), 2) for p in server_pids)


def urllib_post(url: str) -> None:
    """Send a chat request and do not wait for its answer (the server holds it)."""
    import threading
    import urllib.request

    def send():
        req = urllib.request.Request(f"{url}/chat/completions", b'{"messages": []}',
                                     {"content-type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60).read()
        except OSError:
            pass

    threading.Thread(target=send, daemon=True).start()


def children_of(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


# ---------------------------------------------------------------------- the record is checked (issue 49, item 8)
FORGED = {
    "pid 1": lambda local, srv: {"pid": 1},
    "another server's URL": lambda local, srv: {"url": srv.openai_url},
    "another server with its own pid": lambda local, srv: {"url": srv.openai_url, "pid": os.getpid()},
    "a remote URL": lambda local, srv: {"url": "http://10.1.2.3:8080/v1"},
    "context 100": lambda local, srv: {"n_ctx": 100},
    "context -5": lambda local, srv: {"n_ctx": -5},
    "another model": lambda local, srv: {"model": "llama3-70b"},
}
FORGED_WHY = {
    "pid 1": "process 1 does not listen on", "another server's URL": "does not listen on",
    "another server with its own pid": "is not a llama.cpp server started for gemma3-270m",
    "a remote URL": "is not http://<loopback>:PORT/v1", "context 100": "context of 100 tokens is outside",
    "context -5": "context of -5 tokens is outside", "another model": "not a llama.cpp server started for llama3-70b",
}


@linux_only
@pytest.mark.parametrize("forgery", list(FORGED))
def test_a_forged_record_is_ignored_and_the_status_line_says_why(local, llm_server, tmp_path, forgery):
    """Old behaviour: any record whose pid was alive was trusted — `pid: 1`, another server's URL, a
    context of 100 or −5 — and that server got the local model's treatment (caps, a -5-token context
    check that refused every prompt). Now the record must be the launcher's own server (its pid listening
    on the URL, started with that model and context) and is otherwise ignored, the reason in one line."""
    data = {"url": local.server.url, "model": "gemma3-270m", "n_ctx": 8192, "pid": local.pid, "threads": 2,
            **FORGED[forgery](local, llm_server)}
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    assert running(forged) is None
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(forged)})
    assert s.local is None and not s.is_local(data["url"]) and s.context_for("compat", data["url"]) == 0
    assert s.max_tokens_for("extractor", data["url"]) is None  # no local caps for that server
    compat = {p.name: p for p in provider_status(s)}["compat"]
    assert "\n" not in compat.detail and f"ignored the local-model record {forged}" in compat.detail
    assert FORGED_WHY[forgery] in compat.detail, compat.detail
    genuine = running(local.record)  # the launcher's own record still checks out
    assert genuine == local.server


def test_a_record_without_its_fields_is_ignored_in_one_line(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"url": "http://127.0.0.1:1/v1"}))
    s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(tmp_path / "r.json")})
    assert s.local is None and "lacks url, model, n_ctx or pid" in s.local_refused


# ---------------------------------------------------------------------- one launcher per record (issue 49, item 9)
@linux_only
@pytest.mark.timeout(60)
def test_a_second_launcher_on_the_same_record_is_refused_and_the_first_keeps_serving(local, tmp_path, capsys):
    """Old behaviour: both launchers said they were up, only the second was recorded, both wrote one log,
    and stopping the second deleted the record while the first still served."""
    before = {p: p.read_bytes() for p in (local.record, local.log)}
    model = tmp_path / "model.gguf"
    code = main(["--model", str(model), "--record", str(local.record), "--python", str(shim(tmp_path))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: another launcher already runs the local model recorded in {local.record}")
    assert f"launcher pid {os.getpid()}, at {local.server.url}" in err[0] and "--record FILE" in err[0]
    assert {p: p.read_bytes() for p in before} == before  # neither the record nor the log was touched
    assert running(local.record) == local.server
    with pytest.raises(LocalModelError, match="another launcher already runs"):
        start(model, record=local.record, python=str(shim(tmp_path)))
    local.stop()
    assert not local.record.exists()
    again = start(model, record=local.record, python=str(shim(tmp_path)))  # the lock went with the first
    try:
        assert running(local.record) == again.server
    finally:
        again.stop()


# ---------------------------------------------------------------------- several servers behind one URL (issue 45)
needs_nginx = pytest.mark.skipif(not os.access("/usr/sbin/nginx", os.X_OK),
                                 reason="nginx is not installed (scripts/bootstrap.sh test installs it)")


@linux_only
@needs_nginx
@pytest.mark.timeout(120)
def test_the_launcher_runs_two_servers_behind_one_url_and_ctrl_c_stops_them_all(tmp_path):
    """`make local-model N=2`: two model servers and nginx in front, one URL printed and recorded; the
    LLM layer sends two requests at a time to it (one per server); a run through it plays (local tutor
    and learner); Ctrl-C stops the three processes and removes the record."""
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    rec = tmp_path / "rec.json"
    proc = python_child(["-m", "knowsim_core.llm.local_server", "--servers", "2", "--model", str(model),
                         "--record", str(rec), "--python", str(shim(tmp_path))])
    try:
        out = read_until(proc.stdout, "stops them all")
        server = running(rec)
        assert server is not None and len(server.servers) == 2 and server.slots == 2
        assert f"the one URL to use: {server.url}" in out and "2 servers behind nginx" in out
        pids = [server.pid, *(pid for pid, _ in server.servers)]
        s = LLMSettings.from_sources(env={"KNOWSIM_LOCAL_MODEL_FILE": str(rec), "KNOWSIM_LLM_CACHE": "0"})
        assert "2 servers behind nginx" in {p.name: p for p in provider_status(s)}["compat"].detail
        ids = server.agent_ids()
        assert ChatModel(ModelRef.parse("compat", ids["user"].removeprefix("compat/")),
                         settings=s).settings.max_concurrency == 2
        store = Store(tmp_path / "s.db")
        store.questions.seed_samples()
        live = start_run(store, question_id=QID, level="novice", seed=1, max_turns=2,
                         assistant_id=ids["assistant"], user_id=ids["user"], extractor_id="offline/lexical",
                         settings={"settings": s, "cache": None})
        final = live.run_to_end()  # the stand-ins answer the full extractor format, not the compact one
        assert [t.turn for t in final.turns] == [1, 2] and all(len(t.usage) == 2 for t in final.turns)
        assert sorted(p.name for p in tmp_path.glob("rec-*.log")) == ["rec-1.log", "rec-2.log"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert all(wait_until(lambda p=p: gone(p), 2) for p in pids) and not rec.exists()


@linux_only
@needs_nginx
@pytest.mark.timeout(90)
def test_nothing_of_two_servers_and_their_router_outlives_a_killed_launcher(tmp_path):
    """Seen: nginx's master killed by the kernel with its parent (SIGKILL) left its worker processes
    running, listening. nginx now gets SIGTERM, its fast stop, which ends the workers too."""
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    rec = tmp_path / "rec.json"
    proc = python_child(["-m", "knowsim_core.llm.local_server", "--servers", "2", "--model", str(model),
                         "--record", str(rec), "--python", str(shim(tmp_path))])
    try:
        read_until(proc.stdout, "stops them all")
        server = running(rec)
        workers = children_of(server.pid)
        pids = [server.pid, *workers, *(pid for pid, _ in server.servers)]
        assert workers and len(pids) >= 4
        proc.kill()
        proc.wait(timeout=STOP_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(wait_until(lambda p=p: gone(p)) for p in pids), [p for p in pids if not gone(p)]
    assert running(rec) is None  # the record left behind names processes that are gone: stale, ignored
