"""Reading rules from the learner's own words (the reading improved where the evidence says it is
wrong) — an *optional* alternative reading, compared with the plain one by
``agreement --reading learner-evidence``; the stored readings are not changed by it.

The plain reading credits what the tutor taught: a well-explained IU moves up one step whatever
the person says. Reading real conversations (the development part of the protocol, below) showed
three ways the reading and the conversation part company:

* **"I have no idea"** (:data:`CONFUSED`): the person says they do not know or understand, and the
  reading still takes a well-explained IU a full step — to knows-well, in one conversation — on
  that very turn. Rule *confused*: on such a turn the tutor's ``well_explained`` labels count as
  ``shallow`` (an unaware IU still becomes struggling; nothing further moves this turn).
* **Knowing is shown, not told** (rule *own-attempt*): the step from partial understanding to
  knows-well is credited only for an IU the person has attempted themselves (extractor attempt ≠
  none, this turn or before); otherwise the tutor's ``well_explained`` on it counts as ``shallow``.
  Without it a greeting answered by a good explanation makes the IU "known well" at turn 1 and
  every later turn on it "redundant".
* **Worked maths without naming it** (rule *worked-math*): a reply that names no IU but works the
  problem (≥ :data:`MIN_WORKED` equations, display maths, fractions or powers) reads all
  ``not_mentioned``; the rule carries the previous reply's IUs on as ``shallow``.

**Protocol** (so the rules cannot fit the shared conversations): the conversations are split by
the first hex digit of SHA-256 of ``"<problem_id>:<workerId>"`` (:func:`part`): 0–7 is part A, on
which the rules were written, their phrases chosen and each rule kept or dropped; 8–f is part B,
read only to measure. Both parts' before/after agreement is reported, B being the held-out figure
(``benchmarks/reading_protocol.py``).

The criterion for keeping a rule, applied on part A only: it must raise part A's thumbs AUC of the
turn score without lowering KG's AUC for a correct answer. (Part B was measured once, after
*own-attempt* was adopted; *worked-math* was tried afterwards and dropped on part A's figures.) On part A (8 conversations, 22
judged turns; stored reading: AUC 0.76, KG-correct AUC 0.13) *own-attempt* gave 0.81 and 0.27 —
kept; *confused* 0.76 (0.7588) and 0.07 — dropped; *worked-math* 0.74 and 0.20 — dropped. So only
*own-attempt* is adopted (:data:`ADOPTED`); the others stay available by name for others to test.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from knowsim_core.engine.ports import ExtractorContext, QuestionMaterial
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.signals import AttemptType, IUSignal, TeachingQuality
from knowsim_core.engine.state import IUState
from knowsim_core.services.reading import read_turns

RULES = ("confused", "own-attempt", "worked-math")  # every rule written on part A
ADOPTED = ("own-attempt",)  # the rules part A supported (module docstring: the others did not)
READINGS = ("stored", "learner-evidence")
CONFUSED = re.compile(
    r"\b(no idea|(do not|don'?t|dont) (know|understand|get it)|not sure|i'?m (lost|stuck|confused)|confus\w*|"
    r"what do you mean|doesn'?t make sense|very difficult)\b", re.IGNORECASE)
_WELL, _SHALLOW = TeachingQuality.WELL_EXPLAINED.value, TeachingQuality.SHALLOW.value
WORKED = re.compile(r"=|\\\[|\$\$|\\frac|\^")  # a worked step: an equation, display maths, a fraction, a power
MIN_WORKED = 3  # worked steps in a reply that names no IU before the previous turn's IUs are carried on


def part(conversation_key: str) -> str:
    """"A" (rules written on it) or "B" (held out) for a conversation key (module docstring)."""
    return "A" if int(hashlib.sha256(conversation_key.encode("utf-8")).hexdigest()[0], 16) < 8 else "B"


def part_of_run(run: RunRecord) -> str:
    """The protocol part of a stored human reading (by its conversation key)."""
    return part(str(dict(run.meta).get("conversation") or run.run_id or ""))


class LearnerEvidence:
    """The rules as a reading adjustment (:data:`knowsim_core.services.reading.Adjust`), one per
    conversation (it remembers which IUs the person has attempted)."""

    def __init__(self, rules: tuple[str, ...] = ADOPTED):
        unknown = set(rules) - set(RULES)
        if unknown:
            raise ValueError(f"unknown reading rule(s) {sorted(unknown)}; expected {RULES}")
        self.rules = rules
        self.attempted: set[str] = set()
        self.previous: tuple[str, ...] = ()  # IUs the previous turn's reply explained

    def __call__(self, ctx: ExtractorContext, entries: tuple[IUSignal, ...]) -> tuple[IUSignal, ...]:
        self.attempted |= {e.id for e in entries if e.id and e.attempt != AttemptType.NONE}
        confused = "confused" in self.rules and bool(CONFUSED.search(ctx.user_message or ""))
        graph = ctx.material.graph
        label_of = dict(zip(graph.index.ids, graph.index.labels))
        taught = [e.id for e in entries if e.teaching_quality in (_WELL, _SHALLOW) and e.id in label_of]
        if ("worked-math" in self.rules and not taught and self.previous
                and len(WORKED.findall(ctx.assistant_message or "")) >= MIN_WORKED):
            # the tutor keeps working the same maths without naming it: read it as the same IUs, shallow
            carried = {e.id for e in entries}
            entries = (*[replace(e, teaching_quality=_SHALLOW) if e.id in self.previous else e for e in entries],
                       *[IUSignal(id=i, teaching_quality=_SHALLOW, concept="", reasoning="carried on: worked maths "
                                  "without naming the concept") for i in self.previous if i not in carried])
            taught = list(self.previous)
        self.previous = tuple(taught) or self.previous
        out = []
        for e in entries:
            if e.teaching_quality == _WELL and e.id in label_of:
                pre = ctx.state.state_of(label_of[e.id])
                unshown = "own-attempt" in self.rules and pre >= IUState.PARTIAL and e.id not in self.attempted
                if confused or unshown:
                    e = replace(e, teaching_quality=_SHALLOW)
            out.append(e)
        return tuple(out)


def reread(run: RunRecord, extractor, rules: tuple[str, ...] = ADOPTED) -> RunRecord:
    """The run read again from its stored messages with :class:`LearnerEvidence` (same start, same
    extractor, same parameters) — for measuring, not storing (turn notes are not carried over)."""
    material = QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph, run.domain or "math")
    pairs = [(t.user_message, t.assistant_message) for t in run.turns]
    turns = read_turns(material, pairs, run.initial_state, extractor=extractor, params=run.params,
                       adjust=LearnerEvidence(rules))
    return run.with_turns(turns, run.stop_reason)
