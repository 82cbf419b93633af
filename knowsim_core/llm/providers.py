"""The only code that uses the ``openai`` and ``anthropic`` SDKs (imported on first use by :mod:`.sdks`).

Three providers, two wire formats: ``openai`` and ``compat`` speak Chat Completions, ``anthropic``
speaks Messages. Every request goes through the SDKs' documented streaming-response API —
``client.chat.completions.with_streaming_response.create(...)`` and
``client.messages.with_streaming_response.create(...)`` — so the body is read here, chunk by
chunk, and a request is *bounded*:

* **size**: a body larger than ``KNOWSIM_LLM_MAX_REPLY_BYTES`` (declared or as it arrives) is
  refused before it is held in memory (a 50 MB reply read whole takes 330 MB and never ends); an
  error answer (4xx/5xx), which the SDK reads whole before raising, is cut at
  :data:`ERROR_BODY_CAP` by the client's transport (:func:`_transport`) — its message is in
  the first lines;
* **time**: ``KNOWSIM_LLM_TIMEOUT`` is the deadline of the whole request (connection, status
  line, headers and body), enforced at every socket operation in the calling thread: the client's
  network backend (:class:`_DeadlineBackend`) gives each connect, read, write and TLS handshake
  ``min(its own timeout, the time left)``, so a server trickling a byte a second is cut off at the
  deadline, not kept alive by each read beating the per-read timeout. The connection it cut is
  dropped by the HTTP stack and no thread or socket is left behind (a request thread abandoned at
  the deadline would keep reading a trickled head with its pooled connection: 27 -> 119 threads,
  100 sockets in 35 s, then a full pool); a kept-alive connection is reused as before. Ctrl-C
  reaches a caller waiting on a socket at once (the waits are the interpreter's interruptible ones);
* **shape**: a 200 whose body is not JSON, is cut short or has no reply in it is a
  :class:`BadReply` — a provider error retried like a 5xx, never a ``JSONDecodeError``.

Structured output sends the documented wire formats: Chat Completions' strict ``json_schema``
``response_format`` (built by :func:`chat_response_format` from the pydantic schema — the same
bytes ``chat.completions.parse`` sends for our models, checked by a test) and Messages'
``output_config.format`` (the SDK's public ``transform_schema``). JSON mode
(``response_format={"type": "json_object"}``; for Anthropic an instruction only) is the fallback
for servers without schema support. Clients are cached per endpoint+key+timeouts+proxy and built
with ``max_retries=0``: retries are :mod:`knowsim_core.llm.chat`'s, so it can count them honestly
and retry an unusable body too. The environment's HTTP proxy (:func:`~knowsim_core.llm.proxy.proxy_for`)
is the transport's own: an HTTP client given a transport reads no proxy variables.

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

from knowsim_core.errors import ConfigError
from knowsim_core.llm import sdks
from knowsim_core.llm.proxy import MISREAD, Proxy, credentials_misread, masked
from knowsim_core.llm.settings import LLMSettings
from knowsim_core.text.redact import redact_url

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; Chat Completions does not
ERROR_BODY_CAP = 64 * 1024  # bytes of an error answer's body the SDK may read (the rest is dropped)
MAX_TOKEN_COUNT = 10**9  # tokens one request can report; far above any model's context window
NO_KEY = "no-key"  # local compatible servers ignore the key but the SDK wants a string


class BadReply(Exception):
    """A 200 answer that cannot be used: not JSON, cut short, too large, too slow, or no reply in it.

    ``retry``: whether asking again may help (a broken or slow body may; a reply over the size cap
    will only be as large again). ``billed``: the server answered 200 — the call is billed, but its
    token counts cannot be read (False only when no status line came before the deadline)."""

    def __init__(self, message: str, *, retry: bool = True, reason: str = "server", billed: bool = True):
        super().__init__(message)
        self.retry = retry
        self.reason = reason
        self.billed = billed


@dataclass(frozen=True, slots=True)
class RawReply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish: str = ""
    parsed: BaseModel | None = None  # set when the SDK's parse API validated the reply
    unknown_calls: int = 0  # unusable 200s billed before this reply (their tokens cannot be read)


def check_base_url(url: str, what: str) -> str:
    """``url`` when the SDKs' HTTP stack can send to it: http(s), a host, a valid port.

    Checked when the model is set up, so ``compat/m@http://[::1`` is one line then, not an
    ``InvalidURL`` traceback at the first request (or a raw exception stored by a batch).

    Raises:
        ConfigError: naming ``what`` (the id or setting that gave the URL) and the fix.
    """
    if credentials_misread(url):  # its "host" is a piece of the password: masked to the last @, never asked
        raise ConfigError(f"{what.replace(redact_url(url), masked(url))}: {masked(url)!r} is not a usable base URL "
                          f"({MISREAD}); write them percent-encoded (%40 %2F %23 %3F)")
    try:
        parsed = sdks.httpx2.URL(url)
        problem = "" if parsed.scheme in ("http", "https") and parsed.host else "it needs http:// or https:// and a host"
    except (sdks.httpx2.InvalidURL, ValueError, TypeError) as exc:
        problem = str(exc)
    if problem:
        raise ConfigError(f"{what}: {redact_url(url)!r} is not a usable base URL ({problem}); "
                          "write e.g. http://localhost:11434/v1")
    return url


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(provider: str, *, base_url: str, settings: LLMSettings, proxy: Proxy | None) -> Any:
    """A cached SDK client for this endpoint, with explicit timeouts and retries, connecting through
    ``proxy`` (:func:`~knowsim_core.llm.proxy.proxy_for`; None: directly). The proxy is part of the
    cache key, so a changed environment gets a client that follows it; it has no default, so a new
    caller cannot ignore the environment's proxy by leaving it out (the clients did, behind one)."""
    api_key = settings.api_key(provider) or (NO_KEY if provider == "compat" else "")
    ident = (provider, base_url, api_key, settings.timeout_s, settings.connect_timeout_s, proxy)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(ident)
        if client is None:
            client = _build_client(provider, base_url=base_url, api_key=api_key, settings=settings, proxy=proxy)
            _CLIENTS[ident] = client
        return client


