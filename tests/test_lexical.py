"""The lexical extractor: one label per IU, from the text alone, fast."""

from __future__ import annotations


from knowsim_core.agents import registry
from knowsim_core.agents.lexical import _cue_score, label_turn
from knowsim_core.text.profiles import content_stems, profiles_for, sentences
from knowsim_core.engine.ports import ExtractorContext, Message
from knowsim_core.formats.samples import get_sample, load_samples
from knowsim_core.engine.state import initial_state
from knowsim_core.engine.config import preset


def labels(sample_id, user, assistant, prev=""):
    g = get_sample(sample_id).graph
    return {s.id: s for s in label_turn(g, user, assistant, prev)}


def test_labels_every_iu_once_in_node_order():
    s = get_sample("sample_follicular_lymphoma")
    sig = label_turn(s.graph, "hello", "Some unrelated reply about the weather.")
    assert [x.id for x in sig] == list(s.graph.index.ids)
    assert all(x.teaching_quality == "not_mentioned" and x.attempt.value == "none" for x in sig)


def test_a_worked_explanation_is_well_explained_a_bare_naming_is_shallow():
    teach = ("Let's look at the single-roll mean. The expected value of one roll is the probability-weighted "
             "average of the faces, so each face 1 to 6 counts with weight 1/6. This is why the mean is "
             "(1+2+3+4+5+6)/6 = 21/6 = 3.5. For example, over many rolls your average payout is about 3.5 dollars.")
    got = labels("sample_dice_reroll_game", "What is one roll worth?", teach)
    assert got["IU7"].teaching_quality == "well_explained"
    bare = labels("sample_dice_reroll_game", "What is one roll worth?", "You might use the single-roll mean here, maybe?")
    assert bare["IU7"].teaching_quality != "well_explained"
    assert bare["IU13"].teaching_quality == "not_mentioned"


def test_attempt_types_reasoning_articulation_none():
    prev = "Herd immunity threshold: solving R0 times (1 - p) < 1 gives the threshold formula p = 1 - 1/R0."
    reasoning = labels("sample_herd_immunity", "I guess the herd immunity threshold for R0 = 4 is 75%?", "ok")
    assert reasoning["IU7"].attempt.value == "reasoning"
    echo = labels("sample_herd_immunity", "So the herd immunity threshold formula is 1 - 1/R0.", "ok", prev)
    assert echo["IU7"].attempt.value == "articulation"
    unrelated = labels("sample_herd_immunity", "Can you explain that again?", "ok", prev)
    assert unrelated["IU7"].attempt.value == "none"


def test_same_notation_in_any_form_is_recognised():
    from knowsim_core.text.profiles import formula_tokens

    assert formula_tokens(r"\binom{6}{3} = 20") == formula_tokens("C(6,3) = 20") == formula_tokens("6 choose 3") \
        == ["binom:6,3"]


def test_extractor_port_uses_the_previous_assistant_message():
    s = get_sample("sample_herd_immunity")
    ex = registry.resolve("extractor", "offline/lexical")
    prev = s.graph.node("IU4").concept + ": " + s.graph.node("IU4").description
    ctx = ExtractorContext(turn=2, material=s.material, state=initial_state(s.graph, "novice", preset(), seed=1),
                           history=(Message("user", "hi"), Message("assistant", prev)),
                           user_message="So the basic reproduction number R0 is how many people one case infects.",
                           assistant_message="Yes.", seed=1)
    out = ex.extract(ctx)
    assert not out.failed and len(out.entries) == len(s.graph.nodes)
    assert {e.id: e for e in out.entries}["IU4"].attempt.value == "articulation"


def test_coefficients_are_the_ones_the_fit_command_derives(reference_dir):
    """The shipped weights come from `benchmarks/extractor_eval.py --fit` on both recordings."""
    from knowsim_core.evaluation import extractor_eval as ev
    from knowsim_core.agents.lexical import COEFFICIENTS

    turns = ev.load_turns(str(reference_dir / "examples" / "mathqa_structured_adaptive_novice.json"),
                          str(reference_dir / "iu_cache" / "math.json"))
    assert ev.fit_model(turns) == COEFFICIENTS


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
    weather, lymph = prof.char_cosines("the weather was sunny today"), prof.char_cosines("lymphoma")
    assert max(weather.values()) < 0.5 * max(lymph.values())


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


# Issue 34 item 17: a typed reply about R0 and the effective reproduction number (IU4, IU5) never
# touches IU14 "Clustering of unvaccinated people", IU5's dependent; the old mention model gave the
# graph-neighbour feature a weight of 3.24 and labelled IU14 shallow, which advanced it (EFFECTIVE).
R0_REPLY = ("R0 is how many people one infected person infects on average. When some people are vaccinated, fewer "
            "people can catch it, so the effective number Re is lower. If Re drops below 1, the outbreak dies out "
            "because each case infects less than one person.")


def _without_edges(graph):
    from knowsim_core.engine.graph import IUGraph

    return IUGraph(knowledge_areas=graph.knowledge_areas, nodes=graph.nodes, edges=())


