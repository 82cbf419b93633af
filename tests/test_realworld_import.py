"""Importing real conversations: the SimulatorArena release (read from ../shared/realworld, never
copied), synthetic variants of it built in tmp_path, and the generic conversations JSONL."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from knowsim_core.cli import main
from knowsim_core.errors import FormatError
from knowsim_core.services.importing import import_path
from knowsim_core.formats.realworld import CONCEPTS_NAME, STATES_NAME, level_of
from knowsim_core.services.reading import HUMAN_READING, NO_REPLY_NOTE, is_human_reading
from knowsim_core.engine.state import IUState
from knowsim_core.storage import Store
from tests.conftest import ARENA_ANNOTATIONS

ARENA = ARENA_ANNOTATIONS.parent
ANNOTATIONS = ARENA_ANNOTATIONS
STATUS = {"Not introduced": IUState.UNAWARE, "Struggling": IUState.STRUGGLING,
          "Partial understanding": IUState.PARTIAL, "Knows well": IUState.KNOWS_WELL}
EXPECTED_LEVEL = {"9-12": "novice", "undergrad": "intermediate", "grad": "advanced"}



@pytest.fixture(autouse=True)
def _needs_the_conversations(arena_annotations):
    """Every test here reads ../shared/realworld (skips without it; fails under CI)."""


def _records() -> list[dict]:
    return json.loads(ANNOTATIONS.read_text())


def _problem1(rec: dict) -> int:
    n, total = rec.get("problem_1_turns"), len(rec["user_queries"])
    return n if isinstance(n, int) and 1 <= n < total else total


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("rw") / "rw.db")
    report = import_path(store, ANNOTATIONS)
    runs = {dict(store.runs.load(rid).meta)["conversation"]: store.runs.load(rid) for rid in report.runs}
    return store, report, runs


def _variant(tmp_path: Path, edit=None, *, companions=(CONCEPTS_NAME, STATES_NAME), n: int = 3) -> Path:
    """The first ``n`` shared conversations (optionally edited) with the chosen companions beside them."""
    data = _records()[:n]
    if edit:
        edit(data)
    out = tmp_path / ANNOTATIONS.name
    out.write_text(json.dumps(data))
    for name in companions:
        shutil.copy(ARENA / name, tmp_path / name)
    return out


def test_every_shared_conversation_becomes_a_question_a_graph_and_a_human_run(imported):
    store, report, runs = imported
    recs = _records()
    assert (report.conversations, report.questions, report.graph_versions, len(report.runs)) == (25, 25, 25, 25)
    assert report.user_messages == sum(_problem1(r) for r in recs)
    assert report.later_messages == sum(len(r["user_queries"]) - _problem1(r) for r in recs)
    assert report.initial_states == 25
    for rec in recs:
        run = runs[f"{rec['problem_id']}:{rec['workerId']}"]
        n = _problem1(rec)
        assert [t.user_message for t in run.turns] == rec["user_queries"][:n]
        assert [t.assistant_message for t in run.turns] == [a or "" for a in rec["ai_responses"][:n]]
        assert run.adapter["user"] == "human" and run.adapter["assistant"] == f"recorded/{rec['model']}"
        assert is_human_reading(run) and dict(run.meta)["kind"] == HUMAN_READING
        assert dict(run.meta)["rating"] == rec["overall_rating"]
        assert json.loads(dict(run.meta)["report"])["why_stop"] == rec["why_stop"]


def test_levels_follow_the_stated_expertise_mapping(imported):
    _, _, runs = imported
    for rec in _records():
        assert runs[f"{rec['problem_id']}:{rec['workerId']}"].level == EXPECTED_LEVEL[rec["math_expertise"]]
    assert [level_of(e) for e in ("9-12", "undergrad", "grad", "K-8", "advanced")] == [
        "novice", "intermediate", "advanced", "novice", "advanced"]
    with pytest.raises(ValueError, match="not 9-12"):
        level_of("astronaut")


def test_graph_nodes_are_the_extracted_concepts_without_edges(imported):
    store, _, runs = imported
    concepts = json.loads((ARENA / CONCEPTS_NAME).read_text())
    for rec in _records():
        run = runs[f"{rec['problem_id']}:{rec['workerId']}"]
        want = concepts[str(rec["problem_id"])]["extracted_concepts"]
        nodes = run.graph.nodes
        assert [n.id for n in nodes] == [f"IU{i}" for i in range(1, len(want) + 1)]
        want_pairs = [(c["Concept Name"], c["Concept Explanation"]) for c in want]
        assert [(n.concept, n.description) for n in nodes] == want_pairs
        assert run.graph.edges == () or list(run.graph.edges) == []
        (version,) = store.questions.graph_versions(run.question_id)
        assert version.author == "simulatorarena" and "no prerequisite edges" in version.note


def test_initial_states_come_from_the_knowledge_state_file(imported):
    _, _, runs = imported
    states = json.loads((ARENA / STATES_NAME).read_text())
    for key, entry in states.items():
        pid, worker, _model = ast.literal_eval(key)
        run = runs[f"{pid}:{worker}"]
        by_concept = {n.concept: run.graph.label(n.id) for n in run.graph.nodes}
        for c in entry["concepts"]:
            assert run.initial_state.state_of(by_concept[c["Concept Name"]]) == STATUS[c["Status"]]


def test_the_reading_has_a_trajectory_and_metrics(imported):
    _, _, runs = imported
    moved = 0
    for run in runs.values():
        assert [t.turn for t in run.turns] == list(range(1, len(run.turns) + 1))
        assert run.turns[0].state_before == run.initial_state
        moved += sum(len(t.transitions) for t in run.turns)
        m = run.metrics()
        assert 0.0 <= m.delivery_calibration <= 1.0
    assert moved > 0  # the tutors' replies do teach something that the rules register


def test_importing_again_adds_nothing(imported):
    store, _, _ = imported
    again = import_path(store, ANNOTATIONS)
    assert again.runs == [] and again.questions == 0 and len(again.skipped) == 25
    assert store.search.count() == 25


def test_null_replies_and_image_messages_are_handled_and_counted(tmp_path):
    def edit(data):
        data[0]["ai_responses"][-1] = None
        data[0]["ai_responses"][0] = None
        data[1]["user_queries"][1] = "uploads/2024/my_working.PNG"
        data[1]["extra_field_from_a_newer_release"] = {"anything": [1, 2]}

    path = _variant(tmp_path, edit)
    store = Store(tmp_path / "s.db")
    report = import_path(store, path)
    assert (report.null_replies, report.image_messages, len(report.runs)) == (2, 1, 3)
    runs = [store.runs.load(r) for r in report.runs]
    first = next(r for r in runs if dict(r.meta)["conversation"].startswith(str(_records()[0]["problem_id"]) + ":"))
    assert first.turns[0].assistant_message == "" and NO_REPLY_NOTE in first.turns[0].notes
    assert all(s.teaching_quality == "not_mentioned" for s in first.turns[0].signals)
    second = next(r for r in runs if dict(r.meta)["image_messages"] == 1)
    assert second.turns[1].user_message == "uploads/2024/my_working.PNG"
    assert any("image-path" in n for n in second.turns[1].notes)
    assert "2 null repl" in report.summary() and "1 image-path" in report.summary()


def test_a_conversation_without_any_reply_and_a_single_record_file(tmp_path):
    path = _variant(tmp_path, lambda d: d[0].update(ai_responses=None), n=1)
    data = json.loads(path.read_text())[0]
    path.write_text(json.dumps(data))  # one conversation, not a list
    store = Store(tmp_path / "n.db")
    report = import_path(store, path)
    assert report.null_replies == _problem1(_records()[0]) and len(report.runs) == 1
    run = store.runs.load(report.runs[0])
    assert all(t.assistant_message == "" and not t.transitions for t in run.turns)


def test_missing_companions(tmp_path):
    only = tmp_path / "only"
    only.mkdir()
    store = Store(tmp_path / "a.db")
    report = import_path(store, _variant(only, companions=()))
    # no concepts: each conversation is still stored (messages, judgments), saying why it has no reading
    assert report.questions == 3 and len(report.runs) == 3 and len(report.unread) == 3
    assert any(CONCEPTS_NAME in s for s in report.skipped)
    assert all("no extracted concepts" in dict(store.runs.load(r).meta)["no_reading"] for r in report.runs)

    no_states = tmp_path / "no_states"
    no_states.mkdir()
    store = Store(tmp_path / "b.db")
    report = import_path(store, _variant(no_states, companions=(CONCEPTS_NAME,)))
    assert len(report.runs) == 3 and report.initial_states == 0
    for rid in report.runs:
        assert dict(store.runs.load(rid).meta)["initial_state_source"].startswith("sampled for ")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d[1]["ai_responses"].pop(), r"record 1 \(.*\): field ai_responses: 5 entries for 6 user_queries"),
    (lambda d: d[2].pop("workerId"), r"record 2: field workerId: field required, got nothing; "),
    (lambda d: d[0].update(user_queries=[]), r"record 0: field user_queries: list should have at least 1 item"),
    (lambda d: d[0]["user_queries"].__setitem__(0, 3), r"record 0: field user_queries\[0\]: input should be a valid string, got 3"),
    (lambda d: d[1].update(math_expertise="astronaut"), r"record 1 \(.*\): field math_expertise: expertise 'astronaut'"),
])
def test_malformed_annotations_are_refused_with_one_line(tmp_path, edit, expected):
    path = _variant(tmp_path, edit)
    store = Store(tmp_path / "m.db")
    with pytest.raises(FormatError, match=ANNOTATIONS.name.replace(".", r"\.") + ": " + expected) as exc:
        import_path(store, path)
    assert "\n" not in str(exc.value)
    assert store.questions.list() == []  # nothing was written


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d[0].update(overall_rating="7"), r"record 0: field overall_rating: input should be a valid number"),
    (lambda d: d[0].update(problem_1_turns=True), r"record 0: field problem_1_turns: input should be a valid integer"),
    (lambda d: d[1].update(problem_id=[1, 2]), r"record 1: field problem_id: input should be a valid integer"),
    (lambda d: d[2].update(why_stop={"nested": "object"}), r"record 2: field why_stop: "),
    (lambda d: d[0].update(user_queries=["hi"] * 1001), r"record 0: field user_queries: list should have at most 1000"),
])
def test_wrong_types_and_sizes_are_refused_strictly(tmp_path, edit, expected):
    """Values pydantic's lax mode would have coerced ("7" → 7.0, true → 1) or stored as metadata."""
    path = _variant(tmp_path, edit)
    store = Store(tmp_path / "t.db")
    with pytest.raises(FormatError, match=ANNOTATIONS.name.replace(".", r"\.") + ": " + expected) as exc:
        import_path(store, path)
    assert "\n" not in str(exc.value) and store.questions.list() == []


