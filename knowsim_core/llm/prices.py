"""A small, editable price table: USD per million input / output tokens, per model name.

The defaults are list prices at the time of writing — check your provider's pricing page and
override them (``KNOWSIM_LLM_PRICES`` or the app's settings). Models not in the table (local
servers, new models) cost 0 and are reported as unpriced, never guessed.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class PriceTable:
    """Model → (input, output) USD per 1M tokens. Lookup: exact name, else longest prefix."""

    entries: Mapping[str, tuple[float, float]]

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
            ValueError: a value that is not two non-negative numbers.
        """
        new = dict(self.entries)
        for model, value in changes.items():
            try:
                pin, pout = (float(x) for x in value)
            except (TypeError, ValueError):
                raise ValueError(f"price of {model!r} must be [input, output] USD per 1M tokens, got {value!r}") from None
            if pin < 0 or pout < 0:
                raise ValueError(f"price of {model!r} cannot be negative, got {value!r}")
            new[str(model)] = (pin, pout)
        return PriceTable(new)

    def to_data(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.entries.items()}
