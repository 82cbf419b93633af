"""Saved runs, Home and Failure modes with batches: columns, dropdown filters from the database,
contains-search, grouping by batch tag, multi-select export and delete (AppTest + the helpers)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.formats import studio

from tests.part2_support import make_run
from tests.part2_support import runs_table_key

RUNS, HOME, FAILURES = "../pages/runs.py", "../pages/home.py", "../pages/failures.py"
QID = "sample_lava_lamps"


@pytest.fixture()
def db(seeded_store):
    """Two single runs and a five-run batch ("sweep-a"), newest last."""
    store = seeded_store
    g = store.questions.latest_graph_version(QID).graph
    store.singles = [
        store.runs.save(make_run(g, question_id=QID, level="novice", seed=1, max_turns=4,
                                assistant_id="offline/comprehensive")),
        store.runs.save(make_run(g, question_id=QID, level="advanced", seed=2, max_turns=4,
                                assistant_id="offline/socratic")),
    ]
    store.batch = [
        store.runs.save(make_run(g, question_id=QID, level=lv, seed=s, max_turns=3, assistant_id="offline/adaptive"),
                       batch_tag="sweep-a")
        for lv in ("novice", "advanced") for s in (7, 8)
    ] + [store.runs.save(make_run(g, question_id=QID, level="novice", seed=9, max_turns=3,
                                 assistant_id="offline/adaptive"), batch_tag="sweep-a", status="interrupted")]
    return store


def _open(path=RUNS, **params) -> AppTest:
    at = AppTest.from_file(path, default_timeout=30)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at: AppTest, key: str = "runs_table"):
    return next(d for d in at.dataframe if d.key and d.key.startswith(key)).value


def _select(at: AppTest, rows: list[int]) -> AppTest:
    at.session_state[runs_table_key(at)] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_runs_differing_only_by_seed_are_told_apart_by_their_columns(db):
    table = _table(_open())
    assert {"seed", "user", "extractor", "preset", "graph", "batch"} <= set(table.columns)
    batch = table[table["batch"] == "sweep-a"]
    assert sorted(batch["seed"]) == [7, 7, 8, 8, 9] and set(batch["preset"]) == {"paper-final"}
    assert set(table[table["batch"] == ""]["run"]) == {r[:12] for r in db.singles}
    assert set(table["graph"]) == {"v1"}


def test_filters_offer_what_the_database_holds(db):
    at = _open()
    assert at.selectbox(key="runs_asst").options == [
        "all", "offline/adaptive", "offline/comprehensive", "offline/socratic"]
    assert at.selectbox(key="runs_batch").options == ["all", "(no batch)", "sweep-a"]
    assert at.selectbox(key="runs_seed").options == ["all", "1", "2", "7", "8", "9"]
    at.selectbox(key="runs_seed").set_value(8).run()
    assert len(_table(at)) == 2
    at.selectbox(key="runs_seed").set_value(None).run()
    at.selectbox(key="runs_batch").set_value("sweep-a").run()
    at.selectbox(key="runs_level").set_value("advanced").run()
    assert len(_table(at)) == 2 and "2 runs match" in at.caption[0].value


def test_typing_part_of_an_id_finds_it(db):
    at = _open()
    at.text_input(key="runs_find").input("comprehensive").run()
    assert list(_table(at)["run"]) == [db.singles[0][:12]]
    at.text_input(key="runs_find").input("SWEEP").run()  # the batch tag, any case
    assert len(_table(at)) == 5
    at.text_input(key="runs_find").input("100%_").run()  # LIKE wildcards are searched for, not expanded
    assert len(_table(at)) == 0


def test_grouping_by_batch_gives_one_line_per_batch_and_opens_its_runs(db):
    at = _open()
    at.toggle(key="runs_group").set_value(True).run()
    groups = _table(at, "runs_batches")
    # runs made one by one are a line of their own (they used to be left out)
    assert sorted(groups["batch"]) == ["(no batch: runs made one by one)", "sweep-a"]
    groups = groups.set_index("batch")
    assert (groups["runs"]["sweep-a"], groups["finished"]["sweep-a"], groups["unfinished"]["sweep-a"]) == (5, 4, 1)
    assert groups["runs"]["(no batch: runs made one by one)"] == len(db.singles)
    at.session_state["runs_batches"] = {"selection": {"rows": [list(_table(at, "runs_batches")["batch"]).index(
        "sweep-a")], "columns": [], "cells": []}}
    at.run()
    at.button(key="runs_show_batch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="runs_batch").value == "sweep-a" and not at.toggle(key="runs_group").value
    assert set(_table(at)["batch"]) == {"sweep-a"} and len(_table(at)) == 5


def _links(at: AppTest) -> list[str]:
    out: list[str] = []

    def walk(node) -> None:
        if node.type == "page_link":
            out.append(node.proto.label)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return out


def test_home_folds_a_batch_into_one_line(db):
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    links = _links(at)
    batch_lines = [label for label in links if label.startswith("batch sweep-a")]
    assert len(batch_lines) == 1 and batch_lines[0].startswith("batch sweep-a · 5 runs (4 finished) · mean KG ")
    assert sum("offline/comprehensive" in label or "offline/socratic" in label for label in links) == 2
    assert not any("offline/adaptive" in label for label in links)  # no batch run listed one by one


def test_home_batch_link_opens_saved_runs_on_that_batch(db):
    at = _open(RUNS, batch="sweep-a")
    assert at.selectbox(key="runs_batch").value == "sweep-a" and len(_table(at)) == 5


def test_failure_modes_across_runs_filter_by_batch(db):
    at = _open(FAILURES)
    assert at.selectbox(key="fm_batch").options == ["all", "(no batch)", "sweep-a"]  # issue 32: "no batch" too
    at.selectbox(key="fm_status").set_value("all").run()
    assert any(c.value.startswith("7 runs") for c in at.caption)
    at.selectbox(key="fm_batch").set_value("sweep-a").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(c.value.startswith("5 runs") for c in at.caption)


def test_multi_select_exports_one_zip_and_one_jsonl_that_import_back(db):
    at = _select(_open(), [0, 1, 2])
    ids = [db.search.list()[i].id for i in (0, 1, 2)]
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Zip of 3 Studio JSON files" in labels and "JSONL (3 runs)" in labels
    from ui.runs import run_list

    with zipfile.ZipFile(io.BytesIO(run_list.zip_of_studio_files(db, ids))) as zf:
        assert sorted(zf.namelist()) == sorted(f"{i}.json" for i in ids)
        for rid in ids:
            assert studio.loads(zf.read(f"{rid}.json").decode()) == db.runs.load(rid)
    lines = run_list.jsonl_of_runs(db, ids).splitlines()
    assert [studio.loads(line) for line in lines] == [db.runs.load(rid) for rid in ids]
    assert all(json.loads(line)["format"] == "knowsim-studio-run" for line in lines)


def test_multi_select_delete_asks_first_then_deletes_all_of_them(db):
    at = _select(_open(), [0, 1, 2])
    doomed = {db.search.list()[i].id for i in (0, 1, 2)}
    at.button(key="runs_delete_many").click().run()
    assert db.search.count() == 7 and any("3 runs" in m.value for m in at.markdown)  # the dialog asks first
    at.button(key="del_no").click().run()
    assert db.search.count() == 7
    at = _select(_open(), [0, 1, 2])
    at.button(key="runs_delete_many").click().run()
    at.button(key="del_yes").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert db.search.count() == 4 and not doomed & {r.id for r in db.search.list()}
    assert any("Deleted 3 runs" in s.value for s in at.success)


def test_delete_runs_is_all_or_nothing(db):
    from knowsim_core.errors import StorageError

    with pytest.raises(StorageError, match="unknown run id 'nope'"):
        db.runs.delete([db.singles[0], "nope"])
    assert db.search.count() == 7
