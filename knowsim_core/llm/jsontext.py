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
MAX_STARTS = 8  # "{" / "[" positions tried per candidate: each try may read to the end of the text
DEEP = "the reply's JSON is nested too deeply to read"


def extract_json(text: str) -> Any:
    """The first JSON object (or array) in ``text``.

    Prose before the JSON is skipped by trying ``raw_decode`` at the first :data:`MAX_STARTS`
    brackets that have a closing bracket somewhere after them: every try can read to the end of the
    text, so trying at every bracket was quadratic (``"[" * 900 + "1," * N`` took 37 s at 401 KB).
    JSON nested deeper than the parser's recursion limit is a ValueError like any unreadable reply,
    not a RecursionError.

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
        except RecursionError:
            raise ValueError(DEEP) from None
        last = {"{": cand.rfind("}"), "[": cand.rfind("]")}
        starts = (m.start() for m in _BRACKET.finditer(cand) if last[m.group()] > m.start())
        for _, i in zip(range(MAX_STARTS), starts):
            try:
                value, _ = decoder.raw_decode(cand, i)
                return value
            except json.JSONDecodeError:
                continue
            except RecursionError:
                raise ValueError(DEEP) from None
    raise ValueError(f"the reply is not valid JSON ({first_error})")


_BRACKET = re.compile(r"[{\[]")


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
