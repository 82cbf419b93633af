"""Turn-level realism: give a user simulator a real person's history and compare its next turn.

For every real user turn t ≥ 2 (1-based index of the person's message) of a human run (a KnowSim
reading, :mod:`reading`), each chosen simulator gets the recorded history up to t and — for
simulators that use it — the knowledge state the reading holds after turn t−1, and writes turn t.
Simulators that take a conversation's setup (the LLM baselines: ``start_conversation``) are given
the person's own level and the run's initial state before its first scored turn. Its message is
compared with what the person actually wrote:

* ``act`` — the dialogue act of the simulated turn (:mod:`acts`); the summary's
  ``act_agreement`` is the share of turns whose act matches the real one;
* ``rouge_l`` — ROUGE-L F-measure (the ``rouge-score`` package, stemmed), real turn as reference;
* ``cosine`` — cosine of word TF-IDF vectors, IDF over all real user messages being scored;
* ``length_ratio`` — simulated words / real words; the summary gives their geometric mean
  (1 = as long as people write, on average);
* ``iu_jaccard`` — Jaccard of the IUs the two messages mention or attempt (user-only view; an IU
  counts when the message covers its vocabulary as the lexical extractor's attempt rule asks),
  scored on the turns whose *real* message mentions an IU — the same turns for every simulator
  (0 when the simulator mentions none); ``null`` on the other turns;
* answer attempts — top-level ``attempts``: agreement on "attempts an answer" and the share of the
  person's attempts that the simulator also attempts.

Floors beside every table: ``baseline/copy-last`` and ``baseline/generic`` (simulators) and
:data:`MOST_COMMON` — always the act most real turns of the table have (act agreement only: it
writes no text).

**Start.** ``start="sampled"`` (the headline, :func:`headline`) re-reads each conversation from
the level's sampler (spec §2, seeded by the conversation key), so no state a simulator sees knows
the future. ``start="file"`` uses the runs as imported: their initial state is the release's
``knowledge_state.json``, an LLM's analysis of the *whole* conversation — hindsight, shown beside
the headline, never as it. The report says which.

**Skipped.** A stored conversation without a KnowSim reading (no concepts, so no IUs and no state)
is left out of every table and listed in ``skipped`` with the reason; it is never fatal.

**Floors marked.** :func:`floor_marks` says, for every simulator cell of a table, which floors of
that table it beats (length ratio: nearer 1); the command and the page print the marks.

**Split.** :func:`split_of` puts each conversation in the ``development`` half (``zlib.crc32`` of
its key ``problem_id:workerId`` even) or the ``held-out`` half (odd); the offline learner's rules,
length profile and ``offline/person``'s reuse were chosen on the development half only, and
``by_split`` reports both.

Output: ``{"start", "skipped": [{"conversation", "reason"}], "turns": [...], "summary": {user: {...}},
"by_level": {level: {user: {...}}}, "by_split": {part: {user: {...}}}, "attempts": {user: {...}}}``;
:func:`headline` adds ``"hindsight": {"start": "file", "summary", "by_level", "by_split", "attempts"}``.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from knowsim_core.agents import person_user  # noqa: F401  (registers offline/person)
from knowsim_core.agents import registry
from knowsim_core.agents.lexical import attempt_types
from knowsim_core.errors import ConfigError
from knowsim_core.evaluation import acts
from knowsim_core.engine.ports import Message, QuestionMaterial, UserContext, UserSimulator
from knowsim_core.services.reader_trust import runs_note
from knowsim_core.services.reading import KIND_KEY, NO_READING_KEY, has_reading, is_human_reading, read_conversation
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import user_context_of
from knowsim_core.engine.state import initial_state
from knowsim_core.text.profiles import TfIdf, content_stems, profiles_for

# the people-like learner and the paper's LLM-like one side by side, then the floors
DEFAULT_USERS = ("offline/person", "offline/knowsim", "baseline/copy-last", "baseline/generic")
MOST_COMMON = "floor/most-common-act"  # the constant-act floor's row
STARTS = ("sampled", "file")  # the headline first: no knowledge of the whole conversation
SPLITS = ("development", "held-out")
IU_MENTION = 0.4  # the lexical extractor's user_mention: relevance for a user message to concern an IU
METRICS = ("act_agreement", "rouge_l", "cosine", "length_ratio", "iu_jaccard")


@lru_cache(maxsize=1)
def _rouge() -> Any:
    """ROUGE-L with stemming, from rouge-score (a maintained implementation), imported here on first
    use: it pulls in nltk (~2 s), which only scoring pays, not every importer of this module."""
    from rouge_score import rouge_scorer

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
    material = QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph, run.domain or "math")
    out = []
    for t in range(2, len(run.turns) + 1):
        before = run.turns[: t - 1]
        history = tuple(m for r in before
                        for m in (Message("user", r.user_message), Message("assistant", r.assistant_message)))
        ctx = user_context_of(replace(run, turns=before), material, t, history)
        out.append(RealTurn(key, run.level, t, run.turns[t - 1].user_message, ctx))
    return out


def _key(run: RunRecord) -> str:
    return str(dict(run.meta).get("conversation") or run.question_id)


def split_of(conversation: str) -> str:
    """The half of the stated split a conversation key (``problem_id:workerId``) falls in."""
    return SPLITS[zlib.crc32(conversation.encode()) % 2]


def sampled_start(run: RunRecord) -> RunRecord:
    """The same conversation read again from the level's sampler (no hindsight): s_0 drawn as a
    simulation draws it (spec §2), seeded by the conversation key; the run's own rules and
    (offline) extractor.

    Raises:
        ConfigError: the run was read by an LLM extractor (re-reading it would call the model).
    """
    extractor_id = dict(run.adapters).get("extractor", "offline/lexical")
    if not registry.spec_of(extractor_id).offline:
        raise ConfigError(f"run {run.run_id or run.question_id} was read by {extractor_id}; a sampled start "
                          "re-reads it and works only for offline extractors (re-import with offline/lexical)")
    key = str(dict(run.meta).get("conversation") or run.question_id)
    seed = zlib.crc32(key.encode())
    s0 = initial_state(run.graph, run.level, run.params, seed=seed)  # as import's fallback
    # the conversation's own domain (real SimulatorArena runs are maths; an imported one may not be)
    material = QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph, run.domain or "math")
    meta = tuple((k, v) for k, v in run.meta if k not in (KIND_KEY, "stop_mode", "initial_state_source"))
    meta += (("initial_state_source", f"sampled for {run.level} (seed {seed})"),)
    again = read_conversation(material, [(t.user_message, t.assistant_message) for t in run.turns], s0,
                              level=run.level, extractor=registry.resolve("extractor", extractor_id),
                              assistant_id=dict(run.adapters).get("assistant", ""), params=run.params,
                              meta=meta)
    return again


def score(
    runs: Sequence[RunRecord],
    users: Mapping[str, UserSimulator],
    *,
    tagger: Callable[[str], str] = acts.tag,
    start: str = "sampled",
) -> dict[str, Any]:
    """The realism report of ``users`` on the human runs among ``runs`` (module docstring); by
    default the headline's sampled start, ``start="file"`` for the hindsight one."""
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, not {start!r}")
    human = [run for run in runs if is_human_reading(run)]
    skipped = [{"conversation": _key(run), "reason": str(dict(run.meta).get(NO_READING_KEY) or "no IUs")}
               for run in human if not has_reading(run)]
    human = [run for run in human if has_reading(run)]  # no IUs: no state to start from, nothing to read
    if start == "sampled":
        human = [sampled_start(run) for run in human]
    per_run = [(run, real_turns(run)) for run in human]
    tfidf = TfIdf(rt.text for _, rts in per_run for rt in rts)
    rows, flat = [], []
    for run, rts in per_run:
        for user in users.values():
            begin = getattr(user, "start_conversation", None)
            if begin is not None and rts:
                begin(rts[0].context.material, level=run.level, initial=run.initial_state)
        for rt in rts:
            real_act = tagger(rt.text)
            real_ius = mentioned_ius(rt.context.material, rt.text)
            sims = {}
            for uid, user in users.items():
                text = user.respond(rt.context).message
                sims[uid] = {
                    "act": tagger(text), "rouge_l": round(rouge_l(rt.text, text), 4),
                    "cosine": round(tfidf.cosine(rt.text, text), 4),
                    "length_ratio": round(length_ratio(rt.text, text), 4),
                    "iu_jaccard": _round(jaccard(real_ius, mentioned_ius(rt.context.material, text)))
                    if real_ius else None,
                    "text": text,
                }
            rows.append({"conversation": rt.conversation, "turn": rt.turn, "level": rt.level,
                         "split": split_of(rt.conversation), "real_act": real_act, "simulated": sims})
            flat.extend((uid, rt.level, split_of(rt.conversation), real_act, sims[uid]) for uid in users)
    levels = sorted({f[1] for f in flat})
    reals = lambda keep: [r["real_act"] for r in rows if keep(r)]  # noqa: E731

    def table(keep_flat, keep_row) -> dict[str, Any]:
        out = {uid: _summary([f for f in flat if f[0] == uid and keep_flat(f)]) for uid in users}
        out[MOST_COMMON] = most_common_floor(reals(keep_row))
        return out

    return {
        "start": start,
        "skipped": skipped,
        "reader": runs_note(run for run, _ in per_run),
        "turns": rows,
        "summary": table(lambda f: True, lambda r: True),
        "by_level": {lvl: table(lambda f, lvl=lvl: f[1] == lvl, lambda r, lvl=lvl: r["level"] == lvl)
                     for lvl in levels},
        "by_split": {part: table(lambda f, part=part: f[2] == part, lambda r, part=part: r["split"] == part)
                     for part in SPLITS},
        "attempts": {uid: _attempts([f for f in flat if f[0] == uid]) for uid in users},
    }


