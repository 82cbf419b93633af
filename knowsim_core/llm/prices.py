"""A small, editable price table: USD per million input / output tokens, per model name.

The defaults are list prices at the time of writing — check your provider's pricing page and
override them (``KNOWSIM_LLM_PRICES`` or the app's settings). Models not in the table (local
servers, new models) cost 0 and are reported as unpriced, never guessed.

A price is two JSON numbers, each finite, at least 0 and at most :data:`MAX_PRICE_USD` (far above
any list price, and low enough that no run's cost can overflow to infinity: at most 10^9 tokens a
request, :data:`~knowsim_core.llm.providers.MAX_TOKEN_COUNT`). Anything else is refused when the
table is made: ``[1e308, 1e308]`` would price a run at inf (which ``runs --json`` can only print as
``Infinity``, not JSON), and a cost of nan cannot be stored at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

# model name (or prefix of dated variants) -> (USD per 1M input tokens, USD per 1M output tokens)
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4-1": (15.00, 75.00),
}
TOKENS_PER_UNIT = 1_000_000
MAX_PRICE_USD = 100_000.0  # per 1M tokens; list prices are in the tens to hundreds


@dataclass(frozen=True)
class PriceTable:
    """Model → (input, output) USD per 1M tokens. Lookup: exact name, else longest prefix.

    Raises:
        ValueError: an entry that is not two prices (see the module docstring).
    """

    entries: Mapping[str, tuple[float, float]]

    def __post_init__(self) -> None:
        for model, value in self.entries.items():
            _price(model, value)

    def price(self, model: str) -> tuple[float, float] | None:
        if model in self.entries:
            return self.entries[model]
        best = max((k for k in self.entries if model.startswith(k)), key=len, default=None)
        return self.entries[best] if best else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        p = self.price(model)
        if p is None:
            return 0.0
        return (input_tokens * p[0] + output_tokens * p[1]) / TOKENS_PER_UNIT

    def updated(self, changes: Mapping[str, Any]) -> "PriceTable":
        """A copy with entries added or replaced; each value is ``[input, output]``.

        Raises:
            ValueError: ``changes`` is not a mapping, or a value is not two prices.
        """
        if not isinstance(changes, Mapping):
            raise ValueError(f"expected an object of model names, got {type(changes).__name__}")
        new = dict(self.entries)
        for model, value in changes.items():
            new[str(model)] = _price(model, value)
        return PriceTable(new)

    def to_data(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.entries.items()}


def _price(model: Any, value: Any) -> tuple[float, float]:
    """``value`` as (input, output) USD per 1M tokens: two numbers (not text, not true/false),
    each finite and from 0 to :data:`MAX_PRICE_USD`.

    Raises:
        ValueError: naming the model and what is wrong, quoting at most 60 characters of the value.
    """
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
    pair = tuple(value) if isinstance(value, (list, tuple)) else ()
    if len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in pair):
        raise ValueError(f"price of {str(model)[:60]!r} must be [input, output], two numbers of USD per 1M tokens, "
                         f"got {shown}")
    try:
        pin, pout = float(pair[0]), float(pair[1])
    except OverflowError:  # an integer past the range of floats
        pin = pout = math.inf
    if not all(math.isfinite(x) and 0 <= x <= MAX_PRICE_USD for x in (pin, pout)):
        raise ValueError(f"price of {str(model)[:60]!r} must be finite USD per 1M tokens from 0 to "
                         f"{MAX_PRICE_USD:,.0f}, got {shown}")
    return pin, pout
