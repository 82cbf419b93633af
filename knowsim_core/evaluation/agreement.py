"""Does KnowSim's reading agree with what people said? (issue 21)

Three comparisons over a database, each with its n, a bootstrap 95% interval and a baseline:

* **Per turn** — every judged tutor turn (a person's thumb imported with a recorded conversation,
  or a researcher's given in Simulate) against KnowSim's reading of that turn. The reading's
  per-turn score (:func:`turn_score`) is how well the turn's delivery matched the learner's state:
  ``(effective − redundant − prereq_blocked − overload_wasted) / explained`` over the IUs the turn
  explained (under-absorbed counts 0: taught, not absorbed, not a mismatch), 0 when it explained
  none; −1…1. Reported as ROC AUC for 👍 vs 👎, beside the reply's length in characters (a
  baseline that knows nothing of the learner) and the number of IUs that moved up. Each failure
  mode's rate (share of turns with at least one IU in that mode) among 👍 and among 👎 turns.
* **Per conversation** — KG, DC, CO (and IQ where judged) of each human reading against the
  person's rating (Spearman, Kendall) and their final answer's correctness (AUC).
* **Tutor-model pairs** (the paper's sign agreement) — within an expertise level, for each pair
  of tutor models with at least :data:`MIN_CELL` conversations each whose human ratings differ
  clearly (|Cliff's δ| ≥ :data:`CLIFFS_MIN`, "medium" in Romano et al. 2006), does the sign of the
  difference in mean KnowSim metric (KG) match the sign of the difference in mean rating? A
  one-sided binomial test against chance (optimistic: pairs that share a model share its
  conversations, so they are not independent); a zero metric difference counts as disagreement;
  with fewer than :data:`MIN_PAIRS` such pairs the answer says plainly that it cannot conclude.

Intervals are percentile bootstraps over *conversations* (runs), not turns: turns of one
conversation are not independent. Person thumbs whose voted text matched no reply
(``match = mismatch``) and conversations without a reading are left out and counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.evaluation import scoring
from knowsim_core.formats.judgments import Judgment
from knowsim_core.services.reading import has_reading, is_human_reading

METRICS = ("kg", "dc", "co", "iq")
PAIR_METRIC = "kg"
CLIFFS_MIN = 0.33
MIN_CELL = 2
MIN_PAIRS = 5
RESAMPLES = 2000
SCORES = ("knowsim", "upward", "reply_length")
SCORE_NOTES = {
    "knowsim": "(effective − redundant − prereq_blocked − overload_wasted) / IUs explained; 0 if none",
    "upward": "IUs that moved up this turn",
    "reply_length": "characters in the tutor's reply (baseline: knows nothing of the learner)",
}
CORRECT = {"correct", "yes", "true", "1"}
INCORRECT = {"incorrect", "wrong", "no", "false", "0"}


def turn_score(rec: TurnRecord) -> float:
    """KnowSim's per-turn score of a reading (module docstring)."""
    counts = rec.mode_counts()
    n = sum(counts.values())
    if not n:
        return 0.0
    good = counts[FailureMode.EFFECTIVE]
    bad = counts[FailureMode.REDUNDANT] + counts[FailureMode.PREREQ_BLOCKED] + counts[FailureMode.OVERLOAD_WASTED]
    return (good - bad) / n


@dataclass(frozen=True)
class JudgedTurn:
    run_id: str
    turn: int
    liked: bool
    source: str
    scores: dict[str, float]
    modes: tuple[str, ...]  # the failure modes present in the turn (distinct)


@dataclass(frozen=True)
class Conversation:
    run_id: str
    conversation: str
    level: str
    model: str
    rating: float | None
    correct: bool | None
    metrics: dict[str, float | None]
    turns: int = 0


