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
from knowsim_core.evaluation.realism import DEFAULT_USERS, TfIdf, jaccard, length_ratio, rouge_l
from knowsim_core.engine.state import KnowledgeState
from tests.conftest import ARENA_ANNOTATIONS, require_shared

ANNOTATIONS = ARENA_ANNOTATIONS
TURN_KEYS = {"conversation", "turn", "real_act", "simulated"}
SIM_KEYS = {"act", "rouge_l", "cosine", "length_ratio", "iu_jaccard", "text"}
SUMMARY_KEYS = {"act_agreement", "rouge_l", "cosine", "length_ratio", "iu_jaccard", "n"}


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
    assert set(report) >= {"turns", "summary"} and set(report["summary"]) == set(DEFAULT_USERS)
    for row in report["turns"]:
        assert set(row) == TURN_KEYS and set(row["simulated"]) == set(DEFAULT_USERS)
        for sim in row["simulated"].values():
            assert set(sim) == SIM_KEYS and sim["act"] in acts.ACTS
            assert 0.0 <= sim["rouge_l"] <= 1.0 and 0.0 <= sim["cosine"] <= 1.0 + 1e-9 and sim["length_ratio"] > 0
            assert sim["iu_jaccard"] is None or 0.0 <= sim["iu_jaccard"] <= 1.0
    for s in report["summary"].values():
        assert set(s) == SUMMARY_KEYS and s["n"] == len(report["turns"])
    for by_user in report["by_level"].values():
        assert set(by_user) == set(DEFAULT_USERS)
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
        assert sims["offline/knowsim"]["text"].strip()
    # a fixed request is one act every turn: its agreement is the share of real turns with that act
    generic_act = acts.tag(GENERIC_MESSAGE)
    share = sum(r["real_act"] == generic_act for r in report["turns"]) / len(report["turns"])
    assert report["summary"]["baseline/generic"]["act_agreement"] == pytest.approx(share, abs=1e-4)


def test_summary_is_the_mean_of_the_turns(report):
    for uid, s in report["summary"].items():
        values = [r["simulated"][uid]["rouge_l"] for r in report["turns"]]
        assert s["rouge_l"] == pytest.approx(sum(values) / len(values), abs=1e-4)
        agree = [r["simulated"][uid]["act"] == r["real_act"] for r in report["turns"]]
        assert s["act_agreement"] == pytest.approx(sum(agree) / len(agree), abs=1e-4)


def test_a_second_pass_gives_the_same_report(report, tmp_path):
    db = str(tmp_path / "again.db")
    assert main(["import", str(ANNOTATIONS), "--db", db]) == 0
    again = _realism_json(["--db", db, "--user", "offline/knowsim"])
    assert set(again["summary"]) == {"offline/knowsim"}
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
    conv = {"id": "c1", "level": "undergrad", "concepts": [{"name": "Factorial", "description": "n! = 1 x ... x n."}],
            "messages": [{"role": "user", "content": "How many orders of 3 books?"},
                         {"role": "assistant", "content": "Multiply 3 x 2 x 1."}, {"role": "user", "content": "6"}]}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    db = str(tmp_path / "t.db")
    assert main(["import", str(path), "--db", db]) == 0
    capsys.readouterr()
    assert main(["realism", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "1 conversation(s), 1 real user turns scored" in out and "\nintermediate\n" in out
    assert all(out.count(uid) == 3 for uid in DEFAULT_USERS)  # overall, by level, attempts
