"""One self-contained HTML file that replays a run (or a pair side by side), turn by turn.

The file is sent to colleagues and shown in talks, opened from disk where the Studio is not
installed, so everything it needs is inside it: our own small script and style sheet
(``replay_assets/``; the graph and the load gauge are SVG drawn by that script, no library) and
the run's data. Run text comes from models and people, so it is kept away from markup three ways:

* the data sits in a ``<script type="application/json">`` element, serialised with ``<``, ``>``,
  ``&``, U+2028 and U+2029 as ``\\uXXXX`` escapes, so no text can close the element or start a
  comment (:func:`script_json`);
* the page's script puts text on the page with ``textContent`` and attribute values only;
* a Content-Security-Policy (:data:`CSP`) forbids every fetch, so even a slip could not load
  anything (inline script and style are allowed: they are the page itself).

Serialise only: the data is built by :mod:`knowsim_core.evaluation.replay`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from knowsim_core.errors import FormatError

ASSETS = Path(__file__).resolve().parent / "replay_assets"
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script>`` element: the five characters that could end the
    element, open a comment or break a JavaScript line are escaped (they only occur inside JSON
    strings, where ``\\uXXXX`` means the same character). NaN / Infinity are refused (not JSON)."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as exc:
        raise FormatError(f"the replay data holds a value JSON cannot carry: {exc}") from exc
    for ch, esc in _JSON_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


@lru_cache(maxsize=1)
def _assets() -> tuple[str, str, str]:
    page, css, js = ((ASSETS / name).read_text(encoding="utf-8") for name in ("replay.html", "replay.css", "replay.js"))
    for name, text in (("replay.css", css), ("replay.js", js)):  # our own files: guard against an edit that would break the page
        if "</script" in text.lower() or "</style" in text.lower() or "__DATA__" in text:
            raise FormatError(f"{name} must not contain a closing script or style tag")
    return page, css, js


def render(payload: Mapping[str, Any]) -> str:
    """The replay page for ``payload`` (:func:`knowsim_core.evaluation.replay.replay_payload`).

    Raises:
        FormatError: the payload is not a replay (no runs) or holds NaN / Infinity.
    """
    if payload.get("format") != "knowsim-replay" or not payload.get("runs"):
        raise FormatError("a replay needs at least one run")
    page, css, js = _assets()
    data = script_json(payload)
    # one pass over placeholders that only occur in our template; the data goes last so no run text
    # is ever searched for a placeholder
    page = page.replace("__CSP__", CSP).replace("__VERSION__", str(int(payload.get("version", 1))))
    page = page.replace("__CSS__", css).replace("__JS__", js)
    head, sep, tail = page.partition("__DATA__")
    if not sep:
        raise FormatError("replay template has no data slot")
    return head + data + tail
