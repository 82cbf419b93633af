"""Extractor signals: per-IU teaching quality and user attempt, and their normalisation (spec §3.1).

The normalised entry keeps an unrecognised teaching-quality value as it came (it counts as a
mention and drives the update like ``well_explained``, spec §3.1 rule 4), so a replay of recorded
labels is exact; :func:`signal_warnings` lists such oddities for the UI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Iterable


class TeachingQuality(StrEnum):
    WELL_EXPLAINED = "well_explained"
    SHALLOW = "shallow"
    NOT_MENTIONED = "not_mentioned"


class AttemptType(StrEnum):
    REASONING = "reasoning"
    ARTICULATION = "articulation"
    NONE = "none"


RESPONSE_ROLES = (
    "confirmed_correct",
    "confirmed_incorrect_no_explanation",
    "confirmed_incorrect_with_explanation",
    "ignored",
    "not_applicable",
)

_ROLE_ALIASES = ("assistant_reasoning_role", "assistant_reason_role", "assistant_role", "assistant_response")
_TQ_IN_REASONING = re.compile(r"(?:->|→)\s*(not_mentioned|shallow|well_explained)\b")
_ATTEMPTS = {a.value for a in AttemptType}
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class IUSignal:
    """One normalised extractor entry.

    ``id`` is None when the entry had no usable id (it still adds attempt load, spec §3.2).
    ``teaching_quality`` is the raw value after normalisation: usually one of
    :class:`TeachingQuality`, but an unrecognised string or None is kept as it came.
    ``reasoning`` is the teaching-quality rationale, written to the state as ``evidence``
    (None: the key was absent — the update then writes "").
    """

    id: str | None
    teaching_quality: str | None
    attempt: AttemptType = AttemptType.NONE
    concept: str = ""
    reasoning: str | None = None
    attempt_reasoning: str = ""
    response_role: str | None = None

    @property
    def mentioned(self) -> bool:
        return self.teaching_quality != TeachingQuality.NOT_MENTIONED

    @property
    def recognised(self) -> bool:
        return self.teaching_quality in _TQ_VALUES

    def to_data(self) -> dict[str, Any]:
        """The entry in the extractor's JSON form (§3.1)."""
        d: dict[str, Any] = {
            "id": self.id,
            "concept": self.concept,
            "teaching_quality": self.teaching_quality,
            "user_attempt_type": self.attempt.value,
            "user_attempt_reasoning": self.attempt_reasoning,
            "assistant_response_role": self.response_role,
        }
        if self.reasoning is not None:
            d["teaching_quality_reasoning"] = self.reasoning
        return d

    @classmethod
    def make(
        cls,
        node_id: str,
        quality: TeachingQuality | str = TeachingQuality.NOT_MENTIONED,
        attempt: AttemptType | str = AttemptType.NONE,
        reasoning: str = "",
        concept: str = "",
    ) -> "IUSignal":
        """A clean entry, for offline extractors and hand edits."""
        return cls(
            id=node_id,
            teaching_quality=str(TeachingQuality(quality).value),
            attempt=AttemptType(attempt),
            concept=concept,
            reasoning=reasoning,
        )


_TQ_VALUES = frozenset(t.value for t in TeachingQuality)


def normalize_entry(entry: Any) -> IUSignal | None:
    """Normalise one raw extractor entry (spec §3.1, rules in order). None if not an object."""
    if not isinstance(entry, dict):
        return None
    role = entry.get("assistant_response_role", _ABSENT)
    if role is _ABSENT:
        for alias in _ROLE_ALIASES:
            if alias in entry:
                role = entry[alias]
                break
    attempt_raw = entry.get("user_attempt_type", _ABSENT)
    if attempt_raw is _ABSENT and "user_attempt" in entry:
        attempt_raw = entry["user_attempt"]
    if "teaching_quality" in entry:
        tq = entry["teaching_quality"]
    else:
        text = (entry.get("teaching_quality_reasoning") or "").lower()
        m = _TQ_IN_REASONING.search(text)
        tq = m.group(1) if m else TeachingQuality.NOT_MENTIONED.value
    if attempt_raw in _ATTEMPTS:
        attempt = AttemptType(attempt_raw)
    elif entry.get("attempted_by_user"):
        attempt = AttemptType.REASONING
    else:
        attempt = AttemptType.NONE
    raw_id = entry.get("id")
    reasoning = entry.get("teaching_quality_reasoning", _ABSENT)
    return IUSignal(
        id=raw_id if isinstance(raw_id, str) and raw_id else None,
        teaching_quality=tq if isinstance(tq, str) or tq is None else str(tq),
        attempt=attempt,
        concept=str(entry.get("concept") or ""),
        reasoning=None if reasoning is _ABSENT else reasoning,
        attempt_reasoning=str(entry.get("user_attempt_reasoning") or ""),
        response_role=None if role is _ABSENT else role,
    )


def normalize_entries(entries: Iterable[Any]) -> tuple[IUSignal, ...]:
    """Normalise a raw ``iu_analysis`` list; non-objects are dropped."""
    out = []
    for e in entries:
        sig = normalize_entry(e)
        if sig is not None:
            out.append(sig)
    return tuple(out)


def parse_extractor_output(payload: Any) -> tuple[IUSignal, ...]:
    """Accept ``{"iu_analysis": [...]}`` or a bare list; anything else yields no entries."""
    if isinstance(payload, dict):
        payload = payload.get("iu_analysis")
    if not isinstance(payload, list):
        return ()
    return normalize_entries(payload)


def signal_warnings(signals: Iterable[IUSignal], node_ids: Iterable[str]) -> list[str]:
    """Plain-language notes on entries that the rules tolerate but a researcher should see."""
    known = set(node_ids)
    seen: set[str] = set()
    notes: list[str] = []
    for i, s in enumerate(signals):
        where = s.id or f"entry #{i + 1}"
        if s.id is None:
            notes.append(f"entry #{i + 1} has no id; it only adds attempt load")
        elif s.id not in known:
            notes.append(f"{s.id} is not an IU of this graph; it is read as an unaware IU")
        elif s.id in seen:
            notes.append(f"{s.id} is labelled more than once; the last entry wins")
        if s.id:
            seen.add(s.id)
        if not s.recognised:
            notes.append(
                f"{where}: teaching quality {s.teaching_quality!r} is not one of "
                "well_explained / shallow / not_mentioned; it counts as well_explained"
            )
    return notes