def headline(
    runs: Sequence[RunRecord],
    users: Mapping[str, UserSimulator],
    *,
    tagger: Callable[[str], str] = acts.tag,
) -> dict[str, Any]:
    """The headline report — ``start="sampled"``, no state that knows the whole conversation — with
    the hindsight tables beside it: ``report["hindsight"]`` holds ``start="file"``'s ``summary``,
    ``by_level``, ``by_split`` and ``attempts`` (its turns are the same real turns)."""
    report = score(runs, users, tagger=tagger, start="sampled")
    file = score(runs, users, tagger=tagger, start="file")
    report["hindsight"] = {k: file[k] for k in ("start", "summary", "by_level", "by_split", "attempts")}
    return report


def most_common_floor(real_acts: Sequence[str]) -> dict[str, Any]:
    """The constant floor: always the act most of ``real_acts`` have (ties: the tagger's act order).
    It writes no text, so only act agreement is defined."""
    counts = {a: real_acts.count(a) for a in acts.ACTS}
    best = max(acts.ACTS, key=lambda a: counts[a]) if real_acts else None
    return {"act_agreement": _mean([float(a == best) for a in real_acts]), "rouge_l": None, "cosine": None,
            "length_ratio": None, "iu_jaccard": None, "n": len(real_acts), "act": best}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _summary(flat: list[tuple[str, str, str, str, dict[str, Any]]]) -> dict[str, Any]:
    sims = [(real, s) for *_, real, s in flat]
    ratios = [s["length_ratio"] for _, s in sims if s["length_ratio"] > 0]
    return {
        "act_agreement": _mean([float(real == s["act"]) for real, s in sims]),
        "rouge_l": _mean([s["rouge_l"] for _, s in sims]),
        "cosine": _mean([s["cosine"] for _, s in sims]),
        "length_ratio": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None,
        "iu_jaccard": _mean([s["iu_jaccard"] for _, s in sims if s["iu_jaccard"] is not None]),
        "iu_n": sum(s["iu_jaccard"] is not None for _, s in sims),  # the turns whose real message names an IU
        "n": len(sims),
    }


