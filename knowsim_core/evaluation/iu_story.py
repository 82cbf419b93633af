"""One IU's story over a run: per turn its state, its part of the turn's load, carry, ceiling,
failure mode, its part in DC, and the words of the reply that taught it.

Every figure comes from the turn records and the one rule that decides it: the mode and the why
are :func:`knowsim_core.evaluation.explain.explain_turn`'s (what ``explain`` prints), the load part
is :func:`knowsim_core.engine.rules.load_parts` (the terms the turn's load adds up), the DC part
follows the counters of eq. 2 as :mod:`knowsim_core.engine.rules` fills them (a turn's IUs taught,
teachable and absorbed, so the story's counts add up to the run's DC).

**The words that taught it.** The lexical reader (``offline/lexical``) labels an IU from the
reply's sentences about it (:func:`knowsim_core.agents.lexical.sentences_about`): those sentences
are its evidence, shown with the reason it wrote. Any other reader (an LLM, a recording) gives a
reason but no words of the reply, so the story shows the reply's sentences that use the IU's own
words (the same match, or failing that its name's words), says that they were found by word
match, and says when none are known.

Pure: reads a :class:`RunRecord`; nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from knowsim_core.agents.lexical import LexicalExtractor, sentences_about, sentences_naming
from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.rules import load_parts
from knowsim_core.engine.signals import TeachingQuality
from knowsim_core.engine.state import IUState
from knowsim_core.evaluation.explain import explain_turn

READER_ID = LexicalExtractor.id
_NOT_MENTIONED = TeachingQuality.NOT_MENTIONED.value

# an IU's part in DC (eq. 2) in one turn: precision is absorbed / taught, recall absorbed / teachable
DC_ABSORBED = "absorbed"  # taught while teachable, and it rose: counts for precision and recall
DC_NOT_ABSORBED = "taught, not absorbed"  # taught while teachable, did not rise: costs both
DC_NOT_TEACHABLE = "taught, not teachable"  # taught while known well or blocked: costs precision
DC_MISSED = "teachable, not taught"  # could have risen, was not taught: costs recall
DC_PARTS = (DC_ABSORBED, DC_NOT_ABSORBED, DC_NOT_TEACHABLE, DC_MISSED)

# where a turn's words come from
EVIDENCE_READER = "reader"  # the sentences the lexical reader read
EVIDENCE_MATCH = "word match"  # the reply's sentences that use the IU's words (another reader's reading)
NONE_KNOWN = "none are known"


@dataclass(frozen=True, slots=True)
class StoryTurn:
    """One IU in one turn of its story."""

    turn: int
    before: IUState
    after: IUState
    teaching: str  # the teaching label ("not_mentioned" without one)
    attempt: str
    mentions: int  # how many of the turn's entries mention it (a repeat counts again in load and DC)
    load: float  # its part of the turn's load (mentions and attempts)
    turn_load: float
    tau: int
    overloaded: bool
    step_share: float | None  # the share of a step the overloaded turn gave it (None: no dropoff applied)
    prior_carry: float
    carry: float
    ceiling: IUState  # the pre-turn ceiling (what the mode and DC read)
    ceiling_used: IUState  # the ceiling the update used (live under paper-final)
    mode: FailureMode | None
    why: str
    dc: str  # one of DC_PARTS, "" when it takes no part in the turn's DC
    reason: str  # the reader's stated reason for its label ("" when it gave none)
    evidence: tuple[str, ...]  # sentences of the reply
    evidence_kind: str  # EVIDENCE_READER, EVIDENCE_MATCH or "" (not taught this turn, or none found)

    @property
    def share(self) -> float | None:
        """Its part of the turn's load as a share of the whole (None for a turn with no load)."""
        return self.load / self.turn_load if self.turn_load else None

    @property
    def teachable(self) -> bool:
        return self.before != IUState.KNOWS_WELL and self.ceiling >= IUState.PARTIAL

    def to_data(self) -> dict[str, Any]:
        return {"turn": self.turn, "before": self.before.key, "after": self.after.key, "teaching": self.teaching,
                "attempt": self.attempt, "mentions": self.mentions, "load": self.load, "turn_load": self.turn_load,
                "share": self.share, "tau": self.tau, "overloaded": self.overloaded, "step_share": self.step_share,
                "prior_carry": self.prior_carry, "carry": self.carry, "ceiling": self.ceiling.key,
                "ceiling_used": self.ceiling_used.key, "mode": self.mode.title if self.mode else None, "why": self.why,
                "dc": self.dc, "reason": self.reason, "evidence": list(self.evidence),
                "evidence_kind": self.evidence_kind}


