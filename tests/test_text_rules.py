"""Changing a text rule and clearing the caches reads words the new way (issue 32).

The extractor evaluation's ablation flips ``STOPWORDS`` / ``META_WORDS`` / ``SYNONYMS`` and used to
clear another module's private caches by hand — but not the per-word memo (``_content_word``), so a
word read before the flip kept its old reading. ``profiles.clear_caches()`` is the one public way."""

from __future__ import annotations

from knowsim_core.evaluation.extractor_eval import text_rule_flipped
from knowsim_core.text import profiles


def test_a_flipped_rule_is_read_the_new_way_for_words_seen_before():
    assert "concept" in profiles.META_WORDS
    assert "concept" not in profiles.content_stems("the concept of gravity")  # warms the per-word memo
    with text_rule_flipped(_meta_rule()):
        assert "concept" in profiles.content_stems("the concept of gravity")
    assert "concept" not in profiles.content_stems("the concept of gravity")  # restored, caches cleared again


def _meta_rule() -> str:
    from knowsim_core.evaluation.extractor_eval import TEXT_RULES

    return TEXT_RULES[4]  # META_WORDS emptied


def test_clear_caches_leaves_no_graph_profile_behind():
    from knowsim_core.formats.samples import load_samples

    graph = load_samples()[0].graph
    before = profiles.profiles_for(graph)
    profiles.clear_caches()
    assert profiles.profiles_for(graph) is not before