class _Deadline(threading.local):
    """The deadline of the request this thread is making (``time.monotonic()`` seconds), set by
    :func:`call` for the length of one request; ``expired``: an operation was cut short by it."""

    at: float | None = None
    expired: bool = False


_DEADLINE = _Deadline()
POOL_MAX_CONNECTIONS = 100  # httpx2.HTTPTransport's defaults, which the clients had before
POOL_MAX_KEEPALIVE = 20
POOL_KEEPALIVE_EXPIRY_S = 5.0
WRITE_SLICE = 64 * 1024  # a request body is written in slices, each under the time then left


def _budget(timeout: float | None, timeout_error: type[Exception]) -> tuple[float | None, bool]:
    """(the timeout of one socket operation, whether the deadline is what bounds it): ``timeout``
    (the HTTP stack's per-operation one) or the time left until this thread's request deadline,
    whichever is shorter. Raises ``timeout_error`` at once when the deadline has passed."""
    at = _DEADLINE.at
    if at is None:  # no request deadline on this thread (a client used outside call())
        return timeout, False
    left = at - time.monotonic()
    if left <= 0:
        _DEADLINE.expired = True
        raise timeout_error("the request's deadline has passed")
    if timeout is None or left < timeout:
        return left, True
    return timeout, False


def _network_backend() -> Any:
    """An ``httpcore2`` network backend (the SDKs' HTTP stack) whose connections and streams keep
    to the deadline of the request being made on the calling thread (see :func:`_budget`)."""
    def bounded(op: Any, timeout: float | None, timeout_error: type[Exception], *args: Any) -> Any:
        budget, by_deadline = _budget(timeout, timeout_error)
        try:
            return op(*args, budget)
        except sdks.httpcore2.TimeoutException:
            if by_deadline:
                _DEADLINE.expired = True
            raise

    class _DeadlineStream(sdks.httpcore2.NetworkStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return bounded(self._inner.read, timeout, sdks.httpcore2.ReadTimeout, max_bytes)

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            view = memoryview(buffer)
            for i in range(0, max(len(view), 1), WRITE_SLICE):  # a long write cannot outlast the deadline
                bounded(self._inner.write, timeout, sdks.httpcore2.WriteTimeout, bytes(view[i:i + WRITE_SLICE]))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return _DeadlineStream(bounded(self._inner.start_tls, timeout, sdks.httpcore2.ConnectTimeout,
                                           ssl_context, server_hostname))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class _DeadlineBackend(sdks.httpcore2.NetworkBackend):
        def __init__(self) -> None:
            self._inner = sdks.httpcore2.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Any:
            budget, by_deadline = _budget(timeout, sdks.httpcore2.ConnectTimeout)
            try:
                return _DeadlineStream(self._inner.connect_tcp(host, port, budget, local_address, socket_options))
            except sdks.httpcore2.TimeoutException:
                if by_deadline:
                    _DEADLINE.expired = True
                raise

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            budget, by_deadline = _budget(timeout, sdks.httpcore2.ConnectTimeout)
            try:
                return _DeadlineStream(self._inner.connect_unix_socket(path, budget, socket_options))
            except sdks.httpcore2.TimeoutException:
                if by_deadline:
                    _DEADLINE.expired = True
                raise

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return _DeadlineBackend()


def _as_httpx_error(exc: Exception) -> Exception | None:
    """The ``httpx2`` exception of the same name as ``httpcore2``'s ``exc`` (its most specific class
    that has one: ReadTimeout -> ReadTimeout, a subclass without a twin -> its parent's), or None.
    The SDKs turn httpx2's TimeoutException into their timeout error and its other transport errors
    into connection errors; :func:`~knowsim_core.llm.errors.broken_answer` reads the class names."""
    for cls in type(exc).__mro__:
        if not cls.__module__.startswith("httpcore2"):
            continue
        twin = getattr(sdks.httpx2, cls.__name__, None)
        if isinstance(twin, type) and issubclass(twin, sdks.httpx2.TransportError):
            return twin(str(exc))
    return None


def _pool(proxy: Proxy | None) -> Any:
    """The ``httpcore2`` connection pool under :func:`_transport`: a plain one, or with ``proxy`` an
    ``HTTPProxy`` (a pool that forwards http requests to the proxy and tunnels https ones through a
    CONNECT) with the same TLS checks, limits and network backend — so the request's deadline
    bounds the connection to the proxy, the CONNECT and the TLS handshake through it too."""
    common: dict[str, Any] = dict(
        ssl_context=sdks.httpx2.create_ssl_context(), network_backend=_network_backend(),
        max_connections=POOL_MAX_CONNECTIONS, max_keepalive_connections=POOL_MAX_KEEPALIVE,
        keepalive_expiry=POOL_KEEPALIVE_EXPIRY_S)
    if proxy is None:
        return sdks.httpcore2.ConnectionPool(**common)
    auth = None if proxy.auth is None else (proxy.auth[0].encode(), proxy.auth[1].encode())  # UTF-8, not only ASCII
    # TLS to an https:// proxy is checked like TLS to the provider, in a context of its own (the tunnel
    # sets the provider's ALPN protocols on the other)
    proxy_tls = sdks.httpx2.create_ssl_context() if proxy.url.startswith("https://") else None
    return sdks.httpcore2.HTTPProxy(proxy_url=proxy.url, proxy_auth=auth, proxy_ssl_context=proxy_tls, **common)


def _transport(proxy: Proxy | None = None) -> Any:
    """The clients' HTTP transport: an ``httpcore2`` connection pool (:func:`_pool`: through
    ``proxy`` when there is one) over :func:`_network_backend` (the whole-request deadline), whose
    4xx/5xx bodies end after :data:`ERROR_BODY_CAP` bytes. A success body is left whole:
    :func:`_read_json` reads it under the reply cap, chunk by chunk; an error body the SDK reads
    itself, whole, before raising. Given a transport, the HTTP client reads no proxy variables:
    ``proxy`` is the only way one is used."""
    class _Mapped:
        """Raise httpcore2's errors as httpx2's (what the SDKs catch), chained to the original."""

        def __enter__(self) -> None:
            return None

        def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
            if isinstance(exc, Exception):
                twin = _as_httpx_error(exc)
                if twin is not None:
                    raise twin from exc
            return False

    class _Body(sdks.httpx2.SyncByteStream):
        def __init__(self, inner: Any, cap: int | None):
            self._inner, self._cap = inner, cap

        def __iter__(self):
            left = self._cap
            with _Mapped():
                for chunk in self._inner:
                    if left is not None and len(chunk) >= left:
                        yield chunk[:left]
                        return
                    if left is not None:
                        left -= len(chunk)
                    yield chunk

        def close(self) -> None:
            with _Mapped():
                self._inner.close()  # a body not read to the end: the connection is dropped

    class _DeadlineTransport(sdks.httpx2.BaseTransport):
        def __init__(self) -> None:
            self._pool = _pool(proxy)

        def handle_request(self, request: Any) -> Any:
            extensions = dict(request.extensions)
            timeouts = dict(extensions.get("timeout") or {})
            url = request.url
            by_deadline = False
            try:
                with _Mapped():
                    pool, by_deadline = _budget(timeouts.get("pool"), sdks.httpcore2.PoolTimeout)
                    extensions["timeout"] = {**timeouts, "pool": pool}  # waiting for a free connection counts too
                    core = sdks.httpcore2.Request(
                        method=request.method,
                        url=sdks.httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port,
                                          target=url.raw_path),
                        headers=request.headers.raw, content=request.stream, extensions=extensions)
                    response = self._pool.handle_request(core)
            except sdks.httpx2.PoolTimeout:
                if by_deadline:
                    _DEADLINE.expired = True
                raise
            return sdks.httpx2.Response(status_code=response.status, headers=response.headers,
                                   stream=_Body(response.stream, ERROR_BODY_CAP if response.status >= 400 else None),
                                   extensions=response.extensions)

        def close(self) -> None:
            self._pool.close()

    return _DeadlineTransport()


