"""The lexical extractor: one label per IU, from the text alone, fast."""

from __future__ import annotations


from knowsim_core import registry
from knowsim_core.agents.lexical import DEFAULT_SETTINGS, _cue_score, label_turn
from knowsim_core.agents.offline_text import content_stems, profiles_for, sentences
from knowsim_core.ports import ExtractorContext, Message
from knowsim_core.samples import get_sample, load_samples
from knowsim_core.state import initial_state
from knowsim_core.config import preset


def labels(sample_id, user, assistant, prev=""):
    g = get_sample(sample_id).graph
    return {s.id: s for s in label_turn(g, user, assistant, prev)}


def test_labels_every_iu_once_in_node_order():
    s = get_sample("sample_follicular_lymphoma")
    sig = label_turn(s.graph, "hello", "Some unrelated reply about the weather.")
    assert [x.id for x in sig] == list(s.graph.index.ids)
    assert all(x.teaching_quality == "not_mentioned" and x.attempt.value == "none" for x in sig)


def test_a_worked_explanation_is_well_explained_a_bare_naming_is_shallow():
    teach = ("Let's look at the multiplication principle. If a process happens in stages and the options at a later "
             "stage do not depend on earlier ones, the total count is the product of the stage counts. "
             "This works because every choice at one stage combines with every choice at the next. "
             "For example, 20 colour patterns times 20 on/off patterns gives 20 × 20 = 400 outcomes.")
    got = labels("sample_lava_lamps", "How do I count?", teach)
    assert got["IU3"].teaching_quality == "well_explained"
    bare = labels("sample_lava_lamps", "How do I count?", "You could use the multiplication principle here, maybe?")
    assert bare["IU3"].teaching_quality == "shallow"
    assert bare["IU13"].teaching_quality == "not_mentioned"


def test_attempt_types_reasoning_articulation_none():
    prev = "The number of red/blue patterns is C(6,3) = 20, because we choose which 3 of the 6 positions are red."
    reasoning = labels("sample_lava_lamps", "I think the red/blue patterns are C(6,3) = 18, because 6·3 = 18?", "ok", prev)
    assert reasoning["IU6"].attempt.value == "reasoning"
    echo = labels("sample_lava_lamps", "So the number of red/blue patterns is C(6,3), we choose which positions are red.", "ok", prev)
    assert echo["IU6"].attempt.value == "articulation"
    ask = labels("sample_lava_lamps", "I don't understand the red/blue patterns, can you explain?", "ok", prev)
    assert ask["IU6"].attempt.value == "none"


def test_same_notation_in_any_form_is_recognised():
    a = labels("sample_lava_lamps", "", r"The count of shelf colourings is \binom{6}{3} = 20.")
    b = labels("sample_lava_lamps", "", "The count of shelf colourings is 6 choose 3 = 20.")
    assert a["IU6"].teaching_quality != "not_mentioned"
    assert a["IU6"].teaching_quality == b["IU6"].teaching_quality


def test_extractor_port_uses_the_previous_assistant_message():
    s = get_sample("sample_lava_lamps")
    ex = registry.resolve("extractor", "offline/lexical")
    prev = s.graph.node("IU6").description
    ctx = ExtractorContext(turn=2, material=s.material, state=initial_state(s.graph, "novice", preset(), seed=1),
                           history=(Message("user", "hi"), Message("assistant", prev)),
                           user_message="So the number of red/blue patterns is C(6,3), one of the factors of the total.",
                           assistant_message="Yes.", seed=1)
    out = ex.extract(ctx)
    assert not out.failed and len(out.entries) == len(s.graph.nodes)
    assert {e.id: e for e in out.entries}["IU6"].attempt.value == "articulation"


def test_on_expert_prose_teaching_beats_bare_naming(expert_graphs):
    """Long expert-domain graphs: restating an IU's content with a reason/example is
    well_explained; a one-sentence naming, however close to the concept's name, stays shallow
    (spec §9: bare naming and one-liners are at most shallow)."""
    for g in list(expert_graphs.values())[:5]:
        first, second = g.nodes[0], g.nodes[1]
        teach = (f"Let us start with {first.concept.lower()}. {first.description} "
                 f"For example, this is why it matters here: {first.description.split('.')[0]}.")
        got = {s.id: s.teaching_quality for s in label_turn(g, "ok", teach)}
        assert got[first.id] == "well_explained", g.label
        bare = {s.id: s.teaching_quality for s in label_turn(g, "ok", f"You might also look into {second.concept.lower()} later.")}
        assert bare[second.id] == "shallow", g.label
        assert sum(q == "well_explained" for q in bare.values()) == 0


def test_character_ngrams_meet_inflections_the_word_stems_miss():
    prof = profiles_for(get_sample("sample_follicular_lymphoma").graph)
    # "lymphocytic" shares no word stem with any IU ("lymphocyte" stems to "lymphocyt") ...
    assert not any(set(content_stems("lymphocytic")) & set(p.desc_terms) for p in prof.profiles.values())
    # ... but its character n-grams point at the lymphoma-as-lymphocyte-malignancy IU
    sims = prof.char_cosines("lymphocytic")
    assert max(sims, key=sims.get) == "IU1"
    # unrelated words share only stray short n-grams: far below the mention threshold
    assert max(prof.char_cosines("the weather was sunny today").values()) < DEFAULT_SETTINGS.mention


def test_sentences_end_after_a_closing_quote_or_bracket():
    text = 'This is called “transformation.” How would a biopsy help? He said "go." Then (as noted.) Next'
    assert sentences(text) == ["This is called “transformation.”", "How would a biopsy help?", 'He said "go."',
                               "Then (as noted.)", "Next"]


def test_a_definition_closed_by_a_quote_is_not_read_as_a_question():
    """A defining sentence that ends in a quoted term, followed by a question: the question must not
    swallow (and halve) the definition's cues."""
    g = get_sample("sample_follicular_lymphoma").graph
    iu8 = g.node("IU8")
    msg = (f"{iu8.description.split('.')[0]}, which is called “extranodal spread.” "
           "Because it grows outside the nodes, it is more typical of aggressive disease. Where have you seen it?")
    assert {s.id: s.teaching_quality for s in label_turn(g, "ok", msg)}["IU8"] == "well_explained"


def test_listing_what_something_includes_counts_as_an_example():
    assert _cue_score("Common incentives include lower fees and tax breaks.") > _cue_score(
        "Common incentives are lower fees and tax breaks.")
