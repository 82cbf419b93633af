"""One small chat interface over every provider: :meth:`ChatModel.complete`.

``complete(messages, json_schema=Model)`` returns the reply text, the validated pydantic object
and one :class:`~knowsim_core.engine.records.Usage` (tokens, latency, cost — summed over a repair call).
Structured output goes: cache → schema request (or JSON mode) → validation → one repair request
→ :class:`MalformedOutputError`. With ``structured="auto"`` a server that rejects the schema
request (400/422, common on local servers — llama-cpp-python answers it with a 500 that names
``response_format``, which is not retried) is asked in the JSON-mode-with-a-schema dialect
(``{"type": "json_object", "schema": …}``: llama-cpp-python turns it into a grammar, so even a 270M
model's reply parses), and a server that rejects that too gets plain JSON mode — each for the rest
of the process. A reply that the server cut at ``max_tokens`` under such a grammar is not sent back
for repair (the same cap would cut it again).

Before a request to a server whose context is known (the local model, or ``KNOWSIM_LLM_CONTEXT``)
the prompt is counted — by the server's tokenizer when it has one (llama-cpp-python's
``/extras/tokenize/count``), else estimated — and refused with one clear line when it and the
reply cap do not fit.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from knowsim_core.errors import ConfigError, ProviderError
from knowsim_core.engine.agent_id import AgentId
from knowsim_core.engine.ports import Message
from knowsim_core.engine.records import Usage
from knowsim_core.llm.cache import ResponseCache, request_key
from knowsim_core.llm.errors import MalformedOutputError, ProviderCallError, redact, retry_after, translate
from knowsim_core.text.redact import redact_url, redact_urls, unredact_url, url_secrets
from knowsim_core.llm.jsontext import validate_reply
from knowsim_core.llm.providers import BadReply, RawReply, call, check_base_url, gate_for, get_client, sdk_errors
from knowsim_core.llm.proxy import Proxy, opener, proxy_for
from knowsim_core.llm.settings import LOCAL_TIMEOUT_S, PROVIDERS, LLMSettings, check_one_url

JSON_INSTRUCTION = (
    "Reply with one JSON object only — no prose, no code fences — that matches this JSON schema:\n{schema}"
)
REPAIR_INSTRUCTION = (
    "Your previous reply could not be used: {error}. Reply again with only the corrected JSON object, "
    "complete, matching the schema you were given."
)
# endpoints found to reject schema requests -> the structured mode that works there
_FALLBACK_MODES: dict[tuple[str, str, str], str] = {}
_TOKENIZERS: dict[str, bool] = {}  # base URL -> whether it has llama-cpp-python's tokenize endpoint
CHARS_PER_TOKEN_ESTIMATE = 3.0  # when the server cannot count: conservative (English runs ~4 per token)
MESSAGE_OVERHEAD_TOKENS = 6  # the chat template's turn markers, per message
_DEFAULT_SAMPLING_ENDPOINTS: set[tuple[str, str, str]] = set()  # models that reject temperature / seed
_MODE_LOCK = threading.Lock()
# How servers word "this model takes no temperature / seed" (OpenAI's reasoning models: "Unsupported
# value: 'temperature' does not support 0.7 with this model", "Unsupported parameter: 'seed'"; newer
# Claude models: "`temperature` is deprecated for this model").
_REJECTION = r"(unsupported|not supported|does not support|not allowed|deprecated)"
_SAMPLING_REJECTED = re.compile(rf"{_REJECTION}\W.*\b(temperature|seed)\b|\b(temperature|seed)\b.*\W{_REJECTION}",
                                re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model at a provider: ``openai/gpt-4o-mini``, ``compat/llama3:8b@http://localhost:11434/v1``."""

    provider: str
    model: str
    base_url: str = ""  # an endpoint given in the id itself (compat)

    @property
    def agent_id(self) -> AgentId:
        """The model's id as runs record and show it: its URL without credentials (an agent adds its
        strategy or method with :meth:`AgentId.with_strategy` / :meth:`AgentId.with_method`)."""
        return AgentId(self.provider, self.model, url=redact_url(self.base_url) if self.base_url else "")

    @property
    def id(self) -> str:
        return self.agent_id.id

    @classmethod
    def of(cls, agent_id: AgentId) -> "ModelRef":
        """The model ``agent_id`` calls (its strategy or method is the agent's, not the model's).

        Raises:
            ConfigError: unknown provider or an empty model name.
        """
        provider = agent_id.provider
        if provider not in PROVIDERS:
            raise ConfigError(f"unknown LLM provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
        if not agent_id.model.strip():
            raise ConfigError(
                f"missing model name after {provider}/ in {redact_urls(agent_id.id)!r}; write e.g. {provider}/"
                + ("llama3.1@http://localhost:11434/v1" if provider == "compat" else "<model>")
            )
        return cls(provider, agent_id.model.strip(), agent_id.url.strip().rstrip("/"))

    @classmethod
    def parse(cls, provider: str, spec: str) -> "ModelRef":
        """Read ``<model>`` or ``<model>@<base_url>`` for a provider (as :meth:`of` does)."""
        return cls.of(AgentId.of(provider, spec.strip()))


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    parsed: BaseModel | None
    usage: Usage
    cached: bool = False
    finish: str = ""


@lru_cache(maxsize=None)
def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, built once per model class (a pure function of the class; pydantic
    rebuilds it on every call, ~0.6 ms of CPU under the GIL, twice per turn). Read-only: never mutate."""
    return model.model_json_schema()


def as_messages(system: str, history: Sequence[Message] = (), user: str | None = None) -> list[dict[str, str]]:
    """System prompt + conversation (+ a final user message) in the wire's role/content form."""
    out = [{"role": "system", "content": system}] if system else []
    out += [{"role": m.role, "content": m.text} for m in history]
    if user is not None:
        out.append({"role": "user", "content": user})
    return out


class ChatModel:
    """A model at a provider, with settings, an optional response cache and a usage role.

    ``ledger``: where every call is recorded when it is made (a run's
    :class:`~knowsim_core.engine.ports.UsageLedger`, handed over by the agent; None: not recorded) —
    a reply, a cache hit, a reply that failed validation and the billed attempts of a failed call.

    ``env``: where the proxy variables are read (``os.environ`` when None, read at each call, so the
    client follows it); see :func:`~knowsim_core.llm.proxy.proxy_for`."""

    def __init__(self, ref: ModelRef, *, settings: LLMSettings | None = None, cache: ResponseCache | None = None,
                 env: Mapping[str, str] | None = None):
        self.ref = ref
        self.ledger: Any = None
        self._env = env  # None, not os.environ itself: a model stays picklable (os.environ is not)
        self.settings = settings or LLMSettings.from_env()
        self.cache = cache if self.settings.cache_enabled else None
        # a resumed run's id holds a redacted URL: the real one comes from the settings
        self.base_url = unredact_url(ref.base_url, self.settings.base_urls()) or self.settings.base_url(ref.provider)
        if not self.base_url:
            raise ConfigError(
                f"{ref.id}: no base URL for the compatible server; set KNOWSIM_COMPAT_BASE_URL "
                "(e.g. http://localhost:11434/v1) or write compat/<model>@<base_url>"
            )
        check_one_url(ref.id, self.base_url)  # several servers go behind a router, not into one id
        check_base_url(self.base_url, ref.id)  # a malformed URL is one line now, not a traceback mid-run
        self.proxy()  # so is a proxy the clients cannot use (socks5://…)
        if ref.provider != "compat" and not self.settings.api_key(ref.provider):
            var = f"{ref.provider.upper()}_API_KEY"
            raise ConfigError(f"{ref.id}: no API key; set {var} (in the app, the sidebar takes a key too)")
        self.local = self.settings.is_local(self.base_url)
        if self.local:  # one request at a time per server (none has parallel slots), a deadline for ~2 tokens/s
            self.settings = replace(self.settings, max_concurrency=self.settings.local.slots,  # type: ignore[union-attr]
                                    timeout_s=max(self.settings.timeout_s, local_timeout_s()))

    @property
    def id(self) -> str:
        return self.ref.id

    def proxy(self) -> Proxy | None:
        """The proxy this model's requests go through now (None: direct).

        Raises:
            ConfigError: the environment names a proxy the clients cannot use (see ``proxy_for``).
        """
        return proxy_for(self.base_url, os.environ if self._env is None else self._env)

    def _secrets(self) -> tuple[str, ...]:
        """What to mask in replies and errors: configured keys, the credentials of this URL and of its proxy."""
        proxy = self.proxy()
        return self.settings.secrets() + url_secrets(self.base_url) + (proxy.secrets if proxy is not None else ())

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        json_schema: type[BaseModel] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        role: str = "",
    ) -> ChatResult:
        """Send a chat; with ``json_schema`` the reply is validated into that model.

        Raises:
            ProviderCallError: the call failed (one clear line; the key is never in it).
            MalformedOutputError: the reply did not fit ``json_schema`` even after one repair.
        """
        schema = schema_of(json_schema) if json_schema is not None else None
        key = request_key(
            provider=self.ref.provider, base_url=self.base_url, model=self.ref.model, messages=messages,
            schema=schema, temperature=temperature, max_tokens=max_tokens, seed=seed,
        )
        hit = self._from_cache(key, json_schema, role)
        if hit is not None:
            self._record(hit.usage)
            return hit
        mode = self._mode(json_schema)
        sent = self._sent(messages, schema, mode)
        self.check_context(sent, max_tokens, role)
        get_client(self.ref.provider, base_url=self.base_url, settings=self.settings,
                   proxy=self.proxy())  # SDK import: not latency
        started = time.perf_counter()
        raws: list[RawReply] = []
        unknown = 0  # unusable 200s of a request given up for another structured mode
        while True:
            try:
                raw = self._send(sent, json_schema, mode, temperature, max_tokens, seed)
                break
            except ProviderCallError as exc:
                nxt = self._fallback(mode, exc)
                if nxt is None:
                    raise self._billed(exc, role, unknown, started) from None
                unknown += exc.unknown_calls
                with _MODE_LOCK:  # the server does not take this kind of request: the next one from now on
                    _FALLBACK_MODES[(self.ref.provider, self.base_url, self.ref.model)] = nxt
                mode = nxt
                sent = self._sent(messages, schema, mode)
        raws.append(replace(raw, unknown_calls=raw.unknown_calls + unknown) if unknown else raw)
        parsed, error = self._validate(raw, json_schema)
        repaired = False
        if error and mode == "json_schema_object" and raw.finish == "length":
            error += "; not sent back for repair: the server enforced the schema, and the same cap would cut it again"
        elif error:
            repaired = True
            repair = [*sent, {"role": "assistant", "content": raw.text or "(empty)"},
                      {"role": "user", "content": REPAIR_INSTRUCTION.format(error=error)}]
            try:
                raw = self._send(repair, json_schema, mode, temperature, max_tokens, seed)
            except ProviderCallError as exc:  # the first reply was billed all the same
                raise self._billed(exc, role, 0, started, raws) from None
            raws.append(raw)
            parsed, error = self._validate(raw, json_schema)
        usage = self._usage(raws, role, time.perf_counter() - started)
        self._record(usage)
        if error:
            raise MalformedOutputError(
                f"{self.id}: the reply did not match the expected JSON"
                f"{' after one repair request' if repaired else ''} ({error}); "
                + ("raise this role's reply cap (KNOWSIM_LLM_MAX_TOKENS)" if not repaired
                   else "try another model or KNOWSIM_LLM_STRUCTURED=json"),
                provider=self.ref.provider, text=redact(raw.text, self._secrets()), usage=usage, cut=not repaired,
            ) from None
        if self.cache is not None:
            self.cache.cache_put(key, json.dumps(
                {"text": raw.text, "finish": raw.finish, "input_tokens": usage.input_tokens,
                 "output_tokens": usage.output_tokens}, ensure_ascii=False,
            ))
        return ChatResult(raw.text, parsed, usage, cached=False, finish=raw.finish)

    # ------------------------------------------------------------------ internals
    def _mode(self, json_schema: type[BaseModel] | None) -> str:
        if json_schema is None:
            return "text"
        if self.settings.structured == "json":
            return "json"
        if self.settings.structured == "auto":
            return _FALLBACK_MODES.get((self.ref.provider, self.base_url, self.ref.model), "schema")
        return "schema"

    def _fallback(self, mode: str, exc: ProviderCallError) -> str | None:
        """The structured mode to try after ``exc`` refused ``mode``, or None (the error stands)."""
        if self.settings.structured != "auto" or not _refuses_format(exc):
            return None
        if mode == "schema":
            return "json" if self.ref.provider == "anthropic" else "json_schema_object"
        if mode == "json_schema_object" and exc.reason == "bad_request":
            return "json"
        return None

    # ------------------------------------------------------------------ context
    def context(self) -> int:
        """The server's context in tokens when known (local model, KNOWSIM_LLM_CONTEXT), else 0."""
        return self.settings.context_for(self.ref.provider, self.base_url)

    def count_tokens(self, messages: list[dict[str, str]]) -> tuple[int, bool]:
        """(prompt tokens, counted?) — counted by the server's tokenizer when it has one
        (llama-cpp-python's ``/extras/tokenize/count``), else estimated from the characters
        (:data:`CHARS_PER_TOKEN_ESTIMATE`); both plus the turn markers of each message."""
        text = "\n".join(m["content"] for m in messages)
        overhead = MESSAGE_OVERHEAD_TOKENS * len(messages)
        root = self.base_url.rstrip("/").removesuffix("/v1")
        if _TOKENIZERS.get(root, True):
            req = urllib.request.Request(f"{root}/extras/tokenize/count", json.dumps({"input": text}).encode(),
                                         {"content-type": "application/json"})
            try:
                with opener(self.proxy()).open(req, timeout=self.settings.timeout_s) as r:  # as the clients go
                    count = json.loads(r.read(1 << 16)).get("count")
                if isinstance(count, int) and count >= 0:
                    _TOKENIZERS[root] = True
                    return count + overhead, True
            except (urllib.error.URLError, OSError, ValueError, AttributeError):
                pass
            _TOKENIZERS[root] = False  # no such endpoint: estimate from now on
        return int(len(text) / CHARS_PER_TOKEN_ESTIMATE) + overhead, False

    def check_context(self, messages: list[dict[str, str]], max_tokens: int | None, role: str = "") -> int:
        """Raise a one-line ProviderCallError (reason ``context``) when the prompt and the reply cap
        do not fit the server's context; return the prompt's tokens (0 when the context is unknown)."""
        ctx = self.context()
        if not ctx:
            return 0
        tokens, counted = self.count_tokens(messages)
        reply = max_tokens or 0
        if tokens + reply > ctx:
            how = "counted by the server" if counted else "estimated"
            raise ProviderCallError(
                f"{self.id}: the {role or 'request'}'s prompt is {tokens:,} tokens ({how}) and its reply may take "
                f"{reply:,}, over the server's context of {ctx:,} tokens — this question's graph (with the "
                "conversation so far) is too big for this model's context: start the server with a larger one "
                "(make local-model N_CTX=16384) or lower the reply cap (KNOWSIM_LLM_MAX_TOKENS)",
                provider=self.ref.provider, reason="context",
            )
        return tokens

    def _sent(self, messages: list[dict[str, str]], schema: dict[str, Any] | None, mode: str) -> list[dict[str, str]]:
        """The messages as sent in ``mode``: JSON modes carry the schema as an instruction too — except
        to the local server, whose grammar enforces it (the instruction cost ~400 prompt tokens a call,
        ~30 s at the prompt speed seen on this machine, and a pretrained 270M model does not read it)."""
        if mode == "json" or (mode == "json_schema_object" and not self.local):
            return self._with_instruction(messages, schema)
        return messages

    @staticmethod
    def _with_instruction(messages: list[dict[str, str]], schema: dict[str, Any] | None) -> list[dict[str, str]]:
        note = JSON_INSTRUCTION.format(schema=json.dumps(schema, ensure_ascii=False))
        out = [dict(m) for m in messages]
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{note}"
        else:
            out.insert(0, {"role": "system", "content": note})
        return out

    def _send(self, messages: list[dict[str, str]], json_schema: type[BaseModel] | None, mode: str,
              temperature: float | None, max_tokens: int | None, seed: int | None) -> RawReply:
        """One request; a model that rejects ``temperature`` / ``seed`` (OpenAI's reasoning models,
        newer Claude models) is asked again without them, and is sent none for the rest of the process."""
        endpoint = (self.ref.provider, self.base_url, self.ref.model)
        if self.ref.provider == "anthropic":
            seed = None  # the Messages API has no seed; only the temperature can be rejected there
        if endpoint in _DEFAULT_SAMPLING_ENDPOINTS:
            temperature = seed = None
        try:
            return self._send_once(messages, json_schema, mode, temperature, max_tokens, seed)
        except ProviderCallError as exc:
            if exc.reason != "bad_request" or (temperature is None and seed is None) \
                    or not _SAMPLING_REJECTED.search(str(exc)):
                raise
            with _MODE_LOCK:
                _DEFAULT_SAMPLING_ENDPOINTS.add(endpoint)
            before = exc.unknown_calls
        try:
            raw = self._send_once(messages, json_schema, mode, None, max_tokens, None)
        except ProviderCallError as exc:
            exc.unknown_calls += before
            raise
        return replace(raw, unknown_calls=raw.unknown_calls + before) if before else raw

    def sampling_is_default(self) -> bool:
        """True once the model was found to reject ``temperature`` / ``seed`` (they are not sent)."""
        return (self.ref.provider, self.base_url, self.ref.model) in _DEFAULT_SAMPLING_ENDPOINTS

    def _send_once(self, messages: list[dict[str, str]], json_schema: type[BaseModel] | None, mode: str,
                   temperature: float | None, max_tokens: int | None, seed: int | None) -> RawReply:
        """One call, retried (up to ``KNOWSIM_LLM_MAX_RETRIES``) on a 429, a 5xx, a broken
        connection, a timeout or an unusable 200 body, with backoff or the server's Retry-After.
        The error says how many retries were really made."""
        s = self.settings
        proxy = self.proxy()  # one answer for the client and for its errors
        client = get_client(self.ref.provider, base_url=self.base_url, settings=s, proxy=proxy)
        errors = sdk_errors(self.ref.provider) + (BadReply,)
        retries = 0
        unknown = 0  # unusable 200s: billed, but their token counts cannot be read
        while True:
            try:
                with gate_for(self.ref.provider, self.base_url, s):
                    raw = call(self.ref.provider, client, model=self.ref.model, messages=messages,
                               schema_model=json_schema, mode=mode, temperature=temperature,
                               max_tokens=max_tokens, seed=seed, max_bytes=s.max_reply_bytes,
                               deadline_s=s.timeout_s)
                return _redacted(replace(raw, unknown_calls=unknown) if unknown else raw, self._secrets())
            except errors as exc:
                unknown += isinstance(exc, BadReply) and exc.billed
                wait, why_not = retry_after(exc, retries)
                if mode != "text" and _names_response_format(exc):  # a refusal, not a passing fault
                    wait, why_not = None, "the server refuses this response_format"
                elif self.local and (getattr(exc, "reason", "") == "timeout"
                                     or type(exc).__name__ == "APITimeoutError"):
                    # the local server keeps generating the abandoned request: a retry would queue behind it
                    wait, why_not = None, "the local server is still generating the abandoned request"
                if wait is None or retries >= s.max_retries:
                    err = translate(exc, provider=self.ref.provider, model=self.ref.model, base_url=self.base_url,
                                    timeout_s=s.timeout_s, retries=retries, secrets=self._secrets(),
                                    not_retried=why_not, proxy=proxy)
                    if unknown:  # say it: --max-cost cannot price them
                        err.args = (f"{err}; {unknown} unusable repl{'y' if unknown == 1 else 'ies'} billed, "
                                    "tokens unknown (counted as calls, in no token or cost figure)",)
                    err.unknown_calls = unknown
                    raise err from None
            time.sleep(wait)  # interruptible: Ctrl-C during a backoff stops at once
            retries += 1

    @staticmethod
    def _validate(raw: RawReply, json_schema: type[BaseModel] | None) -> tuple[BaseModel | None, str]:
        if json_schema is None:
            return None, ""
        if raw.parsed is not None:
            return raw.parsed, ""
        try:
            return validate_reply(raw.text, json_schema), ""
        except ValueError as exc:
            truncated = " (the reply was cut off: raise max_tokens)" if raw.finish in ("length", "max_tokens") else ""
            return None, f"{exc}{truncated}"

    def _usage(self, raws: list[RawReply], role: str, seconds: float, unknown: int = 0) -> Usage:
        tin = sum(r.input_tokens for r in raws)
        tout = sum(r.output_tokens for r in raws)
        return Usage(
            role=role, model=self.id, input_tokens=tin, output_tokens=tout,
            latency_ms=round(seconds * 1000.0, 1),
            cost_usd=self.settings.prices.cost(self.ref.model, tin, tout),
            unknown_calls=unknown + sum(r.unknown_calls for r in raws),
        )

    def _billed(self, exc: ProviderCallError, role: str, unknown: int, started: float,
                raws: Sequence[RawReply] = ()) -> ProviderCallError:
        """``exc``, after recording what this call was billed before it failed: the replies in
        ``raws`` and every unusable 200 (tokens unknown: counted as calls, not in the cost)."""
        unknown += exc.unknown_calls
        if raws or unknown:
            self._record(self._usage(list(raws), role, time.perf_counter() - started, unknown))
        return exc

    def _record(self, usage: Usage) -> None:
        if self.ledger is not None:
            self.ledger.record(usage)

    def _from_cache(self, key: str, json_schema: type[BaseModel] | None, role: str) -> ChatResult | None:
        if self.cache is None:
            return None
        blob = self.cache.cache_get(key)
        if blob is None:
            return None
        try:
            data = json.loads(blob)
            raw = RawReply(text=str(data["text"]), finish=str(data.get("finish", "")))
        except (json.JSONDecodeError, KeyError, TypeError):
            return None  # a damaged entry: just call again
        parsed, error = self._validate(raw, json_schema)
        if error:
            return None
        usage = Usage(role=role, model=self.id, cached=True)  # no tokens spent, nothing billed
        return ChatResult(raw.text, parsed, usage, cached=True, finish=raw.finish)

    def describe(self) -> dict[str, Any]:
        """The model's identity and call settings (no key), for a run's metadata."""
        d: dict[str, Any] = {"model": self.id, "provider": self.ref.provider, **self.settings.describe()}
        if self.sampling_is_default():
            d["sampling"] = "model default (the model rejects temperature and seed)"
        if self.ref.provider == "compat":
            d["base_url"] = redact(redact_url(self.base_url), self._secrets())
        if self.local:
            d["local_model"] = self.settings.local.label  # type: ignore[union-attr]
            d["context_tokens"] = self.context()
        if self.settings.prices.price(self.ref.model) is None:
            d["price"] = ("0: a local model, no per-token price" if self.local
                          else "0: not in the price table (set KNOWSIM_LLM_PRICES)")
        return d


