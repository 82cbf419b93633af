"""Does KnowSim's reading agree with what people said, and does that replicate?

Three comparisons over a database, each with its n, a bootstrap 95% interval and a baseline:

* **Per turn** — every tutor turn a person judged (a thumb imported with a recorded conversation)
  against KnowSim's reading of that turn. The reading's per-turn score (:func:`turn_score`) is how
  well the turn's delivery matched the learner's state: ``(effective − redundant − prereq_blocked −
  overload_wasted) / explained`` over the IUs the turn explained (under-absorbed counts 0: taught,
  not absorbed, not a mismatch), 0 when it explained none; −1…1. Reported as ROC AUC for 👍 vs 👎,
  pooled over all judged turns and *within conversations* (only pairs of a 👍 and a 👎 turn of the
  same conversation: what is left once "which conversation" is taken away), beside two baselines
  that know nothing of KnowSim's reading. **Every score states its direction before anything is
  measured** (:data:`DIRECTIONS`: a higher KnowSim score is liked, *shorter* replies are liked, more
  IUs moved up is liked) and its AUC is computed in that direction — never flipped after seeing the
  data, so a baseline below 0.5 says its stated direction was wrong. Researchers' own thumbs (given
  in Simulate) are a series of their own beside the people's, never part of the headline.
* **Per conversation** — KG, DC, CO (and IQ where judged) of each human reading against the
  person's rating (Spearman, Kendall) and their final answer's correctness (AUC).
* **Tutor-model pairs** (the paper's sign agreement on the people's own conversations) — within an
  expertise level, for each pair of tutor models with at least :data:`MIN_CELL` conversations each
  whose human ratings differ clearly (|Cliff's δ| ≥ :data:`CLIFFS_MIN`, "medium" in Romano et al.
  2006), does the sign of the difference in mean KG match the sign of the difference in ratings?
  A one-sided binomial test against chance (optimistic: pairs that share a model share its
  conversations); a zero metric difference counts as disagreement. It is *conclusive* only with at
  least :data:`MIN_PAIRS` pairs **and** p < :data:`ALPHA`.

**Replication.** Each figure is computed on the whole and on two fixed parts of the conversations
(the stated hash split of :func:`knowsim_core.services.reading_evidence.part`, or a split the
researcher names), side by side. An AUC *replicates* when both parts' intervals lie above 0.5 and
*does not replicate* when one does and the other includes or lies below 0.5 (:func:`replication`);
the KnowSim score is *not distinguishable from a baseline* when its interval overlaps that
baseline's oriented interval (:func:`versus`).

Conversations without a reading (their problem has no concepts) are counted in every table with
their thumbs, rating and the stored reason; they carry no KnowSim figure. Intervals are percentile
bootstraps over *conversations* (runs), not turns: turns of one conversation are not independent.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Callable

from knowsim_core.agents import registry
from knowsim_core.engine.agent_id import RECORDED, parse_id
from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.evaluation import scoring
from knowsim_core.evaluation.agreement_words import (ALPHA, MIN_PAIRS, RESAMPLES, auc_with_ci, read_auc, read_p,
                                                     read_rho, replication, rho_with_ci, versus)
from knowsim_core.formats.judgments import Judgment, rating_of
from knowsim_core.evaluation.disagreement import disagreement
from knowsim_core.evaluation.iu_story import DC_PARTS, dc_part
from knowsim_core.services.reader_trust import reading_note, verdict_basis
from knowsim_core.services.reading import NO_READING_KEY, has_reading, is_human_reading
from knowsim_core.services.reading_evidence import READINGS, part_of_run, reread
from knowsim_core.storage.run_filter import RunFilter

METRICS = ("kg", "dc", "co", "iq")
PAIR_METRIC = "kg"
CLIFFS_MIN = 0.33
MIN_CELL = 2
SCORES = ("knowsim", "upward", "reply_length")
BASELINES = ("upward", "reply_length")
# Declared before anything is measured: +1 "a higher value is liked", −1 "a lower one is".
# The AUC of every score is computed in its stated direction and never flipped afterwards.
DIRECTIONS: dict[str, tuple[int, str]] = {
    "knowsim": (1, "a higher score is liked"),
    "upward": (1, "more IUs moved up is liked"),
    "reply_length": (-1, "a shorter reply is liked"),
}
METRIC_DIRECTIONS: dict[str, tuple[int, str]] = {
    "kg": (1, "more knowledge gained is better"), "dc": (1, "better-calibrated delivery is better"),
    "co": (-1, "less overload is better"), "iq": (1, "a higher judged quality is better"),
}
SCORE_NOTES = {
    "knowsim": "(effective − redundant − prereq_blocked − overload_wasted) / IUs explained; 0 if none",
    "upward": "IUs that moved up this turn",
    "reply_length": "characters in the tutor's reply (baseline: knows nothing of the learner)",
}
CORRECT = {"correct", "yes", "true", "1"}
INCORRECT = {"incorrect", "wrong", "no", "false", "0"}
SPLIT_HASH = "hash"
SPLIT_NOTE = ("Parts by the first hex digit of SHA-256 of the conversation key (problem_id:workerId): "
              "0–7 part A, 8–f part B")
UNREAD_NOTE = "no KnowSim reading, so no score: counted with its thumbs and rating, left out of every figure"


def turn_score(rec: TurnRecord) -> float:
    """KnowSim's per-turn score of a reading (module docstring)."""
    counts = rec.mode_counts()
    n = sum(counts.values())
    if not n:
        return 0.0
    good = counts[FailureMode.EFFECTIVE]
    bad = counts[FailureMode.REDUNDANT] + counts[FailureMode.PREREQ_BLOCKED] + counts[FailureMode.OVERLOAD_WASTED]
    return (good - bad) / n


