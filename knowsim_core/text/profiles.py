"""Light text analysis shared by the offline agents: tokens, stems, sentences, IU term profiles.

Standard library, and numpy for one matrix product (:meth:`IUProfiles.char_cosines`). An
:class:`IUProfiles` holds, for one graph, the TF-IDF weights of every IU's concept name and
description (IDF over the graph's own IUs, so words shared by every IU weigh little) and scores
any text against them: how much of an IU's weighted vocabulary a sentence or message covers. The
assistants use it to read the user's messages, the lexical extractor to label teaching quality,
and the user simulator to keep unaware concepts out of its mouth. Profiles are cached per graph
*content* (:func:`profiles_for`), so every conversation about one question shares them and the
memos of text already read.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from itertools import chain
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from knowsim_core.engine.graph import IUGraph

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    let like me my no nor not now of once only or other our out over own same
    she should so some such than that the their them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours one two three get got go going want need make made way ways thing
    things really right think know see well yes okay ok sure still maybe actually
    just something anything everything here's that's it's let's i'm you're we're don't doesn't
    isn't can't won't didn't i've you've what's there's same us via per e g etc on off exactly""".split()
)
# Words that frame a concept in an IU's name or description rather than carry it ("Meaning of ...",
# "Applying ... in context", "Basic understanding of ..."): generic task vocabulary of any domain,
# which would match every message that merely says "the idea" or "this problem". Chosen on general
# grounds; benchmarks/extractor_eval.py --ablation measures them (leave-one-recording-out).
META_WORDS = frozenset(
    """concept idea basic basics understanding problem question answer step steps general specific
    context apply applying application use using given meaning interpret interpretation interpreting
    identify identifying""".split()
)