def local_timeout_s() -> float:
    """The deadline of one request to the local model (a floor over KNOWSIM_LLM_TIMEOUT)."""
    return LOCAL_TIMEOUT_S


def _names_response_format(exc: BaseException) -> bool:
    """A 5xx whose message names ``response_format``: llama-cpp-python's answer to a request format it
    does not take (a validation error it reports as 500) — the same request fails the same way again."""
    status = getattr(exc, "status_code", None)
    if not (isinstance(status, int) and status >= 500):
        return False
    return "response_format" in f"{getattr(exc, 'body', '')} {getattr(exc, 'message', '')}"


def _refuses_format(exc: ProviderCallError) -> bool:
    """The call failed because the server does not take the structured-output request."""
    return exc.reason == "bad_request" or (exc.reason == "server" and "response_format" in str(exc))


def _redacted(raw: RawReply, secrets: tuple[str, ...]) -> RawReply:
    """A reply that echoes a configured key (or URL credential) with it masked — before it is
    cached, stored as a message or quoted in an error. Replies without one come back unchanged."""
    text = redact(raw.text, secrets, patterns=False)
    parsed = raw.parsed
    if parsed is not None:
        dumped = parsed.model_dump_json()
        clean = redact(dumped, secrets, patterns=False)
        if clean != dumped:
            parsed = type(parsed).model_validate_json(clean)
    if text == raw.text and parsed is raw.parsed:
        return raw
    return replace(raw, text=text, parsed=parsed)
