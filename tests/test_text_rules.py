"""Text rules are one frozen value (issue 32): the extractor evaluation's ablation used to reassign
``profiles.STOPWORDS`` / ``META_WORDS`` / ``SYNONYMS`` / ``FRACTIONS_AS_DECIMALS`` and clear another
module's private caches by hand — missing the per-word memo, so a word read before a flip kept its
old reading. Now it runs under ``profiles.rules_applied(TextRules)``, the caches are keyed by the
rules, and no module global changes (the first two tests fail on the old code)."""

from __future__ import annotations

import threading

import pytest

from knowsim_core.evaluation.extractor_eval import TEXT_RULES, flipped_rules, text_rule_flipped
from knowsim_core.formats.samples import load_samples
from knowsim_core.text import profiles

NO_META = TEXT_RULES[4]  # META_WORDS emptied


def _globals() -> dict[str, object]:
    return {k: v for k, v in vars(profiles).items() if not k.startswith("__") and not callable(v)
            and not isinstance(v, (dict, type(profiles)))}


@pytest.mark.parametrize("name", TEXT_RULES)
def test_flipping_a_rule_changes_no_module_global(name):
    before = _globals()
    with text_rule_flipped(name):
        assert _globals() == before and all(_globals()[k] is v for k, v in before.items())
        profiles.content_stems("the concept 1/10 on fix")
    assert all(_globals()[k] is v for k, v in before.items())


def test_a_flipped_rule_is_read_the_new_way_for_words_seen_before():
    assert "concept" not in profiles.content_stems("the concept of gravity")  # warms the per-word memo
    with text_rule_flipped(NO_META):
        assert "concept" in profiles.content_stems("the concept of gravity")
    assert "concept" not in profiles.content_stems("the concept of gravity")


def test_profiles_are_kept_per_rules_and_other_threads_keep_the_default():
    graph = load_samples()[0].graph
    shipped = profiles.profiles_for(graph)
    seen = []
    with profiles.rules_applied(flipped_rules(NO_META)) as rules:
        flipped = profiles.profiles_for(graph)
        worker = threading.Thread(target=lambda: seen.append(profiles.profiles_for(graph)))
        worker.start()
        worker.join()
    assert flipped is not shipped and flipped.rules is rules
    assert seen == [shipped] and profiles.profiles_for(graph) is shipped


def test_text_rules_are_frozen():
    with pytest.raises(Exception):
        profiles.DEFAULT_RULES.stopwords = frozenset()  # type: ignore[misc]
    with pytest.raises(TypeError):
        profiles.DEFAULT_RULES.synonyms["x"] = "y"  # type: ignore[index]
