"""Short titles for questions: what a picker shows instead of a whole problem statement.

Pure text functions. A real conversation's first message is often "hello" (the problem itself is
redacted from the SimulatorArena release), so its title is built from what the import knows about
the problem — its field and the concepts it needs — by :func:`concept_title` and stored with the
question; every other question is titled by its own first sentence (:func:`short_title`).
:func:`question_title` picks between the two, for every place that names a question (pickers,
Simulate's header, the ``runs`` command).
"""

from __future__ import annotations

import re

MAX_TITLE_CHARS = 70
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)")


def clip(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (with "…")."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:-") + "…"


def short_title(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """The first sentence of ``text`` (its first line when there is no sentence end), clipped.

    A sentence may run over several lines (it is read with the line breaks flattened), but text
    with no sentence end at all — a list, a heading over a formula — is titled by its first
    non-blank line, not by everything run together.
    """
    text = text or ""
    end = _SENTENCE_END.search(" ".join(text.split()))
    if end:
        return clip(" ".join(text.split())[: end.end()], limit)
    return clip(next((line for line in text.splitlines() if line.strip()), ""), limit)


def concept_title(field: str, concepts: list[str] | tuple[str, ...], fallback: str,
                  limit: int = MAX_TITLE_CHARS) -> str:
    """``"Number Theory: Perfect Square, Digit Permutation"`` — the field and the first concepts the
    problem needs; ``fallback`` (e.g. where the problem comes from) when neither is known."""
    names = [c.strip() for c in concepts if c and c.strip()]
    if not names:
        return clip(f"{field}: {fallback}" if field else fallback, limit)
    head = f"{field}: " if field else ""
    title = head + names[0]
    for name in names[1:]:
        if len(title) + 2 + len(name) > limit:
            break
        title += ", " + name
    return clip(title, limit)


def question_title(text: str, stored_title: str = "", limit: int = MAX_TITLE_CHARS) -> str:
    """A question's title: its stored title (a real conversation's field and concepts), else the
    first sentence of its text — clipped to ``limit``."""
    return clip(stored_title, limit) if stored_title.strip() else short_title(text, limit)
