"""The only code that touches the ``openai`` and ``anthropic`` SDKs (imported lazily, here).

Three providers, two wire formats: ``openai`` and ``compat`` speak Chat Completions, ``anthropic``
speaks Messages. Structured output uses what each SDK sends for its parse API:

* Chat Completions: the strict json_schema ``response_format`` that
  ``chat.completions.parse(response_format=Model)`` sends, posted through the client's documented
  raw ``post`` so the reply text is at hand when validation fails and we ask for a repair;
* Messages: the ``output_config.format`` json_schema that ``messages.parse(output_format=Model)``
  sends (built with the SDK's own ``transform_schema``), sent through ``messages.create`` because
  ``messages.parse`` raises on an invalid reply without returning its text.

JSON mode (``response_format={"type": "json_object"}``; for Anthropic an instruction only) is the
fallback for servers without schema support. Clients are cached per endpoint+key+timeouts.

Sampling: ``temperature`` goes to both wire formats, so the spec's settings (§9: assistant 0.0,
user 0.7, extractor 0.0 with retries at 0.4) hold on every provider. The Messages API takes it
(0–1) for the models that still support it, but the anthropic SDK 2.x dropped the keyword from
``messages.create``, so it travels in ``extra_body``; models that refuse it (newer Claude models
answer "`temperature` is deprecated") are retried without it by ``chat``. ``seed`` exists only in
Chat Completions and is never sent to Anthropic.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from knowsim_core.llm.settings import LLMSettings

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; Chat Completions does not
NO_KEY = "no-key"  # local compatible servers ignore the key but the SDK wants a string


@dataclass(frozen=True, slots=True)
class RawReply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish: str = ""
    parsed: BaseModel | None = None  # set when the SDK's parse API validated the reply


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(provider: str, *, base_url: str, settings: LLMSettings) -> Any:
    """A cached SDK client for this endpoint, with explicit timeouts and retries."""
    api_key = settings.api_key(provider) or (NO_KEY if provider == "compat" else "")
    ident = (provider, base_url, api_key, settings.timeout_s, settings.connect_timeout_s, settings.max_retries)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(ident)
        if client is None:
            client = _build_client(provider, base_url=base_url, api_key=api_key, settings=settings)
            _CLIENTS[ident] = client
        return client


def _build_client(provider: str, *, base_url: str, api_key: str, settings: LLMSettings) -> Any:
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=anthropic.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            max_retries=settings.max_retries,
        )
    import openai

    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=openai.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
        max_retries=settings.max_retries,
    )


def sdk_errors(provider: str) -> tuple[type[BaseException], ...]:
    """The SDK's base exception classes (for translation into ProviderError)."""
    if provider == "anthropic":
        import anthropic

        return (anthropic.AnthropicError,)
    import openai

    return (openai.OpenAIError,)


def call(
    provider: str,
    client: Any,
    *,
    model: str,
    messages: list[dict[str, str]],
    schema_model: type[BaseModel] | None,
    mode: str,
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
) -> RawReply:
    """One request. ``mode``: "schema" (structured output), "json" (JSON mode) or "text"."""
    if provider == "anthropic":
        return _anthropic(client, model=model, messages=messages, schema_model=schema_model, mode=mode,
                          temperature=temperature, max_tokens=max_tokens)
    return _chat_completions(provider, client, model=model, messages=messages, schema_model=schema_model,
                             mode=mode, temperature=temperature, max_tokens=max_tokens, seed=seed)


