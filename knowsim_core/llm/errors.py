"""Turn SDK exceptions into one clear :class:`ProviderError` line — never echoing a key.

Providers sometimes quote the key they rejected ("Incorrect API key provided: sk-…"); every text
that leaves this package goes through :func:`~knowsim_core.text.redact.redact` (keys and URL
credentials), and translated errors are raised ``from None`` so the SDK exception (with its raw body) is not chained into tracebacks or logs.
"""

from __future__ import annotations

from typing import Any, Iterable

from knowsim_core.errors import ProviderError
from knowsim_core.text.redact import redact  # noqa: F401  (re-exported: callers import it from here)

MAX_DETAIL_CHARS = 200
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait is not retried: the call fails now, saying so
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx


def broken_answer(exc: BaseException) -> str:
    """What was wrong with an answer the SDK calls a "connection error" although the server answered:
    a redirect loop, or headers the HTTP parser refuses (a 1 MB header, 20 000 headers); "" otherwise.
    Read from the exception's causes by class name (the SDKs chain the HTTP library's error)."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 10:
        name = type(cause).__name__
        if name == "TooManyRedirects":
            return "the server redirected the request too many times (a redirect loop?)"
        detail = " ".join(str(cause).split())[:MAX_DETAIL_CHARS]
        # a dropped connection is a protocol error too ("Server disconnected…"): that one is worth a retry
        if name in ("RemoteProtocolError", "LocalProtocolError", "ProtocolError") and not any(
                w in detail.lower() for w in ("disconnect", "closed", "incomplete")):
            return f"the server's answer is not valid HTTP ({detail or name}; e.g. headers too large or too many)"
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return ""


def retry_after(exc: Exception, retries: int) -> tuple[float | None, str]:
    """(seconds to wait before retry number ``retries + 1``, "") — or (None, why not) when the
    failure is not worth retrying. Retried: 408/409/429/5xx, connection errors and timeouts, and
    a 200 whose body could not be used; the wait is the server's ``retry-after-ms`` /
    ``Retry-After`` when it gives one (up to :data:`MAX_RETRY_AFTER_S`), else 0.5 s doubling to 8 s."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if name == "BadReply":
        return (0.5 * 2 ** retries if getattr(exc, "retry", True) else None), ""
    if name == "APIConnectionError" and broken_answer(exc):
        return None, "the same answer would come again"
    if name not in ("APIConnectionError", "APITimeoutError") and not (
            isinstance(status, int) and (status in RETRY_STATUSES or status >= 500)):
        return None, ""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    asked = None
    try:
        if headers.get("retry-after-ms"):
            asked = float(headers["retry-after-ms"]) / 1000.0
        elif headers.get("retry-after"):
            asked = float(headers["retry-after"])
    except (TypeError, ValueError):
        asked = None  # an HTTP date or garbage: use our own backoff
    if asked is not None and asked > MAX_RETRY_AFTER_S:
        return None, f"the server asks to wait {asked:g} s before trying again"
    return (asked if asked is not None and asked >= 0 else min(8.0, 0.5 * 2 ** retries)), ""


class ProviderCallError(ProviderError):
    """A failed call. ``reason`` is one of auth, model, rate_limit, timeout, connection, server,
    bad_request, unexpected; ``status`` the HTTP status when there was one; ``unknown_calls``: the
    unusable 200s among its attempts (billed, token counts unreadable; also in ``spent``)."""

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
        self.usage = usage  # records.Usage of the failed calls (they were still billed)
        self.spent = (usage,) if usage is not None else ()  # counted in the run's cost if nothing catches this
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
) -> ProviderCallError:
    """One line naming the provider, what happened and what to do. Works for both SDKs by duck typing
    (both define APIStatusError with ``status_code``, APITimeoutError and APIConnectionError)."""
    secrets = tuple(secrets)
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    key_var = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider, "KNOWSIM_COMPAT_API_KEY")
    where = redact(base_url, secrets)
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
    if name == "APIConnectionError":
        return ProviderCallError(
            f"{provider}: cannot connect to {where} ({tried}); check that the server is running "
            "and the base URL is right",
            provider=provider, reason="connection",
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
