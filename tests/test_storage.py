"""Store: round-trips, run lifecycle, questions / graphs / initial states, search, refusals."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from knowsim_core.errors import StorageError
from knowsim_core.formats.samples import get_sample, load_samples
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.state import initial_state
from knowsim_core.storage import SCHEMA_VERSION, Store
from knowsim_core.storage.run_filter import RunFilter, where_clause
from tests import storage_fakes as fk
from knowsim_core.agents import registry

ROOT = Path(__file__).resolve().parent.parent


def make_sim(question="sample_lava_lamps", seed=3, **kw) -> Simulation:
    sample = get_sample(question)
    sim = Simulation(
        material=sample.material,
        assistant=registry.resolve("assistant", fk.ASSISTANT),
        user=registry.resolve("user", fk.USER),
        extractor=registry.resolve("extractor", fk.EXTRACTOR),
        **kw,
    )
    sim.reset(seed=seed)
    return sim


def stored_run(store: Store, **kw) -> tuple[str, Simulation]:
    sim = make_sim(**kw)
    rid = store.runs.create(sim.run)
    while not sim.done:
        store.runs.append_turn(rid, sim.step())
    store.runs.finish(rid, status="finished", stop_reason=sim.run.stop_reason)
    return rid, sim


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_stored_turn_by_turn_loads_back_identical(db_path):
    store = Store(db_path)
    rid, sim = stored_run(store)
    loaded = store.runs.load(rid)
    assert loaded == replace(sim.run, run_id=rid)
    row = store.search.get_row(rid)
    m = sim.run.metrics()
    assert (row.status, row.turns, row.stop_reason) == ("finished", 15, "max_turns")
    assert (row.kg, row.dc, row.co) == (m.knowledge_gain, m.delivery_calibration, m.cognitive_overload)
    assert row.assistant == fk.ASSISTANT and row.question.startswith("Priya lines up six lava lamps")
    assert store.integrity_check() == "ok"


def test_a_pinned_connection_is_reused_and_each_turn_still_commits_on_its_own(db_path):
    store = Store(db_path)
    sim = make_sim()
    rid = store.runs.create(sim.run)
    with store.pinned():
        with store._conn.db() as first, store._conn.db() as second:
            assert first is second  # one connection for the block
        for expected in (1, 2):
            store.runs.append_turn(rid, sim.step())
            # another connection sees the turn at once: the pin shares the connection, not a transaction
            other = sqlite3.connect(db_path)
            try:
                assert other.execute("SELECT COUNT(*) FROM turns WHERE run_id = ?", [rid]).fetchone()[0] == expected
            finally:
                other.close()
    with store._conn.db() as a, store._conn.db() as b:
        assert a is not b  # outside the block every call opens its own again
    assert [t.turn for t in store.runs.load(rid).turns] == [1, 2]


def test_save_run_round_trip_and_id_collision(db_path):
    store = Store(db_path)
    rid, sim = stored_run(store)
    run = store.runs.load(rid)
    rid2 = store.runs.save(run)  # same run_id already taken -> a new id
    assert rid2 != rid
    assert store.runs.load(rid2) == replace(run, run_id=rid2)
    fresh = store.runs.save(replace(run, run_id="my-own-id"), status="interrupted")
    assert fresh == "my-own-id" and store.search.get_row(fresh).status == "interrupted"


def test_append_turn_refuses_gaps_unknown_runs_and_closed_runs(db_path):
    store = Store(db_path)
    sim = make_sim()
    rid = store.runs.create(sim.run)
    t1, t2 = sim.step(), sim.step()
    with pytest.raises(StorageError, match="next turn must be number 1, got 2"):
        store.runs.append_turn(rid, t2)
    store.runs.append_turn(rid, t1)
    with pytest.raises(StorageError, match="next turn must be number 2, got 1"):
        store.runs.append_turn(rid, t1)
    with pytest.raises(StorageError, match="unknown run id 'nope'"):
        store.runs.append_turn("nope", t1)
    store.runs.finish(rid, status="failed", error="boom")
    with pytest.raises(StorageError, match="is failed; resume it"):
        store.runs.append_turn(rid, t2)
    assert [t.turn for t in store.runs.load(rid).turns] == [1]
    with pytest.raises(StorageError, match="not 'running'"):
        store.runs.finish(rid, status="running")


def test_questions_graph_versions_initial_states_and_cache(db_path):
    store = Store(db_path)
    assert store.questions.seed_samples() == len(load_samples())
    assert store.questions.seed_samples() == 0
    qid = store.questions.add(text="Why is the sky blue?", domain="expert", field="Physics")
    assert store.questions.add(text="Why is the sky blue?", question_id=qid) == qid
    with pytest.raises(StorageError, match="already exists with another text"):
        store.questions.add(text="Other", question_id=qid)
    with pytest.raises(StorageError, match="non-empty text"):
        store.questions.add(text="  ")
    assert [q.id for q in store.questions.list(search="sky")] == [qid]
    assert {q.domain for q in store.questions.list(domain="math")} == {"math"}
    with pytest.raises(StorageError, match="unknown question id"):
        store.questions.get("missing")

    graph = get_sample("sample_lava_lamps").graph
    v1 = store.questions.add_graph_version(qid, graph, note="first")
    smaller = graph.without_node(graph.index.ids[-1])
    v2 = store.questions.add_graph_version(qid, smaller, note="trimmed", author="openai/gpt-4o", parent_id=v1)
    versions = store.questions.graph_versions(qid)
    assert [(v.version, v.parent_id, v.author) for v in versions] == [(1, None, "human"), (2, v1, "openai/gpt-4o")]
    assert versions[1].graph == smaller and store.questions.get_graph_version(v1).graph == graph
    assert store.questions.latest_graph_version(qid).id == v2
    assert store.questions.get(qid).n_graph_versions == 2
    other = store.questions.add(text="Another question")
    with pytest.raises(StorageError, match="is not a version of question"):
        store.questions.add_graph_version(other, graph, parent_id=v1)
    with pytest.raises(StorageError, match="unknown question id"):
        store.questions.add_graph_version("missing", graph)
    assert store.questions.latest_graph_version(other) is None

    s0 = initial_state(graph, "intermediate", replace_params(), seed=42)
    assert store.caches.get_initial_state(qid, "intermediate") is None
    store.caches.set_initial_state(qid, "intermediate", s0)
    store.caches.set_initial_state(qid, "intermediate", s0)  # upsert
    assert store.caches.get_initial_state(qid, "intermediate") == s0

    assert store.caches.cache_get("k") is None
    store.caches.cache_put("k", "v1")
    store.caches.cache_put("k", "v2")
    assert store.caches.cache_get("k") == "v2"


def replace_params():
    from knowsim_core.engine.config import preset

    return preset()


def test_list_filters_search_order_and_delete(db_path):
    store = Store(db_path)
    ids = [stored_run(store, seed=s)[0] for s in (1, 2)]
    other, _ = stored_run(store, question="sample_herd_immunity", seed=1)
    assert store.search.count() == 3
    assert [r.id for r in store.search.list()] == [other, ids[1], ids[0]]
    assert [r.id for r in store.search.list(order="created_asc", limit=2)] == ids
    assert [r.id for r in store.search.list(order="created_asc", offset=2)] == [other]
    assert {r.id for r in store.search.list(RunFilter(question_id="sample_lava_lamps"))} == set(ids)
    assert store.search.count(RunFilter(status="finished", assistant=fk.ASSISTANT, level="novice")) == 3
    assert store.search.count(RunFilter(status="running")) == 0
    # full-text search over transcripts: the fake assistant writes "zebra<turn>"
    assert store.search.count(RunFilter(text="zebra7")) == 3
    assert store.search.count(RunFilter(text="zebra7 Priya")) == 2  # all words must occur (the lava-lamp runs)
    assert store.search.count(RunFilter(text="zebra99")) == 0
    assert store.search.count(RunFilter(text='"unbalanced ( AND')) == 0  # FTS syntax never reaches the user
    with pytest.raises(StorageError, match="unknown run order"):
        store.search.list(order="random")
    store.runs.delete([other])
    assert store.search.count(RunFilter(text="zebra7")) == 2
    with pytest.raises(StorageError, match="unknown run id"):
        store.runs.delete([other])
    with pytest.raises(StorageError, match="unknown run id"):
        store.runs.load(other)


def test_filters_by_seed_ids_and_batch_all_in_sql(db_path):
    """Seed 0 is a value; contains-search finds part of an id and searches LIKE's wildcards literally;
    batch groups and Home's recent entries fold a batch's runs into one summary."""
    store = Store(db_path)
    single, _ = stored_run(store, seed=0)
    sim = make_sim(seed=1)
    while not sim.done:
        sim.step()
    tagged = [store.runs.save(replace(sim.run, run_id=None), batch_tag="night_1") for _ in range(3)]
    store.runs.finish(store.runs.create(make_sim(seed=2).run, batch_tag="night_1"), status="interrupted")
    assert [r.id for r in store.search.list(RunFilter(seed=0))] == [single]
    assert store.search.count(RunFilter(find="TEACH")) == 5
    assert store.search.count(RunFilter(find="night_1")) == 4 and store.search.count(RunFilter(find="night%1")) == 0
    assert store.search.count(RunFilter(find="ght", seed=1)) == 3
    assert store.search.values("batch_tag") == ["night_1"] and store.search.values("seed") == [0, 1, 2]
    (group,) = store.search.batch_groups()
    assert (group.tag, group.runs, group.finished, group.unfinished) == ("night_1", 4, 3, 1)
    assert group.kg == pytest.approx(store.search.get_row(tagged[0]).kg)
    recent = store.search.recent(8)
    assert [getattr(e, "tag", None) or e.id for e in recent] == ["night_1", single]
    with pytest.raises(StorageError, match="cannot be filtered by 'setup_json'"):
        where_clause(setup_json="x")
    with pytest.raises(TypeError, match="expected a RunFilter, got dict"):
        store.search.list({"seed": 0})  # the keywords of old are refused, not read as "every run"
    with pytest.raises(StorageError, match="cannot be listed by 'error'"):
        store.search.values("error")


def test_home_recent_entries_are_the_newest_singles_and_batches_interleaved(db_path):
    """Home's list takes the newest singles and the newest batches (by their latest run) and
    interleaves them by time; a batch that gains a run moves up."""
    store = Store(db_path)
    run = make_sim(seed=1).run

    def single() -> str:
        return store.runs.create(run)

    def in_batch(tag: str) -> str:
        return store.runs.create(run, batch_tag=tag)

    s1, _, s2, _, _, s3 = single(), in_batch("b1"), single(), in_batch("b2"), in_batch("b3"), single()
    label = lambda entries: [getattr(e, "tag", None) or e.id for e in entries]  # noqa: E731
    assert label(store.search.recent(3)) == [s3, "b3", "b2"]
    assert label(store.search.recent(8)) == [s3, "b3", "b2", s2, "b1", s1]
    in_batch("b1")
    assert label(store.search.recent(2)) == ["b1", s3]
    (b1,) = [e for e in store.search.recent(8) if getattr(e, "tag", None) == "b1"]
    assert b1.runs == 2  # the chosen batches are summarised over all their runs


def test_judgement(db_path):
    store = Store(db_path)
    rid, _ = stored_run(store)
    assert store.caches.get_judgement(rid) is None
    store.caches.set_judgement(rid, score=7.5, rationale="clear", model="openai/gpt-4o")
    assert store.caches.get_judgement(rid) == (7.5, "clear", "openai/gpt-4o")
    assert store.search.get_row(rid).iq_score == 7.5
    with pytest.raises(StorageError):
        store.caches.set_judgement("nope", score=1, rationale="", model="")


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=30))
def test_any_search_text_is_safe(tmp_path_factory, text):
    store = SEARCH_STORE.setdefault("s", Store(tmp_path_factory.mktemp("fts") / "s.db"))
    assert store.search.count(RunFilter(text=text)) == 0


SEARCH_STORE: dict[str, Store] = {}


# ---------------------------------------------------------------------- refusals: file untouched
def test_non_sqlite_file_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 20)
    before = digest(path)
    with pytest.raises(StorageError, match="is not a SQLite database"):
        Store(path)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_records_are_stored_compressed(db_path):
    store = Store(db_path)
    rid, sim = stored_run(store)
    conn = sqlite3.connect(db_path)
    kinds = {r[0] for r in conn.execute("SELECT typeof(record_json) FROM turns WHERE run_id = ?", [rid])}
    packed = conn.execute("SELECT sum(length(record_json)) FROM turns WHERE run_id = ?", [rid]).fetchone()[0]
    conn.close()
    plain = sum(len(json.dumps(t.to_data(), separators=(",", ":")).encode()) for t in sim.run.turns)
    assert kinds == {"blob"}
    assert packed * 3 < plain, (packed, plain)


def test_a_schema_1_database_opens_and_its_text_records_still_read(db_path):
    """Rows written before records were compressed are read as they are, beside new packed ones."""
    store = Store(db_path)
    old_rid, old_sim = stored_run(store)
    conn = sqlite3.connect(db_path)
    for table, column, key in (("turns", "record_json", "rowid"), ("runs", "setup_json", "id")):
        for k, value in conn.execute(f"SELECT {key}, {column} FROM {table}").fetchall():
            text = zlib.decompress(value).decode()
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", [text, k])
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0002_compressed_records'")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    reopened = Store(db_path)
    assert reopened.schema_version == SCHEMA_VERSION >= 2
    assert reopened.runs.load(old_rid) == replace(old_sim.run, run_id=old_rid)
    new_rid, new_sim = stored_run(reopened, seed=5)
    assert reopened.runs.load(new_rid) == replace(new_sim.run, run_id=new_rid)


def test_a_damaged_record_is_reported_not_crashed_on(db_path):
    store = Store(db_path)
    rid, _ = stored_run(store)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE turns SET record_json = ? WHERE run_id = ? AND turn = 2", [b"\x78\x9c garbage", rid])
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match=rf"run {rid} cannot be read back: a stored record is damaged"):
        store.runs.load(rid)
    assert store.search.get_row(rid).turns == 15  # the run's row and its other turns are still there


def test_newer_schema_is_refused_untouched(db_path):
    Store(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = digest(db_path)
    with pytest.raises(StorageError, match=rf"newer KnowSim Studio \(schema {SCHEMA_VERSION + 1}"):
        Store(db_path)
    assert digest(db_path) == before


def test_damaged_database_is_refused(db_path):
    Store(db_path)
    data = bytearray(db_path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # keep the header, wreck the schema page
    db_path.write_bytes(bytes(data))
    before = digest(db_path)
    with pytest.raises(StorageError, match="damaged|malformed|not a database"):
        Store(db_path)
    assert digest(db_path) == before


def test_folder_and_default_path(tmp_path, monkeypatch):
    with pytest.raises(StorageError, match="is a folder"):
        Store(tmp_path)
    monkeypatch.setenv("KNOWSIM_DB", str(tmp_path / "env" / "k.db"))
    assert Store().path == tmp_path / "env" / "k.db"
    assert Store().schema_version == SCHEMA_VERSION


# ---------------------------------------------------------------------- dead writers
WRITER = """
import sys
sys.path.insert(0, {root!r})
from tests.test_storage import make_sim
from knowsim_core.storage import Store
store = Store({db!r})
sim = make_sim()
rid = store.runs.create(sim.run)
store.runs.append_turn(rid, sim.step())
print(rid)
"""


def test_run_of_a_dead_process_is_marked_interrupted(db_path):
    store = Store(db_path)
    out = subprocess.run(
        [sys.executable, "-c", WRITER.format(root=str(ROOT), db=str(db_path))],
        capture_output=True, text=True, check=True, timeout=60,
    )
    rid = out.stdout.strip()
    # the writer exited without closing its run: a new opening notices
    row = Store(db_path).search.get_row(rid)
    assert (row.status, row.turns) == ("interrupted", 1)
    assert "stopped before it finished" in row.error
    # a run written by this (live) process stays running
    sim = make_sim()
    mine = store.runs.create(sim.run)
    assert Store(db_path).search.get_row(mine).status == "running"


def test_finish_takes_the_callers_record_only_when_it_holds_exactly_the_stored_turns(db_path):
    store = Store(db_path)
    sim = make_sim()
    rid = store.runs.create(sim.run)
    for _ in range(3):
        store.runs.append_turn(rid, sim.step())
    stored = store.runs.load(rid)
    sim.step()  # a fourth turn the store never saw: this copy must not set the metrics
    store.runs.finish(rid, status="interrupted", record=sim.run)
    row = store.search.get_row(rid)
    m = stored.metrics()
    assert (row.turns, row.kg, row.dc, row.co) == (3, m.knowledge_gain, m.delivery_calibration, m.cognitive_overload)
    assert sim.run.metrics() != m  # (the longer copy would have given other figures)

    sim2 = make_sim(seed=4)
    rid2 = store.runs.create(sim2.run)
    while not sim2.done:
        store.runs.append_turn(rid2, sim2.step())
    store.runs.finish(rid2, status="finished", stop_reason=sim2.run.stop_reason, record=sim2.run)
    m2 = store.runs.load(rid2).metrics()
    row2 = store.search.get_row(rid2)
    assert (row2.kg, row2.dc, row2.co) == (m2.knowledge_gain, m2.delivery_calibration, m2.cognitive_overload)
    with pytest.raises(StorageError, match="no run|unknown|not found"):
        store.runs.finish("nope", status="finished")


def test_a_writer_waits_for_the_write_lock_up_to_the_busy_timeout(db_path, monkeypatch):
    """A write transaction that finds another writer's lock waits (in short steps, up to
    BUSY_TIMEOUT_MS), takes the lock once it is released, and past the timeout fails with one
    StorageError; the connection's own busy timeout is back afterwards."""
    import threading
    import time

    from knowsim_core.storage import connection

    store = Store(db_path)  # create the file (WAL)
    holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)  # committed by a timer thread
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 50)
    with pytest.raises(StorageError, match="locked"):
        with store.transaction():
            pass
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 5000)
    release = threading.Timer(0.05, lambda: holder.execute("COMMIT"))
    start = time.monotonic()
    release.start()
    with store.pinned():
        with store.transaction():  # waits for the other connection's commit
            waited = time.monotonic() - start
        with store._conn.db() as db:
            assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000  # off only while taking the lock
    assert 0.04 < waited < 2.0
    release.join()
    holder.close()