def _build_client(provider: str, *, base_url: str, api_key: str, settings: LLMSettings, proxy: Proxy | None) -> Any:
    if provider == "anthropic":
        return sdks.anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=sdks.anthropic.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            max_retries=0,  # retried by chat, which counts them and retries unusable bodies too
            http_client=sdks.anthropic.DefaultHttpxClient(transport=_transport(proxy)),
        )
    return sdks.openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=sdks.openai.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
        max_retries=0,  # retried by chat, which counts them and retries unusable bodies too
        http_client=sdks.openai.DefaultHttpxClient(transport=_transport(proxy)),
    )


def sdk_errors(provider: str) -> tuple[type[BaseException], ...]:
    """The SDK's base exception classes (for translation into ProviderError)."""
    if provider == "anthropic":
        return (sdks.anthropic.AnthropicError,)
    return (sdks.openai.OpenAIError,)


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
    _DEADLINE.at, _DEADLINE.expired = deadline, False
    try:
        return _request(provider, client, model=model, messages=messages, schema_model=schema_model, mode=mode,
                        temperature=temperature, max_tokens=max_tokens, seed=seed, max_bytes=max_bytes,
                        deadline=deadline, deadline_s=deadline_s)
    except BadReply:
        raise
    except Exception:
        # a socket operation was cut at the deadline: the SDK calls it a timeout (or, while it read an
        # error body, a connection error); what happened is one thing, the deadline
        if _DEADLINE.expired:  # no status line came: nothing says the call was billed
            raise BadReply(f"no answer within {deadline_s:g} s", reason="timeout", billed=False) from None
        raise
    finally:
        _DEADLINE.at, _DEADLINE.expired = None, False


