"""Formats: Studio JSON round-trip, reference run-record export, CSV of turns, importers."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from knowsim_core.errors import FormatError
from knowsim_core.formats import csv_export, reference_export, studio
from knowsim_core.services.importing import detect, import_path, read_runs
from knowsim_core.formats.reference import load_iu_cache, load_run_file, run_from_reference
from knowsim_core.services.runner import start_run
from knowsim_core.engine.state import IUState
from knowsim_core.storage import Store

EXAMPLE = "examples/mathqa_structured_adaptive_novice.json"


@pytest.fixture()
def store(seeded_store) -> Store:
    return seeded_store


def offline_run(store, assistant="offline/adaptive", level="novice", seed=1, question="sample_lava_lamps", **kw):
    return start_run(store, question_id=question, level=level, assistant_id=assistant, seed=seed, **kw).run_to_end()


# ---------------------------------------------------------------------- Studio JSON
@pytest.mark.parametrize(
    "assistant,level,seed",
    [("offline/adaptive", "novice", 1), ("offline/socratic", "advanced", 7), ("offline/oracle", "intermediate", 3)],
)
def test_studio_json_round_trip_is_exact(store, assistant, level, seed):
    run = offline_run(store, assistant, level, seed)
    text = studio.dumps(run)
    back = studio.loads(text)
    assert back == run
    assert studio.dumps(back) == text
    data = json.loads(text)
    assert [t["turn"] for t in data["turns"]] == list(range(1, len(run.turns) + 1))


def test_studio_export_import_through_the_store_is_identical(store, tmp_path):
    run = offline_run(store, max_turns=6)
    path = tmp_path / "run.json"
    path.write_text(studio.dumps(run))
    other = Store(tmp_path / "other.db")
    report = import_path(other, path)
    assert report.kind == "studio-run" and report.runs == [run.run_id]  # a free id is kept
    assert other.runs.load(run.run_id) == run
    assert other.search.get_row(run.run_id).status == "finished"


def test_truncated_studio_export_is_refused_and_changes_nothing(store, tmp_path):
    run = offline_run(store, max_turns=4)
    text = studio.dumps(run)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    before = store.search.count()
    with pytest.raises(FormatError, match="not valid JSON .*truncated"):
        import_path(store, path)
    with pytest.raises(FormatError, match="truncated"):
        studio.loads(text[:-10])
    assert store.search.count() == before


def test_studio_run_whose_graph_does_not_match_its_states_is_refused(store, tmp_path):
    run = offline_run(store, max_turns=3)
    other_graph = store.questions.latest_graph_version("sample_herd_immunity").graph
    data = json.loads(studio.dumps(replace(run, graph=other_graph)))
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(data))
    before = store.search.count()
    with pytest.raises(FormatError, match="do not match its IU graph"):
        import_path(store, path)
    assert store.search.count() == before


def test_studio_file_with_a_gap_in_turn_numbers_is_refused(store):
    run = offline_run(store, max_turns=3)
    data = json.loads(studio.dumps(run))
    data["turns"][1]["turn"] = 5
    with pytest.raises(FormatError, match="found 5 at position 2"):
        studio.runs_from_data(data)


# ---------------------------------------------------------------------- CSV
def test_csv_has_one_row_per_turn_with_its_quantities(store):
    runs = [offline_run(store, seed=s, max_turns=5) for s in (1, 2)]
    rows = list(csv.DictReader(io.StringIO(csv_export.dumps(runs))))
    assert len(rows) == sum(len(r.turns) for r in runs)
    assert tuple(rows[0]) == csv_export.COLUMNS
    for row, (run, t) in zip(rows, [(r, t) for r in runs for t in r.turns]):
        q = t.quantities
        assert row["run_id"] == run.run_id and int(row["turn"]) == t.turn
        assert float(row["effective_load"]) == q.effective_load and int(row["overload"]) == q.overload
        assert float(row["efficiency"]) == q.efficiency
        moved = [x for x in row["transitions"].split(";") if x]
        assert len(moved) == q.n_upward_transitions == int(row["n_upward_transitions"])
        assert sum(int(row[f"n_{s.key}"]) for s in IUState) == len(run.graph.nodes)
        assert sum(int(row[c]) for c in csv_export.COLUMNS if c.startswith("mode_")) == len(t.modes)
        assert row["assistant_message"] == t.assistant_message


# ---------------------------------------------------------------------- reference run records
def test_reference_export_reproduces_the_recordings_field_by_field(reference_dir, math_graphs):
    fields = (
        "problem_id", "task", "knowledge_level", "assistant_strategy", "run_type", "simulation_method",
        "absorption_mode", "initial_overload_threshold", "initial_knowledge_state", "knowledge_state_history",
        "knowledge_state", "iu_analysis_history", "engagement_score_history", "absorbed_gain_total",
        "ic_numerator_total", "ic_denominator_total", "zpd_size_total", "new_ius_total", "disallowed_total",
        "explained_concepts", "overall_density", "articulation_mode", "gap_sum", "query_tone", "metrics",
        "stop_reason", "stop_details", "virtual_early_stop_turn", "virtual_early_stop_reason", "turns",
        "over_max", "finished", "conversation", "conversation_history", "problem", "reference_answer",
    )
    for rec in load_run_file(reference_dir / EXAMPLE):
        out = reference_export.to_reference(run_from_reference(rec, math_graphs[rec["problem_id"]]))
        for f in fields:
            assert out[f] == rec[f], f
        # the recordings predate the per-turn absorbed_ic_numerator; everything else is equal
        strip = [{k: v for k, v in m.items() if k != "absorbed_ic_numerator"} for m in out["turn_metrics_history"]]
        assert strip == rec["turn_metrics_history"]
        early = out["metrics_at_early_stop"]
        for k, v in rec["metrics_at_early_stop"].items():
            if k != "turn_metrics_history":
                assert early[k] == v, k


def test_reference_import_export_reimport_keeps_the_recorded_states(reference_dir, math_graphs, store, tmp_path):
    report = import_path(store, reference_dir / EXAMPLE)  # IU cache found one level up
    assert report.kind == "reference-runs" and len(report.runs) == 2
    recorded = {r["problem_id"]: r for r in load_run_file(reference_dir / EXAMPLE)}
    exported = [reference_export.to_reference(store.runs.load(rid)) for rid in report.runs]
    for rec in exported:
        assert rec["knowledge_state_history"] == recorded[rec["problem_id"]]["knowledge_state_history"]
    path = tmp_path / "again.json"
    path.write_text(json.dumps(exported))
    runs, _ = read_runs(path, graphs=reference_dir / "iu_cache" / "math.json")
    for run in runs:
        history = [run.initial_state.to_data(), *(t.state_after.to_data() for t in run.turns)]
        assert history == recorded[run.question_id]["knowledge_state_history"]


def test_our_runs_exported_as_reference_replay_to_the_same_states(store):
    run = offline_run(store, "offline/comprehensive", "intermediate", 5)
    rec = reference_export.to_reference(run, domain="math")
    assert rec["task"] == "math" and rec["assistant_strategy"] == "comprehensive"
    again = run_from_reference(json.loads(json.dumps(rec)), run.graph, run.params)
    assert [t.state_after for t in again.turns] == [t.state_after for t in run.turns]
    assert [t.quantities for t in again.turns] == [t.quantities for t in run.turns]
    assert rec["metrics"]["knowledge_gain"] == sum(t.quantities.absorbed_gain for t in run.turns)
    assert rec["knowsim_studio"]["seed"] == 5


def test_strategy_names():
    assert reference_export.strategy_of("offline/adaptive") == "adaptive"
    assert reference_export.strategy_of("openai/gpt-4o:socratic") == "socratic"
    assert reference_export.strategy_of("recorded/adaptive") == "adaptive"


# ---------------------------------------------------------------------- importers
def test_reference_folder_import_is_complete_and_idempotent(reference_dir, store):
    report = import_path(store, reference_dir)
    assert (report.kind, report.questions, report.graph_versions, report.initial_states) == (
        "reference-folder", 60, 60, 180)
    q = store.questions.get("math_003")
    assert q.domain == "math" and q.n_graph_versions == 1 and "lava lamps" in q.text
    assert store.questions.get("expertqa_001").domain == "expert"
    assert store.questions.latest_graph_version("math_003").graph == load_iu_cache(reference_dir / "iu_cache" / "math.json")["math_003"]
    assert store.caches.get_initial_state("math_003", "novice") is not None
    again = import_path(store, reference_dir)
    assert (again.questions, again.graph_versions, again.initial_states) == (0, 0, 0)


def test_items_jsonl_finds_its_caches(reference_dir, store):
    report = import_path(store, reference_dir / "paper_subset" / "math.jsonl")
    assert (report.kind, report.questions, report.graph_versions, report.initial_states) == (
        "reference-items", 30, 30, 90)


def test_run_file_with_the_wrong_graphs_is_refused_and_changes_nothing(reference_dir, store, tmp_path):
    before = store.search.count()
    with pytest.raises(FormatError, match="has no graph for it"):
        import_path(store, reference_dir / EXAMPLE, graphs=reference_dir / "iu_cache" / "expertqa.json")
    cache = json.loads((reference_dir / "iu_cache" / "math.json").read_text())
    swapped = {"math_003": cache["math_004"], "math_004": cache["math_003"]}
    (tmp_path / "swapped.json").write_text(json.dumps(swapped))
    with pytest.raises(FormatError, match="not in the given graph"):
        import_path(store, reference_dir / EXAMPLE, graphs=tmp_path / "swapped.json")
    copy = tmp_path / "alone" / "runs.json"
    copy.parent.mkdir()
    copy.write_text((reference_dir / EXAMPLE).read_text())
    with pytest.raises(FormatError, match="pass --graphs"):
        import_path(store, copy)
    assert store.search.count() == before


def test_baseline_only_and_unknown_files(reference_dir, store, tmp_path):
    with pytest.raises(FormatError, match="nothing to import"):
        import_path(store, reference_dir / "examples" / "expertqa_baseline_zero-shot-cot_novice.json")
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"hello": 1}))
    with pytest.raises(FormatError, match="not a file KnowSim Studio can import"):
        detect(odd)
    with pytest.raises(FormatError, match="file not found"):
        detect(tmp_path / "missing.json")
    with pytest.raises(FormatError, match="without paper_subset"):
        detect(tmp_path)
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(FormatError, match="UTF-8"):
        detect(binary)
    assert store.search.count() == 0


@pytest.mark.parametrize("name, body", [
    ("math_tutoring_annotations_redacted.json", json.dumps([{"user_queries": ["hi"], "ai_responses": ["hello"]}])),
    ("conversations.jsonl", json.dumps({"id": "c1", "messages": [{"role": "user", "content": "hi"}]}) + "\n"),
])
@pytest.mark.parametrize("nested", [False, True])
def test_a_folder_of_real_conversations_names_the_file_to_pass(tmp_path, store, name, body, nested):
    """Issue 24 item 15: importing the realworld folder said only "expected the reference data layout"."""
    folder = tmp_path / "realworld"
    inner = folder / "simulatorarena_math" if nested else folder
    inner.mkdir(parents=True)
    (inner / name).write_text(body)
    (inner / "knowledge_state.json").write_text(json.dumps({"not": "conversations"}))
    with pytest.raises(FormatError) as err:
        import_path(store, folder)
    message = str(err.value)
    assert "\n" not in message and f"pass the file {inner / name}" in message
    assert store.search.count() == 0


def test_iu_cache_alone_adds_versions_to_known_questions(reference_dir, store):
    cache = reference_dir / "iu_cache" / "math.json"
    report = import_path(store, cache)
    assert report.kind == "iu-cache" and report.graph_versions == 0 and len(report.skipped) == 30
    store.questions.add(question_id="math_003", text="lava lamps")
    report = import_path(store, cache)
    assert report.graph_versions == 1 and store.questions.get("math_003").n_graph_versions == 1
