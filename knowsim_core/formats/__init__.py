"""Parse and serialise only: reference JSON, Studio JSON, JSONL, CSV, real conversations, the HTML
graph picture.

Loaded on first use (:mod:`knowsim_core.lazy`): ``formats.reference`` (or any module) is imported
when first read; most build the engine's pydantic models (~0.2 s), which a command's ``--help``
never needs.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