_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"”’)\]])\s+|\n+")  # also after a closing quote or bracket
_LATEX = re.compile(r"\\(?:binom|frac|dfrac|cdot|times|left|right|text|mathrm|quad|le|ge|pmod|equiv)|[\\{}$]")
_SUFFIXES = ("ational", "ization", "ation", "ingly", "ment", "ness", "ity", "ing", "ied", "edly",
             "ed", "er", "ly", "al")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude, stable suffix stripper ("counting", "counts", "counted" → "count")."""
    if not word.isalpha() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            word = word[: -len(suf)]
            break
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "sl":
        word = word[:-1]  # "cutt" → "cut"
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    if word.endswith("at") and len(word) >= 7:
        word = word[:-2]  # "vaccinat(ed)" meets "vaccin(ation)"
    return word


def clean(text: str) -> str:
    """Lower-case text with LaTeX commands and braces removed (``\\binom{6}{3}`` → ``6 3``)."""
    low = text.lower()
    if "\\" in low or "{" in low or "}" in low or "$" in low:  # every match of _LATEX holds one of them
        low = _LATEX.sub(" ", low)
    return low.replace("’", "'")


def words(text: str) -> list[str]:
    return _TOKEN.findall(clean(text))


# Synonyms folded onto one stem before matching. Empty: the math synonyms tried before
# ("pick" -> "choose", "times" -> "multiply", "chance" -> "probability", ...) did not help out of
# sample (benchmarks/extractor_eval.py --ablation); the hook stays for general ones that would.
SYNONYMS: Mapping[str, str] = MappingProxyType({})
FRACTIONS_AS_DECIMALS = False  # 1/10 -> 0.1: no out-of-sample gain (extractor_eval --ablation); switchable


@dataclass(frozen=True, eq=False)
class TextRules:
    """The rules that turn text into content stems, as one frozen value (the defaults are what ships).

    Nothing reassigns this module's constants: a caller that reads text another way (the extractor
    evaluation's ablation) builds a TextRules and runs under :func:`rules_applied`. Every cache of
    derived text is keyed by the rules in force (by identity: equal rules built twice are two keys,
    never a stale one), so switching rules needs no clearing.
    """

    stopwords: frozenset[str] = STOPWORDS
    meta_words: frozenset[str] = META_WORDS
    synonyms: Mapping[str, str] = field(default_factory=lambda: dict(SYNONYMS))
    fractions_as_decimals: bool = FRACTIONS_AS_DECIMALS

    def __post_init__(self) -> None:
        object.__setattr__(self, "stopwords", frozenset(self.stopwords))
        object.__setattr__(self, "meta_words", frozenset(self.meta_words))
        object.__setattr__(self, "synonyms", MappingProxyType(dict(self.synonyms)))

    def left_out(self, word: str) -> bool:
        """A stopword or a framing word: no content stem and no character n-grams."""
        return word in self.stopwords or word in self.meta_words


DEFAULT_RULES = TextRules()
_ACTIVE: ContextVar[TextRules] = ContextVar("knowsim_text_rules", default=DEFAULT_RULES)


def active_rules() -> TextRules:
    """The rules text is read with here (this thread / context): :data:`DEFAULT_RULES` unless
    :func:`rules_applied` says otherwise."""
    return _ACTIVE.get()


@contextmanager
def rules_applied(rules: TextRules) -> Iterator[TextRules]:
    """Read text with ``rules`` inside the block (this thread / context only; nothing global changes)."""
    token = _ACTIVE.set(rules)
    try:
        yield rules
    finally:
        _ACTIVE.reset(token)
_BINOM = re.compile(r"\\binom\{\s*(\w+)\s*\}\{\s*(\w+)\s*\}|\bC\(\s*(\w+)\s*,\s*(\w+)\s*\)|\b(\w+)\s+choose\s+(\w+)")
_FRACTION = re.compile(r"\b(\d+)\s*/\s*(\d+)\b")


def formula_tokens(text: str, rules: TextRules | None = None) -> list[str]:
    """Notation-independent tokens: C(6,3), \\binom{6}{3} and "6 choose 3" all give ``binom:6,3``
    (and, when the rules' ``fractions_as_decimals`` is on, 1/10 also gives 0.1)."""
    rules = rules or _ACTIVE.get()
    out: list[str] = []
    if not ("binom" in text or "C(" in text or "choose" in text
            or (rules.fractions_as_decimals and "/" in text)):  # what every match needs
        return out
    for m in _BINOM.finditer(text):
        a, b = [g for g in m.groups() if g is not None][:2]
        out.append(f"binom:{a.lower()},{b.lower()}")
    for m in _FRACTION.finditer(text) if rules.fractions_as_decimals else ():
        num, den = int(m.group(1)), int(m.group(2))
        if den:
            out.append(f"{num / den:g}")
    return out


def content_stems(text: str) -> tuple[str, ...]:
    """Stems of the non-stopword tokens of ``text``, in order (numbers kept), plus formula tokens."""
    return _content_stems(text, _ACTIVE.get())


@lru_cache(maxsize=16384)
def _content_stems(text: str, rules: TextRules) -> tuple[str, ...]:
    out = list(filter(None, map(_word_stems(rules).__getitem__, words(text))))
    out.extend(formula_tokens(text, rules))
    return tuple(out)


class _WordStems(dict):
    """word → the stem it contributes to :func:`content_stems` ("" for a stopword), filled on first
    use: words recur across texts far more than texts do, so the per-word work is remembered per
    word and rules (a plain dict lookup, in C, for a word seen before)."""

    def __init__(self, rules: TextRules):
        super().__init__()
        self.rules = rules

    def __missing__(self, w: str) -> str:
        if len(self) >= _WORD_STEMS_SIZE:
            self.clear()
        self[w] = got = _content_word(w, self.rules)
        return got


def _content_word(w: str, rules: TextRules) -> str:
    """The stem one word contributes to :func:`content_stems` ("" for a stopword)."""
    if rules.left_out(w) or (len(w) < 2 and not w.isdigit()):
        return ""
    st = stem(w)
    return rules.synonyms.get(w, rules.synonyms.get(st, st))


_WORD_STEMS: dict[TextRules, _WordStems] = {}
_WORD_STEMS_SIZE = 65536


def _word_stems(rules: TextRules) -> _WordStems:
    got = _WORD_STEMS.get(rules)
    if got is None:
        if len(_WORD_STEMS) >= 16:  # rules are few (the ablation builds a handful)
            _WORD_STEMS.clear()
        got = _WORD_STEMS[rules] = _WordStems(rules)
    return got


def sentences(text: str) -> list[str]:
    """Split prose into sentences / lines (good enough for chat messages and descriptions)."""
    return list(_sentences(text))


@lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[str, ...]:
    # one reply is split by the tutor, the learner and the extractor: remembered per text
    return tuple(s.strip() for s in _SENTENCE.split(text) if s and s.strip())


@dataclass(frozen=True, slots=True)
class Profile:
    """One IU's weighted vocabulary."""

    id: str
    concept_terms: dict[str, float]  # stem → idf (concept name)
    desc_terms: dict[str, float]  # stem → tf·idf (description, concept included)
    concept_mass: float
    desc_mass: float
    distinctive: frozenset[str]  # concept stems no other IU's concept uses


class IUProfiles:
    """TF-IDF term profiles of every IU of one graph, and coverage scores against text."""

    def __init__(self, graph: IUGraph, rules: TextRules | None = None):
        self.graph = graph
        self.rules = rules or _ACTIVE.get()
        self.memo: dict = {}  # per-graph results of the agents (e.g. labels of a message)
        self._char_memo: dict[str, dict[str, float]] = {}  # text → char_cosines (scripted prose repeats sentences)
        self._char_idx: tuple[list[str], dict[str, float], tuple[Callable[[str], Any], Any, Any]] | None = None
        self._postings: dict[str, list[tuple[str, int, float, int, float]]] | None = None  # see relevances()
        docs: dict[str, list[str]] = {}
        concept_stems: dict[str, list[str]] = {}
        for n in graph.nodes:
            concept_stems[n.id] = content_stems(n.concept)
            docs[n.id] = concept_stems[n.id] * 2 + content_stems(n.description)
        self.idf = smooth_idf([set(toks) for toks in docs.values()])
        concept_df: dict[str, int] = {}
        for toks in concept_stems.values():
            for t in set(toks):
                concept_df[t] = concept_df.get(t, 0) + 1
        self.profiles: dict[str, Profile] = {}
        for n in graph.nodes:
            ctoks = concept_stems[n.id]
            cterms = {t: self.idf[t] for t in ctoks}
            tf: dict[str, int] = {}
            for t in docs[n.id]:
                tf[t] = tf.get(t, 0) + 1
            dterms = {t: sublinear_tf(c) * self.idf[t] for t, c in tf.items()}
            self.profiles[n.id] = Profile(
                id=n.id,
                concept_terms=cterms,
                desc_terms=dterms,
                concept_mass=sum(cterms.values()) or 1.0,
                desc_mass=sum(dterms.values()) or 1.0,
                distinctive=frozenset(t for t in ctoks if concept_df.get(t, 0) == 1 and not t.isdigit()),
            )

    def remember(self, key, value):
        """Store one result of the agents in :attr:`memo` and return it; the memo is emptied when
        full (the profiles live as long as the process, the texts of a batch do not repeat forever)."""
        if len(self.memo) >= MEMO_SIZE:
            self.memo.clear()
        self.memo[key] = value
        return value

    def concept_cover(self, iu: str, terms: set[str]) -> float:
        """Share of the IU's concept-name weight whose stems appear in ``terms`` (0–1)."""
        p = self.profiles[iu]
        return sum(w for t, w in p.concept_terms.items() if t in terms) / p.concept_mass

    def desc_cover(self, iu: str, terms: set[str]) -> float:
        """Share of the IU's description weight whose stems appear in ``terms`` (0–1)."""
        p = self.profiles[iu]
        return sum(w for t, w in p.desc_terms.items() if t in terms) / p.desc_mass

    def relevance(self, iu: str, terms: set[str]) -> float:
        """One 0–1 score: concept-name coverage counts most, description coverage backs it up."""
        return 0.55 * self.concept_cover(iu, terms) + 0.45 * min(1.0, 2.2 * self.desc_cover(iu, terms))

    def relevances(self, terms: set[str]) -> dict[str, float]:
        """``{iu: relevance(iu, terms)}`` for every IU, the same floats as :meth:`relevance`, computed
        only for the IUs sharing a stem with ``terms``: an IU sharing none scores exactly 0.0.

        Through an inverted index (stem → its place and weight in each IU's concept and description
        vectors), so a text meets only the terms it shares instead of every term of every IU it
        touches; the weights found are added in the IU's own term order, as :meth:`concept_cover`
        and :meth:`desc_cover` add them, so every float is the same to the last bit."""
        index = self._postings
        if index is None:
            index = self._postings = {}
            for iu, p in self.profiles.items():
                cpos = {t: i for i, t in enumerate(p.concept_terms)}
                for i, (t, w) in enumerate(p.desc_terms.items()):  # every concept stem is a description term
                    index.setdefault(t, []).append((iu, i, w, cpos.get(t, -1), p.concept_terms.get(t, 0.0)))
        found: dict[str, list] = {}
        for t in terms:
            for hit in index.get(t, ()):
                got = found.get(hit[0])
                if got is None:
                    found[hit[0]] = [hit]
                else:
                    got.append(hit)
        out = dict.fromkeys(self.profiles, 0.0)
        for iu, hits in found.items():
            p = self.profiles[iu]
            hits.sort(key=_place)
            desc = sum(h[2] for h in hits) / p.desc_mass
            concept = sum(h[4] for h in sorted(hits, key=_concept_place) if h[3] >= 0) / p.concept_mass
            out[iu] = 0.55 * concept + 0.45 * min(1.0, 2.2 * desc)
        return out

    def char_cosines(self, text: str) -> dict[str, float]:
        """``{iu: cosine}`` between the character n-gram TF-IDF vector of ``text`` and of every IU
        (concept name twice + description); IUs sharing no n-gram are left out.

        Character 3–5-grams of the content words are robust to what the word stems miss —
        inflections ("arrangement" / "arranging"), compounds and partial terms ("binomial" /
        "binom") — and a whole-message cosine does not grow with every loosely related word the
        way vocabulary coverage does; the lexical extractor uses it to decide what was mentioned.

        One matrix product per text, with no Python loop over n-grams: each content word's known
        n-gram rows are remembered per graph (one lookup per word), ``bincount`` turns them into
        the text's counts, and the sublinear TF-IDF weights of the rows present times those rows of
        the graph's (n-gram × IU) matrix of unit-length IU vectors are the dot products. A reply of
        ~950 characters took ~0.5 ms as a loop over posting lists and takes ~0.15 ms so; sums in
        another order may differ in the last bit, never more (the tests compare with the textbook
        cosine at 1e-12, and the offline matrix's fingerprint is unchanged).
        """
        hit = self._char_memo.get(text)
        if hit is None:
            ids, _, (rows_of, idf_rows, matrix) = self._char_index()
            parts = list(map(rows_of, words(text)))  # a stopword's rows are empty: no filtering needed
            rows = np.concatenate(parts) if parts else _NO_ROWS
            if rows.size:
                counts = np.bincount(rows, minlength=len(idf_rows))
                present = np.flatnonzero(counts)
                weights = idf_rows[present] * (1.0 + np.log(counts[present]))
                norm = math.sqrt(float(weights @ weights)) or 1.0
                dots = (weights @ matrix[present]).tolist()
            else:
                norm, dots = 1.0, ()
            if len(self._char_memo) >= _CHAR_MEMO_SIZE:
                self._char_memo.clear()
            hit = self._char_memo[text] = {iu: d / norm for iu, d in zip(ids, dots) if d}
        return hit  # shared: callers must not modify it

    def _char_index(self) -> tuple[list[str], dict[str, float], tuple[Callable[[str], Any], Any, Any]]:
        """(IU ids, n-gram idf over the graph's IUs, (word → array of the matrix rows of its n-grams
        the graph knows, one per occurrence, empty for a stopword; idf by row; the n-gram × IU
        matrix of the IUs' unit-length TF-IDF vectors)), built once per graph."""
        index = self._char_idx
        if index is None:
            rules = self.rules
            docs = {n.id: _ngram_tf(f"{n.concept} {n.concept} {n.description}", rules) for n in self.graph.nodes}
            idf = smooth_idf(docs.values())
            ids = list(docs)
            row_of = {g: r for r, g in enumerate(idf)}
            matrix = np.zeros((len(row_of), len(ids)), dtype=np.float64)
            for i, iu in enumerate(ids):
                for g, w in _unit(docs[iu], idf).items():
                    matrix[row_of[g], i] = w
            idf_rows = np.fromiter(idf.values(), dtype=np.float64, count=len(idf))
            rows_of = _WordRows(rules, row_of).__getitem__  # a dict lookup (in C) for a word seen before
            index = self._char_idx = (ids, idf, (rows_of, idf_rows, matrix))
        return index

    def rank(self, text: str) -> list[tuple[str, float]]:
        """IUs by relevance to ``text``, best first (ties in node order)."""
        rel = self.relevances(set(content_stems(text)))
        scored = [(n.id, rel[n.id]) for n in self.graph.nodes]
        return sorted(scored, key=lambda x: -x[1])


_NO_ROWS = np.zeros(0, dtype=np.intp)


class _WordRows(dict):
    """word → array of the n-gram matrix rows of its n-grams the graph knows (one per occurrence;
    empty for a word :func:`_ngram_tf` leaves out), filled on first use, emptied when full."""

    def __init__(self, rules: TextRules, row_of: dict[str, int]):
        super().__init__()
        self.rules, self.row_of = rules, row_of

    def __missing__(self, word: str) -> Any:
        if len(self) >= _WORD_ROWS_SIZE:
            self.clear()
        row_of = self.row_of
        got = _NO_ROWS if self.rules.left_out(word) else np.array(
            [row_of[g] for g in _word_ngrams(word) if g in row_of], dtype=np.intp)
        self[word] = got
        return got


def _place(hit: tuple[str, int, float, int, float]) -> int:
    return hit[1]


def _concept_place(hit: tuple[str, int, float, int, float]) -> int:
    return hit[3]


@lru_cache(maxsize=4096)
def _ngram_tf(text: str, rules: TextRules) -> dict[str, int]:
    """Counts of the character 3–5-grams (with word-boundary spaces) of ``text``'s content words."""
    # Counter counts in C; its keys keep first-occurrence order, as the plain loop's did
    return dict(Counter(chain.from_iterable(_word_ngrams(w) for w in words(text) if not rules.left_out(w))))


@lru_cache(maxsize=32768)
def _word_ngrams(word: str) -> tuple[str, ...]:
    """The character 3–5-grams of one word padded with spaces (words recur across messages)."""
    padded = f" {word} "
    return tuple(padded[i:i + k] for k in (3, 4, 5) for i in range(len(padded) - k + 1))


def _unit(tf: dict[str, int], idf: dict[str, float]) -> dict[str, float]:
    """The unit-length sublinear TF-IDF vector of n-gram counts (n-grams unknown to ``idf`` dropped)."""
    vec = {g: sublinear_tf(c) * idf[g] for g, c in tf.items() if g in idf}
    norm = math.sqrt(sum(w * w for w in vec.values())) or 1.0
    return {g: w / norm for g, w in vec.items()}


def tfidf_vector(stems: Iterable[str], idf: dict[str, float]) -> dict[str, float]:
    """Sublinear TF-IDF weights of ``stems`` over a graph's vocabulary (unknown stems dropped), the
    same weighting as :attr:`Profile.desc_terms`, so a sentence and an IU compare like for like."""
    tf: dict[str, int] = {}
    for t in stems:
        if t in idf:
            tf[t] = tf.get(t, 0) + 1
    return {t: sublinear_tf(c) * idf[t] for t, c in tf.items()}


# ---------------------------------------------------------------------- the one TF-IDF weighting
# Every TF-IDF of the package (IU profiles, character n-grams, realism's message cosine) weighs a
# term by sublinear tf × smoothed idf — scikit-learn's TfidfVectorizer(sublinear_tf=True,
# smooth_idf=True) formulas, computed here on a handful of short texts (a vectorizer per IU graph
# and per message would cost more than it saves, and the per-graph caches need plain dicts).
def smooth_idf(documents: Iterable[Iterable[str]]) -> dict[str, float]:
    """``ln((n + 1) / (df + 1)) + 1`` of every term of ``documents`` (each an iterable of distinct
    terms), in first-seen order; ``n`` counts at least one document."""
    docs = list(documents)
    n_docs = max(1, len(docs))
    df: dict[str, int] = {}
    for doc in docs:
        for t in doc:
            df[t] = df.get(t, 0) + 1
    return {t: math.log((n_docs + 1) / (c + 1)) + 1.0 for t, c in df.items()}


def sublinear_tf(count: int) -> float:
    return 1.0 + math.log(count)


class TfIdf:
    """Word TF-IDF over a fixed set of documents, with an idf for terms none of them has."""

    def __init__(self, documents: Iterable[str]):
        docs = [set(_stemmed(d)) for d in documents]
        self.n = len(docs)
        self.idf = smooth_idf(docs)
        self.unseen = math.log(self.n + 1) + 1.0  # smooth_idf's value at df = 0

    def vector(self, text: str) -> dict[str, float]:
        tf: dict[str, int] = {}
        for t in _stemmed(text):
            tf[t] = tf.get(t, 0) + 1
        return {t: sublinear_tf(c) * self.idf.get(t, self.unseen) for t, c in tf.items()}

    def cosine(self, a: str, b: str) -> float:
        va, vb = self.vector(a), self.vector(b)
        dot = sum(w * vb.get(t, 0.0) for t, w in va.items())
        na, nb = math.sqrt(sum(w * w for w in va.values())), math.sqrt(sum(w * w for w in vb.values()))
        return dot / (na * nb) if na and nb else 0.0


def _stemmed(text: str) -> list[str]:
    return [stem(w) for w in words(text)]


# Bounds of the per-graph memos (entries; a full memo is emptied) and of the number of graphs
# whose profiles are kept. Profiles live as long as the process and are shared by every
# conversation about a question, so these bound a long batch's memory: roughly 10 MB per graph
# with ~2000 memo entries (600 conversations over the 10 samples: +120 MB of RSS, global caches
# included), against ~20 ms to rebuild one graph's profiles.
_CHAR_MEMO_SIZE = 2048
_WORD_ROWS_SIZE = 16384  # per graph: word → its n-gram rows (a question's vocabulary is a few thousand words)
MEMO_SIZE = 2048
_PROFILE_CACHE: dict[tuple[str, TextRules], IUProfiles] = {}  # (graph content hash, rules) → profiles
_PROFILE_CACHE_SIZE = 16
_CONTENT_KEYS: dict[int, tuple[IUGraph, str]] = {}  # id(graph) → (that graph, its content hash)


def clear_caches() -> None:
    """Forget every memo of text read (per word, per text, n-grams) and every graph's profiles, to
    give their memory back. Switching :class:`TextRules` needs no clearing: the caches are keyed by them."""
    _content_stems.cache_clear()
    _WORD_STEMS.clear()
    _sentences.cache_clear()
    _ngram_tf.cache_clear()
    _PROFILE_CACHE.clear()
    _CONTENT_KEYS.clear()


def graph_content_key(graph: IUGraph) -> str:
    """sha256 of the graph's whole content (its JSON): equal graphs share one key."""
    return hashlib.sha256(graph.model_dump_json().encode()).hexdigest()


def profiles_for(graph: IUGraph) -> IUProfiles:
    """The profiles of a graph, shared by every graph of the same content.

    Keyed by content, so a batch that rebuilds a question's graph for every conversation (from
    storage, or a copy) still builds the profiles, n-gram index and text memos once per question,
    and an edited graph — always a new object with new content — never meets the old ones. The
    content hash of a graph *object* is remembered by identity (a frozen graph cannot change;
    the entry holds the graph, so its id is not reused while remembered): hashing a pydantic
    graph on every call would cost more than the lookups it serves.
    """
    entry = _CONTENT_KEYS.get(id(graph))
    if entry is None or entry[0] is not graph:
        if len(_CONTENT_KEYS) >= _PROFILE_CACHE_SIZE:
            _CONTENT_KEYS.pop(next(iter(_CONTENT_KEYS)))
        entry = _CONTENT_KEYS[id(graph)] = (graph, graph_content_key(graph))
    rules = _ACTIVE.get()
    key = (entry[1], rules)
    prof = _PROFILE_CACHE.get(key)
    if prof is None:
        if len(_PROFILE_CACHE) >= _PROFILE_CACHE_SIZE:
            _PROFILE_CACHE.pop(next(iter(_PROFILE_CACHE)))
        prof = _PROFILE_CACHE[key] = IUProfiles(graph, rules)
    return prof


def forbidden_stems(graph: IUGraph, unaware: Iterable[str], allowed_text: str) -> set[str]:
    """Stems that would name an unaware concept: its distinctive concept words.

    A word is distinctive when it is in the unaware IU's concept name but neither in the question
    the user was given (``allowed_text``) nor in the concept name of an IU the user is aware of.
    """
    unaware = set(unaware)
    allowed = set(content_stems(allowed_text))
    aware_words: set[str] = set()
    for n in graph.nodes:
        if n.id not in unaware:
            aware_words.update(content_stems(n.concept))
    out: set[str] = set()
    for n in graph.nodes:
        if n.id in unaware:
            out.update(t for t in content_stems(n.concept) if t not in allowed and t not in aware_words)
    return out