@pytest.mark.parametrize(("companion", "edit", "expected"), [
    (CONCEPTS_NAME, lambda d: d[next(iter(d))]["extracted_concepts"][0].update({"Concept Name": "   "}),
     r"field \w+\.extracted_concepts\[0\]\.Concept Name: string should have at least 1 character"),
    (CONCEPTS_NAME, lambda d: d.update({next(iter(d)): None}), r"field \w+: input should be a valid dictionary"),
    (STATES_NAME, lambda d: d.update({"not a tuple": {"concepts": []}}), r"key 'not a tuple' is not"),
])
def test_malformed_companions_are_refused_naming_the_field(tmp_path, companion, edit, expected):
    path = _variant(tmp_path)
    data = json.loads((tmp_path / companion).read_text())
    edit(data)
    (tmp_path / companion).write_text(json.dumps(data))
    store = Store(tmp_path / "c.db")
    with pytest.raises(FormatError, match=companion.replace(".", r"\.") + ": " + expected):
        import_path(store, path)
    assert store.questions.list() == []


def test_a_bad_status_in_the_companion_is_refused_through_the_cli(tmp_path, capsys):
    path = _variant(tmp_path)
    states = json.loads((tmp_path / STATES_NAME).read_text())
    first = next(iter(states))
    states[first]["concepts"][0]["Status"] = "Vaguely remembers"
    (tmp_path / STATES_NAME).write_text(json.dumps(states))
    assert main(["import", str(path), "--db", str(tmp_path / "c.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and STATES_NAME in err and ".concepts[0].Status: not a status" in err and "Vaguely remembers" in err


# ---------------------------------------------------------------------- generic JSONL
def _jsonl(tmp_path: Path, lines: list[dict | str]) -> Path:
    p = tmp_path / "conversations.jsonl"
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return p


CONV = {
    "id": "tutor-1", "level": "9-12", "rating": 8, "model": "my-tutor",
    "messages": [
        {"role": "user", "content": "How many ways can 3 books be arranged on a shelf?"},
        {"role": "assistant", "content": "Count the choices for each position: 3 for the first, then 2, then 1, "
                                         "so the number of arrangements is the factorial 3! = 6."},
        {"role": "user", "content": "so it's 6?"},
        {"role": "assistant", "content": None},
    ],
    "concepts": [{"name": "Factorial", "description": "n! multiplies every integer from 1 to n."},
                 {"name": "Multiplication principle", "description": "Independent choices multiply."}],
    "initial_states": {"Factorial": "Struggling", "multiplication principle": "knows_well"},
}


def test_generic_jsonl_is_imported_the_same_way(tmp_path):
    store = Store(tmp_path / "j.db")
    report = import_path(store, _jsonl(tmp_path, [CONV, {**CONV, "id": "tutor-2", "level": None}]))
    assert report.kind == "conversations-jsonl" and len(report.runs) == 2 and report.null_replies == 2
    run = store.runs.load(report.runs[0])
    assert run.level == "novice" and run.adapter["assistant"] == "recorded/my-tutor"
    assert [t.user_message for t in run.turns] == ["How many ways can 3 books be arranged on a shelf?", "so it's 6?"]
    assert run.initial_state.state_of("IU1: Factorial") == IUState.STRUGGLING
    assert run.initial_state.state_of("IU2: Multiplication principle") == IUState.KNOWS_WELL
    assert dict(run.meta)["rating"] == 8
    assert store.runs.load(report.runs[1]).level == "intermediate"  # no level given: stated default


@pytest.mark.parametrize(("text", "expected"), [
    (json.dumps(CONV)[:-1] + ', "rating": NaN}', r"line 1: the value NaN is not valid JSON"),
    ("[" * 100 + "]" * 100, r"line 1 nests arrays/objects more than"),
    (json.dumps({**CONV, "id": ["a"]}), r"line 1: field id: "),
    (json.dumps({**CONV, "concepts": [{"name": 3}]}), r"line 1: field concepts\[0\]\.name: input should be a valid string"),
])
def test_hostile_jsonl_lines_are_refused_in_one_line(tmp_path, text, expected):
    path = _jsonl(tmp_path, [CONV, text])
    path.write_text(text + "\n" + json.dumps(CONV) + "\n")  # the bad line first: detection must not crash either
    store = Store(tmp_path / "h.db")
    with pytest.raises(FormatError, match=r"conversations\.jsonl:? " + expected) as exc:
        import_path(store, path)
    assert "\n" not in str(exc.value) and store.questions.list() == []


@pytest.mark.parametrize(("line", "expected"), [
    ({**CONV, "messages": [{"role": "assistant", "content": "hi"}]}, r"line 1: field messages\[0\].role: an assistant"),
    ({**CONV, "messages": [{"role": "tutor", "content": "hi"}]}, r"line 1: field messages\[0\].role: input should be 'user' or 'assistant', got 'tutor'"),
    ({**CONV, "initial_states": {"Factorial": "meh"}}, r"line 1: field initial_states.Factorial: not a status .*, got 'meh'"),
    ({**CONV, "rating": "great"}, r"line 1: field rating: input should be a valid number, got 'great'"),
])
def test_malformed_jsonl_is_refused(tmp_path, line, expected):
    """A good conversation then a malformed one: refused with the second line's message, and the
    store stays empty — no question, no run (the good first line is not kept either). Planted
    fault: importing line by line, committing each, keeps the first conversation and fails here."""
    store = Store(tmp_path / "k.db")
    good = {**CONV, "id": "tutor-0"}
    with pytest.raises(FormatError, match=r"conversations\.jsonl: " + expected.replace("line 1", "line 2")):
        import_path(store, _jsonl(tmp_path, [good, line]))
    assert store.questions.list() == [] and store.search.list() == []
