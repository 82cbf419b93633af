"""Offline dialogue-act tagger for a learner's turn in a maths tutoring chat (pure, no model).

Five acts:

* ``math_answer`` — attempts the maths the tutor asked for: a value, a step, a guess, a claim;
* ``not_understanding`` — says they don't know, are stuck or lost;
* ``seek_information`` — asks a clarifying or conceptual question, or asks the tutor to do or
  explain something (stating the problem and asking for help included);
* ``off_topic`` — greetings, goodbyes, giving up, remarks about the tutor rather than the maths;
* ``acknowledge`` — acknowledges the tutor's previous turn ("thanks, that makes sense").

The rules read surface cues in a fixed order, most specific first. They were written on half of
the hand-labelled real conversations and measured on the other half (README, "Real conversations
and realism"): they are general cue lists, not fitted to particular messages. When no cue fires a
statement is read as an attempt, because in a tutoring chat a learner's statement usually is one.

The rules themselves live in :mod:`knowsim_core.text.dialogue_acts` (a user simulator reads acts
too, and agents sit below evaluation); this module re-exports them beside the agreement measures.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from knowsim_core.evaluation import scoring
from knowsim_core.text.dialogue_acts import (  # noqa: F401  (the one tagger, re-exported)
    ACKNOWLEDGE, ACTS, MATH_ANSWER, NOT_UNDERSTANDING, OFF_TOPIC, SEEK_INFORMATION, is_attempt, tag)


# ---------------------------------------------------------------------- agreement
def confusion(gold: Sequence[str], pred: Sequence[str], labels: Iterable[str] = ACTS) -> dict[str, dict[str, int]]:
    """``{gold: {pred: count}}`` over ``labels``."""
    return scoring.classification(gold, pred, labels)["matrix"]


def macro_f1(gold: Sequence[str], pred: Sequence[str], labels: Iterable[str] = ACTS) -> float:
    """Unweighted mean of per-label F1 over ``labels`` (a label never gold nor predicted scores 0)."""
    return scoring.classification(gold, pred, labels)["macro_f1"]


def accuracy(gold: Sequence[str], pred: Sequence[str]) -> float:
    return scoring.classification(gold, pred, ACTS)["accuracy"]


# ---------------------------------------------------------------------- the hand-labelled protocol
PARTS = ("even", "odd", "second-problem")


def labelled_parts(labels: dict, records: Sequence[dict]) -> dict[str, tuple[list[str], list[str]]]:
    """Gold and tagged acts of the hand-labelled turns (``tests/data/act_labels.json``), by part.

    ``even`` / ``odd``: the problem-1 turns of the conversations at even / odd positions of the label
    file (the rules were written on ``even``); ``second-problem``: every conversation's later turns,
    labelled after the rules were frozen. ``records`` are the SimulatorArena annotation records the
    text is read from (the label file holds no text). One owner for the README's table and the test.
    """
    text = {f"{r['problem_id']}:{r['workerId']}": r["user_queries"] for r in records}
    first = {f"{r['problem_id']}:{r['workerId']}": r["problem_1_turns"] for r in records}
    pos = {k: i for i, k in enumerate(labels["conversations"])}
    out: dict[str, tuple[list[str], list[str]]] = {p: ([], []) for p in PARTS}
    for key, turn, label in labels["labels"]:
        part = "second-problem" if turn > first[key] else ("odd" if pos[key] % 2 else "even")
        out[part][0].append(label)
        out[part][1].append(tag(text[key][turn - 1]))
    return out
