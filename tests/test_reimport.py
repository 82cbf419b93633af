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


def test_a_different_run_under_a_stored_id_is_stored_as_a_named_copy(stored, tmp_path):
    """Other contents under a known id get a new id — and say so (issue 49, item 10: old code stored
    them under a new id silently): the report pairs the two ids and the copy is tagged with the id it
    has in the file. Imported again, the file finds its copy."""
    store, rid = stored
    data = json.loads(studio.dumps(store.runs.load(rid)))
    data["seed"] = 99
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = import_path(store, path)
    (new,) = report.runs
    assert new != rid and len(all_runs(store)) == 2
    assert report.copies == {rid: new} and f"{rid} as {new}" in report.summary()
    assert store.search.get_row(new).seed == 99 and f"copy of {rid}" in tags_of(store, new)
    again = import_path(store, path)
    assert again.runs == [] and again.copies == {} and again.skipped == [f"{rid} (already stored as {new})"]
    assert len(all_runs(store)) == 2


def test_an_export_of_a_run_that_has_grown_since_is_already_stored(seeded_store, tmp_path, capsys):
    """Issue 49, item 10: a fork exported at 2 turns, then carried on to 4. Re-importing the export
    stored a third run silently (the id was taken, the contents differed); the stored fork already
    holds every turn of it."""
    from knowsim_core.services.fork import fork_run

    parent = start_run(seeded_store, question_id="sample_lava_lamps", level="novice",
                       assistant_id="offline/comprehensive", seed=3, max_turns=8)
    parent.step()
    parent.step()
    child = fork_run(seeded_store, parent.run_id, 1, "Lava lamps glow because of heat; let us count the cases.")
    child.step()
    path = tmp_path / "fork-at-2.json"
    path.write_text(studio.dumps(seeded_store.runs.load(child.run_id)), encoding="utf-8")
    child.step()
    child.step()
    assert len(seeded_store.runs.load(child.run_id).turns) == 4
    before = sorted(r.id for r in all_runs(seeded_store))
    assert main(["import", str(path), "--db", str(seeded_store.path)]) == 0
    out = capsys.readouterr().out
    assert f"{child.run_id} (already stored: it has 4 turns now, 2 in this export)" in out, out
    assert sorted(r.id for r in all_runs(seeded_store)) == before


def test_a_later_export_of_a_run_stored_earlier_is_a_named_copy_not_a_silent_one(stored, tmp_path):
    """The other way round: the database holds the run at 2 turns and the file at 3 — other
    contents under the id, so a copy, named as such."""
    store, rid = stored
    full = store.runs.load(rid)
    path = tmp_path / "full.json"
    path.write_text(studio.dumps(full), encoding="utf-8")
    other = Store(tmp_path / "other.db")
    from dataclasses import replace

    other.runs.save(replace(full, turns=full.turns[:2], stop_reason=None), status="interrupted")
    report = import_path(other, path)
    (new,) = report.runs
    assert report.copies == {rid: new} and f"copy of {rid}" in tags_of(other, new)


def tags_of(store, run_id: str) -> list[str]:
    return store.search.tags_of([run_id]).get(run_id, [])


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
