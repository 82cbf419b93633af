"""Turn SDK exceptions into one clear :class:`ProviderError` line — never echoing a key.

Providers sometimes quote the key they rejected ("Incorrect API key provided: sk-…"); every text
that leaves this package goes through :func:`~knowsim_core.text.redact.redact` (keys and URL
credentials), and translated errors are raised ``from None`` so the SDK exception (with its raw body) is not chained into tracebacks or logs.
"""

from __future__ import annotations

import time
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from knowsim_core.errors import ProviderError
from knowsim_core.text.redact import redact  # noqa: F401  (re-exported: callers import it from here)

MAX_DETAIL_CHARS = 200
MAX_CAUSES = 10  # how deep an error's chain of causes is read
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait is not retried: the call fails now, saying so
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx
PROXY_AUTH_STATUS = 407  # Proxy Authentication Required: only a proxy answers it

if TYPE_CHECKING:
    from knowsim_core.llm.proxy import Proxy


def _causes(exc: BaseException) -> Iterator[tuple[str, str]]:
    """(class name, one-line detail) of ``exc`` and the errors it was raised from, at most
    :data:`MAX_CAUSES` deep: the SDKs chain the HTTP library's error, which says what happened."""
    cause: BaseException | None = exc
    for _ in range(MAX_CAUSES):
        if cause is None:
            return
        yield type(cause).__name__, " ".join(str(cause).split())[:MAX_DETAIL_CHARS]
        cause = cause.__cause__ or cause.__context__


def broken_answer(exc: BaseException) -> str:
    """What was wrong with an answer the SDK calls a "connection error" although the server answered:
    a redirect loop, or headers the HTTP parser refuses (a 1 MB header, 20 000 headers); "" otherwise."""
    for name, detail in _causes(exc):
        if name == "TooManyRedirects":
            return "the server redirected the request too many times (a redirect loop?)"
        # a dropped connection is a protocol error too ("Server disconnected…"): that one is worth a retry
        if name in ("RemoteProtocolError", "LocalProtocolError", "ProtocolError") and not any(
                w in detail.lower() for w in ("disconnect", "closed", "incomplete")):
            return f"the server's answer is not valid HTTP ({detail or name}; e.g. headers too large or too many)"
    return ""


def proxy_refusal(exc: BaseException) -> str:
    """The proxy's answer when it refused to open a tunnel (a CONNECT answered with a non-2xx status,
    e.g. "407 Proxy Authentication Required"), else "": the SDKs call it a connection error, and the
    HTTP stack's ``ProxyError`` is among its causes."""
    return next((detail or "no reason given" for name, detail in _causes(exc) if name == "ProxyError"), "")


def _refused_for_good(refusal: str) -> bool:
    """A tunnel refusal the same request would get again: a 4xx (no credentials, a blocked host); a
    5xx from the proxy (the provider unreachable from it) may pass."""
    code = refusal.split(" ", 1)[0]
    return code.isdigit() and 400 <= int(code) < 500


def retry_after(exc: Exception, retries: int) -> tuple[float | None, str]:
    """(seconds to wait before retry number ``retries + 1``, "") — or (None, why not) when the
    failure is not worth retrying. Retried: 408/409/429/5xx, connection errors and timeouts, and
    a 200 whose body could not be used; the wait is the server's (:func:`server_wait`: ``retry-after-ms``,
    or ``Retry-After`` in seconds or as an HTTP date) up to :data:`MAX_RETRY_AFTER_S`, else 0.5 s
    doubling to 8 s."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if name == "BadReply":
        return (0.5 * 2 ** retries if getattr(exc, "retry", True) else None), ""
    if name == "APIConnectionError" and broken_answer(exc):
        return None, "the same answer would come again"
    if name == "APIConnectionError" and _refused_for_good(proxy_refusal(exc)):
        return None, "the proxy would refuse it again"
    if name not in ("APIConnectionError", "APITimeoutError") and not (
            isinstance(status, int) and (status in RETRY_STATUSES or status >= 500)):
        return None, ""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    asked = server_wait(headers)
    if asked is not None and asked > MAX_RETRY_AFTER_S:
        return None, f"the server asks to wait {asked:g} s before trying again"
    return (asked if asked is not None else min(8.0, 0.5 * 2 ** retries)), ""


def server_wait(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The seconds a server asks the client to wait, or None when it asks nothing readable.

    ``retry-after-ms`` (OpenAI's), else ``Retry-After`` as seconds or as an HTTP date (RFC 9110
    §10.2.3: ``Wed, 21 Oct 2015 07:28:00 GMT``). A date is read against the answer's own ``Date``
    header when it has one — both then come from the server's clock, so a skewed local clock does
    not change the wait — else against ``now`` (``time.time()``); a date already past is no wait.
    A negative or nan number, and garbage, are None (our own backoff is used)."""
    wait: float | None = None
    try:
        if headers.get("retry-after-ms"):
            wait = float(headers["retry-after-ms"]) / 1000.0
        elif headers.get("retry-after"):
            text = str(headers["retry-after"]).strip()
            wait = float(text) if _is_number(text) else _until(text, headers.get("date"), now)
    except (TypeError, ValueError, OverflowError):
        return None
    return wait if wait is not None and wait >= 0 else None  # nan >= 0 is False; inf is a long wait


