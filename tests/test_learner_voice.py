"""The offline learner's later turns (learner_voice): what it reads in the tutor's turn, which act it
chooses from that and its state, that the tagger reads each written act back, determinism per
seed — and, on the held-out half of the shared real conversations, its act and length
distributions against the targets stated below.

Held-out targets (half = conversations whose ``zlib.crc32("problem_id:workerId")`` is odd; the
rules were written and chosen on the even half). Figures measured on the held-out half when the
learner was frozen (issue 22, second round; start = file, realism's seeds): act agreement 0.603,
ROUGE-L 0.0751, length ratio 0.955, total variation between the simulated and real act
distributions 0.162, median words per level 8 (real: novice 14, intermediate 9). Floors = figure −
stated margin: act agreement ≥ 0.55 (margin 0.053), ROUGE-L ≥ 0.06 (0.015), total variation ≤ 0.25
(0.088); the issue's own length target: geometric-mean ratio within [0.5, 2], and per level the
median simulated length within [0.4, 2.5]× the real median. Beside them: the learner must beat
``baseline/copy-last`` on act agreement (held-out 0.603 vs 0.500). Not asserted because not met on
the held-out half: act agreement above the constant most-common-act floor (0.706) and ROUGE-L
above copy-last (0.0885) — README, "Realism".
"""

from __future__ import annotations

import os
import random
import statistics
from pathlib import Path

import pytest

from knowsim_core.agents import learner_voice as voice
from knowsim_core.agents import registry
from knowsim_core.engine.config import preset
from knowsim_core.engine.ports import Message, UserContext
from knowsim_core.engine.state import IUState, initial_state
from knowsim_core.evaluation import acts
from knowsim_core.formats.samples import get_sample

ARENA = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld" / "simulatorarena_math"
ANNOTATIONS = ARENA / "math_tutoring_annotations_redacted_for_benchmarking.json"


def test_reading_the_tutors_turn():
    cue = voice.read_tutor("Good. Now, how many integers are there between 4 and 12.25?")
    assert cue.asks and cue.asks_value and not cue.asks_check and cue.numbers[:2] == ("4", "12.25")
    assert cue.echo == "integers are there between 4 and 12.25"
    cue = voice.read_tutor("So the answer is 165. Does this make sense? Any other questions?")
    assert cue.asks_check and cue.gives_answer and cue.value == "165"
    cue = voice.read_tutor("Can you try to find this largest multiple of 10 less than 500, and then we'll go on?")
    assert cue.asks_value and cue.echo == "this largest multiple of 10 less than 500"
    plain = voice.read_tutor("A factorial multiplies every whole number from 1 to n.")
    assert not plain.asks and not plain.asks_value and plain.echo == ""


def test_a_long_reply_without_questions_is_read_in_linear_time():
    import time

    text = ("word " * 20000) + "."
    start = time.perf_counter()
    assert not voice.read_tutor(text).asks
    assert time.perf_counter() - start < 1.0  # the old unanchored pattern took minutes on this


@pytest.mark.parametrize("focus", [None, IUState.KNOWS_WELL, IUState.PARTIAL])
def test_asked_a_learner_who_knows_answers(focus):
    cue = voice.read_tutor("What is 3 x 4?")
    for seed in range(20):
        assert voice.choose_act(cue, focus, stuck_before=False, stop_hint=False, mode="Explicit",
                                rng=random.Random(seed)) == voice.ANSWER


def test_asked_a_learner_who_does_not_know_stays_stuck_or_guesses():
    cue = voice.read_tutor("Can you count the ways?")
    for focus in (IUState.UNAWARE, IUState.STRUGGLING):
        for seed in range(20):
            assert voice.choose_act(cue, focus, stuck_before=True, stop_hint=False, mode="Explicit",
                                    rng=random.Random(seed)) == voice.STUCK
        chosen = {voice.choose_act(cue, focus, stuck_before=False, stop_hint=False, mode="Explicit",
                                   rng=random.Random(seed)) for seed in range(50)}
        assert chosen == {voice.ANSWER}  # not stuck before: it guesses (no random "stuck")


