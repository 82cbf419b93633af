"""Where KnowSim's reading and the people disagree: per turn, per IU, and per answer.

:mod:`knowsim_core.evaluation.agreement` says *how far* the reading agrees with people (AUCs with
intervals); this says *where* it does not, from the same judged turns and conversations, so each
disagreement can be opened and read.

**Per turn.** The reading calls a judged turn *good* when its turn score
(:func:`~knowsim_core.evaluation.agreement.turn_score`) is above 0 — more of the IUs it explained
were EFFECTIVE than REDUNDANT, PREREQ-BLOCKED or OVERLOAD-WASTED — *poor* below 0, and *neutral* at 0
(nothing explained, only under-absorbed IUs, or as many good as poor). A good turn with the
person's thumb down, or a poor one with a thumb up, is a disagreement. Only the people's own
thumbs count (researchers' are their own series, as in the headline).

**Per IU.** Each IU a judged turn explained is called by its own mode on the same scale
(EFFECTIVE good; UNDER-ABSORBED neutral; the other three poor) — the turn's call is the sign of
their sum — and tallied per conversation and IU against the thumb.

**Per answer.** For each metric, each rated conversation's answer (correct or not) beside the
metric, and the pairs of a correct and a wrong conversation that run against the metric's stated
direction (:data:`~knowsim_core.evaluation.agreement.METRIC_DIRECTIONS`: a correct answer with
lower DC than a wrong one; a tie counts one half). The share of such pairs is 1 − the AUC the
summary reports for a correct answer (``conversations.correctness``) for a higher-is-better
metric, and that AUC for CO — the same pairs, counted one by one. Each conversation also carries
its IUs' parts in DC (:data:`~knowsim_core.evaluation.iu_story.DC_PARTS`): which IUs were taught
while not teachable, which were teachable and never taught.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from knowsim_core.engine.failures import FailureMode
from knowsim_core.evaluation.iu_story import DC_PARTS

# The agreement module's records (JudgedTurn, Conversation, Agreement) are read by attribute and not
# imported: that module calls this one to build its JSON answer.

GOOD, NEUTRAL, POOR = "good", "neutral", "poor"
CALLS = (GOOD, NEUTRAL, POOR)
GOOD_DOWN, POOR_UP = "good, thumb down", "poor, thumb up"  # the two disagreements
MODE_CALL = {FailureMode.EFFECTIVE: GOOD, FailureMode.UNDER_ABSORBED: NEUTRAL, FailureMode.REDUNDANT: POOR,
             FailureMode.PREREQ_BLOCKED: POOR, FailureMode.OVERLOAD_WASTED: POOR}
SOURCE = "person"  # whose thumbs are counted
CALL_NOTE = ("the reading calls a turn good when its score is above 0 (more IUs EFFECTIVE than REDUNDANT, "
             "PREREQ-BLOCKED or OVERLOAD-WASTED), poor below 0, neutral at 0; an IU by its own mode")


def turn_call(score: float) -> str:
    """The reading's call on a turn from its KnowSim score."""
    return GOOD if score > 0 else POOR if score < 0 else NEUTRAL


def iu_call(mode: str | FailureMode) -> str:
    """The reading's call on one IU of a turn, from its failure mode."""
    return MODE_CALL[FailureMode(mode)]


def kind(call: str, liked: bool) -> str:
    """``GOOD_DOWN``, ``POOR_UP``, "agree" or "neutral" for a call beside a thumb."""
    if call == NEUTRAL:
        return NEUTRAL
    if call == GOOD and not liked:
        return GOOD_DOWN
    if call == POOR and liked:
        return POOR_UP
    return "agree"


