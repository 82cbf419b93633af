"""The provider SDKs and their HTTP stack, imported on first use: the Studio's only imports of them.

``openai`` (~0.8 s), ``anthropic`` (~1–3 s) and ``httpx2`` / ``httpcore2`` (the HTTP stack both
SDKs use, ~0.1 s) are read as attributes of this module (PEP 562): ``sdks.openai.OpenAI(...)``
imports openai the first time it runs. A run with offline agents, an offline batch, the app's
pages and every command's ``--help`` make no request, so they never load them;
:mod:`.providers` is the code that uses them.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "openai":
        import openai

        return openai
    if name == "anthropic":
        import anthropic

        return anthropic
    if name == "httpx2":
        import httpx2

        return httpx2
    if name == "httpcore2":
        import httpcore2

        return httpcore2
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
