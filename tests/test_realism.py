"""Turn-level realism end to end: import the shared real conversations, score the offline KnowSim
user and both floor baselines through the command line, check the output's shape and what must
hold (the floors say what they are defined to say; the numbers are bounded and consistent)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from knowsim_core.evaluation import acts
from knowsim_core.agents import registry
from knowsim_core.agents.baselines import GENERIC_MESSAGE
from knowsim_core.cli import main
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import Message, QuestionMaterial, UserContext
from knowsim_core.evaluation.realism import (DEFAULT_USERS, MOST_COMMON, TfIdf, jaccard, length_ratio,
                                             most_common_floor, rouge_l, split_of)
from knowsim_core.engine.state import KnowledgeState
from tests.conftest import ARENA_ANNOTATIONS, require_shared

ANNOTATIONS = ARENA_ANNOTATIONS
TURN_KEYS = {"conversation", "turn", "level", "split", "real_act", "simulated"}
SIM_KEYS = {"act", "rouge_l", "cosine", "length_ratio", "iu_jaccard", "text"}
SUMMARY_KEYS = {"act_agreement", "rouge_l", "cosine", "length_ratio", "iu_jaccard", "iu_n", "n"}


def human_db(tmp_path) -> str:
    """A database holding one imported real conversation (3 messages, one concept): its path."""
    conv = {"id": "c1", "level": "undergrad", "concepts": [{"name": "Factorial", "description": "n! = 1 x ... x n."}],
            "messages": [{"role": "user", "content": "How many orders of 3 books?"},
                         {"role": "assistant", "content": "Multiply 3 x 2 x 1."}, {"role": "user", "content": "6"}]}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    db = str(tmp_path / "h.db")
    assert main(["import", str(path), "--db", db]) == 0
    return db


def _realism_json(argv: list[str]) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["realism", "--json", *argv]) == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    require_shared(ANNOTATIONS)
    db = str(tmp_path_factory.mktemp("realism") / "r.db")
    assert main(["import", str(ANNOTATIONS), "--db", db]) == 0
    return _realism_json(["--db", db])


def _real_messages() -> dict[str, list[str]]:
    return {f"{r['problem_id']}:{r['workerId']}": r["user_queries"] for r in json.loads(ANNOTATIONS.read_text())}


def test_output_shape(report):
    assert set(report) >= {"start", "skipped", "turns", "summary", "by_split", "hindsight"}
    assert report["start"] == "sampled" and report["hindsight"]["start"] == "file"  # the headline: no hindsight
    assert report["skipped"] == []  # every shared conversation has concepts
    assert set(report["hindsight"]["summary"]) == {*DEFAULT_USERS, MOST_COMMON}
    assert set(report["summary"]) == {*DEFAULT_USERS, MOST_COMMON}
    for row in report["turns"]:
        assert set(row) == TURN_KEYS and set(row["simulated"]) == set(DEFAULT_USERS)
        for sim in row["simulated"].values():
            assert set(sim) == SIM_KEYS and sim["act"] in acts.ACTS
            assert 0.0 <= sim["rouge_l"] <= 1.0 and 0.0 <= sim["cosine"] <= 1.0 + 1e-9 and sim["length_ratio"] > 0
            assert sim["iu_jaccard"] is None or 0.0 <= sim["iu_jaccard"] <= 1.0
    for uid in DEFAULT_USERS:
        s = report["summary"][uid]
        assert set(s) == SUMMARY_KEYS and s["n"] == len(report["turns"])
    for by_user in [*report["by_level"].values(), *report["by_split"].values()]:
        assert set(by_user) == {*DEFAULT_USERS, MOST_COMMON}
    assert set(report["by_level"]) <= {"novice", "intermediate", "advanced"}
    assert sum(by["baseline/generic"]["n"] for by in report["by_level"].values()) == len(report["turns"])


def test_every_real_turn_from_the_second_on_is_scored_once(report):
    real = _real_messages()
    seen: dict[str, list[int]] = {}
    for row in report["turns"]:
        seen.setdefault(row["conversation"], []).append(row["turn"])
        assert row["real_act"] == acts.tag(real[row["conversation"]][row["turn"] - 1])
    assert set(seen) == set(real)
    for key, turns in seen.items():
        assert turns == list(range(2, len(turns) + 2))


def test_the_floors_say_what_they_are_defined_to_say(report):
    real = _real_messages()
    for row in report["turns"]:
        sims = row["simulated"]
        assert sims["baseline/generic"]["text"] == GENERIC_MESSAGE
        previous = real[row["conversation"]][row["turn"] - 2]
        if previous.strip():
            assert sims["baseline/copy-last"]["text"] == previous
        assert sims["offline/knowsim"]["text"].strip() and sims["offline/person"]["text"].strip()
    # a fixed request is one act every turn: its agreement is the share of real turns with that act
    generic_act = acts.tag(GENERIC_MESSAGE)
    share = sum(r["real_act"] == generic_act for r in report["turns"]) / len(report["turns"])
    assert report["summary"]["baseline/generic"]["act_agreement"] == pytest.approx(share, abs=1e-4)


def test_summary_is_the_mean_of_the_turns(report):
    for uid in DEFAULT_USERS:
        s = report["summary"][uid]
        values = [r["simulated"][uid]["rouge_l"] for r in report["turns"]]
        assert s["rouge_l"] == pytest.approx(sum(values) / len(values), abs=1e-4)
        agree = [r["simulated"][uid]["act"] == r["real_act"] for r in report["turns"]]
        assert s["act_agreement"] == pytest.approx(sum(agree) / len(agree), abs=1e-4)


def test_a_second_pass_gives_the_same_report(report, tmp_path):
    db = str(tmp_path / "again.db")
    assert main(["import", str(ANNOTATIONS), "--db", db]) == 0
    again = _realism_json(["--db", db, "--user", "offline/knowsim"])
    assert set(again["summary"]) == {"offline/knowsim", MOST_COMMON}
    assert [r["simulated"]["offline/knowsim"] for r in again["turns"]] == [
        r["simulated"]["offline/knowsim"] for r in report["turns"]]


def test_realism_without_human_runs_says_what_to_do(tmp_path, capsys):
    assert main(["realism", "--db", str(tmp_path / "empty.db")]) == 2
    assert "import" in capsys.readouterr().err


def test_measures():
    assert rouge_l("I think it is 6", "I think it is 6") == pytest.approx(1.0)
    assert rouge_l("", "anything") == 0.0
    tf = TfIdf(["the answer is 6", "I am lost", "what is a factorial"])
    assert tf.cosine("is it 6", "is it 6") == pytest.approx(1.0)
    assert tf.cosine("factorial", "lost") == 0.0
    assert length_ratio("one two", "one two three four") == 2.0
    assert jaccard(frozenset({"IU1", "IU2"}), frozenset({"IU2"})) == 0.5
    assert jaccard(frozenset(), frozenset()) is None


def test_floor_baselines_as_agents():
    graph = IUGraph.from_data({"knowledge_areas": [], "edges": [], "nodes": [
        {"id": "IU1", "concept": "Factorial", "abstraction_level": 0.5, "description": "n! multiplies 1..n."}]})
    material = QuestionMaterial("q", "How many ways to order 3 books?", "", graph)
    ctx = lambda history: UserContext(turn=len(history) // 2 + 1, material=material, history=history,  # noqa: E731
                                      state=KnowledgeState.uniform(graph), density=0.0, articulation_mode="Vague",
                                      explained=(), stuck=False, stop_hint=False, seed=1)
    copy = registry.resolve("user", "baseline/copy-last")
    generic = registry.resolve("user", "baseline/generic", settings=object())  # LLM settings are ignored
    assert copy.respond(ctx(())).message == generic.respond(ctx(())).message == material.question
    history = (Message("user", "is it 6?"), Message("assistant", "Yes: 3! = 6."))
    assert copy.respond(ctx(history)).message == "is it 6?"
    assert generic.respond(ctx(history)).message == GENERIC_MESSAGE
    assert {"baseline/copy-last", "baseline/generic"} <= {e.id for e in registry.available("user")}


def test_the_text_report_lists_every_user_overall_by_level_and_attempts(tmp_path, capsys):
    db = human_db(tmp_path)
    capsys.readouterr()
    assert main(["realism", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "1 conversation(s), 1 real user turns scored" in out and "\nintermediate\n" in out
    lines = out.splitlines()
    for uid in (*DEFAULT_USERS, MOST_COMMON):  # a row overall, by level, in each half of the split, and
        # the hindsight start's overall and halves beside the headline
        assert sum(line.startswith(uid + " ") for line in lines) == 7, uid
    assert "start: sampled" in out and "beside it, not the headline — start: file" in out
    assert "  offline/person vs floors: act_agreement " in out  # which floors each simulator beats
    for uid in DEFAULT_USERS:
        assert f"  {uid}: " in out  # the answer-attempt line


# ---------------------------------------------------------------------- realism made sound (issue 21)
def test_the_most_common_act_floor_is_the_majority_share_in_every_table(report):
    tables = [("summary", report["summary"], lambda t: True)]
    tables += [(lvl, by, lambda t, lvl=lvl: t["level"] == lvl) for lvl, by in report["by_level"].items()]
    tables += [(part, by, lambda t, part=part: t["split"] == part) for part, by in report["by_split"].items()]
    for name, table, keep in tables:
        real = [t["real_act"] for t in report["turns"] if keep(t)]
        floor = table[MOST_COMMON]
        top = max(real.count(a) for a in acts.ACTS)
        assert floor["n"] == len(real) and floor["act_agreement"] == pytest.approx(top / len(real), abs=1e-4), name
        assert real.count(floor["act"]) == top and floor["rouge_l"] is None  # it writes no text


def test_most_common_floor_by_hand():
    f = most_common_floor(["math_answer", "math_answer", "acknowledge"])
    assert f["act"] == "math_answer" and f["act_agreement"] == pytest.approx(0.6667, abs=1e-4) and f["n"] == 3
    assert most_common_floor([])["act_agreement"] is None


def test_iu_jaccard_is_scored_on_the_same_turns_for_every_simulator(report):
    for row in report["turns"]:
        scored = {uid for uid, s in row["simulated"].items() if s["iu_jaccard"] is not None}
        assert scored in (set(), set(row["simulated"])), row  # the real message decides, not the simulator
    ns = {report["summary"][uid]["iu_n"] for uid in DEFAULT_USERS}
    assert len(ns) == 1 and ns.pop() > 0


def test_the_split_is_the_crc32_parity_of_the_conversation_key(report):
    import zlib

    for row in report["turns"]:
        assert row["split"] == ("development", "held-out")[zlib.crc32(row["conversation"].encode()) % 2]
        assert split_of(row["conversation"]) == row["split"]
    n = {part: by["baseline/generic"]["n"] for part, by in report["by_split"].items()}
    assert sum(n.values()) == len(report["turns"]) and min(n.values()) > 0


def test_a_sampled_start_reads_every_conversation_from_the_levels_sampler(report, tmp_path):
    from knowsim_core.engine.config import preset
    from knowsim_core.engine.state import initial_state
    from knowsim_core.evaluation.realism import sampled_start
    from knowsim_core.storage import Store

    db = str(tmp_path / "s.db")
    assert main(["import", str(ANNOTATIONS), "--db", db]) == 0
    sampled = _realism_json(["--db", db, "--user", "offline/knowsim", "--start", "sampled"])
    assert sampled["start"] == "sampled"
    assert [(r["conversation"], r["turn"], r["real_act"]) for r in sampled["turns"]] == [
        (r["conversation"], r["turn"], r["real_act"]) for r in report["turns"]]  # same turns, same people
    store = Store(db)
    runs = [store.runs.load(r.id) for r in store.search.list(limit=1000)]
    differs = 0
    for run in runs:
        again = sampled_start(run)
        key = dict(run.meta)["conversation"]
        import zlib

        assert again.initial_state == initial_state(run.graph, run.level, preset(), seed=zlib.crc32(key.encode()))
        assert [t.user_message for t in again.turns] == [t.user_message for t in run.turns]
        assert dict(again.meta)["initial_state_source"].startswith("sampled for")
        differs += again.initial_state != run.initial_state
    assert differs > 0  # the file's hindsight states are not what the sampler draws


def test_the_table_prints_the_floor_the_start_and_both_halves(tmp_path, capsys):
    require_shared(ANNOTATIONS)
    db = str(tmp_path / "t.db")
    assert main(["import", str(ANNOTATIONS), "--db", db]) == 0
    capsys.readouterr()
    assert main(["realism", "--db", db, "--user", "baseline/copy-last", "--start", "file"]) == 0
    out = capsys.readouterr().out
    assert "start: file" in out and "hindsight" in out and "start: sampled" not in out
    assert MOST_COMMON in out and "development" in out and "held-out" in out


def test_llm_baselines_get_the_persons_level_and_true_initial_state(tmp_path, monkeypatch):
    """The person is a novice whose initial state knows nothing and whose state after turn 1 (the
    tutor explains every concept well) would read as advanced: the baseline must be told novice and
    the empty initial state, never the state after turn 1 (the old bug: fails on it)."""
    from knowsim_core.agents import registry as reg
    from knowsim_core.engine.config import preset
    from knowsim_core.engine.state import IUState, KnowledgeState
    from knowsim_core.evaluation.realism import score
    from knowsim_core.llm import LLMSettings
    from knowsim_core.prompts import baseline_user as p
    from knowsim_core.services.reading import read_conversation
    from tests.fakes.llm_server import FakeLLMServer

    graph = IUGraph.from_data({"question_id": "q", "nodes": [
        {"id": "IU1", "concept": "Factorial", "abstraction_level": 0.5, "description": "n! multiplies 1 to n."}],
        "edges": []})
    material = QuestionMaterial("q", "How many ways can 3 books stand in a row?", "", graph, "math")
    s0 = KnowledgeState.from_ids(graph, {"IU1": IUState.UNAWARE})
    pairs = [("How many ways?", "A factorial n! multiplies 1 to n: 3! = 3 x 2 x 1 = 6. Factorial counts orders."),
             ("is it 6?", "Yes."), ("thanks", "Welcome.")]
    run = read_conversation(material, pairs, s0, level="novice", extractor=reg.resolve("extractor", "offline/lexical"),
                            assistant_id="recorded/tutor", params=preset())
    assert run.turns[0].state_after != s0  # turn 1 moved the state: the old code read the level from it
    with FakeLLMServer() as srv:
        srv.reply = lambda req: json.dumps({"reasoning": "r", "message": "is it 6?", "done": False})
        env = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "OPENAI_BASE_URL": srv.openai_url,
               "KNOWSIM_LLM_MAX_RETRIES": "0", "KNOWSIM_LLM_CACHE": "0"}
        user = reg.resolve("user", "openai/m1:zs-cot-prof", settings=LLMSettings.from_sources(env=env))
        score([run], {"openai/m1:zs-cot-prof": user}, start="file")  # the run's own initial state
        prompts = [r.last_user for r in srv.requests]
    assert len(prompts) == 2
    for prompt in prompts:
        assert p.LEVELS["novice"] in prompt
        known = prompt.split("What you knew when you started")[1].split("##")[0]
        assert "- unaware: Factorial" in known and "- knows well: (none)" in known


def test_a_sampled_start_refuses_a_conversation_read_by_an_llm_in_one_line(tmp_path):
    import dataclasses

    from knowsim_core.errors import ConfigError
    from knowsim_core.evaluation.realism import sampled_start, score
    from knowsim_core.storage import Store

    store = Store(human_db(tmp_path))
    run = store.runs.load(store.search.list()[0].id)
    assert sampled_start(run).turns[0].user_message == "How many orders of 3 books?"
    llm_read = dataclasses.replace(run, adapters=tuple((r, "openai/gpt-4o-mini" if r == "extractor" else a)
                                                        for r, a in run.adapters))
    with pytest.raises(ConfigError, match="offline extractors") as err:
        score([llm_read], {}, start="sampled")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="start must be one of"):
        score([run], {}, start="hindsight")


def test_a_re_read_conversation_keeps_its_own_domain():
    """real_turns and sampled_start built the material as "math" whatever the run's domain, so a
    simulator scored on (or a re-reading of) an expert conversation was told it was maths."""
    import dataclasses

    from knowsim_core.engine.config import preset
    from knowsim_core.engine.state import IUState
    from knowsim_core.evaluation.realism import real_turns, sampled_start
    from knowsim_core.services.reading import read_conversation

    graph = IUGraph.from_data({"nodes": [
        {"id": "IU1", "concept": "Herd immunity", "abstraction_level": 0.6,
         "description": "Enough immune people stop a disease spreading."}], "edges": []})
    material = QuestionMaterial("q", "Why vaccinate healthy people?", "", graph, "expert")
    pairs = [("Why vaccinate me?", "Herd immunity: enough immune people stop the spread."), ("so it helps others?", "Yes.")]
    run = read_conversation(material, pairs, KnowledgeState.from_ids(graph, {"IU1": IUState.UNAWARE}), level="novice",
                            extractor=registry.resolve("extractor", "offline/lexical"), assistant_id="recorded/tutor",
                            params=preset(), meta=(("conversation", "q:w1"),))
    run = dataclasses.replace(run, domain="expert")  # as the store loads it (runner fills the question's domain)
    assert [t.context.material.domain for t in real_turns(run)] == ["expert"]
    assert sampled_start(run).domain == "expert"
    assert real_turns(dataclasses.replace(run, domain=""))[0].context.material.domain == "math"  # older records


# ---------------------------------------------------------------------- issue 29: headline, skipped, floors marked
def test_a_conversation_without_concepts_is_skipped_and_counted_under_a_sampled_start(tmp_path, capsys):
    """The old code aborted the whole pass ("run … was read by none; a sampled start re-reads it and
    works only for offline extractors") on a stored conversation without concepts."""
    db = human_db(tmp_path)
    bare = {"id": "c2", "level": "grad", "messages": [{"role": "user", "content": "hi, can you help?"},
                                                     {"role": "assistant", "content": "Sure."},
                                                     {"role": "user", "content": "thanks"}]}
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps(bare) + "\n")
    assert main(["import", str(path), "--db", db]) == 0
    for start in ("sampled", "both", "file"):
        report = _realism_json(["--db", db, "--start", start])
        assert [s["conversation"] for s in report["skipped"]] == ["c2"] and "no IUs" in report["skipped"][0]["reason"]
        assert {t["conversation"] for t in report["turns"]} == {"c1"}
    capsys.readouterr()
    assert main(["realism", "--db", db, "--start", "sampled"]) == 0
    assert "skipped 1 conversation(s) without a reading: c2" in capsys.readouterr().out