def _request(provider: str, client: Any, *, model: str, messages: list[dict[str, str]],
             schema_model: type[BaseModel] | None, mode: str, temperature: float | None, max_tokens: int | None,
             seed: int | None, max_bytes: int, deadline: float, deadline_s: float) -> RawReply:
    if provider == "anthropic":
        kw = _anthropic_request(model=model, messages=messages, schema_model=schema_model, mode=mode,
                                temperature=temperature, max_tokens=max_tokens)
        with client.messages.with_streaming_response.create(**kw) as response:
            body = _read_json(response, max_bytes, deadline, deadline_s)
        return _from_messages_body(body)
    kw = _chat_request(provider, model=model, messages=messages, schema_model=schema_model, mode=mode,
                       temperature=temperature, max_tokens=max_tokens, seed=seed)
    with client.chat.completions.with_streaming_response.create(**kw) as response:
        body = _read_json(response, max_bytes, deadline, deadline_s)
    return _from_chat_body(body)


def _read_json(response: Any, max_bytes: int, deadline: float, deadline_s: float) -> dict[str, Any]:
    """The response body as a JSON object, read chunk by chunk under the size cap and the deadline."""
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
            if time.monotonic() > deadline:
                raise BadReply(f"no answer within {deadline_s:g} s (the reply was still arriving: "
                               f"{len(buf):,} bytes so far)", reason="timeout")
    except sdks.httpx2.HTTPError as exc:  # the connection broke or stalled while the body was read
        if _DEADLINE.expired:  # a read cut at the deadline
            raise BadReply(f"no answer within {deadline_s:g} s (the reply was still arriving: "
                           f"{len(buf):,} bytes so far)", reason="timeout") from None
        what = "stalled" if isinstance(exc, sdks.httpx2.TimeoutException) else "was cut short"
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
    return sdks.anthropic.transform_schema(TypeAdapter(schema_model).json_schema())


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
    """A usage token count: a whole number from 0 to :data:`MAX_TOKEN_COUNT` (``12.0`` is 12); a missing
    one (None: the server reports no usage) is 0.

    Anything else is not a count — negative (-100), text ("abc"), a fraction, nan, or above any
    request's (1e30; 2**63 would overflow the database's integers) — and read as 0 tokens it would
    make a billed call free, one ``--max-cost`` never sees. So the reply is unusable: a
    :class:`BadReply`, not retried, counted as a billed call with tokens unknown.
    """
    if value is None:
        return 0
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(number, float) and number.is_integer() and abs(number) <= MAX_TOKEN_COUNT:
        number = int(number)
    if isinstance(number, int) and 0 <= number <= MAX_TOKEN_COUNT:
        return number
    if isinstance(number, int) and number > MAX_TOKEN_COUNT:
        raise BadReply(f"the reply's usage counts {number:,} tokens, more than any request can use "
                       f"(at most {MAX_TOKEN_COUNT:,}): a broken server", retry=False)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    raise BadReply(f"the reply's usage gives {shown} as a token count, which is not a count of tokens "
                   f"(a whole number from 0 to {MAX_TOKEN_COUNT:,}): a broken server", retry=False)


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
