"""Importing a run file again stores nothing new (issue 35, item 2; issue 34, item 6).

The old importer stored every run of a Studio or reference run file each time it was imported,
judgments included (three imports → three runs; a re-imported human run moved Agreement from 57 thumbs
to 67), and a file listing one run twice stored two. Each test here fails on that code: the number of
stored runs and judgments is counted before and after, and the report must say "already stored".
"""

from __future__ import annotations

import json

import pytest

from knowsim_core.cli import main
from knowsim_core.errors import FormatError
from knowsim_core.formats import studio
from knowsim_core.services.importing import import_path
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store

REFERENCE_RUNS = "examples/mathqa_structured_adaptive_novice.json"


def all_runs(store) -> list:
    return store.search.list(limit=10_000)


def judgments(store) -> int:
    return sum(len(store.judgments.list(r.id)) for r in all_runs(store))


@pytest.fixture()
def stored(seeded_store):
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice",
                     assistant_id="offline/comprehensive", seed=3, max_turns=3)
    live.run_to_end()
    return seeded_store, live.run_id


def test_a_studio_export_imported_back_is_already_stored(stored, tmp_path, capsys):
    store, rid = stored
    path = tmp_path / "run.json"
    assert main(["export", rid, "--format", "studio-json", "-o", str(path), "--db", str(store.path)]) == 0
    capsys.readouterr()
    for _ in range(3):
        assert main(["import", str(path), "--db", str(store.path)]) == 0
        out = capsys.readouterr().out
        assert f"{rid} (already stored)" in out and "no new run stored" in out
    assert [r.id for r in all_runs(store)] == [rid]


def test_a_studio_file_imported_into_another_database_twice_stores_it_once(stored, tmp_path):
    store, rid = stored
    path = tmp_path / "run.json"
    path.write_text(studio.dumps(store.runs.load(rid)), encoding="utf-8")
    other = Store(tmp_path / "other.db")
    assert import_path(other, path).runs == [rid]
    again = import_path(other, path)
    assert again.runs == [] and again.skipped == [f"{rid} (already stored)"]
    assert len(all_runs(other)) == 1


def test_a_file_listing_one_run_twice_stores_it_once(stored, tmp_path):
    store, rid = stored
    data = json.loads(studio.dumps(store.runs.load(rid)))
    path = tmp_path / "twice.json"
    path.write_text(json.dumps([data, data]), encoding="utf-8")
    other = Store(tmp_path / "other.db")
    report = import_path(other, path)
    assert report.runs == [rid] and report.skipped == [f"{rid} (listed twice in this file)"]
    assert len(all_runs(other)) == 1


def test_one_run_id_with_two_contents_is_refused_and_nothing_is_stored(stored, tmp_path):
    store, rid = stored
    data = json.loads(studio.dumps(store.runs.load(rid)))
    changed = json.loads(json.dumps(data))
    changed["seed"] = 99
    path = tmp_path / "clash.json"
    path.write_text(json.dumps([data, changed]), encoding="utf-8")
    other = Store(tmp_path / "other.db")
    with pytest.raises(FormatError, match=f"run id {rid} is listed twice with different contents"):
        import_path(other, path)
    assert all_runs(other) == []


def test_a_different_run_under_a_stored_id_is_still_stored(stored, tmp_path):
    """The id-collision rule of the last round holds: other contents under a known id get a new id."""
    store, rid = stored
    data = json.loads(studio.dumps(store.runs.load(rid)))
    data["seed"] = 99
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    (new,) = import_path(store, path).runs
    assert new != rid and len(all_runs(store)) == 2


def test_a_reference_run_file_imported_three_times_stores_its_runs_once(seeded_store, reference_dir):
    path = reference_dir / REFERENCE_RUNS
    first = import_path(seeded_store, path)
    assert len(first.runs) == 2
    for _ in range(2):
        again = import_path(seeded_store, path)
        assert again.runs == [] and all("already stored as" in s for s in again.skipped[-2:])
    assert sorted(r.id for r in all_runs(seeded_store)) == sorted(first.runs)


def test_a_re_imported_human_run_adds_no_run_and_no_judgment(seeded_store, arena_annotations, tmp_path):
    import_path(seeded_store, arena_annotations)
    before_runs, before_votes = len(all_runs(seeded_store)), judgments(seeded_store)
    human = next(r for r in all_runs(seeded_store) if store_judged(seeded_store, r.id))
    path = tmp_path / "human.json"
    path.write_text(studio.dumps(seeded_store.runs.load(human.id), judgments=seeded_store.judgments.list(human.id)),
                    encoding="utf-8")
    report = import_path(seeded_store, path)
    assert report.runs == [] and report.skipped == [f"{human.id} (already stored)"]
    assert (len(all_runs(seeded_store)), judgments(seeded_store)) == (before_runs, before_votes)


def store_judged(store, run_id: str) -> bool:
    return bool(store.judgments.list(run_id))
