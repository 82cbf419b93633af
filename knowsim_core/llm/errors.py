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


class ProviderCallError(ProviderError):
    """A failed call. ``reason`` is one of auth, model, rate_limit, timeout, connection, server,
    bad_request, unexpected; ``status`` the HTTP status when there was one."""

    def __init__(self, message: str, *, provider: str, reason: str, status: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.reason = reason
        self.status = status


class MalformedOutputError(ProviderError):
    """The model's reply did not match the requested JSON shape, even after one repair request.

    ``text`` is the last reply (redacted), so a caller can try a more lenient reading.
    """

    def __init__(self, message: str, *, provider: str, text: str, usage: Any = None):
        super().__init__(message)
        self.provider = provider
        self.text = text
        self.usage = usage  # records.Usage of the failed calls (they were still billed)


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
) -> ProviderCallError:
    """One line naming the provider, what happened and what to do. Works for both SDKs by duck typing
    (both define APIStatusError with ``status_code``, APITimeoutError and APIConnectionError)."""
    secrets = tuple(secrets)
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    key_var = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider, "KNOWSIM_COMPAT_API_KEY")
    where = redact(base_url, secrets)
    detail = _detail(exc, secrets)
    tried = f"after {retries} retr{'y' if retries == 1 else 'ies'}"
    if name == "APITimeoutError":
        return ProviderCallError(
            f"{provider}: no answer from {where} within {timeout_s:g} s ({tried}); "
            "raise KNOWSIM_LLM_TIMEOUT or check that the server is not overloaded",
            provider=provider, reason="timeout",
        )
    if name == "APIConnectionError":
        return ProviderCallError(
            f"{provider}: cannot connect to {where} ({tried}); check that the server is running "
            "and the base URL is right",
            provider=provider, reason="connection",
        )
    if status in (401, 403):
        return ProviderCallError(
            f"{provider} rejected the API key ({status}): check {key_var} or the key typed in the sidebar",
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