def oriented(score: str, value: float) -> float:
    """``value`` in the score's declared direction (:data:`DIRECTIONS`): larger means "liked"."""
    return DIRECTIONS[score][0] * value


@dataclass(frozen=True)
class JudgedTurn:
    run_id: str
    turn: int
    liked: bool
    source: str
    scores: dict[str, float]  # raw values; AUCs orient them by DIRECTIONS
    modes: tuple[str, ...]  # the failure modes present in the turn (distinct)
    part: str = "A"
    model: str = ""
    explained: tuple[tuple[str, str, str], ...] = ()  # (IU, concept, mode) per IU the turn explained, in rec.modes order


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
    part: str = "A"
    question_id: str = ""
    reader: str = ""  # the extractor whose reading this is
    domain: str = ""
    n_ius: int = 0  # IUs of the conversation's graph
    mentioned: int = 0  # (turn, IU) pairs read as mentioned
    pairs: int = 0  # (turn, IU) pairs read
    dc_parts: tuple[tuple[str, str, tuple[int, ...]], ...] = ()  # (IU, concept, turns per iu_story.DC_PARTS)


@dataclass(frozen=True)
class Unread:
    """A human conversation kept without a KnowSim reading, with what people said about it."""
    run_id: str
    conversation: str
    reason: str
    up: int
    down: int
    rating: float | None
    correct: bool | None
    part: str
    level: str = ""
    model: str = ""
    question_id: str = ""


@dataclass
class Agreement:
    turns: list[JudgedTurn] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
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