def _chat_completions(provider: str, client: Any, *, model: str, messages: list[dict[str, str]],
                      schema_model: type[BaseModel] | None, mode: str, temperature: float | None,
                      max_tokens: int | None, seed: int | None) -> RawReply:
    kw: dict[str, Any] = {"model": model, "messages": messages}
    if temperature is not None:
        kw["temperature"] = temperature
    if max_tokens:
        # OpenAI's current name; local servers (llama.cpp, older vLLM/Ollama) know max_tokens
        kw["max_completion_tokens" if provider == "openai" else "max_tokens"] = max_tokens
    if seed is not None:
        kw["seed"] = seed
    headers = {}
    if mode == "schema" and schema_model is not None:
        # what chat.completions.parse(response_format=Model) sends; the reply is validated by chat
        kw = {"model": model, "stream": False, **kw, "response_format": chat_response_format(schema_model)}
        headers = {"X-Stainless-Helper-Method": "chat.completions.parse"}
    elif mode == "json":
        kw["response_format"] = {"type": "json_object"}
    import httpx2

    # The SDK's documented raw POST (its retries, timeouts, auth and error classes) with a body of
    # plain JSON: create()/parse() would walk every message through the SDK's TypedDict transform
    # and rebuild the strict schema, ~3-6 ms of CPU per call that holds the GIL (see
    # benchmarks/llm_batch.py); the bytes on the wire are the same.
    response = client.post("/chat/completions", body=kw, cast_to=httpx2.Response, options={"headers": headers})
    return _from_chat_body(response.json(), None)


@lru_cache(maxsize=None)
def chat_response_format(schema_model: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` the OpenAI SDK's parse API sends for ``schema_model`` (a strict
    json_schema), built once per model class — a pure function of the class."""
    from openai.lib._parsing._completions import type_to_response_format_param

    return type_to_response_format_param(schema_model)  # type: ignore[return-value]


@lru_cache(maxsize=None)
def anthropic_schema(schema_model: type[BaseModel]) -> dict[str, Any]:
    """The ``output_config.format`` schema ``messages.parse(output_format=Model)`` sends, once per class."""
    import anthropic

    return anthropic.transform_schema(TypeAdapter(schema_model).json_schema())


def _from_chat_body(body: Any, parsed: BaseModel | None) -> RawReply:
    choice = (body.get("choices") or [{}])[0] if isinstance(body, dict) else {}
    msg = choice.get("message") or {}
    text = msg.get("content")
    if not text and msg.get("refusal"):
        text = f"(refused) {msg['refusal']}"
    usage = (body.get("usage") or {}) if isinstance(body, dict) else {}
    return RawReply(
        text=text or "",
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        finish=str(choice.get("finish_reason") or ""),
        parsed=parsed,
    )


def _anthropic(client: Any, *, model: str, messages: list[dict[str, str]], schema_model: type[BaseModel] | None,
               mode: str, temperature: float | None, max_tokens: int | None) -> RawReply:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
    kw: dict[str, Any] = {"model": model, "max_tokens": max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS, "messages": turns}
    if system:
        kw["system"] = system
    if temperature is not None:
        kw["extra_body"] = {"temperature": temperature}  # not a create() keyword in SDK 2.x (see above)
    if mode == "schema" and schema_model is not None:
        kw["output_config"] = {"format": {"type": "json_schema", "schema": anthropic_schema(schema_model)}}
    msg = client.messages.create(**kw)
    text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
    return RawReply(
        text=text,
        input_tokens=int(getattr(msg.usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(msg.usage, "output_tokens", 0) or 0),
        finish=str(msg.stop_reason or ""),
    )


class Gate:
    """At most ``limit`` calls in flight per endpoint, and optionally at most ``rpm`` per minute."""

    def __init__(self, limit: int, rpm: float = 0.0):
        self._sem = threading.BoundedSemaphore(limit)
        self._interval = 60.0 / rpm if rpm > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def __enter__(self) -> "Gate":
        self._sem.acquire()
        if self._interval:
            with self._lock:
                now = time.monotonic()
                wait = max(0.0, self._next - now)
                self._next = max(now, self._next) + self._interval
            if wait:
                time.sleep(wait)
        return self

    def __exit__(self, *exc: object) -> None:
        self._sem.release()


_GATES: dict[tuple[str, str, int, float], Gate] = {}


def gate_for(provider: str, base_url: str, settings: LLMSettings) -> Gate:
    ident = (provider, base_url, settings.max_concurrency, settings.requests_per_minute)
    with _CLIENTS_LOCK:
        g = _GATES.get(ident)
        if g is None:
            g = _GATES[ident] = Gate(settings.max_concurrency, settings.requests_per_minute)
        return g