def test_every_form_of_database_is_locked_is_waited_for_and_nothing_else(tmp_path):
    """The lock wait retries SQLITE_BUSY in its extended forms too — Python reports the extended code,
    and BEGIN IMMEDIATE answers SQLITE_BUSY_SNAPSHOT (517) when another writer commits in between —
    and never another error. The errors are SQLite's own, produced here."""
    from knowsim_core.storage.connection import is_busy

    path = tmp_path / "locks.db"
    a = sqlite3.connect(path, isolation_level=None, timeout=0)
    a.execute("PRAGMA journal_mode = WAL")
    a.execute("CREATE TABLE t (x)")
    b = sqlite3.connect(path, isolation_level=None, timeout=0)
    errors = {}
    a.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError) as plain:
        b.execute("BEGIN IMMEDIATE")
    errors["plain"] = plain.value
    a.execute("COMMIT")
    a.execute("BEGIN")
    a.execute("SELECT * FROM t").fetchall()  # a read snapshot ...
    b.execute("INSERT INTO t VALUES (1)")  # ... that another writer's commit makes stale
    with pytest.raises(sqlite3.OperationalError) as stale:
        a.execute("INSERT INTO t VALUES (2)")
    errors["snapshot"] = stale.value
    a.execute("ROLLBACK")
    with pytest.raises(sqlite3.OperationalError) as other:
        a.execute("SELECT * FROM no_such_table")
    assert errors["plain"].sqlite_errorcode == sqlite3.SQLITE_BUSY
    assert errors["snapshot"].sqlite_errorcode == 517  # SQLITE_BUSY_SNAPSHOT: "database is locked" too
    assert is_busy(errors["plain"]) and is_busy(errors["snapshot"])
    assert not is_busy(other.value)
    a.close()
    b.close()


