"""``offline/lexical``: label every IU from the text of the latest turn alone.

Teaching quality is read from the latest assistant message (spec §9 step 1), the attempt type
from the latest user message. No model download: a handful of general text measurements per IU,
each from the reply, the user's message and that IU's own words only — how much of the concept's
name the reply uses (anywhere, and in its best sentence), how many of the description's words it
uses, what share of its sentences are about the IU, whether the user asked about it, how long the
reply is — combined by two small logistic regressions (mentioned?; if so, well explained?);
whether its graph neighbours are discussed weighs only in the second (:data:`CONTEXT_FEATURES`) —
under the rubric's floor (a one-liner or a bare naming with no explaining cue — a definition, a
reason, a worked number or formula, an example — is at most shallow). No feature compares an IU
with the graph's other IUs, so whether an IU is mentioned does not depend on the graph's size.
The attempt type is a plain rule on the user's message (:func:`attempt_types`). The coefficients
live in :data:`COEFFICIENTS`, fitted on the paper's two recorded MathQA conversations; their
out-of-sample agreement (MathQA leave one recording out, ExpertQA out of domain, by graph size) is
:mod:`knowsim_core.evaluation.reader_eval`'s. Nothing here is specific to a recording or a domain.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import Extraction, ExtractorContext
from knowsim_core.engine.signals import AttemptType, IUSignal, TeachingQuality
from knowsim_core.text.profiles import IUProfiles, content_stems, profiles_for, sentences

_DEFINE = re.compile(r"\b(means?|is called|refers? to|is defined|definition|is the|are the|represents?|counts?|"
                     r"tells? (?:us|you)|is when|stands for|the idea|the rule|the key)\b")
_REASON = re.compile(r"\b(because|since|so that|therefore|thus|which means|that's why|this is why|so|hence|"
                     r"as a result|in other words|that is)\b")
_EXAMPLE = re.compile(r"\b(for example|for instance|e\.g\.|such as|imagine|suppose|like when|say|includes?|including)\b")
_FORMULA = re.compile(r"[=×÷^!]|\d\s*[x*/+\-]\s*\d|\bC\(\s*\d|\\(?:binom|frac)|\d+\s*choose\s*\d+|\(\s*\d+\s*,\s*\d+\s*\)")
_NUMBER = re.compile(r"\d")

ATTEMPT_COVER = 0.5  # share of an IU's concept-name words the user must use (see attempt_types)
MIN_DEPTH = 0.2  # cue_depth (depth / 3) of one bare naming sentence is at most 0.5 / 3
RUBRIC_FLOOR = True  # spec §9: a one-liner or a bare naming is at most shallow (off only for the ablation)

# Every feature of an IU is read from the reply, the user's message and that IU's own words — never
# relative to the graph's other IUs, so whether an IU is mentioned does not depend on how many other
# IUs the graph holds (a rank among the graph's IUs did: the same reply read as mentioning 29 % of an
# ExpertQA graph's IUs and 79 % of a 3-IU sub-graph's; evaluation.reader_eval measures it by size).
# Words are counted unweighted for the same reason (an IDF over the graph's IUs changes with the
# graph). The IU's words are its concept name's and description's content stems. How much of the
# description a reply uses is read as a count (up to USED_WORDS), not a share: descriptions are two
# to three times longer in ExpertQA graphs than in MathQA ones, so a share fitted on one domain reads
# the other wrongly. A share decides only which sentences are about the IU (ABOUT_COVER), for
# share_of_sentences_about and the rubric's cue depth; on long ExpertQA descriptions few sentences
# reach it, so the floor rarely lets an ExpertQA IU be well explained (a count there did worse on
# MathQA leave one recording out: 0.436 against 0.451). neighbour_mention: the best description cover
# among the IU's prerequisites and dependents; asked_by_user: the user message's cover of the concept name.
TQ_FEATURES = ("bias", "concept_cover", "concept_sentence_cover", "cue_depth", "share_of_sentences_about",
               "neighbour_mention", "asked_by_user", "reply_length", "description_words_used")
CUE_DEPTH = TQ_FEATURES.index("cue_depth")
REPLY_LENGTH = TQ_FEATURES.index("reply_length")
ABOUT_COVER = 0.25  # a sentence is about an IU when it uses this share of the IU's description stems ...
ABOUT_CONCEPT = 0.5  # ... or this share of its concept name's
USED_WORDS = 6  # description_words_used: stems of the description the reply uses, up to this many

# Features that read the IU's surroundings or the user's message, not the reply's evidence about the
# IU: they may weigh in "well explained?" but never in "mentioned?". Whether a reply mentions an IU
# is decided on the reply's own evidence — not because the user asked about it (a tutor that does not
# take the question up has not mentioned it; read as mentioned, a learner's attempt made every IU it
# named "told" in the next turn) and not because a prerequisite or dependent is discussed (it did: IU14 "Clustering of
# unvaccinated people" was credited — and advanced, EFFECTIVE — for a reply about R0 and Re, its
# neighbour IU5, that never touches clustering). The mention model is fitted without them
# (knowsim_core.evaluation.extractor_eval.fit_model) and reads them as 0, whatever its weights.
CONTEXT_FEATURES = ("neighbour_mention", "asked_by_user")
_OWN = tuple(f not in CONTEXT_FEATURES for f in TQ_FEATURES)
# Features read only by the rubric's floor (spec §9), weighted in neither model: cue_depth, fitted,
# weighed the cues of worked numbers and formulas that MathQA replies carry and ExpertQA replies do not.
RUBRIC_FEATURES = ("cue_depth",)

# the labels' values, read once (an enum member's .value is a property lookup, 34,000 a matrix)
_NOT_MENTIONED, _SHALLOW, _WELL = (q.value for q in (TeachingQuality.NOT_MENTIONED, TeachingQuality.SHALLOW,
                                                     TeachingQuality.WELL_EXPLAINED))
_NONE, _ARTICULATION, _REASONING = (a.value for a in (AttemptType.NONE, AttemptType.ARTICULATION,
                                                      AttemptType.REASONING))


@dataclass(frozen=True, slots=True)
class LexicalModel:
    """Logistic-regression weights over :data:`TQ_FEATURES` (one tuple per decision). A
    probability of 0.5 or more means yes."""

    mentioned: tuple[float, ...]  # not_mentioned vs mentioned
    well: tuple[float, ...]  # among mentioned: shallow vs well_explained


# THE fitted weights, the only numbers of the labeller learned from data. Obtained by
# `python benchmarks/extractor_eval.py --fit` (class-balanced L2 logistic regression, see
# knowsim_core.evaluation.extractor_eval.fit_logistic) on BOTH recorded MathQA conversations
# (../shared/reference/examples/mathqa_structured_adaptive_novice.json), whole graphs; no ExpertQA
# turn. How they do out of sample — MathQA leave one recording out, ExpertQA out of domain, by graph
# size — is `python benchmarks/reader_sizes.py` (benchmarks/logs/reader_sizes.json). Feature order
# as in TQ_FEATURES; a positive weight pushes towards "mentioned" / "well explained".
COEFFICIENTS = LexicalModel(
    mentioned=(-1.303, 0.5945, 0.9198, 0.0, 1.5119, 0.0, 0.0, -0.0151, 1.235),
    well=(-2.4756, -0.0727, 0.4202, 0.0, 1.0706, -0.3745, 0.4039, 1.4245, 1.544),
)


def _cue_score(sentence: str) -> float:
    """How much explaining one sentence does (a question alone does little)."""
    low = sentence.lower()
    score = 0.5
    if _DEFINE.search(low):
        score += 0.5
    if _REASON.search(low):
        score += 0.5
    if _EXAMPLE.search(low):
        score += 0.5
    if _FORMULA.search(sentence):
        score += 0.6
    elif _NUMBER.search(sentence):
        score += 0.2
    if sentence.rstrip().endswith("?"):
        score *= 0.5
    return score


def tq_features(prof: IUProfiles, message: str, user_message: str = "") -> dict[str, tuple[float, ...]]:
    """``{iu: feature vector}`` (order of :data:`TQ_FEATURES`) for one assistant message."""
    key = ("tqf", message, user_message)
    hit = prof.memo.get(key)
    if hit is None:
        hit = prof.remember(key, _tq_features(prof, message, user_message))
    return hit


@dataclass(frozen=True, slots=True)
class _Words:
    """One IU's own words: content stems of its concept name and of its description (concept included)."""

    concept: frozenset[str]
    description: frozenset[str]


