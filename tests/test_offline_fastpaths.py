"""The offline agents' fast paths give exactly what their plain definitions give.

The speed-ups of the offline matrix (profiles shared by every graph of the same content, memos of
sentences and messages already read, relevance computed only for IUs that share a stem) must not
change a single float. Each test plays a few real conversations, takes their turns, and compares
the fast path with the plain definition written out here (or with a fresh, memo-free
:class:`IUProfiles`) by ``==`` on floats, not by tolerance. The whole-matrix check is
``benchmarks/offline_fingerprint.py`` (run before and after a change; the hashes must be equal).
"""

from __future__ import annotations

import math
import random

import pytest

from knowsim_core.agents import registry, lexical, offline_reading as reading
from knowsim_core.text import profiles as ot
from knowsim_core.agents.lexical import _cue_score, tq_features
from knowsim_core.text.profiles import IUProfiles, content_stems, profiles_for, sentences, tfidf_vector
from knowsim_core.engine.graph import IUGraph
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.session import Simulation

ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")


def _turns(n_runs: int = 8, seed: int = 0):
    """(graph, user message, assistant message) of every turn of a few random offline runs."""
    rng = random.Random(seed)
    out = []
    for _ in range(n_runs):
        sample = rng.choice(load_samples())
        sim = Simulation(material=sample.material, assistant=registry.resolve("assistant", rng.choice(ASSISTANTS)),
                         user=registry.resolve("user", "offline/knowsim"),
                         extractor=registry.resolve("extractor", "offline/lexical"),
                         level=rng.choice(("novice", "intermediate", "advanced")))
        sim.reset(seed=rng.randrange(1000))
        out.extend((sample.graph, t.user_message, t.assistant_message) for t in sim.run_to_end().turns)
    return out


@pytest.fixture(scope="module")
def turns():
    return _turns()


_FRESH: dict[int, tuple[IUGraph, IUProfiles]] = {}


def _fresh(graph: IUGraph) -> IUProfiles:
    """Profiles of a copy of the graph built outside the shared cache, their memos emptied."""
    if id(graph) not in _FRESH:
        _FRESH[id(graph)] = (graph, IUProfiles(IUGraph.from_data(graph.to_data())))
    prof = _FRESH[id(graph)][1]
    prof.memo.clear()
    prof._char_memo.clear()
    return prof


def plain_tq_features(prof: IUProfiles, message: str, user_message: str) -> dict[str, tuple[float, ...]]:
    """The features as defined: every IU against every sentence, plain sets, nothing remembered."""
    sents = sentences(message) or [""]
    sent_terms = [set(content_stems(s)) for s in sents]
    all_terms = set().union(*sent_terms)
    user_terms = set(content_stems(user_message))
    cues = [_cue_score(s) for s in sents]
    words = {n.id: (set(content_stems(n.concept)), set(content_stems(n.concept)) | set(content_stems(n.description)))
             for n in prof.graph.nodes}

    def share(mine: set, terms: set) -> float:
        return len(mine & terms) / len(mine) if mine else 0.0

    neighbours = lexical._neighbours(prof)
    out = {}
    for iu, (concept, desc) in words.items():
        depth, n_about, best_concept = 0.0, 0, 0.0
        for cue, terms in zip(cues, sent_terms):
            d, c = share(desc, terms), share(concept, terms)
            if desc & all_terms:
                best_concept = max(best_concept, c)
                if d >= lexical.ABOUT_COVER or c >= lexical.ABOUT_CONCEPT:
                    n_about += 1
                    depth += cue * min(1.0, d / lexical.ABOUT_COVER)
        near = max((share(words[v][1], all_terms) for v in neighbours.get(iu, ())), default=0.0)
        out[iu] = (1.0, share(concept, all_terms), best_concept, min(1.0, depth / 3.0), n_about / len(sents), near,
                   share(concept, user_terms) if user_message else 0.0, min(1.0, len(sents) / 10),
                   min(1.0, len(desc & all_terms) / lexical.USED_WORDS))
    return out


def test_extractor_features_equal_the_plain_definition_warm_or_cold(turns):
    for graph, user, assistant in turns:
        shared = tq_features(profiles_for(graph), assistant, user)  # memos warmed by the runs above
        assert shared == plain_tq_features(_fresh(graph), assistant, user)
        assert shared == tq_features(_fresh(graph), assistant, user)


def test_relevances_equal_relevance_for_every_iu(turns):
    for graph, user, assistant in turns:
        prof = profiles_for(graph)
        for text in (user, assistant, *sentences(assistant)):
            terms = set(content_stems(text))
            assert prof.relevances(terms) == {iu: prof.relevance(iu, terms) for iu in prof.profiles}


def test_read_user_sentence_facts_equal_the_plain_reading(turns):
    for graph, user, _ in turns:
        prof = _fresh(graph)
        plain = []
        for s in sentences(user):
            terms = set(content_stems(s))
            scored = sorted(((iu, prof.relevance(iu, terms)) for iu in prof.profiles), key=lambda x: -x[1])
            low = s.lower()
            plain.append((bool(reading.HEDGE.search(low)) or s.rstrip().endswith("?"),
                          bool(reading.CONFIDENT.search(low)), tuple(iu for iu, r in scored[:2] if r >= reading.MENTION)))
        assert reading._sentence_facts(graph, user) == tuple(plain)


def test_char_cosines_remembered_equal_fresh_and_scikit_learns_tfidf(turns):
    """The n-gram cosines equal scikit-learn's ``TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5),
    sublinear_tf=True)`` fitted on the graph's IU texts, fed the content words. The hand-written
    numpy path stays in the agents: importing scikit-learn's text module costs ~11 times numpy's
    import in every batch worker, and its ``transform`` of one short text 3–6 times the path's time
    (issue 32's measurements); this test is what ties the two together."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    for graph, user, assistant in turns[:20]:
        prof = _fresh(graph)
        vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), lowercase=False, sublinear_tf=True,
                              preprocessor=lambda t: " ".join(w for w in ot.words(t)
                                                              if w not in ot.STOPWORDS and w not in ot.META_WORDS))
        ius = vec.fit_transform([f"{n.concept} {n.concept} {n.description}" for n in graph.nodes])
        reference = (vec.transform([assistant, user]) @ ius.T).toarray()
        for text, row in zip((assistant, user), reference):
            got = profiles_for(graph).char_cosines(text)
            assert got == prof.char_cosines(text)
            for iu, ref in zip((n.id for n in graph.nodes), row):
                assert got.get(iu, 0.0) == pytest.approx(ref, abs=1e-12)


def test_profiles_are_shared_by_content_and_never_by_a_stale_object():
    sample = load_samples()[0]
    copy = IUGraph.from_data(sample.graph.to_data())
    assert copy is not sample.graph
    assert profiles_for(copy) is profiles_for(sample.graph)  # same content: built once
    node = sample.graph.nodes[0]
    edited = sample.graph.model_copy(update={"nodes": (node.model_copy(update={"description": "Something else."}),
                                                       *sample.graph.nodes[1:])})
    assert profiles_for(edited) is not profiles_for(sample.graph)
    assert profiles_for(edited).profiles[node.id].desc_terms != profiles_for(sample.graph).profiles[node.id].desc_terms
    before = profiles_for(sample.graph)
    ot._PROFILE_CACHE.clear()  # what the extractor evaluation's text-rule ablation does
    assert profiles_for(sample.graph) is not before
