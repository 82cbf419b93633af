"""The schema: versioned migrations, the identity check on opening, and applying what is pending.

Migrations are DDL, written as SQL: that is where SQL earns its keep (sqlite-utils' ``create`` and
``enable_fts`` would make slightly different tables — ``enable_fts`` names no ``content_rowid``
and another tokenizer — and a migration must replay exactly as it first ran). ``PRAGMA
user_version`` mirrors the number of migrations so opening can check it without a write lock.

**Opening never damages a file.** :func:`check_file` reads the file only (the header bytes, then a
``mode=ro`` connection): a non-SQLite file, a SQLite database of another application or one
written by a newer Studio is refused before anything is written — before the switch to WAL too.
A KnowSim database is recognised by its ``_sqlite_migrations`` rows, not by a table name another
application could share.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from knowsim_core import formats
from knowsim_core.errors import StorageError
from knowsim_core.storage.connection import (
    SQLITE_HEADER, Connection, Database, connect_read_only, table_helpers, unpack,
)
from knowsim_core.text.titles import concept_title

if TYPE_CHECKING:
    from sqlite_utils import Migrations

# ---------------------------------------------------------------------- schema
MIGRATION_SET = "knowsim_studio"  # the set's name in _sqlite_migrations: how a file is known as ours
SCHEMA_VERSION = 10  # = number of migrations; PRAGMA user_version mirrors it (checked read-only on open)
_STEPS: list[tuple[str, Callable[[Database], None]]] = []


def _migration(name: str) -> Callable[[Callable[[Database], None]], Callable[[Database], None]]:
    """Register the decorated function as the next migration, named ``name``. sqlite-utils applies
    it, passing its own ``Database``; a step uses only ``execute``, which both kinds have."""
    def register(fn: Callable[[Database], None]) -> Callable[[Database], None]:
        _STEPS.append((name, fn))
        return fn
    return register


@cache
def migrations() -> Migrations:
    """sqlite-utils' migration set of the Studio's migrations, in order, made on first use.

    Built here rather than at import so that opening a current file (every command, every worker
    process) imports no sqlite-utils: only a file with migrations pending, or a test that replays
    them part-way (``apply(db.utils, stop_before=…)``), needs it.
    """
    steps = table_helpers().Migrations(MIGRATION_SET)
    for name, fn in _STEPS:
        steps(name=name)(fn)
    return steps


@_migration("0001_initial")
def _m0001_initial(db: Database) -> None:
    for sql in (
        """CREATE TABLE questions (
            id TEXT PRIMARY KEY, text TEXT NOT NULL, reference_answer TEXT NOT NULL DEFAULT '',
            domain TEXT NOT NULL DEFAULT '', field TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL DEFAULT 'user', created TEXT NOT NULL)""",
        """CREATE TABLE graph_versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            question_id TEXT NOT NULL REFERENCES questions(id) ON DELETE CASCADE,
            version INTEGER NOT NULL, parent_id INTEGER REFERENCES graph_versions(id) ON DELETE SET NULL,
            note TEXT NOT NULL DEFAULT '', author TEXT NOT NULL DEFAULT 'human', created TEXT NOT NULL,
            graph_json TEXT NOT NULL, UNIQUE (question_id, version))""",
        """CREATE TABLE initial_states (
            question_id TEXT NOT NULL REFERENCES questions(id) ON DELETE CASCADE, level TEXT NOT NULL,
            state_json TEXT NOT NULL, PRIMARY KEY (question_id, level))""",
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY, question_id TEXT NOT NULL REFERENCES questions(id),
            graph_version_id INTEGER REFERENCES graph_versions(id) ON DELETE SET NULL,
            level TEXT NOT NULL, assistant TEXT NOT NULL DEFAULT '', user TEXT NOT NULL DEFAULT '',
            extractor TEXT NOT NULL DEFAULT '', preset TEXT NOT NULL DEFAULT '', seed INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
            stop_reason TEXT, n_turns INTEGER NOT NULL DEFAULT 0, kg REAL, dc REAL, co REAL,
            created TEXT NOT NULL, updated TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
            iq_score REAL, iq_rationale TEXT NOT NULL DEFAULT '', iq_model TEXT NOT NULL DEFAULT '',
            tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0, pid INTEGER, pid_start TEXT, host TEXT, heartbeat TEXT,
            record_schema INTEGER NOT NULL, setup_json TEXT NOT NULL)""",
        "CREATE INDEX runs_created ON runs (created)",
        "CREATE INDEX runs_question ON runs (question_id)",
        "CREATE INDEX runs_status ON runs (status)",
        "CREATE INDEX runs_assistant ON runs (assistant)",
        """CREATE TABLE turns (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, turn INTEGER NOT NULL,
            user_message TEXT NOT NULL, assistant_message TEXT NOT NULL,
            effective_load REAL NOT NULL, overload_threshold INTEGER NOT NULL, overload INTEGER NOT NULL,
            efficiency REAL NOT NULL, n_upward INTEGER NOT NULL, redundant INTEGER NOT NULL,
            prereq_blocked INTEGER NOT NULL, effective INTEGER NOT NULL, overload_wasted INTEGER NOT NULL,
            under_absorbed INTEGER NOT NULL, extractor_failed INTEGER NOT NULL, created TEXT NOT NULL,
            record_json TEXT NOT NULL, PRIMARY KEY (run_id, turn))""",
        # full-text search over transcripts, kept in step with `turns` by triggers
        """CREATE VIRTUAL TABLE turns_fts USING fts5(
            user_message, assistant_message, content='turns', content_rowid='rowid',
            tokenize='porter unicode61')""",
        """CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
            INSERT INTO turns_fts (rowid, user_message, assistant_message)
            VALUES (new.rowid, new.user_message, new.assistant_message); END""",
        """CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, user_message, assistant_message)
            VALUES ('delete', old.rowid, old.user_message, old.assistant_message); END""",
        """CREATE TRIGGER turns_au AFTER UPDATE ON turns BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, user_message, assistant_message)
            VALUES ('delete', old.rowid, old.user_message, old.assistant_message);
            INSERT INTO turns_fts (rowid, user_message, assistant_message)
            VALUES (new.rowid, new.user_message, new.assistant_message); END""",
        "CREATE TABLE llm_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, created TEXT NOT NULL)",
    ):
        db.execute(sql)