def test_floor_marks_say_which_floor_each_cell_beats():
    from knowsim_core.evaluation.realism import floor_marks, marked

    table = {"sim": {"act_agreement": 0.6, "rouge_l": 0.08, "length_ratio": 0.8},
             "baseline/copy-last": {"act_agreement": 0.5, "rouge_l": 0.09, "length_ratio": 1.3},
             "baseline/generic": {"act_agreement": 0.1, "rouge_l": 0.03, "length_ratio": 0.7},
             MOST_COMMON: {"act_agreement": 0.7, "rouge_l": None, "length_ratio": None}}
    marks = floor_marks(table)
    assert set(marks) == {"sim"}
    assert marks["sim"]["act_agreement"] == {"beats": ["baseline/copy-last", "baseline/generic"], "not": [MOST_COMMON]}
    assert marks["sim"]["rouge_l"] == {"beats": ["baseline/generic"], "not": ["baseline/copy-last"]}
    # length ratio: nearer 1 on a log scale (0.8 beats 1.3 and 0.7)
    assert marks["sim"]["length_ratio"]["beats"] == ["baseline/copy-last", "baseline/generic"]
    assert marked(0.6, marks["sim"]["act_agreement"]) == "0.600 (> copy-last, generic; not > most-common-act)"


def test_every_level_and_half_carries_the_most_common_act_floor_beside_both_learners(report):
    from knowsim_core.evaluation.realism import level_table

    for by_user in [*report["by_level"].values(), *report["by_split"].values(),
                    *report["hindsight"]["by_split"].values()]:
        assert {"offline/person", "offline/knowsim", MOST_COMMON} <= set(by_user)
    rows = level_table(report, "act_agreement")
    assert [r["level"] for r in rows] == list(report["by_level"])
    for r in rows:
        assert r[MOST_COMMON] and "most-common-act" in r["offline/person"]  # the floor's figure and the mark
