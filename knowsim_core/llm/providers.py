"""The only code that touches the ``openai`` and ``anthropic`` SDKs (imported lazily, here).

Three providers, two wire formats: ``openai`` and ``compat`` speak Chat Completions, ``anthropic``
speaks Messages. Every request goes through the SDKs' documented streaming-response API —
``client.chat.completions.with_streaming_response.create(...)`` and
``client.messages.with_streaming_response.create(...)`` — so the body is read here, chunk by
chunk, and a request is *bounded*:

* **size**: a body larger than ``KNOWSIM_LLM_MAX_REPLY_BYTES`` (declared or as it arrives) is
  refused before it is held in memory (the issue's 50 MB reply took 330 MB and never ended); an
  error answer (4xx/5xx), which the SDK reads whole before raising, is cut at
  :data:`ERROR_BODY_CAP` by the client's transport (:class:`_ErrorBodyCap`) — its message is in
  the first lines;
* **time**: ``KNOWSIM_LLM_TIMEOUT`` is the deadline of the whole request (status line, headers
  and body): the request runs in a thread the caller waits for with that deadline — a server
  trickling a byte a second is cut off at the deadline, not kept alive by each read beating the
  per-read timeout — and Ctrl-C reaches the waiting caller at once;
* **shape**: a 200 whose body is not JSON, is cut short or has no reply in it is a
  :class:`BadReply` — a provider error retried like a 5xx, never a ``JSONDecodeError``.

Structured output sends the documented wire formats: Chat Completions' strict ``json_schema``
``response_format`` (built by :func:`chat_response_format` from the pydantic schema — the same
bytes ``chat.completions.parse`` sends for our models, checked by a test) and Messages'
``output_config.format`` (the SDK's public ``transform_schema``). JSON mode
(``response_format={"type": "json_object"}``; for Anthropic an instruction only) is the fallback
for servers without schema support. Clients are cached per endpoint+key+timeouts and built with
``max_retries=0``: retries are :mod:`knowsim_core.llm.chat`'s, so it can count them honestly
and retry an unusable body too.

Sampling: ``temperature`` goes to both wire formats, so the spec's settings (§9: assistant 0.0,
user 0.7, extractor 0.0 with retries at 0.4) hold on every provider. The Messages API takes it
(0–1) for the models that still support it, but the anthropic SDK 2.x dropped the keyword from
``messages.create``, so it travels in ``extra_body``; models that refuse it (newer Claude models
answer "`temperature` is deprecated") are retried without it by ``chat``. ``seed`` exists only in
Chat Completions and is never sent to Anthropic.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from knowsim_core.llm.settings import LLMSettings

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; Chat Completions does not
ERROR_BODY_CAP = 64 * 1024  # bytes of an error answer's body the SDK may read (the rest is dropped)
MAX_TOKEN_COUNT = 10**9  # tokens one request can report; far above any model's context window
NO_KEY = "no-key"  # local compatible servers ignore the key but the SDK wants a string


class BadReply(Exception):
    """A 200 answer that cannot be used: not JSON, cut short, too large, too slow, or no reply in it.

    ``retry``: whether asking again may help (a broken or slow body may; a reply over the size cap
    will only be as large again)."""

    def __init__(self, message: str, *, retry: bool = True, reason: str = "server"):
        super().__init__(message)
        self.retry = retry
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RawReply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish: str = ""
    parsed: BaseModel | None = None  # set when the SDK's parse API validated the reply


def check_base_url(url: str, what: str) -> str:
    """``url`` when the SDKs' HTTP stack can send to it: http(s), a host, a valid port.

    ``compat/m@http://[::1`` used to end in an ``InvalidURL`` traceback at the first request (and a
    batch stored the raw exception); checked when the model is set up, it is one line instead.

    Raises:
        ConfigError: naming ``what`` (the id or setting that gave the URL) and the fix.
    """
    import httpx2

    from knowsim_core.errors import ConfigError
    from knowsim_core.text.redact import redact_url

    try:
        parsed = httpx2.URL(url)
        problem = "" if parsed.scheme in ("http", "https") and parsed.host else "it needs http:// or https:// and a host"
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        problem = str(exc)
    if problem:
        raise ConfigError(f"{what}: {redact_url(url)!r} is not a usable base URL ({problem}); "
                          "write e.g. http://localhost:11434/v1")
    return url


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(provider: str, *, base_url: str, settings: LLMSettings) -> Any:
    """A cached SDK client for this endpoint, with explicit timeouts and retries."""
    api_key = settings.api_key(provider) or (NO_KEY if provider == "compat" else "")
    ident = (provider, base_url, api_key, settings.timeout_s, settings.connect_timeout_s)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(ident)
        if client is None:
            client = _build_client(provider, base_url=base_url, api_key=api_key, settings=settings)
            _CLIENTS[ident] = client
        return client


def _error_body_cap() -> Any:
    """An HTTP transport (the SDKs' own stack, httpx2) whose 4xx/5xx bodies end after
    :data:`ERROR_BODY_CAP` bytes. A success body is left whole: :func:`_read_json` reads it under
    the reply cap, chunk by chunk; an error body the SDK reads itself, whole, before raising."""
    import httpx2

    class _Capped(httpx2.SyncByteStream):
        def __init__(self, inner: Any, cap: int):
            self._inner, self._cap = inner, cap

        def __iter__(self):
            left = self._cap
            for chunk in self._inner:
                if len(chunk) >= left:
                    yield chunk[:left]
                    return
                left -= len(chunk)
                yield chunk

        def close(self) -> None:
            self._inner.close()  # the connection is dropped, never read to the end

    class _ErrorBodyCap(httpx2.BaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            response = self._inner.handle_request(request)
            if response.status_code >= 400:
                response.stream = _Capped(response.stream, ERROR_BODY_CAP)
            return response

        def close(self) -> None:
            self._inner.close()

    return _ErrorBodyCap()


def _build_client(provider: str, *, base_url: str, api_key: str, settings: LLMSettings) -> Any:
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=anthropic.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            max_retries=0,  # retried by chat, which counts them and retries unusable bodies too
            http_client=anthropic.DefaultHttpxClient(transport=_error_body_cap()),
        )
    import openai

    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=openai.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
        max_retries=0,  # retried by chat, which counts them and retries unusable bodies too
        http_client=openai.DefaultHttpxClient(transport=_error_body_cap()),
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
    max_bytes: int,
    deadline_s: float,
) -> RawReply:
    """One request, bounded in size (``max_bytes``) and time (``deadline_s`` for all of it).
    ``mode``: "schema" (structured output), "json_schema_object" (JSON mode with a schema: the
    grammar-constrained dialect of llama-cpp-python), "json" (JSON mode) or "text".

    Raises:
        BadReply: a 200 whose body cannot be used (see the module docstring).
        The SDK's errors for everything else (status errors, connection errors, timeouts).
    """
    deadline = time.monotonic() + deadline_s
    abandoned = threading.Event()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def request() -> None:
        try:
            outcome["reply"] = _request(provider, client, model=model, messages=messages, schema_model=schema_model,
                                        mode=mode, temperature=temperature, max_tokens=max_tokens, seed=seed,
                                        max_bytes=max_bytes, deadline=deadline, deadline_s=deadline_s,
                                        abandoned=abandoned)
        except BaseException as exc:  # noqa: BLE001 — handed to the caller's thread below
            outcome["error"] = exc
        finally:
            done.set()

    # The request runs in its own thread so that the deadline holds for all of it — a server
    # trickling even its status line and headers keeps every read inside the per-read timeout —
    # and so that Ctrl-C reaches a caller waiting here at once. On the deadline the thread is
    # abandoned: it stops reading at its next chunk (or its per-read timeout) and holds nothing
    # the caller still needs.
    threading.Thread(target=request, daemon=True, name="llm-request").start()
    if not done.wait(deadline_s):
        abandoned.set()
        raise BadReply(f"no answer within {deadline_s:g} s", reason="timeout")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["reply"]


def _request(provider: str, client: Any, *, model: str, messages: list[dict[str, str]],
             schema_model: type[BaseModel] | None, mode: str, temperature: float | None, max_tokens: int | None,
             seed: int | None, max_bytes: int, deadline: float, deadline_s: float, abandoned: threading.Event,
             ) -> RawReply:
    if provider == "anthropic":
        kw = _anthropic_request(model=model, messages=messages, schema_model=schema_model, mode=mode,
                                temperature=temperature, max_tokens=max_tokens)
        with client.messages.with_streaming_response.create(**kw) as response:
            body = _read_json(response, max_bytes, deadline, deadline_s, abandoned)
        return _from_messages_body(body)
    kw = _chat_request(provider, model=model, messages=messages, schema_model=schema_model, mode=mode,
                       temperature=temperature, max_tokens=max_tokens, seed=seed)
    with client.chat.completions.with_streaming_response.create(**kw) as response:
        body = _read_json(response, max_bytes, deadline, deadline_s, abandoned)
    return _from_chat_body(body)


def _read_json(response: Any, max_bytes: int, deadline: float, deadline_s: float,
               abandoned: threading.Event) -> dict[str, Any]:
    """The response body as a JSON object, read chunk by chunk under the size cap and the deadline."""
    import httpx2

    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise BadReply(f"the reply is {int(declared):,} bytes, over the {max_bytes:,}-byte cap "
                       "(KNOWSIM_LLM_MAX_REPLY_BYTES)", retry=False)
    buf = bytearray()
    try:
        for chunk in response.iter_bytes():
            buf += chunk
            if len(buf) > max_bytes:
                raise BadReply(f"the reply passed the {max_bytes:,}-byte cap (KNOWSIM_LLM_MAX_REPLY_BYTES)",
                               retry=False)
            if time.monotonic() > deadline or abandoned.is_set():
                raise BadReply(f"no answer within {deadline_s:g} s (the reply was still arriving: "
                               f"{len(buf):,} bytes so far)", reason="timeout")
    except httpx2.HTTPError as exc:  # the connection broke or stalled while the body was read
        what = "stalled" if isinstance(exc, httpx2.TimeoutException) else "was cut short"
        raise BadReply(f"the reply {what} after {len(buf):,} bytes ({type(exc).__name__})",
                       reason="timeout" if what == "stalled" else "server") from None
    try:
        body = json.loads(bytes(buf))
    except (UnicodeDecodeError, ValueError):
        start = bytes(buf[:60]).decode("utf-8", "replace")
        raise BadReply(f"the reply is not JSON ({len(buf):,} bytes starting {start!r})") from None
    except RecursionError:  # a body nested deeper than the parser's recursion limit
        raise BadReply(f"the reply's JSON ({len(buf):,} bytes) is nested too deeply to read") from None
    if not isinstance(body, dict):
        raise BadReply(f"the reply is JSON but not an object ({type(body).__name__})")
    return body


def _chat_request(provider: str, *, model: str, messages: list[dict[str, str]],
                  schema_model: type[BaseModel] | None, mode: str, temperature: float | None,
                  max_tokens: int | None, seed: int | None) -> dict[str, Any]:
    kw: dict[str, Any] = {"model": model, "messages": messages}
    if temperature is not None:
        kw["temperature"] = temperature
    if max_tokens:
        # OpenAI's current name; local servers (llama.cpp, older vLLM/Ollama) know max_tokens
        kw["max_completion_tokens" if provider == "openai" else "max_tokens"] = max_tokens
    if seed is not None:
        kw["seed"] = seed
    if mode == "schema" and schema_model is not None:
        kw["response_format"] = chat_response_format(schema_model)
    elif mode == "json":
        kw["response_format"] = {"type": "json_object"}
    elif mode == "json_schema_object" and schema_model is not None:
        # llama-cpp-python's (and Anyscale's) dialect: JSON mode constrained by a schema (a grammar)
        schema = chat_response_format(schema_model)["json_schema"]["schema"]
        kw["response_format"] = {"type": "json_object", "schema": schema}
    return kw


@lru_cache(maxsize=None)
def chat_response_format(schema_model: type[BaseModel]) -> dict[str, Any]:
    """The strict ``json_schema`` ``response_format`` of Chat Completions' Structured Outputs for
    ``schema_model``, once per class: its JSON schema with every object closed
    (``additionalProperties: false``) and every property required, as strict mode demands; a
    single-item ``allOf`` is inlined and a ``null`` default dropped (strict mode rejects both).
    For the Studio's models this is byte for byte what ``chat.completions.parse`` sends."""
    schema = copy.deepcopy(schema_model.model_json_schema())

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
                node.update(node.pop("allOf")[0])
            if "default" in node and node["default"] is None:
                del node["default"]
            for value in list(node.values()):
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return {"type": "json_schema", "json_schema": {"schema": schema, "name": schema_model.__name__, "strict": True}}


@lru_cache(maxsize=None)
def anthropic_schema(schema_model: type[BaseModel]) -> dict[str, Any]:
    """The ``output_config.format`` schema ``messages.parse(output_format=Model)`` sends, once per class."""
    import anthropic

    return anthropic.transform_schema(TypeAdapter(schema_model).json_schema())


def _from_chat_body(body: dict[str, Any]) -> RawReply:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadReply("the reply has no choices")
    choice = choices[0]
    msg = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    text = msg.get("content")
    if not text and msg.get("refusal"):
        text = f"(refused) {msg['refusal']}"
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return RawReply(
        text=text if isinstance(text, str) else "",
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        finish=str(choice.get("finish_reason") or ""),
    )


def _count(value: Any) -> int:
    """A usage token count: a missing or negative one is 0; one above :data:`MAX_TOKEN_COUNT` is not a
    real count (2**63 overflowed the database's integers and left the run ``running``): the reply is
    unusable, as a provider error, so nothing absurd is billed or stored."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    if value > MAX_TOKEN_COUNT:
        raise BadReply(f"the reply's usage counts {value:,} tokens, more than any request can use "
                       f"(at most {MAX_TOKEN_COUNT:,}): a broken server", retry=False)
    return value


def _anthropic_request(*, model: str, messages: list[dict[str, str]], schema_model: type[BaseModel] | None,
                       mode: str, temperature: float | None, max_tokens: int | None) -> dict[str, Any]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
    kw: dict[str, Any] = {"model": model, "max_tokens": max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS, "messages": turns}
    if system:
        kw["system"] = system
    if temperature is not None:
        kw["extra_body"] = {"temperature": temperature}  # not a create() keyword in SDK 2.x (see above)
    if mode == "schema" and schema_model is not None:
        kw["output_config"] = {"format": {"type": "json_schema", "schema": anthropic_schema(schema_model)}}
    return kw


def _from_messages_body(body: dict[str, Any]) -> RawReply:
    content = body.get("content")
    if not isinstance(content, list):
        raise BadReply("the reply has no content")
    text = "".join(b["text"] for b in content
                   if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return RawReply(
        text=text,
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        finish=str(body.get("stop_reason") or ""),
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