@dataclass
class Agreement:
    turns: list[JudgedTurn] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def correctness(value: Any) -> bool | None:
    """True/False for the stated wordings of a correct/incorrect final answer, else None."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower() if value is not None else ""
    return True if v in CORRECT else False if v in INCORRECT else None


def _metric_values(run: RunRecord, iq: float | None) -> dict[str, float | None]:
    m = run.metrics()
    return {"kg": float(m.knowledge_gain), "dc": float(m.delivery_calibration), "co": float(m.cognitive_overload),
            "iq": iq}


def collect(store, *, extractor: str | None = None, reading: str = "stored", part: str | None = None,
            resamples: int = RESAMPLES) -> Agreement:
    """The judged turns and the rated human readings of ``store`` (``extractor``: only readings by it).

    ``reading``: ``stored`` (the readings as imported) or ``learner-evidence`` (human readings by an
    offline extractor read again with :mod:`knowsim_core.services.reading_evidence`'s rules);
    ``part``: only the human conversations of that protocol part (``A`` or ``B``).
    """
    from knowsim_core.services.reading_evidence import READINGS, part_of_run, reread

    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; expected one of {', '.join(READINGS)}")
    extractors: dict[str, Any] = {}
    out = Agreement(excluded=defaultdict(int))
    judged = store.all_judgments()
    rows = {r.id: r for r in store.list_runs(user="human", limit=1_000_000)}
    wanted = set(rows) | set(judged)
    # a stable order (question ids come from the source ids; run ids are random per import), so the
    # seeded bootstrap gives the same interval for the same conversations in any database
    for rid in sorted(wanted, key=lambda r: (rows[r].question_id if r in rows else "", r)):
        run = store.load_run(rid)
        if extractor and run.adapter.get("extractor") != extractor:
            continue
        readable = has_reading(run)
        human = is_human_reading(run)
        if part is not None and (not human or part_of_run(run) != part):
            continue
        if reading != "stored" and human and readable:
            ex_id = run.adapter.get("extractor", "")
            from knowsim_core.agents.registry import spec_of

            if not spec_of(ex_id).offline:
                out.excluded["readings by a model extractor (not read again)"] += 1
                continue
            if ex_id not in extractors:
                from knowsim_core.agents import registry

                extractors[ex_id] = registry.resolve("extractor", ex_id)
            run = reread(run, extractors[ex_id])
        if human and not readable:
            out.excluded["conversations without a reading"] += 1
        for j in judged.get(rid, ()):
            if j.match == "mismatch":
                out.excluded["thumbs whose text matched no reply"] += 1
                continue
            if not readable:
                out.excluded["judgments on runs without a reading"] += 1
                continue
            out.turns.append(_judged_turn(rid, run.turns[j.turn - 1], j))
        if human and readable:
            meta = dict(run.meta)
            rating = meta.get("rating")
            row = rows.get(rid)
            out.conversations.append(Conversation(
                run_id=rid, conversation=str(meta.get("conversation", rid)), level=run.level,
                model=str(meta.get("tutor_model") or run.adapter.get("assistant", "").removeprefix("recorded/")),
                rating=float(rating) if isinstance(rating, (int, float)) and not isinstance(rating, bool) else None,
                correct=correctness(meta.get("correctness")),
                metrics=_metric_values(run, row.iq_score if row else None), turns=len(run.turns),
            ))
    out.excluded = dict(out.excluded)
    out.summary = summarise(out, resamples=resamples)
    out.summary["reading"] = reading
    out.summary["part"] = part or "all"
    return out


def _judged_turn(rid: str, rec: TurnRecord, j: Judgment) -> JudgedTurn:
    return JudgedTurn(
        run_id=rid, turn=rec.turn, liked=j.liked, source=j.source,
        scores={"knowsim": turn_score(rec), "upward": float(rec.quantities.n_upward_transitions),
                "reply_length": float(len(rec.assistant_message))},
        modes=tuple(sorted({m.value for _, m in rec.modes})),
    )


# ---------------------------------------------------------------------- the figures
def _by_run(items: list, key: str = "run_id") -> list[list]:
    groups: dict[str, list] = defaultdict(list)
    for it in items:
        groups[getattr(it, key)].append(it)
    return list(groups.values())


def _turn_auc(groups: list[list[JudgedTurn]], score: str) -> float | None:
    flat = [t for g in groups for t in g]
    return scoring.auc([t.scores[score] for t in flat if t.liked], [t.scores[score] for t in flat if not t.liked])


def summarise(a: Agreement, *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The JSON answer (issue 21's shape)."""
    turns, convs = a.turns, a.conversations
    groups = _by_run(turns)
    up, down = [t for t in turns if t.liked], [t for t in turns if not t.liked]
    scores = {}
    for s in SCORES:
        scores[s] = {"auc": _turn_auc(groups, s), "n": len(turns),
                     "ci": scoring.bootstrap_ci(groups, lambda g, s=s: _turn_auc(g, s), resamples=resamples),
                     "definition": SCORE_NOTES[s]}
    modes = {}
    for m in [*(x.value for x in FAILURE_ORDER), "none_explained"]:
        def rate(ts: list[JudgedTurn], m: str = m) -> float | None:
            if not ts:
                return None
            return sum((not t.modes) if m == "none_explained" else (m in t.modes) for t in ts) / len(ts)
        modes[m] = {"up": rate(up), "down": rate(down)}
    votes = {"n": len(turns), "up": len(up), "down": len(down), "conversations": len(groups),
             "sources": {src: sum(t.source == src for t in turns) for src in ("person", "researcher")},
             "scores": scores, "modes": modes}

    rating: dict[str, Any] = {}
    correct: dict[str, Any] = {}
    for metric in METRICS:
        rated = [c for c in convs if c.rating is not None and c.metrics.get(metric) is not None]
        if metric == "iq" and not rated:
            continue
        corr = scoring.rank_correlations([c.metrics[metric] for c in rated], [c.rating for c in rated])

        def rho(cs: list[Conversation], metric: str = metric) -> float | None:
            return scoring.spearman([c.metrics[metric] for c in cs], [c.rating for c in cs])
        rating[metric] = {**corr, "n": len(rated), "ci": scoring.bootstrap_ci(rated, rho, resamples=resamples)}
        known = [c for c in convs if c.correct is not None and c.metrics.get(metric) is not None]

        def area(cs: list[Conversation], metric: str = metric) -> float | None:
            return scoring.auc([c.metrics[metric] for c in cs if c.correct],
                               [c.metrics[metric] for c in cs if not c.correct])
        correct[metric] = {"auc": area(known), "n": len(known), "correct": sum(bool(c.correct) for c in known),
                           "ci": scoring.bootstrap_ci(known, area, resamples=resamples)}
    conversations = {"n": len(convs), "rated": sum(c.rating is not None for c in convs),
                     "rating": rating, "correctness": correct}
    return {"votes": votes, "conversations": conversations, "pairs": sign_agreement(convs),
            "excluded": a.excluded, "notes": {
                "ci": f"percentile bootstrap 95% over conversations ({resamples} resamples, seed 0)",
                "rating_ci": "interval of Spearman's rho"}}


def sign_agreement(convs: list[Conversation], *, metric: str = PAIR_METRIC) -> dict[str, Any]:
    """The paper's sign agreement across tutor-model pairs within an expertise level (module docstring)."""
    cells: dict[tuple[str, str], list[Conversation]] = defaultdict(list)
    for c in convs:
        if c.rating is not None and c.metrics.get(metric) is not None:
            cells[(c.level, c.model)].append(c)
    pairs, skipped_small, skipped_close = [], 0, 0
    levels = sorted({lv for lv, _ in cells})
    for level in levels:
        models = sorted(m for lv, m in cells if lv == level)
        for a, b in combinations(models, 2):
            ca, cb = cells[(level, a)], cells[(level, b)]
            if len(ca) < MIN_CELL or len(cb) < MIN_CELL:
                skipped_small += 1
                continue
            delta = scoring.cliffs_delta([c.rating for c in ca], [c.rating for c in cb])
            if delta is None or abs(delta) < CLIFFS_MIN:
                skipped_close += 1
                continue
            d_metric = _mean([c.metrics[metric] for c in ca]) - _mean([c.metrics[metric] for c in cb])
            d_rating = _mean([c.rating for c in ca]) - _mean([c.rating for c in cb])
            pairs.append({"level": level, "a": a, "b": b, "n_a": len(ca), "n_b": len(cb), "cliffs_delta": delta,
                          "metric_diff": d_metric, "rating_diff": d_rating,
                          # the rated direction is δ's (it qualified the pair): equal mean ratings with
                          # |δ| ≥ the threshold still say which model people preferred
                          "agree": d_metric != 0 and (d_metric > 0) == (delta > 0)})
    agree = sum(p["agree"] for p in pairs)
    conclusive = len(pairs) >= MIN_PAIRS
    note = (f"{len(pairs)} pair(s) qualify; at least {MIN_PAIRS} are needed to conclude anything"
            if not conclusive else f"{agree} of {len(pairs)} pairs agree in sign")
    return {"n": len(pairs), "agree": agree, "p": scoring.binomial_p(agree, len(pairs)), "metric": metric,
            "cliffs_delta_min": CLIFFS_MIN, "min_cell": MIN_CELL, "conclusive": conclusive, "note": note,
            "skipped_small_cells": skipped_small, "skipped_close_ratings": skipped_close,
            "cells": {f"{lv} / {m}": len(cs) for (lv, m), cs in sorted(cells.items())}, "pairs": pairs}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def to_json(a: Agreement) -> dict[str, Any]:
    """The summary plus the rows a viewer links from (judged turns, rated conversations)."""
    return {**a.summary,
            "turns": [{"run": t.run_id, "turn": t.turn, "liked": t.liked, "source": t.source, **t.scores,
                       "modes": list(t.modes)} for t in a.turns],
            "runs": [{"run": c.run_id, "conversation": c.conversation, "level": c.level, "model": c.model,
                      "rating": c.rating, "correct": c.correct, "turns": c.turns, **c.metrics} for c in a.conversations]}
