"""Read the JSON value out of a model's reply: plain JSON, fenced JSON, or JSON inside prose.

Models in JSON mode (and local servers without schema support) still wrap their answer in
```json fences or a sentence now and then; we accept those, and report anything else with a
message short enough to send back to the model in a repair request.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The first JSON object (or array) in ``text``.

    Raises:
        ValueError: no parsable JSON value, with the parser's reason.
    """
    s = (text or "").strip()
    if not s:
        raise ValueError("the reply was empty")
    candidates = [s]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(s)]
    decoder = json.JSONDecoder()
    first_error = ""
    for cand in candidates:
        try:
            return json.loads(cand)
        except json.JSONDecodeError as exc:
            first_error = first_error or f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        for i, ch in enumerate(cand):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(cand, i)
                    return value
                except json.JSONDecodeError:
                    continue
    raise ValueError(f"the reply is not valid JSON ({first_error})")


def validate_reply(text: str, model: type[BaseModel]) -> BaseModel:
    """``text`` read as JSON and validated against ``model``.

    Raises:
        ValueError: not JSON, or not the right shape (a short, model-readable reason).
    """
    data = extract_json(text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            parts.append(f"{where}: {err['msg']}")
        raise ValueError("the JSON does not match the schema: " + "; ".join(parts)) from None