def test_a_typed_reply_about_r0_reads_clustering_as_without_its_neighbour():
    """The issue-34 case through the engine: typed reply, offline learner, lexical extractor, rules.
    What the reply is about (IU4, IU5) is read; IU14 "Clustering of unvaccinated people", IU5's
    dependent, is read exactly as it is in a graph with no edges — a discussed neighbour gives it
    nothing (old code: the neighbour feature made it shallow and EFFECTIVE). Since issue 48 the
    reader counts an IU's own words ("people", "vaccinated") whatever the other IUs, so IU14 may be
    read from those; the rank among the graph's IUs that kept it out made every reading depend on
    the graph's size."""
    from knowsim_core.engine.session import Simulation

    s = get_sample("sample_herd_immunity")
    assert any({e.from_, e.to} == {"IU5", "IU14"} for e in s.graph.edges)  # the neighbour the reply discusses
    sim = Simulation(material=s.material, assistant=registry.resolve("assistant", "human"),
                     user=registry.resolve("user", "offline/knowsim"),
                     extractor=registry.resolve("extractor", "offline/lexical"), level="novice")
    sim.reset(seed=1)
    sim.assistant.put(R0_REPLY)
    rec = sim.step()
    quality = {x.id: x.teaching_quality for x in rec.signals}
    assert quality["IU4"] != "not_mentioned" and quality["IU5"] != "not_mentioned"  # what it is about is read
    alone = {x.id: x.teaching_quality for x in label_turn(_without_edges(s.graph), rec.user_message, R0_REPLY)}
    assert alone["IU14"] == quality["IU14"]


def test_a_discussed_neighbour_does_not_change_whether_an_iu_is_mentioned():
    """Every sample graph, every IU taught from its own name and description: each prerequisite or
    dependent is mentioned or not exactly as in the same graph without edges (old code: every
    neighbour of a taught IU was labelled shallow)."""
    checked = 0
    for sample in load_samples():
        g = sample.graph
        bare = _without_edges(g)
        for node in g.nodes:
            reply = f"Let us look at {node.concept.lower()}. {node.description}"
            got = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(g, "Can you explain?", reply)}
            alone = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(bare, "Can you explain?", reply)}
            for e in g.edges:
                if node.id not in (e.from_, e.to) or e.from_ == e.to:
                    continue
                other = e.to if e.from_ == node.id else e.from_
                checked += 1
                assert got[other] == alone[other], (sample.id, node.id, other)
    assert checked >= 100


def test_the_mention_decision_does_not_read_the_neighbour_feature():
    """Whatever weight a model gives the neighbour feature in "mentioned?", an IU is mentioned on its
    own evidence only (the guard is in the labeller, not only in the fitted zero). Old code: a weight
    of 50 made IU14 mentioned."""
    from knowsim_core.agents import lexical

    i = lexical.TQ_FEATURES.index("neighbour_mention")
    shipped = lexical.COEFFICIENTS
    loud = lexical.LexicalModel(mentioned=shipped.mentioned[:i] + (50.0,) + shipped.mentioned[i + 1:],
                                well=shipped.well)
    g = get_sample("sample_herd_immunity").graph
    got = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(g, "What is R0?", R0_REPLY, model=loud)}
    plain = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(g, "What is R0?", R0_REPLY)}
    assert got == plain
    # and the fitted mention model gives the context features no weight (fit_model leaves them out)
    assert "neighbour_mention" in lexical.CONTEXT_FEATURES
    assert all(shipped.mentioned[lexical.TQ_FEATURES.index(f)] == 0.0 for f in lexical.CONTEXT_FEATURES)


def test_whether_an_iu_is_mentioned_does_not_depend_on_the_other_ius_of_the_graph(reference_dir):
    """Issue 48: every recorded MathQA and ExpertQA reply, read with the whole graph and with
    sub-graphs of 3–6 of its IUs (no edges, so no neighbour is in play): each IU's mentioned /
    not mentioned reading is the same in every graph that holds it. Old code read the IU's rank
    among the graph's IUs: the same reply read 29 % of an ExpertQA graph's IUs as mentioned and
    79 % of a 3-IU sub-graph's."""
    import random

    from knowsim_core.evaluation import extractor_eval as ev
    from knowsim_core.evaluation.reader_eval import subgraph

    turns = (ev.load_turns(str(reference_dir / "examples" / "mathqa_structured_adaptive_novice.json"),
                           str(reference_dir / "iu_cache" / "math.json"))
             + ev.load_turns(str(reference_dir / "examples" / "expertqa_structured_adaptive_novice_001.json"),
                             str(reference_dir / "iu_cache" / "expertqa.json")))
    rng = random.Random(48)
    compared = 0
    for t in turns:
        bare = _without_edges(t.graph)
        whole = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(bare, t.user, t.assistant)}
        for size in (3, 4, 5, 6):
            ids = rng.sample([n.id for n in t.graph.nodes], size)
            sub = _without_edges(subgraph(t.graph, ids))
            got = {x.id: x.teaching_quality != "not_mentioned" for x in label_turn(sub, t.user, t.assistant)}
            assert got == {iu: whole[iu] for iu in got}, (t.record, t.turn, size)
            compared += size
    assert compared > 700