def load_split(path: str | Path) -> frozenset[str]:
    """A researcher's named split: a text file listing part A's conversations (conversation keys such
    as ``331:8f7a…`` or run ids), one a line, ``#`` comments allowed; every other conversation is B."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    keys = frozenset(s for s in (ln.split("#", 1)[0].strip() for ln in lines) if s)
    if not keys:
        raise ValueError(f"{path}: the split names no conversation; list part A's conversation keys or run ids")
    return keys


def _part_of(run: RunRecord, rid: str, split: frozenset[str] | None) -> str:
    if split is None:
        return part_of_run(run)
    key = str(dict(run.meta).get("conversation") or "")
    return "A" if (key in split or rid in split) else "B"


def _model_of(run: RunRecord) -> str:
    tutor = parse_id(run.adapter.get("assistant", ""))  # a recording names the model it recorded
    return str(dict(run.meta).get("tutor_model") or (tutor.name if tutor.provider == RECORDED else tutor.id))


def collect(store, *, extractor: str | None = None, reading: str = "stored", part: str | None = None,
            split: frozenset[str] | None = None, resamples: int = RESAMPLES) -> Agreement:
    """The judged turns and the rated human readings of ``store`` (``extractor``: only readings by it).

    ``reading``: ``stored`` (the readings as imported) or ``learner-evidence`` (human readings by an
    offline extractor read again with :mod:`knowsim_core.services.reading_evidence`'s rules);
    ``split``: part A's conversation keys or run ids (:func:`load_split`), else the hash split;
    ``part``: only the human conversations of that part (``A`` or ``B``).
    """
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; expected one of {', '.join(READINGS)}")
    extractors: dict[str, Any] = {}
    out = Agreement(excluded=defaultdict(int))
    judged = store.judgments.all()
    rows = {r.id: r for r in store.search.list(RunFilter(user="human"), limit=1_000_000)}
    wanted = set(rows) | set(judged)
    # a stable order (question ids come from the source ids; run ids are random per import), so the
    # seeded bootstrap gives the same interval for the same conversations in any database
    for rid in sorted(wanted, key=lambda r: (rows[r].question_id if r in rows else "", r)):
        run = store.runs.load(rid)
        readable = has_reading(run)
        human = is_human_reading(run)
        if extractor and run.adapter.get("extractor") != extractor and readable:
            continue
        where = _part_of(run, rid, split)
        if part is not None and (not human or where != part):
            continue
        if reading != "stored" and human and readable:
            ex_id = run.adapter.get("extractor", "")
            if not registry.spec_of(ex_id).offline:
                out.excluded["readings by a model extractor (not read again)"] += 1
                continue
            if ex_id not in extractors:
                extractors[ex_id] = registry.resolve("extractor", ex_id)
            run = reread(run, extractors[ex_id])
        meta = dict(run.meta)
        kept = []
        for j in judged.get(rid, ()):
            if j.match == "mismatch":
                out.excluded["thumbs whose text matched no reply"] += 1
                continue
            kept.append(j)
        if not readable:
            if human:
                people = [j for j in kept if j.source == "person"]
                if len(people) < len(kept):
                    out.excluded["researchers' thumbs on conversations without a reading"] += len(kept) - len(people)
                out.unread.append(Unread(
                    run_id=rid, conversation=str(meta.get("conversation", rid)),
                    reason=str(meta.get(NO_READING_KEY) or "the conversation has no IU graph"),
                    up=sum(j.liked for j in people), down=sum(not j.liked for j in people),
                    rating=rating_of(meta.get("rating")), correct=correctness(meta.get("correctness")), part=where,
                    level=run.level, model=_model_of(run), question_id=run.question_id))
            elif kept:
                out.excluded["judgments on runs without a reading"] += len(kept)
            continue
        model = _model_of(run)
        concepts = {n.id: n.concept for n in run.graph.nodes}
        for j in kept:
            out.turns.append(_judged_turn(rid, run.turns[j.turn - 1], j, where, model, concepts))
        if human:
            row = rows.get(rid)
            out.conversations.append(Conversation(
                run_id=rid, conversation=str(meta.get("conversation", rid)), level=run.level, model=model,
                rating=rating_of(meta.get("rating")), correct=correctness(meta.get("correctness")),
                metrics=_metric_values(run, row.iq_score if row else None), turns=len(run.turns), part=where,
                question_id=run.question_id, reader=run.adapter.get("extractor", ""), domain=run.domain,
                n_ius=len(run.graph.nodes), mentioned=sum(1 for t in run.turns for x in t.signals if x.mentioned),
                pairs=sum(len(t.signals) for t in run.turns), dc_parts=_dc_parts(run),
            ))
    out.excluded = dict(out.excluded)
    out.summary = summarise(out, resamples=resamples)
    out.summary["reading"] = reading
    out.summary["reader"] = reader_trust(out.conversations)
    out.summary["part"] = part or "all"
    out.summary["split"] = {"kind": SPLIT_HASH if split is None else "named",
                            "note": SPLIT_NOTE if split is None else
                            f"part A: the {len(split)} conversation(s) the researcher listed; part B: every other"}
    return out


def _judged_turn(rid: str, rec: TurnRecord, j: Judgment, part: str = "A", model: str = "",
                 concepts: dict[str, str] | None = None) -> JudgedTurn:
    concepts = concepts or {}
    return JudgedTurn(
        run_id=rid, turn=rec.turn, liked=j.liked, source=j.source,
        scores={"knowsim": turn_score(rec), "upward": float(rec.quantities.n_upward_transitions),
                "reply_length": float(len(rec.assistant_message))},
        modes=tuple(sorted({m.value for _, m in rec.modes})), part=part, model=model,
        explained=tuple((iu, concepts.get(iu, ""), m.value) for iu, m in rec.modes),
    )


def _dc_parts(run: RunRecord) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    """Per IU of the run, how many turns it took each part in DC (:data:`knowsim_core.evaluation.iu_story.DC_PARTS`)."""
    counts = {n.id: dict.fromkeys(DC_PARTS, 0) for n in run.graph.nodes}
    for rec in run.turns:
        mentions: Counter[str] = Counter(x.id for x in rec.signals if x.mentioned and x.id is not None)
        for node in rec.nodes:
            part = dc_part(mentions[node.id], node.pre, node.ceiling_pre, node.post)
            if part and node.id in counts:
                counts[node.id][part] += 1
    return tuple((n.id, n.concept, tuple(counts[n.id][p] for p in DC_PARTS)) for n in run.graph.nodes
                 if n.id in counts)


# ---------------------------------------------------------------------- the figures
def _by_run(items: list, key: str = "run_id") -> list[list]:
    groups: dict[str, list] = defaultdict(list)
    for it in items:
        groups[getattr(it, key)].append(it)
    return list(groups.values())


def _turn_auc(groups: list[list[JudgedTurn]], score: str) -> float | None:
    flat = [t for g in groups for t in g]
    return scoring.auc([oriented(score, t.scores[score]) for t in flat if t.liked],
                       [oriented(score, t.scores[score]) for t in flat if not t.liked])


def within_auc(groups: list[list[JudgedTurn]], score: str) -> float | None:
    """AUC over the (👍, 👎) pairs of turns of the *same* conversation, in the score's direction: the
    share of such pairs where the liked turn scores higher (a tie counts one half). None without a pair."""
    wins = pairs = 0.0
    for g in groups:
        up = [oriented(score, t.scores[score]) for t in g if t.liked]
        down = [oriented(score, t.scores[score]) for t in g if not t.liked]
        for u in up:
            for d in down:
                wins += 1.0 if u > d else 0.5 if u == d else 0.0
        pairs += len(up) * len(down)
    return wins / pairs if pairs else None


def _units(groups: list[list[JudgedTurn]], score: str) -> list[tuple[list[float], list[float]]]:
    return [([oriented(score, t.scores[score]) for t in g if t.liked],
             [oriented(score, t.scores[score]) for t in g if not t.liked]) for g in groups]


# ---------------------------------------------------------------------- one table
def _score_entry(groups: list[list[JudgedTurn]], s: str, n: int, resamples: int) -> dict[str, Any]:
    value, ci = auc_with_ci(_units(groups, s), resamples=resamples)
    return {"auc": value, "n": n, "ci": ci, "definition": SCORE_NOTES[s], "direction": DIRECTIONS[s][1],
            "reading": read_auc(value, ci, "a liked turn scores higher in the stated direction",
                                "a disliked turn scores higher in the stated direction")}


def _within_entry(groups: list[list[JudgedTurn]], s: str, resamples: int) -> dict[str, Any]:
    both = [g for g in groups if any(t.liked for t in g) and not all(t.liked for t in g)]
    value, ci = auc_with_ci(_units(both, s), within=True, resamples=resamples)
    pairs = sum(sum(t.liked for t in g) * sum(not t.liked for t in g) for g in both)
    return {"auc": value, "ci": ci, "pairs": pairs, "conversations": len(both), "direction": DIRECTIONS[s][1],
            "reading": read_auc(value, ci, "within a conversation, the liked turn scores higher",
                                "within a conversation, the disliked turn scores higher")}


def _votes(turns: list[JudgedTurn], resamples: int) -> dict[str, Any]:
    groups = _by_run(turns)
    up, down = [t for t in turns if t.liked], [t for t in turns if not t.liked]
    scores = {s: _score_entry(groups, s, len(turns), resamples) for s in SCORES}
    for b in BASELINES:
        scores[b]["baseline"] = True
    modes = {}
    for m in [*(x.value for x in FAILURE_ORDER), "none_explained"]:
        def rate(ts: list[JudgedTurn], m: str = m) -> float | None:
            if not ts:
                return None
            return sum((not t.modes) if m == "none_explained" else (m in t.modes) for t in ts) / len(ts)
        modes[m] = {"up": rate(up), "down": rate(down)}
    by_tutor = Counter(t.model for t in down)
    return {"n": len(turns), "up": len(up), "down": len(down), "conversations": len(groups), "scores": scores,
            "modes": modes, "down_from": {"conversations": len({t.run_id for t in down}), "tutors": len(by_tutor),
                                          "by_tutor": dict(by_tutor.most_common())}}


def _conversations(convs: list[Conversation], resamples: int) -> dict[str, Any]:
    rating: dict[str, Any] = {}
    correct: dict[str, Any] = {}
    for metric in METRICS:
        rated = [c for c in convs if c.rating is not None and c.metrics.get(metric) is not None]
        if metric == "iq" and not rated:
            continue
        xs, ys = [c.metrics[metric] for c in rated], [c.rating for c in rated]
        corr = scoring.rank_correlations(xs, ys)
        ci = rho_with_ci(xs, ys, resamples=resamples)
        rating[metric] = {**corr, "n": len(rated), "ci": ci, "direction": METRIC_DIRECTIONS[metric][1],
                          "reading": read_rho(corr["spearman"], ci, metric, stated=METRIC_DIRECTIONS[metric][0])}
        known = [c for c in convs if c.correct is not None and c.metrics.get(metric) is not None]

        value, ci = auc_with_ci([([c.metrics[metric]], []) if c.correct else ([], [c.metrics[metric]])
                                 for c in known], resamples=resamples)
        correct[metric] = {"auc": value, "n": len(known), "correct": sum(bool(c.correct) for c in known), "ci": ci,
                           "reading": read_auc(value, ci, f"{metric.upper()} is higher for correct answers",
                                               f"{metric.upper()} is higher for wrong answers",
                                               stated=METRIC_DIRECTIONS[metric][0])}
    return {"n": len(convs), "rated": sum(c.rating is not None for c in convs), "rating": rating,
            "correctness": correct}


def _unread(unread: list[Unread]) -> dict[str, Any]:
    return {"n": len(unread), "up": sum(u.up for u in unread), "down": sum(u.down for u in unread),
            "rated": sum(u.rating is not None for u in unread), "note": UNREAD_NOTE,
            "conversations": [{"run": u.run_id, "conversation": u.conversation, "reason": u.reason, "up": u.up,
                               "down": u.down, "rating": u.rating, "correct": u.correct, "part": u.part}
                              for u in unread]}


def _table(turns: list[JudgedTurn], convs: list[Conversation], unread: list[Unread], resamples: int,
           *, with_pairs: bool = True) -> dict[str, Any]:
    """Votes, within-conversation AUCs, conversations (and the pairs) of one set of conversations."""
    people = [t for t in turns if t.source == "person"]
    groups = _by_run(people)
    out = {"votes": _votes(people, resamples),
           "within_conversation": {s: _within_entry(groups, s, resamples) for s in SCORES},
           "conversations": _conversations(convs, resamples), "unread": _unread(unread)}
    if with_pairs:
        out["pairs"] = sign_agreement(convs)
        out["pairs"]["unread_rated"] = sum(u.rating is not None for u in unread)  # no KG: in no cell
    return out


def reader_trust(convs: list[Conversation]) -> dict[str, Any]:
    """How far the reading under these verdicts is trusted (:mod:`knowsim_core.services.reader_trust`):
    per domain, the reader's mentioned share over the conversations' (turn, IU) pairs beside the
    range it was validated in for graphs of their size, and the sentence the verdicts carry."""
    out: dict[str, Any] = {}
    for domain in sorted({c.domain for c in convs}):
        cs = [c for c in convs if c.domain == domain]
        pairs = sum(c.pairs for c in cs)
        readers = sorted({c.reader for c in cs})
        note = reading_note(readers[0] if len(readers) == 1 else ", ".join(readers), domain,
                            [c.n_ius for c in cs], sum(c.mentioned for c in cs) / pairs if pairs else None)
        out[domain or "unknown"] = {**note, "readers": readers, "conversations": len(cs),
                                    "verdicts_rest_on": verdict_basis(readers, domain, [c.n_ius for c in cs])}
    return out


def summarise(a: Agreement, *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The JSON answer: ``votes``, ``conversations``, ``pairs``, ``excluded``, ``notes``, ``parts``,
    ``within_conversation``, ``replicates``, ``replication``, ``baselines`` and ``unread``; the
    headline counts the people's thumbs only."""
    whole = _table(a.turns, a.conversations, a.unread, resamples)
    votes = whole["votes"]
    votes["sources"] = {src: sum(t.source == src for t in a.turns) for src in ("person", "researcher")}
    researcher = [t for t in a.turns if t.source == "researcher"]
    votes["researcher"] = {k: v for k, v in _votes(researcher, resamples).items() if k in ("n", "up", "down",
                                                                                             "conversations", "scores")}
    parts = {p: _table([t for t in a.turns if t.part == p], [c for c in a.conversations if c.part == p],
                       [u for u in a.unread if u.part == p], resamples, with_pairs=False) for p in ("A", "B")}

    def verdicts(get: Callable[[dict], dict], null: float = 0.5, sign: int = 1) -> dict[str, Any]:
        # a metric whose stated direction is "lower is better" (CO) is read in that direction
        def ci(e: dict) -> list[float] | None:
            c = e.get("ci")
            return c if not c or sign > 0 else [2 * null - c[1], 2 * null - c[0]]
        ea, eb = get(parts["A"]), get(parts["B"])
        return {"A": ea.get("ci"), "B": eb.get("ci"), "whole": get(whole).get("ci"),
                "verdict": replication(ci(ea), ci(eb), null)
                + ("" if sign > 0 else " (lower is better)")}

    rep: dict[str, Any] = {"scores": {s: verdicts(lambda t, s=s: t["votes"]["scores"][s]) for s in SCORES},
                           "within_conversation": {s: verdicts(lambda t, s=s: t["within_conversation"][s])
                                                   for s in SCORES},
                           "rating": {m: verdicts(lambda t, m=m: t["conversations"]["rating"].get(m, {}), 0.0,
                                                  METRIC_DIRECTIONS[m][0])
                                      for m in whole["conversations"]["rating"]},
                           "correctness": {m: verdicts(lambda t, m=m: t["conversations"]["correctness"].get(m, {}),
                                                       0.5, METRIC_DIRECTIONS[m][0])
                                           for m in whole["conversations"]["correctness"]}}
    rep["versus_baselines"] = {b: {where: versus(t["votes"]["scores"]["knowsim"]["ci"], t["votes"]["scores"][b]["ci"])
                                   for where, t in (("whole", whole), ("A", parts["A"]), ("B", parts["B"]))}
                               for b in BASELINES}
    return {**whole, "parts": parts, "replication": rep,
            "replicates": rep["scores"]["knowsim"]["verdict"] == "replicates",
            "baselines": {b: {"direction": DIRECTIONS[b][1], "sign": DIRECTIONS[b][0]} for b in BASELINES},
            "directions": {s: DIRECTIONS[s][1] for s in SCORES},
            "excluded": a.excluded, "notes": {
                "ci": f"percentile bootstrap 95% over conversations ({resamples} resamples, seed 0)",
                "rating_ci": "interval of Spearman's rho",
                "chance": "AUC 0.5 = the score separates liked from disliked turns no better than a coin; ρ 0 = no relation",
                "directions": "each score's direction is stated before scoring; AUCs are never flipped after",
                "headline": "the people's own thumbs; researchers' thumbs are their own series (votes.researcher)"}}


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
    p = scoring.binomial_p(agree, len(pairs))
    conclusive = len(pairs) >= MIN_PAIRS and p is not None and p < ALPHA
    return {"n": len(pairs), "agree": agree, "p": p, "metric": metric, "alpha": ALPHA, "min_pairs": MIN_PAIRS,
            "cliffs_delta_min": CLIFFS_MIN, "min_cell": MIN_CELL, "conclusive": conclusive,
            "note": read_p(agree, len(pairs), p, conclusive),
            "skipped_small_cells": skipped_small, "skipped_close_ratings": skipped_close,
            "cells": {f"{lv} / {m}": len(cs) for (lv, m), cs in sorted(cells.items())}, "pairs": pairs}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def to_json(a: Agreement) -> dict[str, Any]:
    """The summary plus the rows a viewer links from (judged turns, rated conversations) and where
    the reading and the people disagree (:func:`knowsim_core.evaluation.disagreement.disagreement`)."""
    return {**a.summary,
            "turns": [{"run": t.run_id, "turn": t.turn, "liked": t.liked, "source": t.source, **t.scores,
                       "modes": list(t.modes), "part": t.part, "model": t.model,
                       "explained": [list(x) for x in t.explained]} for t in a.turns],
            "runs": [{"run": c.run_id, "conversation": c.conversation, "level": c.level, "model": c.model,
                      "rating": c.rating, "correct": c.correct, "turns": c.turns, "part": c.part, **c.metrics}
                     for c in a.conversations],
            "disagreement": disagreement(a, directions=METRIC_DIRECTIONS)}
