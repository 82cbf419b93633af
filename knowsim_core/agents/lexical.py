"""``offline/lexical``: label every IU from the text of the latest turn alone.

Teaching quality is read from the latest assistant message (spec §9 step 1), the attempt type
from the latest user message. No model download: a handful of general text measurements per IU
— how close the message and its closest sentence are to the IU's concept name and description
(character n-gram and word TF-IDF cosines), how much of the concept's name it uses, how much
explaining the sentences about the IU do (the rubric's cues: a definition, a reason, a worked
number or formula, an example; a question alone does little; a sentence is about the IUs it
matches best, so long concept names of another domain do not starve it), what share of the reply is about
the IU, how the IU ranks among the graph's IUs for this message, and whether the user asked
about it — are combined by two small logistic regressions (mentioned?; if so, well explained?);
whether its graph neighbours are discussed weighs only in the second (:data:`CONTEXT_FEATURES`) —
under the rubric's floor (a one-liner or a bare naming is at most shallow). The attempt type is a
plain rule on the user's message (:func:`attempt_types`). The coefficients live in
:data:`COEFFICIENTS`, fitted on the paper's two recorded MathQA conversations; their out-of-sample
(leave-one-recording-out) agreement is what the README and the tests quote
(:mod:`knowsim_core.evaluation.extractor_eval`). Nothing here is specific to a recording or a domain.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import Extraction, ExtractorContext
from knowsim_core.engine.signals import AttemptType, IUSignal, TeachingQuality
from knowsim_core.text.profiles import IUProfiles, content_stems, profiles_for, sentences, tfidf_vector

_DEFINE = re.compile(r"\b(means?|is called|refers? to|is defined|definition|is the|are the|represents?|counts?|"
                     r"tells? (?:us|you)|is when|stands for|the idea|the rule|the key)\b")
_REASON = re.compile(r"\b(because|since|so that|therefore|thus|which means|that's why|this is why|so|hence|"
                     r"as a result|in other words|that is)\b")
_EXAMPLE = re.compile(r"\b(for example|for instance|e\.g\.|such as|imagine|suppose|like when|say|includes?|including)\b")
_FORMULA = re.compile(r"[=×÷^!]|\d\s*[x*/+\-]\s*\d|\bC\(\s*\d|\\(?:binom|frac)|\d+\s*choose\s*\d+|\(\s*\d+\s*,\s*\d+\s*\)")
_NUMBER = re.compile(r"\d")

ATTEMPT_COVER = 0.5  # share of an IU's concept-name words the user must use (see attempt_types)
ABOUT_FLOOR = 0.1  # least word relevance for a sentence to be "about" an IU
NEAR_TOP = 0.8  # ... and within this share of the sentence's best-matching IU
MIN_DEPTH = 0.2  # cue_depth (depth / 3) of one bare naming sentence is at most 0.5 / 3
RUBRIC_FLOOR = True  # spec §9: a one-liner or a bare naming is at most shallow (off only for the ablation)

# The reply's cosines are used relative to the best-matching IU of the same message ("rank"):
# their absolute size depends on the graph (longer descriptions and more IUs give smaller
# cosines), the ranking within one message does not. neighbour_mention: the best whole-message
# cosine among the IU's prerequisites and dependents; asked_by_user: the user message's cosine.
TQ_FEATURES = ("bias", "message_rank", "sentence_word_rank", "best_sentence_word_cosine", "concept_name_cover",
               "description_cover", "cue_depth", "share_of_sentences_about", "neighbour_mention", "asked_by_user",
               "reply_length")

# Features that read the IU's surroundings, not the IU: they may weigh in "well explained?" but
# never in "mentioned?". Whether a reply mentions an IU is decided on the IU's own evidence; a
# discussed prerequisite or dependent does not make it mentioned (it did: IU14 "Clustering of
# unvaccinated people" was credited — and advanced, EFFECTIVE — for a reply about R0 and Re, its
# neighbour IU5, that never touches clustering). The mention model is fitted without them
# (knowsim_core.evaluation.extractor_eval.fit_model) and reads them as 0, whatever its weights.
CONTEXT_FEATURES = ("neighbour_mention",)
_OWN = tuple(f not in CONTEXT_FEATURES for f in TQ_FEATURES)

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
# (../shared/reference/examples/mathqa_structured_adaptive_novice.json); the same command's
# leave-one-recording-out table is the honest estimate of how they do on unseen conversations
# (teaching-quality macro-F1 0.527 held out, 0.548 in-sample; see README). Feature order as in
# TQ_FEATURES; a positive weight pushes towards "mentioned" / "well explained".
COEFFICIENTS = LexicalModel(
    mentioned=(-1.6844, 1.6354, 0.0123, 0.6914, 0.7227, 0.6691, -0.6788, 1.2289, 0.0, 1.7165, -0.1079),
    well=(-3.4151, 1.9671, 1.6996, 1.3688, -0.2292, -0.6835, -0.0306, -0.3397, 0.8225, 0.0291, 1.1891),
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
class _Sentence:
    """What the features need from one sentence of a reply, whatever the rest of the reply says."""

    terms: frozenset[str]  # its content stems
    cue: float  # _cue_score
    rel: dict[str, float]  # {iu: relevance} of the IUs sharing a stem (shared: never modified)
    rel_top: float  # the best relevance (1.0 when none)
    closest: dict[str, float]  # {iu: cosine of its word TF-IDF vector with the IU's description}


def _sentence(prof: IUProfiles, sentence: str) -> _Sentence:
    """The reading of one sentence, remembered per graph content: replies are made of the IUs'
    description sentences and a few templates, so most sentences recur across turns and runs."""
    key = ("sentence", sentence)
    hit = prof.memo.get(key)
    if hit is None:
        stems = content_stems(sentence)
        terms = frozenset(stems)
        cc, dc = _covers(prof, terms)
        rel = {iu: 0.55 * cc.get(iu, 0.0) + 0.45 * min(1.0, 2.2 * d) for iu, d in dc.items()}
        hit = prof.remember(key, _Sentence(terms, _cue_score(sentence), rel, max(rel.values(), default=0.0) or 1.0,
                                           _sentence_cosines(prof, stems)))
    return hit


def _tq_features(prof: IUProfiles, message: str, user_message: str) -> dict[str, tuple[float, ...]]:
    sents = sentences(message) or [""]
    read = [_sentence(prof, s) for s in sents]
    all_terms = set().union(*(r.terms for r in read))
    mention = prof.char_cosines(message)
    close: dict[str, float] = {}  # per IU, the best cosine over the sentences
    for r in read:
        for iu, c in r.closest.items():
            if c > close.get(iu, 0.0):
                close[iu] = c
    asked = prof.char_cosines(user_message) if user_message else {}
    top = max(mention.values(), default=0.0) or 1.0
    top_close = max(close.values(), default=0.0) or 1.0
    neighbours = _neighbours(prof)
    all_concept, all_desc = _covers(prof, all_terms)
    length = min(1.0, len(sents) / 10)
    # Sentence by sentence, the IUs it is about: those it matches best (relative, so long concept
    # names and descriptions of another domain do not starve it), and, as one that continues an
    # explanation rarely repeats the concept's name, those the previous sentence was about that
    # it still matches half as well as its best. Only IUs sharing a stem can qualify.
    depth: dict[str, float] = {}
    n_about: dict[str, int] = {}
    previous: set[str] = set()
    for r in read:
        rmax = r.rel_top
        about = {iu for iu, v in r.rel.items()
                 if v >= ABOUT_FLOOR and (v >= NEAR_TOP * rmax or (iu in previous and v >= rmax / 2))}
        for iu in about:
            n_about[iu] = n_about.get(iu, 0) + 1
            depth[iu] = depth.get(iu, 0.0) + r.cue * r.rel[iu] / rmax
        previous = about
    out: dict[str, tuple[float, ...]] = {}
    for iu in prof.profiles:
        m = mention.get(iu, 0.0)
        near = max((mention.get(v, 0.0) for v in neighbours.get(iu, ())), default=0.0)
        c = close.get(iu, 0.0)
        out[iu] = (1.0, m / top, c / top_close, c, all_concept.get(iu, 0.0), min(1.0, 2 * all_desc.get(iu, 0.0)),
                   min(1.0, depth.get(iu, 0.0) / 3.0), n_about.get(iu, 0) / len(sents), near, asked.get(iu, 0.0),
                   length)
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
        facts = f"rank in message {x[1]:.2f}, closest sentence {x[2]:.2f}, cue depth {x[6]:.2f}"
        if pm < 0.5:
            out[iu] = (_NOT_MENTIONED, f"not mentioned (p={pm:.2f}; {facts})")
            continue
        pw = _p(model.well, x)
        # the rubric's floor (spec §9), not fitted: a one-line reply or a bare naming with no
        # explaining cue is at most shallow, whatever the weights say
        if pw >= 0.5 and (not RUBRIC_FLOOR or x[6] >= MIN_DEPTH and x[10] > 0.1):
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


def _covers(prof: IUProfiles, terms: set[str]) -> tuple[dict[str, float], dict[str, float]]:
    """``({iu: concept_cover}, {iu: desc_cover})`` of a term set, as :meth:`IUProfiles.concept_cover`
    and :meth:`~IUProfiles.desc_cover` give them, through an inverted index (only IUs sharing a
    term appear; every concept term is also a description term)."""
    index = prof.memo.get("cover-postings")
    if index is None:
        index = {}
        for iu, p in prof.profiles.items():
            for t, w in p.desc_terms.items():
                index.setdefault(t, []).append((iu, p.concept_terms.get(t, 0.0) / p.concept_mass, w / p.desc_mass))
        prof.memo["cover-postings"] = index
    concept: dict[str, float] = {}
    desc: dict[str, float] = {}
    for t in terms:
        for iu, cw, dw in index.get(t, ()):
            if cw:
                concept[iu] = concept.get(iu, 0.0) + cw
            desc[iu] = desc.get(iu, 0.0) + dw
    return concept, desc


def _postings(prof: IUProfiles) -> dict[str, list[tuple[str, float]]]:
    """term → [(iu, weight / |description vector|)]: an inverted index of the IUs' normalised
    description vectors (cached on the graph's profiles), so a sentence meets only the IUs that
    share a term with it."""
    post = prof.memo.get("desc-postings")
    if post is None:
        post = {}
        for iu, p in prof.profiles.items():
            norm = math.sqrt(sum(w * w for w in p.desc_terms.values())) or 1.0
            for t, w in p.desc_terms.items():
                post.setdefault(t, []).append((iu, w / norm))
        prof.memo["desc-postings"] = post
    return post


def _sentence_cosines(prof: IUProfiles, stems: tuple[str, ...]) -> dict[str, float]:
    """``{iu: cosine(sentence TF-IDF, IU description TF-IDF)}`` of one sentence's stems (IUs sharing
    no term left out)."""
    post = _postings(prof)
    vec = tfidf_vector(stems, prof.idf)
    norm = math.sqrt(sum(w * w for w in vec.values()))
    if not norm:
        return {}
    dots: dict[str, float] = {}
    for t, w in vec.items():
        for iu, dw in post.get(t, ()):
            dots[iu] = dots.get(iu, 0.0) + w * dw
    return {iu: d / norm for iu, d in dots.items()}


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