@_migration("0002_compressed_records")
def _m0002_compressed_records(db: Database) -> None:
    """From schema 2 on, ``runs.setup_json`` and ``turns.record_json`` are written as zlib-compressed
    JSON (a BLOB; about a fifth of the text). Nothing changes in the tables: rows written under
    schema 1 stay text and are read as they are (:func:`~.connection.unpack`). The version bump is what makes
    an older Studio refuse the file instead of failing on a compressed record."""


@_migration("0003_run_leases")
def _m0003_run_leases(db: Database) -> None:
    """A run the app plays holds a lease: ``lease_seconds`` (its length) and ``lease_until`` (Unix
    time it lapses). NULL for command-line runs, which are judged by their writer's pid."""
    db.execute("ALTER TABLE runs ADD COLUMN lease_seconds REAL")
    db.execute("ALTER TABLE runs ADD COLUMN lease_until REAL")


@_migration("0004_batch_tag")
def _m0004_batch_tag(db: Database) -> None:
    """Runs carry the tag of the ``batch`` that made them (NULL for single runs and imports), so a
    batch can be listed, filtered and resumed; ``batches`` keeps each batch's matrix, so
    ``batch --resume TAG`` knows the cells that never started."""
    db.execute("ALTER TABLE runs ADD COLUMN batch_tag TEXT")
    db.execute("CREATE INDEX runs_batch_tag ON runs (batch_tag)")
    db.execute("CREATE TABLE batches (tag TEXT PRIMARY KEY, created TEXT NOT NULL, spec_json TEXT NOT NULL)")