def test_wrap_ups_explanations_stops_and_compliant_learners():
    rng = random.Random(1)
    check = voice.read_tutor("Does this make sense?")
    told = voice.read_tutor("The product rule multiplies the choices.")
    assert voice.choose_act(check, IUState.PARTIAL, stuck_before=False, stop_hint=False, mode="Explicit", rng=rng) == voice.ACK
    assert voice.choose_act(check, IUState.PARTIAL, stuck_before=True, stop_hint=False, mode="Explicit", rng=rng) == voice.ASK
    assert voice.choose_act(check, IUState.PARTIAL, stuck_before=True, stop_hint=False, mode="Compliant", rng=rng) == voice.ACK
    assert voice.choose_act(told, IUState.UNAWARE, stuck_before=False, stop_hint=False, mode="Explicit", rng=rng) == voice.STUCK
    assert voice.choose_act(told, IUState.KNOWS_WELL, stuck_before=False, stop_hint=False, mode="Explicit", rng=rng) == voice.ANSWER
    told_partial = [voice.choose_act(told, IUState.PARTIAL, stuck_before=False, stop_hint=False, mode="Explicit",
                                     rng=random.Random(seed)) for seed in range(400)]
    assert set(told_partial) == {voice.ASK, voice.ANSWER}
    assert abs(told_partial.count(voice.ASK) / 400 - voice.ASK_AFTER_TELLING) < 0.07
    assert voice.choose_act(told, IUState.PARTIAL, stuck_before=False, stop_hint=True, mode="Explicit", rng=rng) == voice.LEAVE
    assert voice.ASK not in [voice.choose_act(told, IUState.PARTIAL, stuck_before=False, stop_hint=False,
                                              mode="Compliant", rng=random.Random(seed)) for seed in range(50)]


@pytest.mark.parametrize("act", [voice.ANSWER, voice.STUCK, voice.ASK, voice.ACK, voice.LEAVE])
def test_the_tagger_reads_every_written_act_back(act):
    tutors = ["What is 3 x 4?", "Can you find the number of ways to pick 2 of 5?", "Does this make sense?",
              "The answer is 12.", "A factorial multiplies every number up to n."]
    clause = "the number of orders of n distinct things is n factorial, because each place has fewer choices"
    for seed in range(40):
        rng = random.Random(seed)
        cue = voice.read_tutor(tutors[seed % len(tutors)])
        focus = (None, IUState.PARTIAL, IUState.STRUGGLING)[seed % 3]
        n = voice.draw_length("novice", act, rng)
        turn = voice.write(act, n, cue=cue, focus=focus, clause=clause, name="factorial", rng=rng, safe=lambda t: True)
        assert acts.tag(turn.text) == turn.act, (seed, turn)
        assert turn.attempt == (turn.act == voice.ANSWER)


def test_a_struggling_learner_writes_a_visibly_wrong_value():
    cue = voice.read_tutor("What is 3 x 4? I think it is 12.")
    for seed in range(20):
        turn = voice.write(voice.ANSWER, 5, cue=cue, focus=IUState.STRUGGLING, clause=None, name=None,
                           rng=random.Random(seed), safe=lambda t: True)
        assert turn.attempt and cue.value not in turn.text.replace("?", " ").split()


def test_lengths_are_drawn_from_the_stated_profile_and_kept_near_the_learners_register():
    rng = random.Random(3)
    draws = [voice.draw_length("novice", voice.ANSWER, rng) for _ in range(2000)]
    lo, *_, hi = voice.LENGTHS[("novice", voice.ANSWER)]
    assert min(draws) >= lo and max(draws) <= hi
    assert statistics.median(draws) == pytest.approx(voice.LENGTHS[("novice", voice.ANSWER)][2], abs=1.5)
    assert voice.draw_length("advanced", voice.STUCK, rng) <= max(voice.LENGTHS[("*", voice.STUCK)])
    assert voice.keep_register(16, 1) == 4 and voice.keep_register(9, 0) == 9


def _later_ctx(seed: int) -> UserContext:
    s = get_sample("sample_dice_reroll_game")
    st = initial_state(s.graph, "intermediate", preset(), seed=2)
    history = (Message("user", "How do I start?"),
               Message("assistant", s.graph.node("IU1").description + " What is the expected value of one roll?"))
    return UserContext(turn=2, material=s.material, history=history, state=st, density=0.8,
                       articulation_mode="Explicit", explained=(), stuck=False, stop_hint=False, seed=seed)


def test_the_same_seed_writes_the_same_turn_and_seeds_differ():
    user = registry.resolve("user", "offline/knowsim")
    again = registry.resolve("user", "offline/knowsim")
    turns = [user.respond(_later_ctx(seed)) for seed in range(12)]
    assert turns == [again.respond(_later_ctx(seed)) for seed in range(12)]
    assert len({t.message for t in turns}) > 3
    assert not any(t.terminate for t in turns)


