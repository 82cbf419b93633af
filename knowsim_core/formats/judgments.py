"""Human judgments of tutor turns: the person's own 👍/👎 from a recorded conversation, or a
researcher's from the Studio — one shape for both, so agreement counts them side by side.

A judgment is about one turn of one run (1-based, the tutor's reply in that turn). ``source``
says whose it is: ``person`` (the learner in a recorded conversation, e.g. SimulatorArena's
``turn_level_vote``) or ``researcher`` (given in Simulate). ``match`` records how a person's
thumb was tied to its turn: ``exact`` (the vote's stored reply text is the turn's reply),
``prefix`` (it is a leading part of the reply — the person voted while the reply was still
streaming), ``mismatch`` (neither: kept, counted, left out of agreement) or ``""`` (nothing to
check, e.g. a researcher's judgment).

Studio JSON exports carry a run's judgments in a top-level ``judgments`` list (the run record
itself stays as it was), read back by :func:`judgments_from_data`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, Strict

from knowsim_core.formats import schema
from knowsim_core.formats.schema import Bool, Name, Str, StrictModel

SOURCES = ("person", "researcher")
MATCHES = ("exact", "prefix", "mismatch", "")
MAX_NOTE = 10_000
MAX_WHO = 200  # characters of an author's name (the file format and storage agree)


@dataclass(frozen=True)
class Judgment:
    turn: int  # 1-based turn of the run whose tutor reply is judged
    liked: bool  # 👍 True, 👎 False
    source: str = "researcher"  # "person" | "researcher"
    who: str = ""
    note: str = ""
    created: str = ""  # ISO time it was given ("" when the source does not say)
    match: str = ""  # see the module docstring

    def to_data(self) -> dict[str, Any]:
        return asdict(self)


def check_text(voted: str | None, reply: str | None) -> str:
    """How a person's vote text ties to the reply of the turn it names (module docstring)."""
    reply = reply or ""
    if voted is None:
        return ""
    if voted == reply:
        return "exact"
    if voted.strip() and reply.startswith(voted):
        return "prefix"
    return "mismatch"


def one_per_turn(votes: list[Judgment], counts: dict[str, int]) -> tuple[Judgment, ...]:
    """A person's thumbs with at most one per turn, as storage keeps them (one per turn and author).

    A file may hold several thumbs on one turn (SimulatorArena keys ``"[0, 1]"`` and ``"[0,1]"`` name
    one reply; 👍 then 👎 is a change of mind): the last one listed is kept, as before; the others are
    counted as ``votes_repeated`` (the same verdict again) or ``votes_overridden`` (the other verdict).
    Each kept thumb's text match is counted (``votes_exact`` …), so the import summary counts what is
    stored, not what was listed.
    """
    for k in ("votes_exact", "votes_prefix", "votes_mismatch", "votes_unchecked", "votes_repeated",
              "votes_overridden"):
        counts.setdefault(k, 0)
    by_turn: dict[tuple[int, str, str], list[Judgment]] = {}
    for j in votes:
        by_turn.setdefault((j.turn, j.source, j.who), []).append(j)
    out = []
    for same in by_turn.values():
        kept = same[-1]
        for j in same[:-1]:
            counts["votes_repeated" if j.liked == kept.liked else "votes_overridden"] += 1
        counts[f"votes_{kept.match or 'unchecked'}"] += 1  # "": no reply text, nothing checked
        out.append(kept)
    return tuple(sorted(out, key=lambda j: j.turn))


def rating_of(value: Any) -> float | None:
    """A conversation's overall rating (``meta["rating"]``, e.g. SimulatorArena's 1–10) as a number,
    or None: only a finite int or float counts (not a bool, a string, NaN, ±inf or an int too big for a
    float).

    The one reading of a rating: storage's ``rating`` column and the agreement statistics both call
    it, so a value the column refuses (NaN, ±inf) is no rating to the statistics either.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


class JudgmentIn(StrictModel):
    turn: int = Field(strict=True, ge=1, le=schema.MAX_TURNS)
    liked: Bool
    source: Literal["person", "researcher"] = "researcher"
    who: Annotated[str, Strict(), Field(max_length=MAX_WHO)] = ""
    note: Optional[Str] = Field(default="", max_length=MAX_NOTE)
    created: Name = ""
    match: Literal["exact", "prefix", "mismatch", ""] = ""


def judgments_from_data(data: Any, where: str) -> list[Judgment]:
    """The ``judgments`` list of one exported run (absent → none).

    Raises:
        FormatError: one line naming ``where``, the field path and the fix.
    """
    if data is None:
        return []
    items = schema.check(Annotated[list[JudgmentIn], Field(max_length=schema.MAX_ENTRIES)], data, where, "each judgment is {turn, liked, source, who, note, created}")
    return [Judgment(turn=j.turn, liked=j.liked, source=j.source, who=j.who, note=j.note or "",
                     created=j.created, match=j.match) for j in items]