@_migration("0005_recency_index_and_deferred_search")
def _m0005_recency_index_and_deferred_search(db: Database) -> None:
    """Two speed-ups of a busy database.

    * Index (batch_tag, created) instead of batch_tag alone: Home's newest single runs
      (``batch_tag IS NULL ORDER BY created DESC``) and the newest batches (``MAX(created)`` per
      tag) are read from the index instead of walking every run of every batch.
    * A turn appended to a running run is written to the full-text index when its run closes, not
      in its own transaction: indexing one turn at a time was ~0.3 ms of every turn's commit (40%
      of it), once per run ~0.08 ms a turn. ``turns_unindexed`` lists the turns not yet indexed;
      the triggers no longer index on insert (the code does, or defers), and delete from the index
      only what it holds — an FTS5 external-content index must never be asked to delete a row it
      does not have. Existing turns are all indexed already.

    Statements are idempotent (``IF [NOT] EXISTS``) so a database that ran an earlier draft of this
    migration under another name is brought to the same schema.
    """
    db.execute("DROP INDEX IF EXISTS runs_batch_tag")
    db.execute("CREATE INDEX IF NOT EXISTS runs_batch_created ON runs (batch_tag, created)")
    db.execute("CREATE TABLE IF NOT EXISTS turns_unindexed (turn_rowid INTEGER PRIMARY KEY)")
    for name in ("turns_ai", "turns_ad", "turns_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute("""CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
        INSERT INTO turns_fts (turns_fts, rowid, user_message, assistant_message)
            SELECT 'delete', old.rowid, old.user_message, old.assistant_message
            WHERE NOT EXISTS (SELECT 1 FROM turns_unindexed WHERE turn_rowid = old.rowid);
        DELETE FROM turns_unindexed WHERE turn_rowid = old.rowid; END""")
    db.execute("""CREATE TRIGGER turns_au AFTER UPDATE OF user_message, assistant_message ON turns
        WHEN NOT EXISTS (SELECT 1 FROM turns_unindexed WHERE turn_rowid = old.rowid) BEGIN
        INSERT INTO turns_fts (turns_fts, rowid, user_message, assistant_message)
            VALUES ('delete', old.rowid, old.user_message, old.assistant_message);
        INSERT INTO turns_fts (rowid, user_message, assistant_message)
            VALUES (new.rowid, new.user_message, new.assistant_message); END""")


@_migration("0006_judgments")
def _m0006_judgments(db: Database) -> None:
    """Judgments of turns: a person's thumbs imported with a recorded conversation, or a
    researcher's 👍/👎 and note given in Simulate — one per (run, turn, source, who), gone with
    the run. ``match`` says how an imported thumb was tied to its turn's reply text."""
    db.execute("""CREATE TABLE IF NOT EXISTS judgments (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, turn INTEGER NOT NULL,
        liked INTEGER NOT NULL CHECK (liked IN (0, 1)),
        source TEXT NOT NULL CHECK (source IN ('person', 'researcher')), who TEXT NOT NULL DEFAULT '',
        note TEXT NOT NULL DEFAULT '', created TEXT NOT NULL, match TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (run_id, turn, source, who))""")
    # the person's rating and correctness of a human run, as columns Saved runs filters and sorts on
    # (also in the run's meta, where imports put them); filled here for runs imported before
    db.execute("ALTER TABLE runs ADD COLUMN rating REAL")
    db.execute("ALTER TABLE runs ADD COLUMN correctness TEXT")
    for rid, setup in db.execute("SELECT id, setup_json FROM runs WHERE assistant LIKE 'recorded/%'").fetchall():
        rating, correctness = judged_columns(unpack(setup).get("meta") or {})
        if rating is not None or correctness is not None:
            db.execute("UPDATE runs SET rating = ?, correctness = ? WHERE id = ?", [rating, correctness, rid])


def judged_columns(meta: dict) -> tuple[float | None, str | None]:
    """(rating, correctness) columns of a run from its meta: a finite number, and a short text
    (``correct`` / ``incorrect`` as the release writes it, ``true``/``false`` for a boolean)."""
    r, c = meta.get("rating"), meta.get("correctness")
    rating = None
    if r is not None:  # a judged run (an import): most runs have no rating, and a batch worker never does
        # formats.judgments builds the judgments' file schema (pydantic models, ~0.1 s): loaded on
        # first use, since opening a database or storing a simulated run never needs it
        rating = formats.judgments.rating_of(r)
    if isinstance(c, bool):
        c = "true" if c else "false"
    correctness = str(c).strip().lower()[:40] if c is not None and str(c).strip() else None
    return rating, correctness


@_migration("0007_batch_cells")
def _m0007_batch_cells(db: Database) -> None:
    """A batch cell is claimed in the database before it runs (:mod:`.batch_cells`): one row per
    (tag, cell index) held by the process playing it — its pid, the kernel start time of that pid
    and its host, judged by the same liveness rule as a run's writer. A second ``batch --resume``
    of the tag skips cells a live process holds; a dead holder's cells are claimed again."""
    db.execute("""CREATE TABLE IF NOT EXISTS batch_cells (
        tag TEXT NOT NULL, cell INTEGER NOT NULL, pid INTEGER NOT NULL, pid_start TEXT, host TEXT,
        claimed TEXT NOT NULL, PRIMARY KEY (tag, cell))""")


def forked_column(meta: dict) -> str | None:
    """The ``forked_from`` column of a run from its metadata (key: services.fork.FORKED_FROM); the
    rating column is :func:`judged_columns`' (one parser for new runs and every migration)."""
    forked = meta.get("forked_from")
    return str(forked) if forked else None


def legacy_kind(question_id: str, source: str) -> str:
    """The kind of a question stored before kinds existed, read once from its free-text source
    (new questions are given their kind by the code that adds them)."""
    src = (source or "").lower()
    if src.startswith("knowsim studio samples") or src == "sample":
        return "sample"
    if src.startswith("reference"):
        return "paper"
    if src.startswith("simulatorarena") or src.startswith("conversations "):
        return "real"
    return "yours"


@_migration("0008_run_tags_and_sources")
def _m0008_run_tags_and_sources(db: Database) -> None:
    """Questions get a ``kind`` (sample / paper / real / yours: pickers group by it, samples first)
    and a ``title`` (set where the text makes a poor title, e.g. a real conversation that opens
    with "hello"; empty means "its first sentence"); runs get any number of researcher's tags, and
    two facts of their metadata become columns the run filters can use in SQL: ``forked_from``
    (the parent of a fork) and ``rating`` (a person's rating of the conversation, where known).

    Existing questions are classified once from their free-text ``source``; an imported real
    conversation is titled from its field and the concepts of its first graph version; existing
    runs' two columns are read from their stored setup.
    """
    db.execute("ALTER TABLE questions ADD COLUMN kind TEXT NOT NULL DEFAULT 'yours'")
    db.execute("ALTER TABLE questions ADD COLUMN title TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX IF NOT EXISTS questions_kind ON questions (kind)")
    db.execute("""CREATE TABLE IF NOT EXISTS run_tags (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, tag TEXT NOT NULL,
        PRIMARY KEY (run_id, tag))""")
    db.execute("CREATE INDEX IF NOT EXISTS run_tags_tag ON run_tags (tag, run_id)")
    db.execute("ALTER TABLE runs ADD COLUMN forked_from TEXT")  # (runs.rating came with 0006_judgments)
    for rid, setup in db.execute("SELECT id, setup_json FROM runs").fetchall():
        forked = forked_column(dict(unpack(setup).get("meta") or {}))
        if forked is not None:
            db.execute("UPDATE runs SET forked_from = ? WHERE id = ?", [forked, rid])
    for qid, source, field in db.execute("SELECT id, source, field FROM questions").fetchall():
        kind = legacy_kind(qid, source)
        title = ""
        if kind == "real":
            row = db.execute("SELECT graph_json FROM graph_versions WHERE question_id = ? ORDER BY version LIMIT 1",
                             [qid]).fetchone()
            concepts = [n.get("concept", "") for n in json.loads(row[0]).get("nodes", [])] if row else []
            title = concept_title(field, concepts, source)
        db.execute("UPDATE questions SET kind = ?, title = ? WHERE id = ?", [kind, title, qid])


@_migration("0009_batch_cell_index")
def _m0009_batch_cell_index(db: Database) -> None:
    """An index on a batch cell's identity, for the claim that looks up a cell's runs
    (:meth:`~knowsim_core.storage.batch_cells.BatchCells.claim`, one per cell, under the write lock).

    It used ``runs_batch_created`` and read every run of the batch (their rows, setup records
    included): claiming and releasing a cell of a 5,000-run batch took 13.6 ms, 3.3 ms with this
    index (``benchmarks/storage.py``) — write-lock time once per conversation, growing with the
    batch. The index's last column is ``created`` so the claim's ``ORDER BY created`` is read from
    it: SQLite's planner, which has no statistics here, keeps ``runs_batch_created`` for an index
    that would need a sort. The cell's other columns (user, extractor, preset) are few per batch and
    left to the filter."""
    db.execute("CREATE INDEX IF NOT EXISTS runs_batch_cell ON runs (batch_tag, question_id, level, assistant, seed, created)")


_STATUS_CHECK_0001 = "CHECK (status IN ('running', 'finished', 'failed', 'interrupted'))"
_STATUS_CHECK_0010 = "CHECK (status IN ('running', 'finished', 'failed', 'interrupted', 'open'))"
_LEASE_LAPSED_0003 = "the browser session playing this run went away before it finished; resume it from Saved runs"


@_migration("0010_open_runs_and_deleted_parents")
def _m0010_open_runs_and_deleted_parents(db: Database) -> None:
    """Two facts about a run's life that the tables could not say.

    * **open**: a run the app plays (under a lease) that has not ended is ``open`` — open in a tab,
      or left open when the tab closed — rather than ``running`` and, once its lease lapsed,
      ``interrupted``, which listed every ordinary interactive session among the failed ones. The
      ``runs.status`` CHECK of 0001 gains the word. SQLite cannot alter a constraint, and rebuilding
      ``runs`` would cascade to every table that references it, so the constraint's text is widened
      in place (SQLite's documented procedure for loosening a CHECK: ``writable_schema``, the new
      text, a bumped ``schema_version``); every stored row already satisfies it. Runs held under a
      lease become ``open``, and so do runs marked interrupted when their lease lapsed (their error
      was that lapse; it is cleared). Their metrics so far are filled in when a page next lists
      runs (:meth:`knowsim_core.storage.runs.Runs.mark_dead`).
    * **deleted_runs**: the id of a deleted run that others were forked from, and when it was
      deleted, so a fork names its parent as a deleted run rather than linking to nothing.
    """
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
    if _STATUS_CHECK_0010 not in sql:
        if _STATUS_CHECK_0001 not in sql:
            raise StorageError("the runs table's status constraint is not the one this Studio wrote; "
                               "the database cannot be upgraded (restore a backup or use a new file)")
        (version,) = db.execute("PRAGMA schema_version").fetchone()
        db.execute("PRAGMA writable_schema = ON")
        try:
            db.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'runs'",
                       [sql.replace(_STATUS_CHECK_0001, _STATUS_CHECK_0010)])
            db.execute(f"PRAGMA schema_version = {int(version) + 1}")
        finally:
            db.execute("PRAGMA writable_schema = OFF")
    db.execute("UPDATE runs SET status = 'open' WHERE status = 'running' AND lease_until IS NOT NULL")
    db.execute("UPDATE runs SET status = 'open', error = '' WHERE status = 'interrupted' AND error = ?",
               [_LEASE_LAPSED_0003])
    db.execute("""CREATE TABLE IF NOT EXISTS deleted_runs (
        id TEXT PRIMARY KEY, question_id TEXT NOT NULL DEFAULT '', deleted TEXT NOT NULL)""")