def test_a_learner_shows_its_step_in_the_concepts_words_only_when_it_names_one():
    s = get_sample("sample_dice_reroll_game")
    node = s.graph.node("IU1")
    cue = voice.read_tutor("So, what is 6 divided by 2?")
    rng = random.Random(3)
    named = voice.write(voice.ANSWER, 8, cue=cue, focus=IUState.PARTIAL, clause=None, name=node.concept.lower(),
                        rng=rng, safe=lambda text: True)
    assert named.attempt and node.concept.lower() in named.text and "6" in named.text
    from knowsim_core.agents.lexical import attempt_types
    from knowsim_core.text.profiles import profiles_for

    labels = attempt_types(profiles_for(s.graph), named.text, "So, what is 6 divided by 2?")
    assert labels["IU1"] != "none"  # the extractor reads it as an attempt on that IU
    plain = [voice.write(voice.ANSWER, 8, cue=cue, focus=IUState.PARTIAL, clause=node.description, name=None,
                         rng=random.Random(seed), safe=lambda text: True) for seed in range(30)]
    assert all(t.attempt and node.concept.lower() not in t.text.lower() for t in plain)


@pytest.mark.parametrize("level", ["novice", "intermediate", "advanced"])
def test_a_sampled_learner_writes_with_its_own_levels_profile(level):
    """The level bounds sit between the spec samplers' shares, so a sampled learner of each level is
    read as that level (the old thirds read every sampled intermediate as advanced)."""
    s = get_sample("sample_dice_reroll_game")
    for seed in range(10):
        st = initial_state(s.graph, level, preset(), seed=seed)
        assert voice.level_of([st.state_of(lab) for lab in s.graph.index.labels]) == level


# ---------------------------------------------------------------------- held-out half of the real conversations
@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    if not ANNOTATIONS.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the shared real conversations at {ARENA}")
        pytest.skip("../shared/realworld is not present")
    from knowsim_core.evaluation.realism import score
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store

    store = Store(tmp_path_factory.mktemp("voice") / "r.db")
    runs = [store.load_run(rid) for rid in import_path(store, ANNOTATIONS).runs]
    users = {uid: registry.resolve("user", uid) for uid in ("offline/knowsim", "baseline/copy-last")}
    report = score(runs, users)
    real = {(dict(r.meta)["conversation"], i + 1): t.user_message for r in runs for i, t in enumerate(r.turns)}
    turns = [t for t in report["turns"] if t["split"] == "held-out"]
    assert len(turns) > 40
    return report, turns, real, runs


def test_held_out_act_agreement_and_rouge_against_the_stated_floors(held_out):
    report, *_ = held_out
    ours, copy = report["by_split"]["held-out"]["offline/knowsim"], report["by_split"]["held-out"]["baseline/copy-last"]
    assert ours["act_agreement"] >= 0.55 and ours["act_agreement"] > copy["act_agreement"]
    assert ours["rouge_l"] >= 0.06
    assert 0.5 <= ours["length_ratio"] <= 2.0


def test_held_out_act_distribution_is_near_the_peoples(held_out):
    _, turns, *_ = held_out
    real = [t["real_act"] for t in turns]
    sim = [t["simulated"]["offline/knowsim"]["act"] for t in turns]
    tv = 0.5 * sum(abs(real.count(a) - sim.count(a)) for a in acts.ACTS) / len(turns)
    assert tv <= 0.25, (tv, {a: (real.count(a), sim.count(a)) for a in acts.ACTS})
    assert sim.count(acts.MATH_ANSWER) / len(sim) >= 0.5  # mostly answer attempts, as people write
    assert len(set(sim)) >= 3  # not one act for everything


def test_held_out_lengths_per_level_are_near_the_peoples(held_out):
    _, turns, real, _ = held_out
    for level in sorted({t["level"] for t in turns}):
        rows = [t for t in turns if t["level"] == level]
        if len(rows) < 10:
            continue
        real_words = statistics.median(len(real[(t["conversation"], t["turn"])].split()) for t in rows)
        sim_words = statistics.median(len(t["simulated"]["offline/knowsim"]["text"].split()) for t in rows)
        assert 0.4 * real_words <= sim_words <= 2.5 * real_words, (level, real_words, sim_words)


def test_the_step_rates_are_the_development_halfs_measurement(held_out):
    from knowsim_core.evaluation.realism import step_rates

    measured = step_rates(held_out[3])
    assert {lv: k / n for lv, (k, n) in measured.items()} == voice.SHOWS_STEP


def test_the_length_profile_is_the_development_halfs_measurement(held_out):
    from knowsim_core.evaluation.realism import length_profile

    runs = held_out[3]
    assert length_profile(runs) == voice.LENGTHS  # measured on the development half, not tuned
    assert length_profile(runs, part="held-out") != voice.LENGTHS  # the other half would give other numbers