def _own_words(prof: IUProfiles) -> dict[str, _Words]:
    hit = prof.memo.get("own-words")
    if hit is None:
        hit = {}
        for n in prof.graph.nodes:
            concept = frozenset(content_stems(n.concept))
            hit[n.id] = _Words(concept, concept | frozenset(content_stems(n.description)))
        hit = prof.memo["own-words"] = hit
    return hit


def _sentence(prof: IUProfiles, sentence: str) -> tuple[frozenset[str], float]:
    """(content stems, cue score) of one sentence, remembered per graph: replies are made of the
    IUs' description sentences and a few templates, so most sentences recur across turns and runs."""
    key = ("sentence", sentence)
    hit = prof.memo.get(key)
    if hit is None:
        hit = prof.remember(key, (frozenset(content_stems(sentence)), _cue_score(sentence)))
    return hit


def _cover(words: frozenset[str], terms: frozenset[str] | set[str]) -> float:
    return len(words & terms) / len(words) if words else 0.0


def sentences_about(graph: IUGraph, iu_id: str, message: str) -> tuple[str, ...]:
    """The sentences of ``message`` this reader counts as about IU ``iu_id`` — those that use
    :data:`ABOUT_COVER` of its description's words or :data:`ABOUT_CONCEPT` of its concept name's:
    the evidence its cue depth and "share of sentences about" read. Empty for an unknown id or a
    reply with no such sentence."""
    prof = profiles_for(graph)
    words = _own_words(prof).get(iu_id)
    if words is None:
        return ()
    out = []
    for s in sentences(message):
        terms = _sentence(prof, s)[0]
        if _cover(words.description, terms) >= ABOUT_COVER or _cover(words.concept, terms) >= ABOUT_CONCEPT:
            out.append(s)
    return tuple(out)