def _turns(turns: Sequence[Any]) -> dict[str, Any]:
    table = {c: {"up": 0, "down": 0} for c in CALLS}
    rows = []
    for t in turns:
        call = turn_call(t.scores["knowsim"])
        table[call]["up" if t.liked else "down"] += 1
        rows.append({"run": t.run_id, "turn": t.turn, "liked": t.liked, "model": t.model, "part": t.part,
                     "score": t.scores["knowsim"], "call": call, "kind": kind(call, t.liked),
                     "reply_length": t.scores["reply_length"],
                     "ius": [{"iu": iu, "concept": concept, "mode": FailureMode(m).title, "call": iu_call(m),
                              "kind": kind(iu_call(m), t.liked)} for iu, concept, m in t.explained]})
    return {"n": len(turns), "table": table, GOOD_DOWN: table[GOOD]["down"], POOR_UP: table[POOR]["up"],
            "agree": table[GOOD]["up"] + table[POOR]["down"], NEUTRAL: table[NEUTRAL]["up"] + table[NEUTRAL]["down"],
            "rows": rows}


def _ius(turns: Sequence[Any], conversation: dict[str, str]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for t in turns:
        for iu, concept, m in t.explained:
            cell = cells.setdefault((t.run_id, iu), {
                "run": t.run_id, "conversation": conversation.get(t.run_id, t.run_id), "iu": iu, "concept": concept,
                "judged_turns": 0, GOOD_DOWN: 0, POOR_UP: 0, "agree": 0, NEUTRAL: 0, "turns": []})
            k = kind(iu_call(m), t.liked)
            cell["judged_turns"] += 1
            cell[k] += 1
            if k in (GOOD_DOWN, POOR_UP):
                cell["turns"].append(t.turn)
    rows = list(cells.values())
    rows.sort(key=lambda r: (-(r[GOOD_DOWN] + r[POOR_UP]), r["conversation"], r["iu"]))
    return rows


def _answers(convs: Sequence[Any], directions: Mapping[str, tuple[int, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric, (sign, direction) in directions.items():
        known = [c for c in convs if c.correct is not None and c.metrics.get(metric) is not None]
        if not known:
            continue
        right = [c for c in known if c.correct]
        wrong = [c for c in known if not c.correct]
        rows, total = [], 0.0
        for c in known:
            mine = c.metrics[metric]
            others = [o.metrics[metric] for o in (wrong if c.correct else right)]
            # the stated direction: a correct answer has the better value (higher, or lower for CO)
            against = sum(_against(mine, o, sign) if c.correct else _against(o, mine, sign) for o in others)
            total += against if c.correct else 0.0  # each pair once: counted from its correct side
            rows.append({"run": c.run_id, "conversation": c.conversation, "model": c.model, "level": c.level,
                         "correct": c.correct, "rating": c.rating, "value": mine, "pairs": len(others),
                         "against": against,
                         "dc_parts": [{"iu": iu, "concept": concept, **dict(zip(DC_PARTS, counts))}
                                      for iu, concept, counts in c.dc_parts]})
        pairs = len(right) * len(wrong)
        rows.sort(key=lambda r: (-(r["against"] / r["pairs"] if r["pairs"] else 0.0), r["conversation"]))
        out[metric] = {"direction": direction, "pairs": pairs, "against": total,
                       "share_against": total / pairs if pairs else None, "correct": len(right), "wrong": len(wrong),
                       "rows": rows}
    return out


def _against(correct: float, wrong: float, sign: int) -> float:
    """1 when a (correct, wrong) pair runs against the stated direction, ½ on a tie, else 0."""
    if correct == wrong:
        return 0.5
    return 1.0 if (correct - wrong) * sign < 0 else 0.0


def disagreement(a: Any, *, directions: Mapping[str, tuple[int, str]]) -> dict[str, Any]:
    """The JSON answer for an :class:`~knowsim_core.evaluation.agreement.Agreement`: ``turns`` (the
    call × thumb table, its two disagreement counts and one row per judged turn), ``ius`` (per
    conversation and IU), ``answers`` (per metric with a known answer, in ``directions`` — the
    agreement's stated directions — the pairs against the direction, one row per conversation
    with its IUs' DC parts)."""
    people = [t for t in a.turns if t.source == SOURCE]
    conversation = {c.run_id: c.conversation for c in a.conversations}
    return {"source": SOURCE, "note": CALL_NOTE, "turns": _turns(people), "ius": _ius(people, conversation),
            "answers": _answers(a.conversations, directions)}
