"""Judgments in (issue 21) and ids / levels / JSONL lines (issue 23 items 4, 13, 14).

Synthetic files are built here from scratch; the shared release (../shared/realworld) is only read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowsim_core.cli import main
from knowsim_core.errors import FormatError
from knowsim_core.formats.judgments import Judgment, check_text, judgments_from_data
from knowsim_core.formats.realworld import CONCEPTS_NAME, derived_id
from knowsim_core.services.importing import import_path
from knowsim_core.services.reading import has_reading
from knowsim_core.storage import SCHEMA_VERSION, Store
from knowsim_core.storage.run_filter import RunFilter
from tests.conftest import require_shared

ARENA = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld" / "simulatorarena_math"
ANNOTATIONS = ARENA / "math_tutoring_annotations_redacted_for_benchmarking.json"


def _shared_or_skip() -> None:
    require_shared(ANNOTATIONS)


def _record(pid=7, worker="w-1", **kw) -> dict:
    """A SimulatorArena-shaped record written from scratch (not copied from the release)."""
    rec = {
        "problem_id": pid, "workerId": worker, "model": "tutor-x", "math_expertise": "undergrad",
        "overall_rating": 6, "problem_1_correctness": "correct", "solve_or_not": "yes",
        "why_stop": "I felt confident enough to solve the problem.", "strength_weakness": "clear steps",
        "user_queries": ["Solve 2x + 3 = 7", "x = 2?", "thanks"],
        "ai_responses": ["Subtract 3 from both sides: 2x = 4. What next?", "Yes: divide by 2, x = 2.", "Welcome!"],
        "problem_1_turns": 3,
    }
    rec.update(kw)
    return rec


def _arena(tmp_path: Path, records: list[dict], concepts: dict | None = None) -> Path:
    path = tmp_path / "math_tutoring_annotations_redacted_for_benchmarking.json"
    path.write_text(json.dumps(records, ensure_ascii=False))
    if concepts is None:
        concepts = {str(r["problem_id"]): {"extracted_concepts": [
            {"Concept Name": "Linear equations", "Concept Explanation": "Solve ax + b = c by inverse operations."}]}
            for r in records}
    (tmp_path / CONCEPTS_NAME).write_text(json.dumps(concepts))
    return path


# ---------------------------------------------------------------------- the shared release
def test_the_shared_thumbs_are_kept_on_their_turns_and_checked_against_the_reply(tmp_path):
    _shared_or_skip()
    store = Store(tmp_path / "s.db")
    report = import_path(store, ANNOTATIONS)
    judged = {rid: store.judgments.list(rid) for rid in report.runs}
    judged = {rid: js for rid, js in judged.items() if js}
    allj = [j for js in judged.values() for j in js]
    assert (len(allj), sum(j.liked for j in allj), sum(not j.liked for j in allj), len(judged)) == (57, 44, 13, 16)
    assert report.judgments == 57 and "57 thumb(s) stored" in report.summary()
    raw = {f"{r['problem_id']}:{r['workerId']}": r for r in json.loads(ANNOTATIONS.read_text())}
    for rid, js in judged.items():
        run = store.runs.load(rid)
        rec = raw[dict(run.meta)["conversation"]]
        votes = {json.loads(k)[0] + 1: v for k, v in rec["turn_level_vote"].items()}
        for j in js:  # every stored thumb sits on the turn whose reply the person saw
            text, liked = votes[j.turn]
            assert j.liked == liked and j.source == "person"
            assert run.turns[j.turn - 1].assistant_message.startswith(text)
            assert j.match == ("exact" if text == run.turns[j.turn - 1].assistant_message else "prefix")
        meta = dict(run.meta)
        assert meta["rating"] == rec["overall_rating"] and meta["correctness"] == rec["problem_1_correctness"]
        assert meta["why_stop"] == rec["why_stop"] and meta["tutor_model"] == rec["model"]


# ---------------------------------------------------------------------- synthetic releases
def test_every_message_shape_is_imported_and_counted(tmp_path):
    rec = _record(user_queries=["Solve 2x + 3 = 7", None, ["/tmp/gradio/abc/image.png", "/tmp/gradio/d/e.jpg"], []],
                  ai_responses=["Subtract 3 first.", None, "I see your working: 2x = 4.", "Go on."],
                  problem_1_turns=4)
    store = Store(tmp_path / "s.db")
    report = import_path(store, _arena(tmp_path, [rec]))
    assert report.shapes == {"text": 4, "null": 2, "image_list": 1, "empty_list": 1}
    assert "4 text, 2 null, 1 image list, 1 empty list" in report.summary()
    run = store.runs.load(report.runs[0])
    assert [t.user_message for t in run.turns] == ["Solve 2x + 3 = 7", "", "/tmp/gradio/abc/image.png\n/tmp/gradio/d/e.jpg", ""]
    assert any("image-path" in n for n in run.turns[2].notes)
    assert run.turns[1].assistant_message == "" and report.null_replies == 1


def test_thumbs_map_to_tutor_turns_and_mismatches_are_counted(tmp_path):
    rec = _record(turn_level_vote={
        "[0, 1]": ["Subtract 3 from both sides: 2x = 4. What next?", True],  # exact
        "[1, 1]": ["Yes: divide", False],  # voted while streaming: a prefix
        "[2, 1]": ["a reply the tutor never wrote", True],  # mismatch: kept, counted
        "[1, 0]": ["x = 2?", True],  # on the person's own message: counted, not a tutor thumb
    }, problem_2_turn_level_vote={"[5, 1]": ["later", True]})
    store = Store(tmp_path / "t.db")
    report = import_path(store, _arena(tmp_path, [rec]))
    js = store.judgments.list(report.runs[0])
    assert [(j.turn, j.liked, j.match) for j in js] == [(1, True, "exact"), (2, False, "prefix"), (3, True, "mismatch")]
    v = report.votes
    assert (v["votes_exact"], v["votes_prefix"], v["votes_mismatch"], v["votes_on_user"], v["problem_2_votes"]) == (1, 1, 1, 1, 1)
    assert "mismatched 1" in report.summary() and "1 on the person's own message" in report.summary()
    kept = json.loads(dict(store.runs.load(report.runs[0]).meta)["problem_2_turn_level_vote"])
    assert kept == {"[5, 1]": ["later", True]}  # kept in metadata, as the summary says


def test_a_bad_vote_key_is_refused_in_one_line(tmp_path):
    path = _arena(tmp_path, [_record(turn_level_vote={"row one": ["x", True]})])
    with pytest.raises(FormatError, match=r"record 0 \(7:w-1\): field turn_level_vote: key 'row one'"):
        import_path(Store(tmp_path / "b.db"), path)


@pytest.mark.parametrize("expertise", [None, "missing"])
def test_a_record_without_expertise_reads_as_intermediate(tmp_path, expertise):
    rec = _record(math_expertise=expertise)
    if expertise == "missing":
        rec.pop("math_expertise")
    store = Store(tmp_path / "e.db")
    report = import_path(store, _arena(tmp_path, [rec, _record(worker="w-2", math_expertise="9-12")]))
    levels = sorted(store.runs.load(r).level for r in report.runs)
    assert levels == ["intermediate", "novice"]


def test_a_problem_without_concepts_is_kept_with_messages_and_judgments(tmp_path):
    recs = [_record(turn_level_vote={"[0, 1]": ["Subtract 3", False]}), _record(pid=8, worker="w-2")]
    concepts = {"8": {"extracted_concepts": [{"Concept Name": "Linear equations"}]}}
    store = Store(tmp_path / "c.db")
    report = import_path(store, _arena(tmp_path, recs, concepts))
    assert len(report.runs) == 2 and len(report.unread) == 1
    assert "1 stored without a KnowSim reading: 7:w-1 (problem 7 has no extracted concepts" in report.summary()
    unread = next(store.runs.load(r) for r in report.runs if not has_reading(store.runs.load(r)))
    assert [t.user_message for t in unread.turns] == recs[0]["user_queries"]
    assert all(any("no KnowSim reading" in n for n in t.notes) for t in unread.turns)
    rid = next(r for r in report.runs if store.runs.load(r) is not None and not has_reading(store.runs.load(r)))
    assert [(j.turn, j.liked) for j in store.judgments.list(rid)] == [(1, False)]


# ---------------------------------------------------------------------- ids (issue 23 item 4)
def test_ids_come_from_the_whole_source_id():
    pairs = [("学生一", "学生二"), ("ana@uni.edu", "ana.uni.edu"), ("0d613a19-aaaa", "0d613a19-bbbb")]
    for a, b in pairs:
        assert derived_id("conv", a) != derived_id("conv", b)
    assert derived_id("conv", "ana@uni.edu").startswith("conv_ana_uni_edu_")
    long = "x" * 900
    assert derived_id("conv", long + "1") != derived_id("conv", long + "2")


def test_workers_sharing_a_prefix_are_two_conversations(tmp_path):
    recs = [_record(worker="0d613a19-aaaa"), _record(worker="0d613a19-bbbb", user_queries=["Other", "b", "c"])]
    store = Store(tmp_path / "w.db")
    report = import_path(store, _arena(tmp_path, recs))
    assert len(report.runs) == 2 and report.questions == 2 and not any("already" in x for x in report.skipped)
    again = import_path(store, _arena(tmp_path, recs))
    assert again.runs == [] and [x for x in again.skipped if "already" in x] == ["7:0d613a19-aaaa (already imported)", "7:0d613a19-bbbb (already imported)"]


def _jsonl(tmp_path: Path, lines: list[dict], name="c.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return p


def _line(cid, text="How do I solve 2x = 4?") -> dict:
    return {"id": cid, "messages": [{"role": "user", "content": text},
                                    {"role": "assistant", "content": "Divide both sides by 2."}],
            "concepts": [{"name": "Division", "description": "Undo multiplication."}]}


@pytest.mark.parametrize("ids", [("学生一", "学生二"), ("ana@uni.edu", "ana.uni.edu")])
def test_jsonl_ids_that_slug_alike_stay_apart(tmp_path, ids):
    store = Store(tmp_path / "j.db")
    report = import_path(store, _jsonl(tmp_path, [_line(ids[0]), _line(ids[1], "Another question?")]))
    assert len(report.runs) == 2 and report.questions == 2
    assert {dict(store.runs.load(r).meta)["conversation"] for r in report.runs} == set(ids)


def test_a_duplicate_id_in_one_file_is_refused_naming_file_records_and_id(tmp_path):
    store = Store(tmp_path / "d.db")
    with pytest.raises(FormatError, match=r"c\.jsonl: line 1 \(id 'a'\) and line 2 \(id 'a'\) have the same "
                                          r"conversation id 'a' \(question id conv_a_[0-9a-f]{12}\)"):
        import_path(store, _jsonl(tmp_path, [_line("a"), _line("a", "different")]))
    assert store.questions.list() == []


def test_another_conversation_under_a_stored_id_is_refused_not_called_imported(tmp_path, capsys):
    db = tmp_path / "o.db"
    assert main(["import", str(_jsonl(tmp_path, [_line("c1")])), "--db", str(db)]) == 0
    other = _jsonl(tmp_path, [_line("c1", "a different first message")], name="other.jsonl")
    capsys.readouterr()
    assert main(["import", str(other), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "other.jsonl: conversation 'c1' has question id conv_c1_" in err and "other messages" in err
    assert Store(db).search.count() == 1


# ---------------------------------------------------------------------- JSONL lines (issue 23 item 14)
def test_jsonl_lines_are_split_as_json_defines_them_and_a_bom_is_accepted(tmp_path):
    texts = ["line\u2028separator in a message", "next\u0085line", "para\u2029graph and \x1c file sep"]
    lines = [_line(f"c{i}", t) for i, t in enumerate(texts)]
    p = tmp_path / "u.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode())
    store = Store(tmp_path / "u.db")
    report = import_path(store, p)
    assert sorted(store.runs.load(r).turns[0].user_message for r in report.runs) == sorted(texts)


def test_jsonl_judgment_fields_and_shapes(tmp_path):
    line = {"id": "v1", "rating": 4, "correctness": "incorrect", "solve_or_not": "no", "why_stop": "stuck",
            "strength_weakness": "too fast",
            "messages": [{"role": "user", "content": "Solve 2x = 4"}, {"role": "assistant", "content": "x = 2."},
                         {"role": "user", "content": ["/up/img.png"]}, {"role": "assistant", "content": "Nice."},
                         {"role": "user", "content": None}, {"role": "user", "content": []}],
            "votes": [{"turn": 1, "liked": False, "reply": "x = 2."}, {"turn": 2, "liked": True, "reply": "Hm"}],
            "concepts": [{"name": "Division"}]}
    store = Store(tmp_path / "v.db")
    report = import_path(store, _jsonl(tmp_path, [line]))
    run = store.runs.load(report.runs[0])
    meta = dict(run.meta)
    assert (meta["rating"], meta["correctness"], meta["solve_or_not"], meta["why_stop"]) == (4, "incorrect", "no", "stuck")
    assert [(j.turn, j.liked, j.match) for j in store.judgments.list(report.runs[0])] == [(1, False, "exact"), (2, True, "mismatch")]
    assert report.shapes == {"text": 3, "null": 1, "image_list": 1, "empty_list": 1}
    with pytest.raises(FormatError, match=r"line 1: field votes\[0\]\.turn: 9, but the conversation has 4 exchange"):
        import_path(Store(tmp_path / "w.db"), _jsonl(tmp_path, [{**line, "votes": [{"turn": 9, "liked": True}]}], "w.jsonl"))


def test_votes_without_reply_text_are_unchecked_and_repeated_votes_count_once(tmp_path):
    line = {"id": "v2", "messages": [{"role": "user", "content": "Solve 2x = 4"}, {"role": "assistant", "content": "x = 2."}],
            "votes": [{"turn": 1, "liked": False}, {"turn": 1, "liked": True}], "concepts": [{"name": "Division"}]}
    store = Store(tmp_path / "v.db")
    report = import_path(store, _jsonl(tmp_path, [line]))
    stored = store.judgments.list(report.runs[0])
    assert [(j.turn, j.liked, j.match) for j in stored] == [(1, True, "")], "the later vote wins; nothing was checked"
    assert report.judgments == 1 and report.votes["votes_unchecked"] == 1 and report.votes["votes_exact"] == 0
    assert report.votes["votes_overridden"] == 1  # issue 35: the summary counts the thumb it stores
    assert "1 thumb(s) stored" in report.summary() and "not checked (no reply text) 1" in report.summary()


# ---------------------------------------------------------------------- the judgment format
def test_text_checks_and_the_export_format():
    assert [check_text("abc", "abc"), check_text("ab", "abc"), check_text("", "abc"), check_text("x", "abc"),
            check_text(None, "abc")] == ["exact", "prefix", "mismatch", "mismatch", ""]
    j = Judgment(turn=2, liked=False, source="researcher", who="ana", note="too long", created="2026-01-01")
    assert judgments_from_data([j.to_data()], "run") == [j]
    with pytest.raises(FormatError, match=r"run: field \[0\]\.turn: input should be greater than or equal to 1"):
        judgments_from_data([{**j.to_data(), "turn": 0}], "run")


def test_a_run_without_a_reading_round_trips_through_studio_json_and_an_empty_graph_stays_refused(tmp_path):
    from knowsim_core.formats import studio

    store = Store(tmp_path / "c.db")
    report = import_path(store, _arena(tmp_path, [_record(turn_level_vote={"[0, 1]": ["Subtract 3", True]})], {}))
    rid = report.runs[0]
    out = tmp_path / "t.json"
    out.write_text(studio.dumps(store.runs.load(rid), judgments=store.judgments.list(rid)))
    other = Store(tmp_path / "o.db")
    again = import_path(other, out)
    back = other.runs.load(again.runs[0])
    assert not has_reading(back) and [t.user_message for t in back.turns] == _record()["user_queries"]
    assert [(j.turn, j.liked, j.match) for j in other.judgments.list(again.runs[0])] == [(1, True, "prefix")]
    data = json.loads(out.read_text())
    del data["meta"]["no_reading"]  # an empty graph is only accepted for a run that says it has no reading
    out.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"field graph\.nodes: list should have at least 1 item"):
        import_path(Store(tmp_path / "x.db"), out)


def test_runs_without_a_reading_stay_out_of_the_failure_mode_population(tmp_path):
    recs = [_record(), _record(pid=8, worker="w-2")]
    store = Store(tmp_path / "f.db")
    report = import_path(store, _arena(tmp_path, recs, {"8": {"extracted_concepts": [{"Concept Name": "Linear equations"}]}}))
    assert len(report.runs) == 2 and len(report.unread) == 1
    facts = store.search.facts()
    assert len(facts) == 1 and facts[0].question_id.startswith("sa_math_8_")


def test_a_database_imported_under_the_old_ids_is_not_imported_twice(tmp_path):
    """Before the ids were hashed, the same conversation was stored as sa_math_<pid>_<worker[:8]>."""
    from dataclasses import replace as dc_replace

    from knowsim_core.formats.conversations import read_conversations
    from knowsim_core.services.realworld_import import build_run

    path = _arena(tmp_path, [_record(worker="0d613a19-aaaa-bbbb")])
    conv = read_conversations(path)[1][0]
    store = Store(tmp_path / "old.db")
    old = dc_replace(build_run(conv), question_id="sa_math_7_0d613a19")  # as the old importer stored it
    store.questions.add(question_id="sa_math_7_0d613a19", text=conv.question, domain="math")
    store.runs.save(old, status="finished")
    again = import_path(store, path)
    assert again.runs == [] and again.questions == 0 and any("already imported" in x for x in again.skipped)
    assert store.search.count() == 1 and [q.id for q in store.questions.list()] == ["sa_math_7_0d613a19"]


# ---------------------------------------------------------------------- Saved runs: rating and correctness
def test_runs_filter_and_sort_by_rating_and_correctness_and_the_migration_fills_them(tmp_path):
    import sqlite3

    lines = [{**_line(f"c{i}", f"question {i}"), "rating": r, "correctness": c}
             for i, (r, c) in enumerate([(3, "incorrect"), (9, "correct"), (None, None), (6, "correct")])]
    db = tmp_path / "r.db"
    store = Store(db)
    import_path(store, _jsonl(tmp_path, lines))
    by_rating = [r.rating for r in store.search.list(order="rating_desc")]
    assert by_rating == [9.0, 6.0, 3.0, None]  # unrated last
    assert [r.rating for r in store.search.list(order="rating_asc")] == [3.0, 6.0, 9.0, None]
    assert {r.rating for r in store.search.list(RunFilter(correctness="correct"))} == {9.0, 6.0}
    assert store.search.values("correctness") == ["correct", "incorrect"]
    # a database from before the migration (schema 5): the columns are added and filled from each run's meta
    con = sqlite3.connect(db)
    con.executescript("ALTER TABLE runs DROP COLUMN rating; ALTER TABLE runs DROP COLUMN correctness; "
                      "DROP TABLE judgments; DELETE FROM _sqlite_migrations WHERE name = '0006_judgments'; "
                      "PRAGMA user_version = 5;")
    con.close()
    again = Store(db)
    assert again.schema_version == SCHEMA_VERSION
    assert [r.rating for r in again.search.list(order="rating_desc")] == [9.0, 6.0, 3.0, None]
    assert {r.correctness for r in again.search.list()} == {"correct", "incorrect", None}


def test_the_saved_runs_page_filters_by_the_persons_answer_and_sorts_by_rating(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "p.db"
    monkeypatch.setenv("KNOWSIM_DB", str(db))
    lines = [{**_line(f"c{i}", f"question {i}"), "rating": r, "correctness": c}
             for i, (r, c) in enumerate([(3, "incorrect"), (9, "correct"), (6, "correct")])]
    import_path(Store(db), _jsonl(tmp_path, lines))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60).run()
    at.switch_page("pages/runs.py").run()
    at.selectbox(key="runs_order").set_value("highest rating (human runs)").run()
    assert at.dataframe[0].value["rating"].tolist() == [9.0, 6.0, 3.0]
    at.selectbox(key="runs_correctness").set_value("incorrect").run()
    assert not at.exception and at.dataframe[0].value["rating"].tolist() == [3.0]


def test_an_author_name_over_the_storage_limit_is_refused_by_the_file_format():
    """The format and storage agree on the author's length: a file that passes the one is stored."""
    from knowsim_core.formats.judgments import MAX_WHO

    assert judgments_from_data([{"turn": 1, "liked": True, "who": "a" * MAX_WHO}], "f")[0].who == "a" * MAX_WHO
    with pytest.raises(FormatError, match=f"at most {MAX_WHO} characters"):
        judgments_from_data([{"turn": 1, "liked": True, "who": "a" * (MAX_WHO + 1)}], "f")
