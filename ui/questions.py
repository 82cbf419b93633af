"""Helpers of the Questions page (no streamlit): describe what the reference importer did."""

from __future__ import annotations

from typing import Any


def import_summary(result: Any) -> str:
    """One line from whatever the importer returns (a count, a mapping of counts, or a report)."""
    summary = getattr(result, "summary", None)
    if callable(summary):
        return str(summary())
    if isinstance(result, int):
        return f"Imported {result} item(s)."
    if isinstance(result, dict):
        return "Imported " + ", ".join(f"{v} {k}" for k, v in result.items()) + "."
    return f"Imported: {result}"


# short group names for pickers (selectboxes have no option groups: each label starts with its group)
KIND_SHORT = {"sample": "Sample", "paper": "Paper", "real": "Real conversation", "yours": "Yours"}


def question_label(q: Any) -> str:
    """A picker's label: the question's group, its short title and its id, e.g.
    ``Real conversation · Number Theory: Perfect Square, Digit Permutation · sa_math_40_ab12cd34``."""
    return f"{KIND_SHORT.get(q.kind, q.kind)} · {q.title} · {q.id}"


def by_kind(questions: list[Any]) -> dict[str, list[str]]:
    """Question ids per kind, in the pickers' order (samples first), only kinds that have some."""
    from knowsim_core.storage.questions import kind_rank

    out: dict[str, list[str]] = {}
    for q in sorted(questions, key=lambda q: (kind_rank(q.kind), q.id)):
        out.setdefault(q.kind, []).append(q.id)
    return {k: out[k] for k in sorted(out, key=kind_rank)}