@dataclass(frozen=True, slots=True)
class IUStory:
    """An IU of a run, from its starting state through every turn."""

    iu: str
    concept: str
    description: str
    prerequisites: tuple[str, ...]
    start: IUState
    reader: str  # the extractor id whose labels the run holds
    turns: tuple[StoryTurn, ...]

    @property
    def reader_words(self) -> bool:
        """Whether the shown sentences are the reader's own evidence (the lexical reader)."""
        return self.reader == READER_ID

    def evidence_note(self) -> str:
        """One sentence on where the story's words come from."""
        if self.reader_words:
            return (f"Words: the sentences of the reply the reader ({READER_ID}) counted as about {self.iu} "
                    "when it labelled the turn, with the reason it gave.")
        return (f"Words: the reader of this run ({self.reader or 'unknown'}) gives a reason but not the words it read; "
                f"shown are the reply's sentences that use {self.iu}'s own words (found by word match), "
                f"or “{NONE_KNOWN}”.")

    def dc_counts(self) -> dict[str, int]:
        """How many of its turns took each part in DC (a repeated mention counts once here)."""
        out = dict.fromkeys(DC_PARTS, 0)
        for t in self.turns:
            if t.dc:
                out[t.dc] += 1
        return out

    def to_data(self) -> dict[str, Any]:
        return {"iu": self.iu, "concept": self.concept, "description": self.description,
                "prerequisites": list(self.prerequisites), "start": self.start.key, "reader": self.reader,
                "evidence_note": self.evidence_note(), "turns": [t.to_data() for t in self.turns]}


def dc_part(mentions: int, before: IUState, ceiling: IUState, after: IUState) -> str:
    """An IU's part in a turn's DC counters (eq. 2, strict), as ``rules._quantities`` counts them."""
    teachable = before != IUState.KNOWS_WELL and ceiling >= IUState.PARTIAL
    if mentions:
        if not teachable:
            return DC_NOT_TEACHABLE
        return DC_ABSORBED if after > before else DC_NOT_ABSORBED
    return DC_MISSED if teachable else ""


def _words(run: RunRecord, rec: TurnRecord, iu: str, taught: bool) -> tuple[tuple[str, ...], str]:
    if not taught:
        return (), ""
    found = sentences_about(run.graph, iu, rec.assistant_message)
    if run.adapter.get("extractor") == READER_ID:
        return found, EVIDENCE_READER if found else ""
    found = found or sentences_naming(run.graph, iu, rec.assistant_message)
    return found, EVIDENCE_MATCH if found else ""


def _turn(run: RunRecord, rec: TurnRecord) -> tuple[dict[str, Any], dict[str | None, float]]:
    """What every IU's row of one turn reads: the turn's whys by IU and its load parts."""
    whys = {w.id: w for w in explain_turn(rec, run.graph, ceiling_source=run.params.ceiling_source)}
    return whys, load_parts(rec.signals, {n.id: int(n.pre) for n in rec.nodes}, run.params)


def story_turn(run: RunRecord, rec: TurnRecord, iu: str, facts: tuple | None = None) -> StoryTurn:
    """IU ``iu`` in turn ``rec`` of ``run`` (``facts``: the turn's :func:`_turn`, when already read).

    Raises:
        KeyError: ``iu`` is not an IU of the run's graph.
    """
    node = rec.node(iu)
    whys, parts = facts if facts is not None else _turn(run, rec)
    why = whys[iu]
    own = [s for s in rec.signals if s.id == iu]
    mentions = sum(1 for s in own if s.teaching_quality != _NOT_MENTIONED)
    reason = next((s.reasoning for s in reversed(own) if s.reasoning), "") or ""
    evidence, kind = _words(run, rec, iu, mentions > 0)
    q = rec.quantities
    return StoryTurn(
        turn=rec.turn, before=node.pre, after=node.post, teaching=node.quality or _NOT_MENTIONED,
        attempt=node.attempt.value, mentions=mentions, load=parts.get(iu, 0.0), turn_load=q.effective_load,
        tau=q.overload_threshold, overloaded=q.overload, step_share=node.efficiency, prior_carry=node.prior_carry,
        carry=node.carry, ceiling=node.ceiling_pre, ceiling_used=node.ceiling, mode=why.mode, why=why.why,
        dc=dc_part(mentions, node.pre, node.ceiling_pre, node.post), reason=reason, evidence=evidence,
        evidence_kind=kind)


def iu_stories(run: RunRecord, ius: Sequence[str] | None = None, *, upto: int | None = None) -> dict[str, IUStory]:
    """The stories of ``ius`` (default: every IU of the graph) over ``run``'s turns, up to turn
    ``upto`` — each turn explained once for all of them.

    Raises:
        KeyError: an IU that is not an IU of the run's graph.
    """
    ids = list(run.graph.index.ids) if ius is None else list(ius)
    labels = {iu: run.graph.index.label_of[iu] for iu in ids}  # KeyError for an unknown IU
    turns = run.turns if upto is None else run.turns[: max(0, upto)]
    rows: dict[str, list[StoryTurn]] = {iu: [] for iu in ids}
    for rec in turns:
        facts = _turn(run, rec)
        for iu in ids:
            rows[iu].append(story_turn(run, rec, iu, facts))
    out = {}
    for iu in ids:
        node = run.graph.node(iu)
        out[iu] = IUStory(iu=iu, concept=node.concept, description=node.description,
                          prerequisites=tuple(run.graph.index.prereqs.get(iu, ())),
                          start=run.initial_state.state_of(labels[iu]), reader=run.adapter.get("extractor", ""),
                          turns=tuple(rows[iu]))
    return out


def iu_story(run: RunRecord, iu: str, *, upto: int | None = None) -> IUStory:
    """The story of IU ``iu`` over ``run``'s turns (up to turn ``upto``).

    Raises:
        KeyError: ``iu`` is not an IU of the run's graph.
    """
    return iu_stories(run, [iu], upto=upto)[iu]