def _is_number(text: str) -> bool:
    return text.replace(".", "", 1).isdigit() and text.isascii()


def _until(when: str, date: str | None, now: float | None) -> float:
    """Seconds from the answer's ``Date`` (or ``now``) until the HTTP date ``when``, at least 0.

    Raises:
        ValueError: ``when`` is not a date.
    """
    base = None
    if date:
        try:
            base = _timestamp(date)
        except (TypeError, ValueError, OverflowError):  # an unreadable Date: our own clock, then
            base = None
    if base is None:
        base = time.time() if now is None else now
    return max(0.0, _timestamp(when) - base)


def _timestamp(http_date: str) -> float:
    """Unix seconds of an HTTP date; one without a zone (``-0000``) is GMT, as HTTP dates are."""
    at = parsedate_to_datetime(http_date)
    return (at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)).timestamp()


class ProviderCallError(ProviderError):
    """A failed call. ``reason`` is one of auth, model, rate_limit, timeout, connection, server,
    bad_request, unexpected; ``status`` the HTTP status when there was one; ``unknown_calls``: the
    unusable 200s among its attempts (billed, token counts unreadable; also in the chat's ledger)."""

    unknown_calls: int = 0

    def __init__(self, message: str, *, provider: str, reason: str, status: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.reason = reason
        self.status = status


class MalformedOutputError(ProviderError):
    """The model's reply did not match the requested JSON shape, even after one repair request.

    ``text`` is the last reply (redacted), so a caller can try a more lenient reading.
    """

    def __init__(self, message: str, *, provider: str, text: str, usage: Any = None, cut: bool = False):
        super().__init__(message)
        self.provider = provider
        self.text = text
        self.usage = usage  # records.Usage of the failed calls (billed: the chat recorded it in its ledger)
        self.cut = cut  # the server enforced the schema and the reply hit max_tokens: asking again cuts it again


def _detail(exc: Exception, secrets: Iterable[str]) -> str:
    body = getattr(exc, "body", None)
    msg = ""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = str(err.get("message") or "")
        elif isinstance(err, str):
            msg = err
    if not msg:
        msg = str(getattr(exc, "message", "") or exc)
    msg = " ".join(redact(msg, secrets).split())
    return msg[:MAX_DETAIL_CHARS] + ("…" if len(msg) > MAX_DETAIL_CHARS else "")


def translate(
    exc: Exception,
    *,
    provider: str,
    model: str,
    base_url: str,
    timeout_s: float,
    retries: int,
    secrets: Iterable[str],
    not_retried: str = "",
    proxy: Proxy | None = None,
) -> ProviderCallError:
    """One line naming the provider, what happened and what to do. Works for both SDKs by duck typing
    (both define APIStatusError with ``status_code``, APITimeoutError and APIConnectionError).

    ``proxy``: the proxy the call went through (None: direct). Every message then says so — "cannot
    connect to X" behind a proxy is about the proxy as often as about X — by its URL without
    credentials and the variable it came from, which is what the user can change."""
    secrets = (*secrets, *(proxy.secrets if proxy is not None else ()))
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    key_var = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider, "KNOWSIM_COMPAT_API_KEY")
    where = redact(base_url + (f" through the proxy {proxy.label}" if proxy is not None else ""), secrets)
    detail = _detail(exc, secrets)
    # what really happened: how many requests were sent, and why no more were
    tried = (f"after {retries} retr{'y' if retries == 1 else 'ies'}" if retries
             else "on the first request, not retried" + (f": {not_retried}" if not_retried else ""))
    if name == "BadReply" and getattr(exc, "reason", "") == "timeout":
        return ProviderCallError(
            f"{provider}: {redact(str(exc), secrets).replace('no answer', f'no answer from {where}', 1)}"
            f" ({tried}); KNOWSIM_LLM_TIMEOUT is the deadline of the whole request: raise it or check that the "
            "server is not overloaded",
            provider=provider, reason="timeout",
        )
    if name == "BadReply":
        return ProviderCallError(
            f"{provider}: unusable reply from {where} {tried}: {redact(str(exc), secrets)}",
            provider=provider, reason=getattr(exc, "reason", "server"),
        )
    if name == "APITimeoutError":
        return ProviderCallError(
            f"{provider}: no answer from {where} within {timeout_s:g} s ({tried}); "
            "raise KNOWSIM_LLM_TIMEOUT or check that the server is not overloaded",
            provider=provider, reason="timeout",
        )
    if name == "APIConnectionError" and (broken := broken_answer(exc)):
        return ProviderCallError(
            f"{provider}: {where} answered, but {broken} ({tried}); check the base URL (a proxy or another "
            "service may be answering there)",
            provider=provider, reason="server",
        )
    if name == "APIConnectionError" and proxy is not None and (refusal := proxy_refusal(exc)):
        fix = (f"check the credentials in {proxy.variable} (http://user:password@host:port) and that the proxy "
               "lets this host through" if _refused_for_good(refusal)
               else "the proxy could not reach it: check the base URL, or try again later")
        return ProviderCallError(
            f"{provider}: the proxy {redact(proxy.label, secrets)} refused a tunnel to {redact(base_url, secrets)} "
            f"({redact(refusal, secrets)}; {tried}); {fix}, or add the host to NO_PROXY",
            provider=provider, reason="connection",
        )
    if name == "APIConnectionError" and proxy is not None:
        return ProviderCallError(
            f"{provider}: cannot connect to {where} ({tried}); check that the proxy is running and "
            f"{proxy.variable} is right, or add the host to NO_PROXY",
            provider=provider, reason="connection",
        )
    if name == "APIConnectionError":
        return ProviderCallError(
            f"{provider}: cannot connect to {where} ({tried}); check that the server is running "
            "and the base URL is right",
            provider=provider, reason="connection",
        )
    if status == PROXY_AUTH_STATUS:  # a plain-http request the proxy answered itself
        by = f"the proxy {redact(proxy.label, secrets)}" if proxy is not None else "a proxy"
        var = proxy.variable if proxy is not None else "HTTPS_PROXY / HTTP_PROXY"
        asks = "rejected the credentials in" if proxy is not None and proxy.auth else "asks for credentials:"
        return ProviderCallError(
            f"{provider}: {by} {asks} {var} ({status}, for {redact(base_url, secrets)}); write them there as "
            "http://user:password@host:port, or add the host to NO_PROXY",
            provider=provider, reason="connection", status=status,
        )
    if status in (401, 403):
        return ProviderCallError(
            f"{provider} rejected the API key ({status}): check {key_var} (in the app, the key typed in the sidebar)",
            provider=provider, reason="auth", status=status,
        )
    if status == 404:
        return ProviderCallError(
            f"{provider}: model {model!r} not found at {where} (404): check the model name "
            f"(and the base URL) — server said: {detail}",
            provider=provider, reason="model", status=status,
        )
    if status == 429:
        return ProviderCallError(
            f"{provider}: rate limit or quota exceeded (429) {tried}; wait a minute, lower "
            "KNOWSIM_LLM_MAX_CONCURRENCY / KNOWSIM_LLM_RPM, or check your plan",
            provider=provider, reason="rate_limit", status=status,
        )
    if isinstance(status, int) and status >= 500:
        return ProviderCallError(
            f"{provider}: server error {status} {tried}; try again later — server said: {detail}",
            provider=provider, reason="server", status=status,
        )
    if isinstance(status, int):
        return ProviderCallError(
            f"{provider}: request rejected ({status}) for model {model!r}: {detail}",
            provider=provider, reason="bad_request", status=status,
        )
    return ProviderCallError(
        f"{provider}: unexpected {name}: {detail}", provider=provider, reason="unexpected"
    )