def _fts_consistent(path) -> tuple[bool, int]:
    """(the FTS5 index is sound, number of turns waiting to be indexed). With none waiting, the
    index must equal the turns table exactly (FTS5's integrity check against its content table);
    with some, it must be internally sound and hold none of the waiting turns."""
    conn = sqlite3.connect(path)
    pending = [r for (r,) in conn.execute("SELECT turn_rowid FROM turns_unindexed")]
    try:
        conn.execute("INSERT INTO turns_fts (turns_fts, rank) VALUES ('integrity-check', ?)", [0 if pending else 1])
        ok = True
    except sqlite3.DatabaseError:
        ok = False
    if pending:  # a waiting turn's words are not in the index yet
        message = conn.execute("SELECT assistant_message FROM turns WHERE rowid = ?", [pending[0]]).fetchone()[0]
        token = re.search(r"zebra\d+", message).group()  # the fake assistant's per-turn word
        hits = {r for (r,) in conn.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?", [f'"{token}"'])}
        ok = ok and not hits & set(pending)
    conn.close()
    return ok, len(pending)


def test_open_runs_are_searchable_and_their_turns_join_the_index_when_the_run_closes(db_path):
    """Appended turns enter the full-text index when their run closes (migration 0005); until then
    search finds them by substring. Closing, deleting and marking a dead writer's run keep the
    FTS5 index exactly in step (its own integrity check)."""
    store = Store(db_path)
    sim = make_sim(seed=1)
    rid = store.runs.create(sim.run)
    for _ in range(3):
        store.runs.append_turn(rid, sim.step())
    assert _fts_consistent(db_path) == (True, 3)
    assert store.search.count(RunFilter(text="zebra2")) == 1 and store.search.count(RunFilter(text="zebra2 Priya")) == 1  # open: substring
    assert store.search.count(RunFilter(text="zebra2 nowhere-word")) == 0
    store.runs.finish(rid, status="interrupted")
    assert _fts_consistent(db_path) == (True, 0)
    assert store.search.count(RunFilter(text="zebra2 Priya")) == 1  # now through FTS5

    store.runs.reopen(rid)  # resumed: the next turns wait again, the earlier ones stay indexed
    store.runs.append_turn(rid, sim.step())
    assert _fts_consistent(db_path) == (True, 1) and store.search.count(RunFilter(text="zebra4")) == 1
    store.runs.delete([rid])  # a run with indexed and unindexed turns: the index deletes only what it holds
    assert _fts_consistent(db_path) == (True, 0) and store.search.count(RunFilter(text="zebra2")) == 0

    dead = make_sim(seed=2)
    rid = store.runs.create(dead.run)
    store.runs.append_turn(rid, dead.step())
    conn = sqlite3.connect(db_path)  # its writer "died": a pid that does not exist
    conn.execute("UPDATE runs SET pid = 999999999, pid_start = '' WHERE id = ?", [rid])
    conn.commit()
    conn.close()
    assert store.runs.mark_dead() == [rid]
    assert _fts_consistent(db_path) == (True, 0) and store.search.count(RunFilter(text="zebra1")) == 1


def test_a_schema_4_database_keeps_its_search_index_through_migration_5(db_path):
    store = Store(db_path)
    old_rid, _ = stored_run(store, seed=1)
    conn = sqlite3.connect(db_path)  # what a database of schema 4 looks like: indexing triggers on turns
    conn.executescript("""
        DROP TABLE turns_unindexed; DROP TRIGGER turns_ad; DROP TRIGGER turns_au;
        DROP INDEX runs_batch_created; CREATE INDEX runs_batch_tag ON runs (batch_tag);
        CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
            INSERT INTO turns_fts (rowid, user_message, assistant_message)
            VALUES (new.rowid, new.user_message, new.assistant_message); END;
        CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, user_message, assistant_message)
            VALUES ('delete', old.rowid, old.user_message, old.assistant_message); END;
        DELETE FROM _sqlite_migrations WHERE name LIKE '0005%';
        PRAGMA user_version = 4;
    """)
    conn.close()
    reopened = Store(db_path)
    assert reopened.schema_version == SCHEMA_VERSION
    assert _fts_consistent(db_path) == (True, 0) and reopened.search.count(RunFilter(text="zebra1")) == 1
    new_rid, _ = stored_run(reopened, seed=2)
    assert reopened.search.count(RunFilter(text="zebra1")) == 2
    reopened.runs.delete([old_rid])  # a turn indexed by the old trigger is removed from the index
    assert _fts_consistent(db_path) == (True, 0) and [r.id for r in reopened.search.list(RunFilter(text="zebra1"))] == [new_rid]