def _attempts(flat: list[tuple[str, str, str, str, dict[str, Any]]]) -> dict[str, Any]:
    pairs = [(acts.is_attempt(real), acts.is_attempt(s["act"])) for *_, real, s in flat]
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
    return {uid: registry.resolve("user", uid, **llm_settings)
            if llm_settings is not None and registry.spec_of(uid).needs_model else registry.resolve("user", uid)
            for uid in dict.fromkeys(ids)}


# One line per metric and per floor, and readable column names: what the Realism page and any
# table a person reads say (the JSON keeps the field names).
METRIC_LABELS = {
    "act_agreement": "Act agreement", "rouge_l": "ROUGE-L", "cosine": "TF-IDF cosine",
    "length_ratio": "Length ratio (simulated / real)", "iu_jaccard": "IU Jaccard", "iu_n": "Turns naming an IU",
    "n": "Turns (n)",
}
METRIC_HELP = {
    "act_agreement": "share of turns where the simulated message does what the person did (answer attempt, "
                     "not understanding, question, acknowledgement, off topic)",
    "rouge_l": "word overlap with the person's message, in order (ROUGE-L F, stemmed): 1 = the same words",
    "cosine": "similarity of the two messages' word weights (TF-IDF over the real messages): 1 = same vocabulary",
    "length_ratio": "simulated words / real words, geometric mean: 1 = as long as people write, 2 = twice as long",
    "iu_jaccard": "overlap of the concepts (IUs) both messages mention, on the turns where the person names "
                  "one — the same turns for every simulator",
}
FLOOR_HELP = {
    "baseline/copy-last": "floor: repeats the person's previous message — what history alone gives",
    "baseline/generic": "floor: always says the same stock request",
    MOST_COMMON: "floor: always the act most real turns have (act agreement only; writes no text)",
}
START_HELP = {
    "file": "initial states from the release's knowledge_state.json — an LLM's analysis of the whole "
            "conversation, so it knows the future (hindsight)",
    "sampled": "initial states drawn from each level's sampler, conversations re-read — no hindsight",
}


