"""Response cache: a key from the full request, values as JSON text, storage injected.

Any object with ``cache_get(key) -> str | None`` and ``cache_put(key, value)`` works (the
Studio's caches repository does: ``cache=store.caches``). The key covers everything that can change
a reply — provider, endpoint, model, messages, output schema, sampling and seed — so re-running
an identical configuration makes no call, and changing anything makes a fresh one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Protocol, runtime_checkable

CACHE_KEY_VERSION = 1


@runtime_checkable
class ResponseCache(Protocol):
    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str) -> None: ...


class MemoryCache:
    """An in-process cache (tests, notebooks, one batch without a database)."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def cache_get(self, key: str) -> str | None:
        with self._lock:
            return self._data.get(key)

    def cache_put(self, key: str, value: str) -> None:
        with self._lock:
            self._data[key] = value

    def __len__(self) -> int:
        return len(self._data)


def request_key(
    *,
    provider: str,
    base_url: str,
    model: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any] | None,
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
) -> str:
    """A stable hex digest of the request (keys are never part of it)."""
    payload = {
        "v": CACHE_KEY_VERSION,
        "provider": provider,
        "base_url": base_url,
        "model": model,
        "messages": messages,
        "schema": schema,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "llm:" + hashlib.sha256(blob.encode()).hexdigest()
