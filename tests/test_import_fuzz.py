"""Property: any mutation of a valid import file is imported whole or refused with FormatError.

Small valid files are built here from the project's own sample questions (a short offline run as
Studio JSON and as a reference run record with its ``iu_cache/``, an items JSONL, an IU cache, a
release folder with its initial-state cache) and from a small synthetic tutoring conversation
written for this test (a SimulatorArena-format annotations file with its two companions, each
companion mutated in turn, and the generic conversations JSONL). Hypothesis then mutates one of them — drops a key,
swaps a value for another type, NaN / Infinity, a huge integer, deep nesting, truncation — and
imports it. Allowed outcomes: the import succeeds, or it raises :class:`FormatError` and every
table of the database is exactly as before. Any other exception, or a refused import that wrote
something, fails the test.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from knowsim_core.errors import FormatError
from knowsim_core.formats import reference_export, studio
from knowsim_core.services.importing import import_path
from knowsim_core.formats.realworld import CONCEPTS_NAME, STATES_NAME
from knowsim_core.services.runner import start_run
from knowsim_core.formats.samples import load_samples
from knowsim_core.storage import Store
from tests.test_hostile_input import db_snapshot

QID = "sample_lava_lamps"
EXAMPLES = 25  # per file kind: nine kinds run in well under a minute on a shared machine

DEEP: list = []
for _ in range(80):  # deeper than any format allows
    DEEP = [DEEP]
REPLACEMENTS: tuple[Any, ...] = (
    None, "", "x", "oops", -1, 0, 2**70, -(2**70), 1e308, 0.5, True, False, [], {}, [1, "x"], {"k": "v"},
    math.nan, math.inf, -math.inf, DEEP,
)


def _paths(node: Any, prefix: tuple = (), limit: int = 4) -> list[tuple]:
    """Every path into the JSON tree (the first ``limit`` items of each list)."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,), limit)
    elif isinstance(node, list):
        for i, v in enumerate(node[:limit]):
            out += _paths(v, prefix + (i,), limit)
    return out


def _mutate(data: Any, path: tuple, op: str, value: Any) -> Any:
    data = json.loads(json.dumps(data))
    if not path:
        return value if op != "nest" else [[[[data]]]]
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    if op == "drop":
        del parent[key]
    elif op == "nest":
        parent[key] = [[[[[[[[parent[key]]]]]]]]]
    else:
        parent[key] = value
    return data


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> "Seeds":
    """``kind → (file to import, its parsed content, file name inside the folder)``, all valid."""
    root = tmp_path_factory.mktemp("seeds")
    store = Store(root / "seed.db")
    store.questions.seed_samples()
    run = start_run(store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=3,
                    max_turns=3).run_to_end()
    samples = [s for s in load_samples()][:2]
    graph_data = next(s for s in load_samples() if s.id == QID).graph.to_data()
    files: dict[str, tuple[Path, Any, str]] = {}

    studio_run = json.loads(studio.dumps(run))
    studio_run["run_id"] = None  # a fresh id each time it is imported
    files["studio"] = (root / "studio", studio_run, "run.json")
    record = reference_export.to_reference(run, domain="math")
    files["reference"] = (root / "reference", [record], "run.json")
    (root / "reference" / "iu_cache").mkdir(parents=True)
    (root / "reference" / "iu_cache" / "math.json").write_text(json.dumps({QID: graph_data}))
    files["iu-cache"] = (root / "cache", {QID: graph_data}, "cache.json")
    items = [{"id": f"fuzz_{i}", "problem": s.question, "solution": s.reference_answer, "split": ["benchmarking"]}
             for i, s in enumerate(samples)]
    files["items"] = (root / "items", items, "items.jsonl")
    folder = root / "release"
    (folder / "paper_subset").mkdir(parents=True)
    (folder / "paper_subset" / "math.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n")
    (folder / "iu_cache").mkdir()
    (folder / "iu_cache" / "math.json").write_text(
        json.dumps({f"fuzz_{i}": s.graph.to_data() for i, s in enumerate(samples)}))
    init = {"_meta": {"description": "fuzz"}, "competition_math": {
        f"fuzz_{i}": {"novice": {lab: {"state": "unaware"} for lab in s.graph.index.labels}}
        for i, s in enumerate(samples)}}
    files["init-cache"] = (folder, init, "init_ks_cache.json")
    arena = root / "arena"
    arena.mkdir()
    for name, content in ((ANNOTATIONS, ARENA_RECORDS), (CONCEPTS_NAME, ARENA_CONCEPTS), (STATES_NAME, ARENA_STATES)):
        (arena / name).write_text(json.dumps(content))
    files["realworld"] = (arena, ARENA_RECORDS, ANNOTATIONS)
    files["realworld-concepts"] = (arena, ARENA_CONCEPTS, CONCEPTS_NAME)
    files["realworld-states"] = (arena, ARENA_STATES, STATES_NAME)
    files["conversations-jsonl"] = (root / "conversations", CONVERSATIONS, "conversations.jsonl")
    for folder, _content, _name in files.values():
        folder.mkdir(parents=True, exist_ok=True)
    return Seeds(files)


