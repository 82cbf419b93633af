"""Questions by source: a kind on every question (sample / paper / real / yours), a short title, and
pickers that list samples first and select one group at a time (issue 24, item 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowsim_core.storage import Store
from knowsim_core.storage.migrations import legacy_kind
from knowsim_core.storage.questions import QUESTION_KINDS
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.text.titles import clip, concept_title, short_title
from tests.conftest import require_shared

ARENA = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld" / "simulatorarena_math"
ANNOTATIONS = ARENA / "math_tutoring_annotations_redacted_for_benchmarking.json"
GREETINGS = {"hello", "hi", "hello, are you functioning properly?", "i think the answer might be 2"}


def test_a_title_is_the_first_sentence_clipped_at_a_word():
    assert short_title("How does X work? And why?") == "How does X work?"
    long = "word " * 40
    t = short_title(long)
    assert len(t) <= 70 and t.endswith("…") and not t.endswith(" …")
    assert clip("a\n  b") == "a b"


def test_text_without_a_sentence_end_is_titled_by_its_first_line():
    """The docstring promised the first line; the line breaks were flattened first, so the title was
    the whole text run together and clipped ("Solve the system 2x + y = 3 x - y = 0")."""
    assert short_title("\n  Solve the system\n2x + y = 3\nx - y = 0\n") == "Solve the system"
    assert short_title("A sentence that runs\nover two lines. Then more.") == "A sentence that runs over two lines."
    assert short_title("Is this\nthe last line?") == "Is this the last line?"  # the end of the text ends it
    assert short_title("") == "" and short_title("   \n ") == ""


def test_a_real_conversation_is_titled_by_its_field_and_concepts_not_its_greeting():
    t = concept_title("Number Theory", ["Perfect Square", "Digit Permutation", "Combinatorial Analysis"], "MATH")
    assert t.startswith("Number Theory: Perfect Square, Digit Permutation") and len(t) <= 70
    assert concept_title("", [], "SimulatorArena math (MATH test/algebra/1)") == "SimulatorArena math (MATH test/algebra/1)"


@pytest.mark.parametrize("source,kind", [
    ("KnowSim Studio samples (authored)", "sample"), ("reference math", "paper"),
    ("SimulatorArena math (MATH test/algebra/2241.json, Level 3)", "real"),
    ("conversations chats.jsonl", "real"), ("user", "yours"), ("run", "yours"),
])
def test_questions_stored_before_kinds_are_classified_once_by_their_source(source, kind):
    assert legacy_kind("q", source) == kind


def test_samples_come_first_and_every_question_has_a_kind(seeded_store):
    store = seeded_store
    mine = store.questions.add(text="Why is the sky blue? Explain Rayleigh scattering.", question_id="a_mine")
    real = store.questions.add(text="hello", question_id="a_real", kind="real", title="Algebra: Completing the Square")
    rows = store.questions.list()
    kinds = [q.kind for q in rows]
    assert kinds == sorted(kinds, key=QUESTION_KINDS.index) and kinds[0] == "sample"
    by_id = {q.id: q for q in rows}
    assert by_id[mine].kind == "yours" and by_id[mine].title == "Why is the sky blue?"
    assert by_id[real].title == "Algebra: Completing the Square"
    assert [q.id for q in store.questions.list(kind="real")] == [real]
    assert [q.id for q in store.questions.list(search="Completing")] == [real]


def test_an_unknown_kind_is_refused_in_one_line(seeded_store):
    from knowsim_core.errors import StorageError

    with pytest.raises(StorageError, match="unknown question kind 'blog'; expected one of sample, paper"):
        seeded_store.questions.add(text="x", kind="blog")


@pytest.fixture()
def arena() -> Path:
    return require_shared(ANNOTATIONS)


def test_imported_real_conversations_are_their_own_kind_with_titles_not_greetings(tmp_path, arena):
    from knowsim_core.services.importing import import_path

    store = Store(tmp_path / "rw.db")
    store.questions.seed_samples()
    import_path(store, arena)
    real = store.questions.list(kind="real")
    assert len(real) == 25
    assert all(q.title.lower().rstrip(".") not in GREETINGS and len(q.title) <= 70 for q in real)
    assert all(q.field and q.title.startswith(q.field + ":") for q in real if q.field)
    rows = store.questions.list()
    assert [q.kind for q in rows[:10]] == ["sample"] * 10  # the samples before the 25 conversations


# ---------------------------------------------------------------------- pickers (AppTest)
def test_batch_selects_one_group_at_a_time_and_never_offers_human(seeded_store):
    from streamlit.testing.v1 import AppTest

    store = seeded_store
    g = store.questions.latest_graph_version("sample_lava_lamps").graph
    store.questions.add(text="hello", question_id="sa_math_1_x", kind="real", title="Algebra: Squares")
    store.questions.add_graph_version("sa_math_1_x", g)
    at = AppTest.from_file("../pages/batch.py", default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "human" not in at.multiselect(key="batch_assistants").options
    at.button(key="batch_all_sample").click().run()
    chosen = at.multiselect(key="batch_questions").value
    assert chosen and all(q.startswith("sample_") for q in chosen) and "sa_math_1_x" not in chosen
    at.button(key="batch_all_real").click().run()
    assert "sa_math_1_x" in at.multiselect(key="batch_questions").value
    labels = at.multiselect(key="batch_questions").options
    assert labels[0].startswith("Sample · ") and labels[-1].startswith("Real conversation · Algebra: Squares")


def test_simulate_lists_samples_first_with_their_titles(seeded_store):
    from streamlit.testing.v1 import AppTest

    seeded_store.questions.add(text="hello", question_id="a_real", kind="real", title="Algebra: Squares")
    seeded_store.questions.add_graph_version("a_real", seeded_store.questions.latest_graph_version("sample_lava_lamps").graph)
    at = AppTest.from_file("../pages/simulate.py", default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    options = at.selectbox(key="setup_question").options
    assert options[0].startswith("Sample · ") and options[-1] == "Real conversation · Algebra: Squares · a_real"


def test_a_schema_5_database_is_upgraded_with_kinds_titles_and_run_columns(tmp_path):
    """Questions and runs stored before 0008 get their kind, a real conversation its title, and a
    fork its parent column, read once from what was stored."""
    import json as _json
    from dataclasses import replace

    from knowsim_core.storage.connection import Connection
    from knowsim_core.storage.migrations import migrations
    from tests.part2_support import make_run

    path = tmp_path / "old.db"
    conn = Connection(path)
    with conn.write() as db:
        migrations().apply(db.utils, stop_before="0008_run_tags_and_sources")
        db.execute("PRAGMA user_version = 5")
    from knowsim_core.formats.samples import load_samples

    sample = load_samples()[0]
    graph = sample.graph.to_data()
    with conn.write() as db:
        for qid, source, field in ((sample.id, "KnowSim Studio samples (authored)", ""),
                                   ("sa_math_40_ab", "SimulatorArena math (MATH test/number_theory/40.json)",
                                    "Number Theory"),
                                   ("q_mine", "user", "")):
            db.utils["questions"].insert({"id": qid, "text": "hello", "reference_answer": "", "domain": "math",
                                    "field": field, "source": source, "created": "2026-01-01"})
            db.utils["graph_versions"].insert({"question_id": qid, "version": 1, "parent_id": None, "note": "",
                                         "author": "import", "created": "2026-01-01",
                                         "graph_json": _json.dumps(graph)})
    store = Store(path)
    kinds = {q.id: (q.kind, q.title) for q in store.questions.list()}
    first_concepts = [n["concept"] for n in graph["nodes"]][:1]
    assert kinds[sample.id][0] == "sample" and kinds["q_mine"] == ("yours", "hello")
    assert kinds["sa_math_40_ab"][0] == "real" and kinds["sa_math_40_ab"][1].startswith(
        f"Number Theory: {first_concepts[0]}")
    assert [q.kind for q in store.questions.list()][0] == "sample"
    g = store.questions.latest_graph_version(sample.id).graph
    parent = store.runs.save(make_run(g, question_id=sample.id, level="novice", seed=1, max_turns=2))
    child = store.runs.save(replace(make_run(g, question_id=sample.id, level="novice", seed=2, max_turns=2),
                                   meta=(("forked_from", parent),)))
    assert [r.id for r in store.search.list(RunFilter(origin="forked"))] == [child]


def test_runs_titles_a_real_conversation_as_the_app_does_not_by_its_first_message(seeded_store, capsys):
    """`runs` printed the first 49 characters of a real conversation's first message ("hello") where
    the app titles it by its field and concepts: both now call question_title (issue 47)."""
    import json

    from knowsim_core.cli import main
    from knowsim_core.text.titles import question_title

    store = seeded_store
    live_graph = store.questions.latest_graph_version("sample_lava_lamps").graph
    title = "Prealgebra: Permutations, Factorial, Counting Arrangements of Letters"
    store.questions.add(text="hello, are you functioning properly?", question_id="sa_math_9_x", kind="real",
                        title=title)
    store.questions.add_graph_version("sa_math_9_x", live_graph)
    from knowsim_core.services.runner import start_run

    start_run(store, question_id="sa_math_9_x", level="novice", assistant_id="offline/simple", seed=1).step()
    row = store.search.list(RunFilter(question_id="sa_math_9_x"))[0]
    assert row.title == store.questions.get("sa_math_9_x").title == question_title("hello", title) == clip(title)
    assert main(["runs", "--db", str(store.path), "--question", "sa_math_9_x"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.endswith(question_title("", title, limit=50)) and "hello" not in line, line
    assert main(["runs", "--db", str(store.path), "--question", "sa_math_9_x", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["title"] == row.title
    # a question without a stored title: its text's first sentence, in the app and in `runs`
    start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple", seed=1).step()
    sample = store.search.list(RunFilter(question_id="sample_lava_lamps"), limit=1)[0]
    assert sample.question_title == "" and sample.title == store.questions.get("sample_lava_lamps").title
    assert sample.title == short_title(sample.question)