def sentences_naming(graph: IUGraph, iu_id: str, message: str) -> tuple[str, ...]:
    """The sentences of ``message`` that use at least one content word of IU ``iu_id``'s concept
    name — a looser match than :func:`sentences_about`, for readings this reader did not make."""
    prof = profiles_for(graph)
    words = _own_words(prof).get(iu_id)
    if words is None or not words.concept:
        return ()
    return tuple(s for s in sentences(message) if words.concept & _sentence(prof, s)[0])


def _tq_features(prof: IUProfiles, message: str, user_message: str) -> dict[str, tuple[float, ...]]:
    sents = sentences(message) or [""]
    read = [_sentence(prof, s) for s in sents]
    all_terms = frozenset().union(*(r[0] for r in read))
    user_terms = frozenset(content_stems(user_message)) if user_message else frozenset()
    own = _own_words(prof)
    length = min(1.0, len(sents) / 10)
    neighbours = _neighbours(prof)
    used = {iu: len(w.description & all_terms) for iu, w in own.items()}
    out: dict[str, tuple[float, ...]] = {}
    for iu, w in own.items():
        best_concept = depth = 0.0
        about = 0
        if used[iu]:  # a sentence can only be about an IU whose words the reply uses
            for terms, cue in read:
                d = _cover(w.description, terms)
                c = _cover(w.concept, terms)
                best_concept = max(best_concept, c)
                if d >= ABOUT_COVER or c >= ABOUT_CONCEPT:
                    about += 1
                    depth += cue * min(1.0, d / ABOUT_COVER)
        near = max((_cover(own[v].description, all_terms) for v in neighbours.get(iu, ())), default=0.0)
        out[iu] = (1.0, _cover(w.concept, all_terms), best_concept, min(1.0, depth / 3.0), about / len(sents), near,
                   _cover(w.concept, user_terms), length, min(1.0, used[iu] / USED_WORDS))
    return out


def _neighbours(prof: IUProfiles) -> dict[str, tuple[str, ...]]:
    """IU -> its prerequisites and dependents in the graph (cached on the profiles)."""
    hit = prof.memo.get("neighbours")
    if hit is None:
        near: dict[str, set[str]] = {iu: set() for iu in prof.profiles}
        for e in prof.graph.edges:
            a, b = e.from_, e.to
            if a in near and b in near and a != b:
                near[a].add(b)
                near[b].add(a)
        hit = prof.memo["neighbours"] = {iu: tuple(sorted(v)) for iu, v in near.items()}
    return hit


