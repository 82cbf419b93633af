"""AppTest: the app's two uploads refuse hostile files as the command line does, and store all or nothing.

The Graph page's graph upload goes through the importers' guarded JSON reader and the same graph
check as an IU cache on the command line, so the page shows that same one-line message (deep
nesting and NaN used to reach ``json.loads``: a RecursionError traceback, NaN accepted). The Runs
page's run upload goes through ``import_path``: a file whose second run cannot be saved stores
none of its runs (it used to keep the first).
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.errors import FormatError
from knowsim_core.formats import studio
from knowsim_core.formats.jsonio import parse_json
from knowsim_core.formats.reference import graph_from_data
from knowsim_core.services.runner import start_run

GRAPH_PAGE = "../pages/graph.py"
RUNS_PAGE = "../pages/runs.py"
QID = "sample_lava_lamps"


def _graph_page(qid: str = QID) -> AppTest:
    at = AppTest.from_file(GRAPH_PAGE, default_timeout=30)
    at.query_params["question"] = qid
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _upload_graph(store, name: str, payload: bytes) -> AppTest:
    at = _graph_page()
    vid = store.questions.latest_graph_version(QID).id
    at.file_uploader(key=f"import_{vid}").set_value((name, payload, "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _message(call, *args) -> str:
    with pytest.raises(FormatError) as info:
        call(*args)
    return str(info.value)


def _graph(store) -> dict:
    return store.questions.latest_graph_version(QID).graph.to_data()


def test_a_deeply_nested_graph_file_gets_the_cli_message_not_a_traceback(seeded_store):
    deep = "[" * 100_000 + "]" * 100_000  # past the C parser's own recursion guard
    payload = ('{"nodes": ' + deep + ', "edges": []}').encode()
    versions = len(seeded_store.questions.graph_versions(QID))
    at = _upload_graph(seeded_store, "deep.json", payload)
    errors = [e.value for e in at.error]
    assert errors == [_message(parse_json, payload.decode(), "deep.json")], errors
    assert "nests arrays/objects more than" in errors[0] and "\n" not in errors[0]
    assert len(seeded_store.questions.graph_versions(QID)) == versions


def test_nan_in_a_graph_file_is_refused_as_invalid_json(seeded_store):
    data = _graph(seeded_store)
    data["nodes"][0]["abstraction_level"] = float("nan")
    payload = json.dumps(data).encode()  # json.dumps writes the invalid token NaN
    assert b"NaN" in payload
    versions = len(seeded_store.questions.graph_versions(QID))
    at = _upload_graph(seeded_store, "nan.json", payload)
    errors = [e.value for e in at.error]
    assert errors == [_message(parse_json, payload.decode(), "nan.json")], errors
    assert "NaN is not valid JSON" in errors[0]
    assert not at.success and len(seeded_store.questions.graph_versions(QID)) == versions


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["nodes"][0].update(abstraction_level="high"), "nodes[0].abstraction_level"),
    (lambda d: d["nodes"][1].update(id=["IU2"]), "nodes[1].id"),
    (lambda d: d.update(edges="none"), "edges"),
])
def test_a_wrong_type_names_the_field_as_the_cli_does(seeded_store, edit, field):
    data = _graph(seeded_store)
    edit(data)
    at = _upload_graph(seeded_store, "typed.json", json.dumps(data).encode())
    errors = [e.value for e in at.error]
    assert errors == [_message(graph_from_data, data, "typed.json")], errors
    assert f"field {field}:" in errors[0] and "\n" not in errors[0]


def test_a_good_graph_file_still_imports(seeded_store):
    """Uploading a good file previews it (nothing stored yet); Save stores it as the question's new
    version, equal to the file — checked in the store, not only by the success message. Planted
    faults: Save not calling ``save_version``, or storing the old graph, fail on the version count
    and the stored graph; storing on upload (before Save) fails the first count."""
    data = _graph(seeded_store)
    data["nodes"][0]["concept"] += " (renamed)"
    versions = len(seeded_store.questions.graph_versions(QID))
    old_vid = seeded_store.questions.latest_graph_version(QID).id
    at = _upload_graph(seeded_store, "good.json", json.dumps(data).encode())
    assert not at.error and any("good.json" in s.value for s in at.success)
    assert len(seeded_store.questions.graph_versions(QID)) == versions  # a preview: not stored before Save
    at.button(key=f"import_save_{old_vid}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(seeded_store.questions.graph_versions(QID)) == versions + 1
    stored = seeded_store.questions.latest_graph_version(QID).graph
    assert stored.to_data() == graph_from_data(data, "good.json").to_data()
    assert stored.nodes[0].concept.endswith(" (renamed)")


# ---------------------------------------------------------------------- run uploads
def _studio_file(store, n: int) -> bytes:
    runs = []
    for seed in range(1, n + 1):
        run = start_run(store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=seed,
                        max_turns=2).run_to_end()
        data = json.loads(studio.dumps(run))
        data["run_id"] = None  # a fresh id on import
        runs.append(data)
        store.runs.delete([run.run_id])  # in the file only: a run stored already is not imported again (issue 35)
    return json.dumps(runs).encode()


def _upload_runs(name: str, payload: bytes) -> AppTest:
    at = AppTest.from_file(RUNS_PAGE, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    at.file_uploader(key="runs_import").set_value((name, payload, "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _fail_after(store, n: int) -> None:
    """Make the database refuse any insert into ``runs`` once it holds ``n`` runs (a disk that fills up)."""
    conn = sqlite3.connect(store.path)
    conn.execute(f"CREATE TRIGGER test_full BEFORE INSERT ON runs WHEN (SELECT COUNT(*) FROM runs) >= {n} "
                 "BEGIN SELECT RAISE(ABORT, 'test: the disk is full'); END")
    conn.commit()
    conn.close()


def test_a_run_file_whose_second_run_fails_to_save_stores_none(seeded_store):
    payload = _studio_file(seeded_store, 2)
    before = seeded_store.search.count()
    _fail_after(seeded_store, before + 1)  # the first run of the file would fit, the second not
    at = _upload_runs("two.json", payload)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "test: the disk is full" in errors[0] and errors[0].startswith("two.json"), errors
    assert "\n" not in errors[0] and not at.success
    assert seeded_store.search.count() == before  # all or nothing: the first run was rolled back too


def test_a_run_file_imports_whole(seeded_store):
    payload = _studio_file(seeded_store, 2)
    before = seeded_store.search.count()
    at = _upload_runs("two.json", payload)
    assert not at.error and any("Imported 2 run(s) from two.json" in s.value for s in at.success)
    assert seeded_store.search.count() == before + 2


def test_a_file_that_holds_no_runs_is_refused_without_a_temporary_path(seeded_store):
    cache = json.dumps({QID: _graph(seeded_store)}).encode()
    before = seeded_store.search.count()
    at = _upload_runs("cache.json", cache)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("cache.json") and "not runs" in errors[0], errors
    assert "/tmp" not in errors[0] and seeded_store.search.count() == before