FLOORS = ("baseline/copy-last", "baseline/generic", MOST_COMMON)
_SHORT = {"baseline/copy-last": "copy-last", "baseline/generic": "generic", MOST_COMMON: "most-common-act"}


def _better(metric: str, a: float, b: float) -> bool:
    """Whether ``a`` is better than ``b`` on ``metric`` (length ratio: nearer 1, on a log scale)."""
    if metric == "length_ratio":
        return abs(math.log(a)) < abs(math.log(b))
    return a > b


def floor_marks(table: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """``{simulator: {metric: {"beats": [floor, …], "not": [floor, …]}}}`` for one table (a summary,
    a level or a half): which floors of the same table each simulator's figure is better than
    (:func:`_better`; a tie is not a win), over the floors that have that metric."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for uid, s in table.items():
        if uid in FLOORS:
            continue
        out[uid] = {}
        for m in METRICS:
            if s.get(m) is None:
                continue
            here = [f for f in FLOORS if f in table and table[f].get(m) is not None]
            out[uid][m] = {"beats": [f for f in here if _better(m, s[m], table[f][m])],
                           "not": [f for f in here if not _better(m, s[m], table[f][m])]}
    return out


def marked(value: float | None, mark: Mapping[str, list[str]] | None) -> str:
    """A table cell with its floors: ``0.574 (> copy-last, generic; not > most-common-act)``."""
    if value is None:
        return ""
    text = f"{value:.3f}"
    if not mark:
        return text
    parts = []
    if mark["beats"]:
        parts.append("> " + ", ".join(_SHORT[f] for f in mark["beats"]))
    if mark["not"]:
        parts.append("not > " + ", ".join(_SHORT[f] for f in mark["not"]))
    return f"{text} ({'; '.join(parts)})" if parts else text


def marked_rows(table: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`summary_rows` with each simulator's cells marked with the floors they beat."""
    marks = floor_marks(table)
    return [{"Simulator": uid,
             **{METRIC_LABELS[k]: marked(s.get(k), marks.get(uid, {}).get(k)) if k in METRICS else s.get(k)
                for k in METRIC_LABELS if k in s}} for uid, s in table.items()]


def level_table(report: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """One row per level of one metric: every user's figure, the floors included (the
    most-common-act floor on act agreement), each simulator's cell marked with the floors it beats."""
    rows = []
    for lvl, by_user in report["by_level"].items():
        marks = floor_marks(by_user)
        n = next(iter(by_user.values()))["n"]
        rows.append({"level": lvl, "turns (n)": n,
                     **{uid: marked(s.get(metric), marks.get(uid, {}).get(metric)) for uid, s in by_user.items()
                        if not (uid in FLOORS and s.get(metric) is None)}})
    return rows


def beats_line(table: Mapping[str, Mapping[str, Any]], uid: str) -> str:
    """One simulator against the floors of a table, in a line (the command's text report)."""
    marks = floor_marks(table).get(uid, {})
    return " | ".join(f"{m} " + marked(table[uid][m], mk).partition(" ")[2].strip("()") for m, mk in marks.items()
                     if mk["beats"] or mk["not"])


def summary_rows(summary: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per user: the summary as a table with readable column names."""
    return [{"Simulator": uid, **{METRIC_LABELS.get(k, k): v for k, v in s.items() if k in METRIC_LABELS}}
            for uid, s in summary.items()]


def level_rows(report: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """``[{"level": "novice (n=77)", user: value, ...}]`` of one summary metric, for per-level bars:
    the label carries the level's number of turns, so one turn's 1.0 is read as one turn."""
    rows = []
    for lvl, by_user in report["by_level"].items():
        n = next(iter(by_user.values()))["n"]
        rows.append({"level": f"{lvl} (n={n})", **{uid: s[metric] for uid, s in by_user.items()}})
    return rows


def turn_rows(report: Mapping[str, Any], user: str) -> list[dict[str, Any]]:
    """One row per scored turn for a turn browser: where, the real act and one user's scores."""
    return [{"conversation": t["conversation"], "turn": t["turn"], "level": t["level"], "real act": t["real_act"],
             "simulated act": t["simulated"][user]["act"],
             **{METRIC_LABELS[k]: t["simulated"][user][k] for k in ("rouge_l", "cosine", "iu_jaccard")}}
            for t in report["turns"] if user in t["simulated"]]


# ---------------------------------------------------------------------- the learner's length profile
def length_profile(runs: Sequence[RunRecord], *, part: str = "development", tagger: Callable[[str], str] = acts.tag,
                   per_level_min: int = 20) -> dict[tuple[str, str], tuple[int, ...]]:
    """Word counts of the people's turns t ≥ 2 in one half of the split, as the offline learner's
    :data:`~knowsim_core.agents.learner_voice.LENGTHS` holds them: the 10th/30th/50th/70th/90th
    percentiles (linear interpolation, rounded) per (level, act) where the half has at least
    ``per_level_min`` turns of that act, and pooled over levels (``"*"``) for every act."""
    counts: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        if not is_human_reading(run) or split_of(str(dict(run.meta).get("conversation") or run.question_id)) != part:
            continue
        for rt in real_turns(run):
            act, n = tagger(rt.text), max(1, len(rt.text.split()))
            counts.setdefault((rt.level, act), []).append(n)
            counts.setdefault(("*", act), []).append(n)
    return {key: _quintiles(xs) for key, xs in sorted(counts.items())
            if key[0] == "*" or len(xs) >= per_level_min}


def _quintiles(xs: list[int]) -> tuple[int, ...]:
    xs = sorted(xs)
    out = []
    for i in range(5):
        pos = (i + 0.5) / 5 * (len(xs) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        out.append(round(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)))
    return tuple(out)


# ---------------------------------------------------------------------- how often answers name a concept
def step_rates(runs: Sequence[RunRecord], *, part: str = "development", tagger: Callable[[str], str] = acts.tag,
               per_level_min: int = 20) -> dict[str, tuple[int, int]]:
    """``{level: (labelled, answers)}``: of the people's answer turns t ≥ 2 in one half of the
    split, how many the lexical extractor's attempt rule labels as an attempt on some IU (they use
    at least half of a concept name's words) — what the offline learner's
    :data:`~knowsim_core.agents.learner_voice.SHOWS_STEP` holds as shares. Per level where the
    half has at least ``per_level_min`` answer turns, and pooled (``"*"``)."""
    counts: dict[str, list[int]] = {}
    for run in runs:
        if not is_human_reading(run) or split_of(str(dict(run.meta).get("conversation") or run.question_id)) != part:
            continue
        prof = profiles_for(run.graph)
        for rt in real_turns(run):
            if tagger(rt.text) != acts.MATH_ANSWER:
                continue
            prev = next((m.text for m in reversed(rt.context.history) if m.role == "assistant"), "")
            named = any(a != "none" for a in attempt_types(prof, rt.text, prev).values())
            for key in (rt.level, "*"):
                c = counts.setdefault(key, [0, 0])
                c[0] += named
                c[1] += 1
    return {key: (c[0], c[1]) for key, c in sorted(counts.items()) if key == "*" or c[1] >= per_level_min}
