"""Turn-level realism: give a user simulator a real person's history and compare its next turn.

For every real user turn t ≥ 2 (1-based index of the person's message) of a human run (a KnowSim
reading, :mod:`reading`), each chosen simulator gets the recorded history up to t and — for
simulators that use it — the knowledge state the reading holds after turn t−1, and writes turn t.
Its message is compared with what the person actually wrote:

* ``act`` — the dialogue act of the simulated turn (:mod:`acts`); the summary's
  ``act_agreement`` is the share of turns whose act matches the real one;
* ``rouge_l`` — ROUGE-L F-measure (the ``rouge-score`` package, stemmed), real turn as reference;
* ``cosine`` — cosine of word TF-IDF vectors, IDF over all real user messages being scored;
* ``length_ratio`` — simulated words / real words; the summary gives their geometric mean
  (1 = as long as people write, on average);
* ``iu_jaccard`` — Jaccard of the IUs the two messages mention or attempt (user-only view; an IU
  counts when the message covers its vocabulary as the lexical extractor's attempt rule asks);
  ``null`` when neither mentions any IU, and such turns are left out of the summary mean;
* answer attempts — top-level ``attempts``: agreement on "attempts an answer" and the share of the
  person's attempts that the simulator also attempts.

Output: ``{"turns": [...], "summary": {user: {...}}, "by_level": {level: {user: {...}}},
"attempts": {user: {...}}}``, turns and summary exactly in the issue's shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from knowsim_core.evaluation import acts
from knowsim_core.engine.ports import Message, QuestionMaterial, UserContext, UserSimulator
from knowsim_core.services.reading import is_human_reading
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import user_context_of
from knowsim_core.text.profiles import TfIdf, content_stems, profiles_for

DEFAULT_USERS = ("offline/knowsim", "baseline/copy-last", "baseline/generic")
IU_MENTION = 0.4  # the lexical extractor's user_mention: relevance for a user message to concern an IU
METRICS = ("act_agreement", "rouge_l", "cosine", "length_ratio", "iu_jaccard")


@lru_cache(maxsize=1)
def _rouge() -> Any:
    from rouge_score import rouge_scorer  # a maintained implementation (pulls nltk: loaded only when scoring)

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(real: str, simulated: str) -> float:
    if not real.strip() or not simulated.strip():
        return 0.0
    return float(_rouge().score(real, simulated)["rougeL"].fmeasure)


def mentioned_ius(material: QuestionMaterial, text: str) -> frozenset[str]:
    prof = profiles_for(material.graph)
    terms = set(content_stems(text))
    return frozenset(iu for iu in prof.profiles if prof.relevance(iu, terms) >= IU_MENTION)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float | None:
    return len(a & b) / len(a | b) if a or b else None


def length_ratio(real: str, simulated: str) -> float:
    return max(1, len(simulated.split())) / max(1, len(real.split()))


@dataclass(frozen=True)
class RealTurn:
    """One real user turn t ≥ 2 with what a simulator may be given."""

    conversation: str
    level: str
    turn: int
    text: str
    context: UserContext


def real_turns(run: RunRecord) -> list[RealTurn]:
    """The scorable turns of a human run, each with its UserContext (history and read state)."""
    meta = dict(run.meta)
    key = str(meta.get("conversation") or run.question_id)
    material = QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph, "math")
    out = []
    for t in range(2, len(run.turns) + 1):
        before = run.turns[: t - 1]
        history = tuple(m for r in before
                        for m in (Message("user", r.user_message), Message("assistant", r.assistant_message)))
        ctx = user_context_of(replace(run, turns=before), material, t, history)
        out.append(RealTurn(key, run.level, t, run.turns[t - 1].user_message, ctx))
    return out


def score(
    runs: Sequence[RunRecord],
    users: Mapping[str, UserSimulator],
    *,
    tagger: Callable[[str], str] = acts.tag,
) -> dict[str, Any]:
    """The realism report of ``users`` on the human runs among ``runs`` (module docstring)."""
    turns = [rt for run in runs if is_human_reading(run) for rt in real_turns(run)]
    tfidf = TfIdf(rt.text for rt in turns)
    rows, flat = [], []
    for rt in turns:
        real_act = tagger(rt.text)
        real_ius = mentioned_ius(rt.context.material, rt.text)
        sims = {}
        for uid, user in users.items():
            text = user.respond(rt.context).message
            act = tagger(text)
            sims[uid] = {
                "act": act, "rouge_l": round(rouge_l(rt.text, text), 4),
                "cosine": round(tfidf.cosine(rt.text, text), 4),
                "length_ratio": round(length_ratio(rt.text, text), 4),
                "iu_jaccard": _round(jaccard(real_ius, mentioned_ius(rt.context.material, text))), "text": text,
            }
            flat.append((uid, rt.level, real_act, sims[uid]))
        rows.append({"conversation": rt.conversation, "turn": rt.turn, "real_act": real_act, "simulated": sims})
    levels = sorted({lvl for _, lvl, _, _ in flat})
    return {
        "turns": rows,
        "summary": {uid: _summary([f for f in flat if f[0] == uid]) for uid in users},
        "by_level": {lvl: {uid: _summary([f for f in flat if f[0] == uid and f[1] == lvl]) for uid in users}
                     for lvl in levels},
        "attempts": {uid: _attempts([f for f in flat if f[0] == uid]) for uid in users},
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _summary(flat: list[tuple[str, str, str, dict[str, Any]]]) -> dict[str, Any]:
    sims = [(real, s) for _, _, real, s in flat]
    ratios = [s["length_ratio"] for _, s in sims if s["length_ratio"] > 0]
    return {
        "act_agreement": _mean([float(real == s["act"]) for real, s in sims]),
        "rouge_l": _mean([s["rouge_l"] for _, s in sims]),
        "cosine": _mean([s["cosine"] for _, s in sims]),
        "length_ratio": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None,
        "iu_jaccard": _mean([s["iu_jaccard"] for _, s in sims if s["iu_jaccard"] is not None]),
        "n": len(sims),
    }


def _attempts(flat: list[tuple[str, str, str, dict[str, Any]]]) -> dict[str, Any]:
    pairs = [(acts.is_attempt(real), acts.is_attempt(s["act"])) for _, _, real, s in flat]
    real_attempts = [sim for real, sim in pairs if real]
    return {"agreement": _mean([float(r == s) for r, s in pairs]), "recall": _mean([float(s) for s in real_attempts]),
            "n_real_attempts": len(real_attempts)}


def confusion(report: Mapping[str, Any], user: str) -> dict[str, dict[str, int]]:
    """Real act × simulated act counts of one user over a report's turns."""
    gold = [t["real_act"] for t in report["turns"] if user in t["simulated"]]
    pred = [t["simulated"][user]["act"] for t in report["turns"] if user in t["simulated"]]
    return acts.confusion(gold, pred)


