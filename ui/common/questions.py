"""Helpers of the Questions page (no streamlit): describe what the reference importer did."""

from __future__ import annotations

from typing import Any

from knowsim_core.engine.agent_id import parse_id
from knowsim_core.storage.questions import kind_rank
from ui.common.safe_text import inline_markdown


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
    out: dict[str, list[str]] = {}
    for q in sorted(questions, key=lambda q: (kind_rank(q.kind), q.id)):
        out.setdefault(q.kind, []).append(q.id)
    return {k: out[k] for k in sorted(out, key=kind_rank)}


def reading_heading(question: Any, row: Any, run: Any) -> str:
    """The Simulate header of a recorded human conversation, in words: its title (the field and
    concepts, never the person's first message), the person's level, the tutor, the rating and
    the answer — e.g. ``Real conversation · Number Theory: Perfect Square · novice learner · tutor
    gpt-4o · rated 7/10 · answer correct`` — never the stored id and the first message
    (``sa_math_25_f222c5ef_… — Hello, are you functioning properly?``). Markdown-safe: every text
    is escaped."""
    tutor = parse_id(run.adapter.get("assistant", "?")).name  # recorded/gpt-4o -> gpt-4o
    parts = [f"**{KIND_SHORT.get(question.kind, question.kind)}** · " + inline_markdown(question.title),
             f"{run.level} learner", "tutor " + inline_markdown(tutor)]
    rating = getattr(row, "rating", None)
    parts.append(f"rated {rating:g}/10" if rating is not None else "not rated")
    answer = getattr(row, "correctness", None)
    parts.append("answer " + inline_markdown(str(answer)) if answer else "answer not judged")
    return " · ".join(parts)