def _p(weights: tuple[float, ...], x: tuple[float, ...]) -> float:
    z = sum(map(operator.mul, weights, x))  # left to right from 0, as a generator sum: the same float
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def _own_weights(weights: tuple[float, ...]) -> tuple[float, ...]:
    """The "mentioned?" weights with the context features' set to 0: the same sum as reading those
    features as 0 (a product with a zero is a zero whichever factor is, and the bias, an own
    feature, comes first), without building a masked copy of every IU's features each turn."""
    hit = _OWN_WEIGHTS.get(weights)
    if hit is None:
        hit = _OWN_WEIGHTS[weights] = tuple(w if own else 0.0 for w, own in zip(weights, _OWN))
    return hit


_OWN_WEIGHTS: dict[tuple[float, ...], tuple[float, ...]] = {}


def teaching_quality(prof: IUProfiles, message: str, user_message: str = "",
                     model: LexicalModel = COEFFICIENTS) -> dict[str, tuple[str, str]]:
    """``{iu: (quality, reason)}`` for every IU, from one assistant message."""
    out = {}
    mentioned = _own_weights(model.mentioned)
    for iu, x in tq_features(prof, message, user_message).items():
        pm = _p(mentioned, x)
        facts = (f"concept words used {x[1]:.2f}, in one sentence {x[2]:.2f}, description words used "
                 f"{x[-1]:.2f}, cue depth {x[CUE_DEPTH]:.2f}")
        if pm < 0.5:
            out[iu] = (_NOT_MENTIONED, f"not mentioned (p={pm:.2f}; {facts})")
            continue
        pw = _p(model.well, x)
        # the rubric's floor (spec §9), not fitted: a one-line reply or a bare naming with no
        # explaining cue is at most shallow, whatever the weights say
        if pw >= 0.5 and (not RUBRIC_FLOOR or x[CUE_DEPTH] >= MIN_DEPTH and x[REPLY_LENGTH] > 0.1):
            out[iu] = (_WELL, f"explained with definition/reason/example cues (p={pw:.2f}; {facts})")
        else:
            out[iu] = (_SHALLOW, f"mentioned without substantive explanation (p={pw:.2f}; {facts})")
    return out


def attempt_types(prof: IUProfiles, user_message: str, prev_assistant: str) -> dict[str, str]:
    """``{iu: attempt}``: an attempt concerns an IU when the user uses at least :data:`ATTEMPT_COVER`
    of its concept name's words; it is articulation when every such word was already in
    the assistant's previous message (restating), reasoning when the user brings words of their
    own, else none. A plain rule: out of sample it agreed with the recorded labels better than a
    fitted model did (README, extractor_eval)."""
    terms = set(content_stems(user_message))
    prev_terms = set(content_stems(prev_assistant))
    out = {}
    for iu, p in prof.profiles.items():
        used = [t for t in p.concept_terms if t in terms]
        if len(used) < ATTEMPT_COVER * max(1, len(p.concept_terms)):
            out[iu] = _NONE
        elif prev_assistant and all(t in prev_terms for t in used):
            out[iu] = _ARTICULATION
        else:
            out[iu] = _REASONING
    return out


def label_turn(graph: IUGraph, user_message: str, assistant_message: str, prev_assistant: str = "",
               model: LexicalModel = COEFFICIENTS) -> tuple[IUSignal, ...]:
    """One :class:`IUSignal` per node (node order) from the turn's two messages."""
    prof = profiles_for(graph)
    tq = teaching_quality(prof, assistant_message, user_message, model)
    at = attempt_types(prof, user_message, prev_assistant)
    # the values are TeachingQuality / AttemptType values already: IUSignal.make's checks are not needed
    return tuple(
        IUSignal(id=n.id, teaching_quality=tq[n.id][0], attempt=_ATTEMPT_OF[at[n.id]], concept=n.concept,
                 reasoning=tq[n.id][1])
        for n in graph.nodes
    )


_ATTEMPT_OF = {a.value: a for a in AttemptType}


class LexicalExtractor:
    """Text-only signal extractor (deterministic; the seed is not needed)."""

    id = "offline/lexical"

    def __init__(self, model: LexicalModel = COEFFICIENTS):
        self.model = model

    def extract(self, ctx: ExtractorContext) -> Extraction:
        prev = next((m.text for m in reversed(ctx.history) if m.role == "assistant"), "")
        entries = label_turn(ctx.material.graph, ctx.user_message, ctx.assistant_message, prev, self.model)
        return Extraction(entries=entries)
