"""The LLM layer against a real local HTTP server: wire formats, structured output, cache, faults.

No SDK object is patched: the SDKs talk to tests/fakes/llm_server.py over a socket.
"""

from __future__ import annotations

import json
import pickle
import socket
import traceback

import pytest
from pydantic import BaseModel

from knowsim_core.errors import ConfigError, ProviderError
from knowsim_core.llm import (
    ChatModel, LLMSettings, MalformedOutputError, MemoryCache, ModelRef, ProviderCallError, as_messages, llm_agent_ids,
    provider_status,
)
from knowsim_core.text.redact import redact
from tests.fakes.llm_server import Fault, llm_server  # noqa: F401 — fixture

OPENAI_KEY = "sk-proj-TESTKEY-abcdefghijklmnop1234"
ANTHROPIC_KEY = "sk-ant-api03-TESTKEY-zyxwvutsrq9876"
PROVIDERS = ("openai", "anthropic", "compat")


class Pair(BaseModel):
    a: int
    b: str


GOOD = json.dumps({"a": 1, "b": "x"})


def settings_for(srv, **env) -> LLMSettings:
    base = {
        "OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": srv.openai_url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": srv.anthropic_url,
        "KNOWSIM_COMPAT_BASE_URL": srv.openai_url,
        "KNOWSIM_LLM_TIMEOUT": "5", "KNOWSIM_LLM_PRICES": json.dumps({"m1": [1.0, 2.0]}),
    }
    base.update(env)
    return LLMSettings.from_sources(env=base)


def model(srv, provider, name="m1", cache=None, **env) -> ChatModel:
    return ChatModel(ModelRef.parse(provider, name), settings=settings_for(srv, **env), cache=cache)


# ---------------------------------------------------------------------- settings
def test_settings_merge_env_and_secrets_and_hide_keys():
    s = LLMSettings.from_sources(
        env={"OPENAI_API_KEY": OPENAI_KEY, "KNOWSIM_LLM_TIMEOUT": "12", "HOME": "/x"},
        secrets={"OPENAI_API_KEY": "sk-from-secrets-0000000000", "KNOWSIM_COMPAT_BASE_URL": "http://h:1/v1/"},
    )
    assert s.api_key("openai") == "sk-from-secrets-0000000000"
    assert s.key_sources["openai"] == "secrets"
    assert s.timeout_s == 12.0 and s.compat_base_url == "http://h:1/v1"
    for text in (repr(s), str(s), json.dumps(s.describe())):
        assert "sk-from-secrets" not in text and OPENAI_KEY not in text
    assert pickle.loads(pickle.dumps(s)).api_key("openai") == "sk-from-secrets-0000000000"


class ExplodingSecrets:
    """st.secrets without a secrets file: every access raises."""

    def keys(self):
        raise FileNotFoundError("No secrets files found")

    def __getitem__(self, k):
        raise FileNotFoundError("No secrets files found")