# ---------------------------------------------------------------------- a synthetic real conversation
ANNOTATIONS = "math_tutoring_annotations_redacted_for_benchmarking.json"
ARENA_RECORDS = [
    {"problem_id": 7, "workerId": "fuzz-worker-1", "model": "tutor-x", "math_expertise": "9-12",
     "overall_rating": 8, "problem_1_turns": 2, "question_location": "test/algebra/7.json", "level": "Level 2",
     "type": "Algebra", "why_stop": "I solved it", "moved_to_problem_2": True,
     "user_queries": ["What is x if 2x + 3 = 11?", "so x is 4?", "now 3x = 12, is that also 4?"],
     "ai_responses": ["Undo the addition first: subtract 3 from both sides to get 2x = 8, then divide by 2.",
                      "Yes: 2 times 4 plus 3 is 11, so x = 4 solves the linear equation.", None]},
    {"problem_id": "p9", "workerId": "fuzz-worker-2", "model": "tutor-y", "math_expertise": "grad",
     "user_queries": ["How many ways can 4 books stand on a shelf?", "uploads/working.png"],
     "ai_responses": None},
]
ARENA_CONCEPTS = {
    "7": {"extracted_concepts": [
        {"Concept Name": "Linear equations", "Concept Explanation": "An equation whose unknown appears to the first power."},
        {"Concept Name": "Inverse operations", "Concept Explanation": "Subtraction undoes addition, division undoes multiplication."}]},
    "p9": {"extracted_concepts": [
        {"Concept Name": "Factorial", "Concept Explanation": "n! is the product of the integers from 1 to n."}]},
}
ARENA_STATES = {
    "(7, 'fuzz-worker-1', 'sim-model')": {"concepts": [
        {"Concept Name": "Linear equations", "Status": "Partial understanding"},
        {"Concept Name": "Inverse operations", "Status": "Not introduced"}], "response": "a short inference"},
}
CONVERSATIONS = [
    {"id": "fuzz-c1", "level": "undergrad", "rating": 6, "model": "tutor-z",
     "messages": [{"role": "user", "content": "Why is the derivative of x^2 equal to 2x?"},
                  {"role": "assistant", "content": "Take the limit of ((x+h)^2 - x^2)/h as h goes to 0: it is 2x + h, so 2x."},
                  {"role": "user", "content": "ok so the h term vanishes"},
                  {"role": "assistant", "content": None}],
     "concepts": [{"name": "Limit", "description": "The value a quotient approaches as h goes to 0."},
                  {"name": "Difference quotient", "description": "(f(x+h) - f(x)) / h."}],
     "initial_states": {"Limit": "struggling", "Difference quotient": "Knows well"}},
    {"messages": [{"role": "user", "content": "What is 15% of 80?"}]},
]


class Seeds(dict):
    """The seed files (a short repr: hypothesis prints fixtures of a failing example)."""

    def __repr__(self) -> str:
        return f"Seeds({', '.join(self)})"


def _write(folder: Path, name: str, data: Any, cut: int | None) -> Path:
    if name.endswith(".jsonl"):
        text = "\n".join(json.dumps(d) for d in data) if isinstance(data, list) else json.dumps(data)
    else:
        text = json.dumps(data)  # NaN / Infinity come out as the invalid tokens a hostile file holds
    if cut is not None:
        text = text[: cut % (len(text) + 1)]
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory) -> Store:
    store = Store(tmp_path_factory.mktemp("fuzzdb") / "fuzz.db")
    store.questions.seed_samples()
    return store


@pytest.mark.parametrize("kind", ["studio", "reference", "iu-cache", "items", "init-cache", "realworld",
                                  "realworld-concepts", "realworld-states", "conversations-jsonl"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutation_is_imported_whole_or_refused_cleanly(seeds, fuzz_store, tmp_path_factory, kind, data):
    folder, content, name = seeds[kind]
    path = data.draw(st.sampled_from(_paths(content)), label="path")
    op = data.draw(st.sampled_from(["drop", "replace", "replace", "nest", "truncate"]), label="op")
    if op == "drop" and not path:
        op = "replace"
    value = data.draw(st.sampled_from(REPLACEMENTS), label="value")
    work = tmp_path_factory.mktemp("case")
    shutil.copytree(folder, work, dirs_exist_ok=True)
    mutated = content if op == "truncate" else _mutate(content, path, op, value)
    cut = data.draw(st.integers(0, 10**6), label="cut") if op == "truncate" else None
    target = _write(work, name, mutated, cut)
    to_import = work if kind == "init-cache" else work / ANNOTATIONS if kind.startswith("realworld") else target

    before = db_snapshot(fuzz_store.path)
    runs_before = fuzz_store.search.count()
    try:
        report = import_path(fuzz_store, to_import)
    except FormatError as exc:
        assert db_snapshot(fuzz_store.path) == before, f"refused ({exc}) but the database changed"
        assert "\n" not in str(exc)
        return
    # imported: whole — every run it reports is stored and loads back
    assert fuzz_store.search.count() == runs_before + len(report.runs)
    for run_id in report.runs:
        assert fuzz_store.runs.load(run_id).turns is not None


# line 2 of the JSONL has no concepts: stored too (messages, judgments), as a run without a reading
@pytest.mark.parametrize(("kind", "runs"), [("realworld", 2), ("conversations-jsonl", 2)])
def test_the_real_conversation_seeds_import_whole(seeds, tmp_path, kind, runs):
    """The unmutated seeds are valid, so the property above exercises imports that succeed too."""
    folder, content, name = seeds[kind]
    shutil.copytree(folder, tmp_path / "in")
    _write(tmp_path / "in", name, content, None)
    store = Store(tmp_path / "seed.db")
    report = import_path(store, tmp_path / "in" / name)
    assert len(report.runs) == runs and report.questions == 2
    assert all(store.runs.load(r).turns for r in report.runs)