# ---------------------------------------------------------------------- views (command, page)
def build_users(ids: Iterable[str], llm_settings: Mapping[str, Any] | None = None) -> dict[str, UserSimulator]:
    """The user simulators by id; LLM ids get ``llm_settings`` (settings, cache) when given."""
    from knowsim_core.agents import registry

    return {uid: registry.resolve("user", uid, **llm_settings)
            if llm_settings is not None and registry.spec_of(uid).needs_model else registry.resolve("user", uid)
            for uid in dict.fromkeys(ids)}


def summary_rows(summary: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per user: the summary as a table."""
    return [{"user": uid, **dict(s)} for uid, s in summary.items()]


def level_rows(report: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """``[{"level", user: value, ...}]`` of one summary metric, for per-level bars."""
    return [{"level": lvl, **{uid: s[metric] for uid, s in by_user.items()}}
            for lvl, by_user in report["by_level"].items()]


def turn_rows(report: Mapping[str, Any], user: str) -> list[dict[str, Any]]:
    """One row per scored turn for a turn browser: where, the real act and one user's scores."""
    return [{"conversation": t["conversation"], "turn": t["turn"], "real act": t["real_act"],
             **{k: t["simulated"][user][k] for k in ("act", "rouge_l", "cosine", "iu_jaccard")}}
            for t in report["turns"] if user in t["simulated"]]