def test_settings_tolerate_missing_secrets_and_report_bad_values():
    assert LLMSettings.from_sources(env={}, secrets=None).api_key("openai") == ""
    assert LLMSettings.from_sources(env={"ANTHROPIC_API_KEY": "k" * 20}, secrets=ExplodingSecrets()).api_key("anthropic")
    with pytest.raises(ConfigError, match="KNOWSIM_LLM_TIMEOUT"):
        LLMSettings.from_sources(env={"KNOWSIM_LLM_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="KNOWSIM_LLM_PRICES"):
        LLMSettings.from_sources(env={"KNOWSIM_LLM_PRICES": '{"m": [1]}'})
    with pytest.raises(ConfigError, match="KNOWSIM_LLM_STRUCTURED"):
        LLMSettings.from_sources(env={"KNOWSIM_LLM_STRUCTURED": "xml"})


def test_sidebar_overrides_keep_env_values_when_left_empty():
    s = LLMSettings.from_sources(env={"OPENAI_API_KEY": OPENAI_KEY})
    assert s.with_overrides(openai_api_key="  ").api_key("openai") == OPENAI_KEY
    t = s.with_overrides(anthropic_api_key="sk-typed-1234567890", compat_base_url="http://x:8080/v1/")
    assert t.api_key("anthropic") == "sk-typed-1234567890" and t.key_sources["anthropic"] == "session"
    assert t.compat_base_url == "http://x:8080/v1"
    with pytest.raises(ConfigError, match="unknown LLM setting"):
        s.with_overrides(colour="blue")


def test_provider_status_and_agent_ids_follow_configuration():
    s = LLMSettings.from_sources(env={"OPENAI_API_KEY": OPENAI_KEY, "KNOWSIM_COMPAT_MODELS": "qwen2.5, llama3.1"})
    status = {p.name: p for p in provider_status(s)}
    assert status["offline"].available
    assert status["openai"].available and OPENAI_KEY not in status["openai"].detail
    assert not status["anthropic"].available and "ANTHROPIC_API_KEY" in status["anthropic"].detail
    assert not status["compat"].available and "KNOWSIM_COMPAT_BASE_URL" in status["compat"].detail
    ids = llm_agent_ids(s)
    assert "openai/gpt-4o-mini:socratic" in ids["assistant"]
    assert ids["judge"] == [f"openai/{m}" for m in s.models["openai"]]
    assert not any(i.startswith(("anthropic/", "compat/")) for v in ids.values() for i in v)
    with_compat = llm_agent_ids(s.with_overrides(compat_base_url="http://h/v1"))
    assert "compat/qwen2.5" in with_compat["extractor"] and "compat/llama3.1:adaptive" in with_compat["assistant"]


def test_model_ids_and_missing_configuration_are_clear():
    ref = ModelRef.parse("compat", "llama3:8b@http://localhost:11434/v1/")
    assert (ref.model, ref.base_url) == ("llama3:8b", "http://localhost:11434/v1")
    with pytest.raises(ConfigError, match="missing model name"):
        ModelRef.parse("openai", " ")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        ChatModel(ModelRef.parse("openai", "gpt-4o-mini"), settings=LLMSettings.from_sources(env={}))
    with pytest.raises(ConfigError, match="KNOWSIM_COMPAT_BASE_URL"):
        ChatModel(ModelRef.parse("compat", "llama3"), settings=LLMSettings.from_sources(env={}))


def test_redact_hides_given_and_key_shaped_strings():
    text = f"bad key {OPENAI_KEY} and sk-ant-other-123456789 Bearer abcdefghijklmnop"
    out = redact(text, [OPENAI_KEY])
    assert OPENAI_KEY not in out and "sk-ant-other" not in out and "abcdefghijklmnop" not in out


# ---------------------------------------------------------------------- structured output on the wire
@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_output_uses_each_wire_format_and_accounts_usage(llm_server, provider):
    llm_server.reply = lambda req: GOOD
    res = model(llm_server, provider).complete(as_messages("be brief", user="hi"), json_schema=Pair,
                                               temperature=0.0, max_tokens=50, role="judge")
    assert res.parsed == Pair(a=1, b="x")
    req = llm_server.requests[-1]
    assert req.schema is not None and req.schema["required"] == ["a", "b"]
    if provider == "anthropic":
        assert req.path == "/v1/messages" and req.body["system"] == "be brief"
        assert req.body["output_config"]["format"]["type"] == "json_schema"
        assert req.body["max_tokens"] == 50 and "seed" not in req.body
    else:
        assert req.path == "/v1/chat/completions"
        assert req.body["response_format"]["json_schema"]["strict"] is True
        assert req.body["max_completion_tokens" if provider == "openai" else "max_tokens"] == 50
    assert req.body["temperature"] == 0.0  # every wire format carries the spec's temperature (§9)
    assert req.api_key == {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY, "compat": "no-key"}[provider]
    u = res.usage
    assert (u.role, u.model) == ("judge", f"{provider}/m1")
    assert u.input_tokens == len(req.text.split()) and u.output_tokens == len(GOOD.split())
    assert u.cost_usd == pytest.approx((u.input_tokens * 1.0 + u.output_tokens * 2.0) / 1e6)
    assert u.latency_ms > 0 and not u.cached


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cache_prevents_a_second_call_and_can_be_switched_off(llm_server, provider):
    llm_server.reply = lambda req: GOOD
    cache = MemoryCache()
    m = model(llm_server, provider, cache=cache)
    msgs = as_messages("s", user="same question")
    first = m.complete(msgs, json_schema=Pair, temperature=0.0, seed=3)
    second = m.complete(msgs, json_schema=Pair, temperature=0.0, seed=3)
    assert len(llm_server.requests) == 1
    assert second.cached and second.parsed == first.parsed and second.usage.cost_usd == 0.0
    m.complete(msgs, json_schema=Pair, temperature=0.0, seed=4)  # another seed is another request
    assert len(llm_server.requests) == 2
    off = model(llm_server, provider, cache=cache, KNOWSIM_LLM_CACHE="0")
    off.complete(msgs, json_schema=Pair, temperature=0.0, seed=3)
    assert len(llm_server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_json_is_repaired_once_then_reported(llm_server, provider):
    llm_server.reply = lambda req: GOOD
    llm_server.push(Fault(text='{"a": "one", "b": '))
    m = model(llm_server, provider)
    res = m.complete(as_messages("s", user="q"), json_schema=Pair)
    assert res.parsed == Pair(a=1, b="x") and len(llm_server.requests) == 2
    repair = llm_server.requests[1].turns
    assert repair[-2] == {"role": "assistant", "content": '{"a": "one", "b": '}
    assert "could not be used" in repair[-1]["content"]
    assert res.usage.input_tokens > len(llm_server.requests[1].text.split())  # both calls counted
    llm_server.push(Fault(text="not json at all"), Fault(text='{"a": "x", "b": "y"}'))
    with pytest.raises(MalformedOutputError, match="after one repair") as err:
        m.complete(as_messages("s", user="q2"), json_schema=Pair)
    assert err.value.text == '{"a": "x", "b": "y"}' and err.value.usage.input_tokens > 0


def test_fenced_json_in_json_mode_is_accepted(llm_server):
    llm_server.reply = lambda req: "Sure!\n```json\n" + GOOD + "\n```"
    res = model(llm_server, "compat", KNOWSIM_LLM_STRUCTURED="json").complete(as_messages("s", user="q"), json_schema=Pair)
    req = llm_server.requests[-1]
    assert res.parsed == Pair(a=1, b="x")
    assert req.json_mode and req.schema is None and '"required": ["a", "b"]' in req.system


def test_server_without_schema_support_falls_back_to_json_mode(llm_server):
    llm_server.reply = lambda req: GOOD
    llm_server.push(Fault(status=400, message="response_format json_schema is not supported"))
    m = model(llm_server, "compat", name="no-schema-model")
    assert m.complete(as_messages("s", user="q"), json_schema=Pair).parsed == Pair(a=1, b="x")
    assert [r.schema is not None for r in llm_server.requests] == [True, False]
    assert llm_server.requests[1].json_mode
    m.complete(as_messages("s", user="q3"), json_schema=Pair)  # remembered: JSON mode straight away
    assert llm_server.requests[2].json_mode


def test_a_model_that_rejects_temperature_and_seed_is_asked_again_without_them(llm_server):
    """OpenAI's reasoning models answer 400 to a non-default temperature or a seed: the request is
    repeated without them (still as a schema request) and they are not sent to that model again."""
    llm_server.reply = lambda req: GOOD
    llm_server.push(Fault(status=400, message="Unsupported value: 'temperature' does not support 0.7 with this "
                                              "model. Only the default (1) value is supported."))
    m = model(llm_server, "openai", name="o-reasoning")
    res = m.complete(as_messages("s", user="q"), json_schema=Pair, temperature=0.7, seed=3)
    assert res.parsed == Pair(a=1, b="x") and m.sampling_is_default()
    first, second = llm_server.requests
    assert first.body["temperature"] == 0.7 and first.body["seed"] == 3
    assert "temperature" not in second.body and "seed" not in second.body and second.schema is not None
    m.complete(as_messages("s", user="q2"), json_schema=Pair, temperature=0.7, seed=3)
    assert "temperature" not in llm_server.requests[2].body  # remembered for this model
    other = model(llm_server, "openai", name="gpt-other")
    other.complete(as_messages("s", user="q3"), json_schema=Pair, temperature=0.7, seed=3)
    assert llm_server.requests[3].body["temperature"] == 0.7  # ... and only for it


def test_anthropic_gets_the_temperature_and_a_model_that_rejects_it_is_asked_again_without(llm_server):
    """Messages takes ``temperature`` (never ``seed``); newer Claude models answer 400 "`temperature`
    is deprecated for this model": the request is repeated without it, then never sent it again."""
    llm_server.reply = lambda req: GOOD
    plain = model(llm_server, "anthropic", name="claude-plain")
    plain.complete(as_messages("s", user="q0"), json_schema=Pair, temperature=0.7, seed=3)
    assert llm_server.requests[0].body["temperature"] == 0.7 and "seed" not in llm_server.requests[0].body
    llm_server.clear()
    llm_server.push(Fault(status=400, message="`temperature` is deprecated for this model."))
    m = model(llm_server, "anthropic", name="claude-no-temperature")
    res = m.complete(as_messages("s", user="q"), json_schema=Pair, temperature=0.4, seed=3)
    assert res.parsed == Pair(a=1, b="x") and m.sampling_is_default()
    first, second = llm_server.requests
    assert first.body["temperature"] == 0.4
    assert "temperature" not in second.body and second.schema is not None
    m.complete(as_messages("s", user="q2"), json_schema=Pair, temperature=0.4)
    assert "temperature" not in llm_server.requests[2].body  # remembered for this model
    plain.complete(as_messages("s", user="q3"), json_schema=Pair, temperature=0.4)
    assert llm_server.requests[3].body["temperature"] == 0.4  # ... and only for it


def test_an_unrelated_bad_request_is_not_retried_without_sampling(llm_server):
    llm_server.push(Fault(status=400, message="'messages' must contain the word 'json'"))
    with pytest.raises(ProviderCallError, match="must contain the word"):
        model(llm_server, "openai", name="m-plain").complete(as_messages("s", user="q"), temperature=0.7)
    assert len(llm_server.requests) == 1


# ---------------------------------------------------------------------- faults
@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_errors_are_retried(llm_server, provider):
    # retries are the Studio's own (the SDK client has max_retries=0), so they can be counted
    llm_server.reply = lambda req: "fine"
    llm_server.push(Fault(status=500), Fault(status=503))
    res = model(llm_server, provider).complete(as_messages("s", user="q"))
    assert res.text == "fine" and len(llm_server.requests) == 3


def server_error_body(srv, key: str) -> str:
    """What the fake server answers a rejected key with (read with urllib, outside any SDK)."""
    import urllib.error
    import urllib.request

    srv.push(Fault(status=401, retry_after_ms=None))
    req = urllib.request.Request(srv.openai_url + "/chat/completions", data=b"{}",
                                 headers={"Authorization": f"Bearer {key}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    return err.value.read().decode()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_key_gives_one_clear_line_without_the_key(llm_server, provider):
    llm_server.push(Fault(status=401))
    extra = {"KNOWSIM_COMPAT_API_KEY": "sk-compat-SECRET-5555555555"} if provider == "compat" else {}
    with pytest.raises(ProviderCallError) as err:
        model(llm_server, provider, **extra).complete(as_messages("s", user="q"))
    exc = err.value
    assert exc.reason == "auth" and exc.status == 401 and str(exc).startswith(provider)
    assert "\n" not in str(exc)
    sent_key = llm_server.requests[-1].api_key
    assert sent_key and sent_key in server_error_body(llm_server, sent_key)  # the server echoes keys…
    shown = str(exc) + "".join(traceback.format_exception(exc))
    assert sent_key not in shown and "TESTKEY" not in shown and "SECRET" not in shown  # …we never do
    assert exc.__cause__ is None and exc.__suppress_context__


@pytest.mark.parametrize(
    ("status", "reason", "words"),
    [(404, "model", "not found"), (429, "rate_limit", "rate limit"), (400, "bad_request", "rejected")],
)
def test_status_errors_name_the_cause_and_the_remedy(llm_server, status, reason, words):
    llm_server.push(*[Fault(status=status)] * 3)
    with pytest.raises(ProviderCallError, match=words) as err:
        model(llm_server, "openai", KNOWSIM_LLM_MAX_RETRIES="0").complete(as_messages("s", user="q"))
    assert err.value.reason == reason


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_a_clear_provider_error(llm_server, provider):
    llm_server.push(Fault(delay=1.5))
    m = model(llm_server, provider, KNOWSIM_LLM_TIMEOUT="0.3", KNOWSIM_LLM_MAX_RETRIES="0")
    with pytest.raises(ProviderError, match="no answer .* within 0.3 s") as err:
        m.complete(as_messages("s", user="q"))
    assert err.value.reason == "timeout" and "KNOWSIM_LLM_TIMEOUT" in str(err.value)


def test_connection_refused_names_the_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    settings = LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": f"http://127.0.0.1:{port}/v1",
                                             "KNOWSIM_LLM_MAX_RETRIES": "0"})
    with pytest.raises(ProviderCallError, match=f"cannot connect to http://127.0.0.1:{port}/v1") as err:
        ChatModel(ModelRef.parse("compat", "m"), settings=settings).complete(as_messages("s", user="q"))
    assert err.value.reason == "connection"


def test_concurrency_limit_holds_for_batches(llm_server):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    lock, inflight, peak = threading.Lock(), [0], [0]

    def slow(req):
        with lock:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
        time.sleep(0.15)
        with lock:
            inflight[0] -= 1
        return "ok"

    llm_server.reply = slow
    m = model(llm_server, "compat", name="batch-model", KNOWSIM_LLM_MAX_CONCURRENCY="2")
    with ThreadPoolExecutor(max_workers=6) as pool:
        texts = list(pool.map(lambda i: m.complete(as_messages("s", user=f"q{i}")).text, range(6)))
    assert texts == ["ok"] * 6 and peak[0] == 2


def test_requests_per_minute_spaces_calls(llm_server):
    """KNOWSIM_LLM_RPM=120 spaces calls 0.5 s apart: three calls after a warm-up span at least two
    intervals (the first may go at once when the warm-up took longer than one interval, which is
    why the old ``>= 0.25`` for three calls at 0.1 s failed at 0.244 s on a busy machine: only two
    intervals are promised). A lower bound on time cannot fail because the machine is slow. Planted
    fault: ``Gate`` ignoring ``rpm`` (interval 0) makes three loopback calls take ~0.03 s (< 0.3 s
    at load 6), far below 1.0 s."""
    import time

    llm_server.reply = lambda req: "ok"
    m = model(llm_server, "compat", name="rpm-model", KNOWSIM_LLM_RPM="120")  # one call per 0.5 s
    m.complete(as_messages("s", user="warm-up"))
    start = time.perf_counter()
    for i in range(3):
        m.complete(as_messages("s", user=f"q{i}"))
    assert time.perf_counter() - start >= 2 * 0.5
    assert len(llm_server.requests) == 4


def test_sdks_are_imported_lazily_inside_functions():
    """Importing the LLM layer must not import an SDK: only function bodies in llm/ may."""
    import ast
    from pathlib import Path

    pkg = Path(__file__).resolve().parent.parent / "knowsim_core"
    offenders = []
    for path in [*(pkg / "llm").glob("*.py"), pkg / "agents" / "llm.py"]:
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("openai", "anthropic")]
    assert offenders == []