def _disk_full(exc: sqlite3.DatabaseError, path: Path) -> bool:
    """SQLite failed for want of space: SQLITE_FULL, or an I/O error (e.g. SQLITE_IOERR_SHMSIZE, the
    WAL index that cannot grow) while the database's folder has no room left."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in str(exc):
        return True
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in str(exc):
        try:
            return shutil.disk_usage(path.parent).free < 64 * 1024
        except OSError:
            return False
    return False


def check_file(path: Path) -> None:
    """Refuse a file we must not touch, reading it only (no write, no WAL switch)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        raise StorageError(
            f"{path} is not a SQLite database; point --db or KNOWSIM_DB at a KnowSim Studio database "
            "or a new file name"
        )
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    had_shm = shm.exists()  # the open below may create both files itself (and then fail on a full disk)
    try:
        conn = connect_read_only(path)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            ours = "_sqlite_migrations" in tables and conn.execute(
                "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1", [MIGRATION_SET]
            ).fetchone() is not None
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if _disk_full(exc, path):
            raise StorageError(f"cannot open {path}: the disk is full (SQLite could not size its index "
                               f"{shm.name}); free some space and try again — the database is not damaged") from None
        if had_shm and (not wal.exists() or wal.stat().st_size == 0):
            # the index (-shm) points into a log someone deleted: the file itself is intact
            raise StorageError(
                f"{path}: its write-ahead log ({wal.name}) was deleted while a program had the database open, "
                "so SQLite cannot read it now; the database file is not damaged — close every program using "
                "it (its index is rebuilt then; commits that were only in the deleted log are lost) and try again"
            ) from None
        raise StorageError(f"{path} is damaged or not a database ({exc}); restore a backup or use a new file") from None
    if tables - {"sqlite_sequence"} and not ours:
        raise StorageError(
            f"{path} is a SQLite database of another application (tables: {', '.join(sorted(tables)[:5])}); "
            "use a new file for KnowSim Studio"
        )
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{path} was written by a newer KnowSim Studio (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade KnowSim Studio to open it"
        )


def migrate(conn: Connection) -> None:
    """Bring the file to :data:`SCHEMA_VERSION` (WAL first); a no-op read when it is current."""
    with conn.db() as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return  # the common case: no write lock needed just to open the store
    if conn.read_only:
        raise StorageError(
            f"{conn.path} needs upgrading to schema {SCHEMA_VERSION} (it has {version}) but is read-only; "
            "open it once from a writable folder, or copy it to one"
        )
    with conn.db() as db:
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StorageError(f"{conn.path}: cannot switch to WAL journaling (got {mode}); is the folder writable?")
    with conn.write() as db:
        # under the write lock, so concurrent first openings migrate exactly once
        steps = migrations()
        if steps.pending(db.utils):
            steps.apply(db.utils)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
