"""Lineage and filing survive a Studio-JSON export and an import into a fresh database (issue 47,
item 4): a saved what-if keeps its tags and its link to its source; a batch run its batch tag; a
fork whose source comes in the same file as a named copy is linked to that copy. The old exporter
wrote no tags (an import had none), so the tag assertions fail on it.
"""

from __future__ import annotations

import json

import pytest

from knowsim_core.cli import main
from knowsim_core.engine.whatif import parse_edit
from knowsim_core.errors import FormatError
from knowsim_core.services import whatif
from knowsim_core.services.exporting import studio_json
from knowsim_core.services.fork import fork_link
from knowsim_core.services.importing import import_path
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

EDIT = parse_edit("turn=2,iu=IU2,quality=well_explained")


@pytest.fixture()
def lineage(seeded_store):
    """A source run (tagged "src") and its saved what-if (tagged "ablation" and "IU2 taught")."""
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive",
                     seed=1, max_turns=4)
    live.run_to_end()
    seeded_store.runs.add_tags(live.run_id, ["src"])
    child, _ = whatif.save(seeded_store, live.run_id, [EDIT], tags=["ablation", "IU2 taught"])
    return seeded_store, live.run_id, child


def _export(store, rid, path) -> None:
    assert main(["export", rid, "--format", "studio-json", "-o", str(path), "--db", str(store.path)]) == 0


def test_a_saved_what_if_round_trips_with_its_tags_and_its_parent(lineage, tmp_path, capsys):
    store, parent, child = lineage
    files = [tmp_path / "parent.json", tmp_path / "child.json"]
    _export(store, parent, files[0])
    _export(store, child, files[1])
    assert json.loads(files[1].read_text())["tags"] == ["IU2 taught", "ablation"]
    fresh = Store(tmp_path / "fresh.db")
    for f in files:
        assert main(["import", str(f), "--db", str(fresh.path)]) == 0
    assert fresh.search.tags_of([parent, child]) == {parent: ["src"], child: ["IU2 taught", "ablation"]}
    back = fresh.runs.load(child)
    assert fork_link(back) == (parent, 2) and whatif.whatif_edits(back) == (EDIT,)
    assert back.turns == store.runs.load(child).turns
    assert [r.id for r in fresh.search.list(RunFilter(origin="forked"))] == [child]  # the column, not only the meta
    assert [r.id for r in fresh.search.list(RunFilter(tag="ablation"))] == [child]
    capsys.readouterr()
    assert main(["import", str(files[1]), "--db", str(fresh.path)]) == 0  # again: nothing new, tags kept once
    assert "already stored" in capsys.readouterr().out
    assert fresh.search.tags_of([child])[child] == ["IU2 taught", "ablation"]


def test_a_fork_listed_before_its_source_whose_id_is_taken_links_to_the_sources_copy(lineage, tmp_path):
    from dataclasses import replace

    store, parent, child = lineage
    both = tmp_path / "both.json"
    both.write_text("[" + studio_json(store, child) + "," + studio_json(store, parent) + "]", encoding="utf-8")
    fresh = Store(tmp_path / "fresh.db")
    fresh.questions.seed_samples()
    other = start_run(fresh, question_id="sample_lava_lamps", level="advanced", assistant_id="offline/adaptive",
                      seed=9, max_turns=2)
    other.run_to_end()
    assert fresh.runs.save(replace(fresh.runs.load(other.run_id), run_id=parent)) == parent  # the id is taken here
    report = import_path(fresh, both)
    copy = report.copies[parent]
    assert copy != parent and sorted(report.runs) == sorted([copy, child])
    assert fork_link(fresh.runs.load(child)) == (copy, 2)
    assert fresh.search.list(RunFilter(origin="forked"))[0].id == child
    again = import_path(fresh, both)  # the same file again: both already stored, the link as before
    assert again.runs == [] and fork_link(fresh.runs.load(child)) == (copy, 2)


def test_a_batch_runs_batch_tag_comes_back(seeded_store, tmp_path):
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive",
                     seed=2, max_turns=2)
    live.run_to_end()
    run = seeded_store.runs.load(live.run_id)
    rid = seeded_store.runs.save(run.with_turns(run.turns, stop_reason="max_turns"), batch_tag="sweep-1")
    path = tmp_path / "b.json"
    path.write_text(studio_json(seeded_store, rid), encoding="utf-8")
    fresh = Store(tmp_path / "fresh.db")
    import_path(fresh, path)
    assert fresh.search.get_row(rid).batch_tag == "sweep-1"
    assert [r.id for r in fresh.search.list(RunFilter(batch_tag="sweep-1"))] == [rid]


@pytest.mark.parametrize("tags, says", [
    (["ok", "a,b"], "tags[1]: tag 'a,b' holds a comma"),
    ([3], "tags[0]: expected text, got int"),
    ("ablation", "expected a list"),
])
def test_bad_tags_in_a_file_are_one_line_and_import_nothing(lineage, tmp_path, tags, says):
    store, parent, _ = lineage
    data = json.loads(studio_json(store, parent))
    data["tags"] = tags
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fresh = Store(tmp_path / "fresh.db")
    with pytest.raises(FormatError) as exc:
        import_path(fresh, path)
    assert says in str(exc.value) and "\n" not in str(exc.value)
    assert fresh.search.count() == 0


def test_the_apps_zip_and_jsonl_carry_the_tags(lineage):
    import io
    import zipfile

    from ui.runs.run_list import jsonl_of_runs, zip_of_studio_files

    store, parent, child = lineage
    with zipfile.ZipFile(io.BytesIO(zip_of_studio_files(store, [child]))) as zf:
        assert json.loads(zf.read(f"{child}.json"))["tags"] == ["IU2 taught", "ablation"]
    line = json.loads(jsonl_of_runs(store, [child]).splitlines()[0])
    assert line["tags"] == ["IU2 taught", "ablation"] and line["meta"]["forked_from"] == parent
