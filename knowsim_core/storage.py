"""The Studio's database: questions, IU graph versions, canonical initial states, runs and turns.

The only module that speaks SQL (via ``sqlite-utils``). Choices, and why:

* **A fresh connection per call.** Streamlit runs every script on its own thread and sqlite3
  connections are bound to the thread that made them, so a :class:`Store` holds only a path.
* **WAL + ``busy_timeout`` + ``BEGIN IMMEDIATE``.** Readers never block the writer, and a writer
  takes the write lock up front instead of upgrading a read lock half-way (which is what makes
  deferred transactions fail with "database is locked" under several writing processes).
* **One transaction per turn.** A completed turn is on disk before the next model call starts,
  so a crash, a closed laptop or a rate limit never loses it.
* **Who is writing.** A run records the writer's pid (+ its start time and host); a run left
  ``running`` by a process that no longer exists is marked ``interrupted`` when the store is
  next opened, and the runner can resume it from its last completed turn.
* **Leases for the app.** The Streamlit server outlives every browser session, so its pid says
  nothing about an abandoned run. A run the app plays carries a lease (``lease_until``) that each
  stored turn and the open session renew; once it lapses the run is ``interrupted`` like one
  whose process died. Command-line runs hold no lease and keep the pid check.
* **Reopening is a check-and-set.** :meth:`Store.reopen_run` reads the status and turn count
  inside the same ``BEGIN IMMEDIATE`` transaction that claims the run, so of two concurrent
  resumes exactly one wins and a finished run is never reopened (or demoted).
* **Compressed records.** A run's setup and each turn's record are zlib-compressed JSON (schema 2;
  about a fifth of the text); the columns the Runs page filters and sorts on stay plain.
* **Opening never damages a file.** A non-SQLite file, a foreign SQLite database or one written
  by a newer Studio is refused with a clear :class:`StorageError` before anything is written.

API keys never reach this module: records do not contain them and settings are not stored.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from sqlite_utils import Database, Migrations

from .analysis import STATUS_CHOICES, RunFacts, facts_from_summary, run_facts
from .errors import FormatError, StorageError
from .failures import FailureMode
from .graph import IUGraph
from .records import RunRecord, TurnRecord
from .state import KnowledgeState

DEFAULT_DB = Path("~/.knowsim/studio.db")
ENV_DB = "KNOWSIM_DB"
BUSY_TIMEOUT_MS = 60_000
STALE_REMOTE_SECONDS = 3600  # a run written from another host with no heartbeat for this long is dead
LEASE_SECONDS = 300.0  # an app-held run nobody renewed for this long was abandoned (> one slow LLM turn)
STATUSES = ("running", "finished", "failed", "interrupted")
FINAL_STATUSES = ("finished", "failed", "interrupted")
SQLITE_HEADER = b"SQLite format 3\x00"
ORDERS = {
    "created_desc": "r.created DESC, r.rowid DESC",
    "created_asc": "r.created ASC, r.rowid ASC",
    "updated_desc": "r.updated DESC, r.rowid DESC",
    "kg_desc": "r.kg DESC, r.created DESC",
}


@dataclass(frozen=True, slots=True)
class QuestionRow:
    id: str
    text: str
    reference_answer: str
    domain: str
    field: str
    source: str
    created: str
    n_graph_versions: int


@dataclass(frozen=True, slots=True)
class GraphVersion:
    id: int
    question_id: str
    version: int
    parent_id: int | None
    note: str
    author: str
    created: str
    graph: IUGraph


@dataclass(frozen=True, slots=True)
class RunRow:
    id: str
    question_id: str
    question: str
    level: str
    assistant: str
    user: str
    extractor: str
    preset: str
    seed: int
    status: str
    stop_reason: str | None
    turns: int
    kg: float | None
    dc: float | None
    co: float | None
    created: str
    updated: str
    error: str
    iq_score: float | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    graph_version_id: int | None
    batch_tag: str | None = None  # the `batch --tag` this run belongs to (see the batch_tag migration)


# ---------------------------------------------------------------------- schema
MIGRATIONS = Migrations("knowsim_studio")
SCHEMA_VERSION = 4  # = number of migrations; PRAGMA user_version mirrors it (checked read-only on open)


@MIGRATIONS(name="0001_initial")
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


@MIGRATIONS(name="0002_compressed_records")
def _m0002_compressed_records(db: Database) -> None:
    """From schema 2 on, ``runs.setup_json`` and ``turns.record_json`` are written as zlib-compressed
    JSON (a BLOB; about a fifth of the text). Nothing changes in the tables: rows written under
    schema 1 stay text and are read as they are (:func:`_unpack`). The version bump is what makes
    an older Studio refuse the file instead of failing on a compressed record."""


@MIGRATIONS(name="0003_run_leases")
def _m0003_run_leases(db: Database) -> None:
    """A run the app plays holds a lease: ``lease_seconds`` (its length) and ``lease_until`` (Unix
    time it lapses). NULL for command-line runs, which are judged by their writer's pid."""
    db.execute("ALTER TABLE runs ADD COLUMN lease_seconds REAL")
    db.execute("ALTER TABLE runs ADD COLUMN lease_until REAL")


@MIGRATIONS(name="0004_batch_tag")
def _m0004_batch_tag(db: Database) -> None:
    """Runs carry the tag of the ``batch`` that made them (NULL for single runs and imports), so a
    batch can be listed, filtered and resumed; ``batches`` keeps each batch's matrix, so
    ``batch --resume TAG`` knows the cells that never started."""
    db.execute("ALTER TABLE runs ADD COLUMN batch_tag TEXT")
    db.execute("CREATE INDEX runs_batch_tag ON runs (batch_tag)")
    db.execute("CREATE TABLE batches (tag TEXT PRIMARY KEY, created TEXT NOT NULL, spec_json TEXT NOT NULL)")


def default_path() -> Path:
    """``$KNOWSIM_DB`` or ``~/.knowsim/studio.db``."""
    return Path(os.environ.get(ENV_DB) or DEFAULT_DB).expanduser()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _process_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (guards against pid reuse); "" where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _pid_alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):  # killed but not yet reaped by its parent
            return False
    except OSError:
        pass
    return not start or _process_start(pid) in ("", start)


class Store:
    """All persistent data of the Studio in one SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path | None = None, *, clock: Callable[[], float] = time.time):
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._clock = clock  # Unix seconds; leases are judged by it (tests pass a fake one)
        self._local = threading.local()
        self._check_file()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the folder for the database {self.path}: {exc}") from None
        self._migrate()
        self.mark_dead_runs()

    # ------------------------------------------------------------------ connections
    def _check_file(self) -> None:
        """Refuse a file we must not touch, reading it only (no write, no WAL switch)."""
        p = self.path
        if p.is_dir():
            raise StorageError(f"{p} is a folder; --db / KNOWSIM_DB must name a database file")
        if not p.exists() or p.stat().st_size == 0:
            return
        with p.open("rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
        if head != SQLITE_HEADER:
            raise StorageError(
                f"{p} is not a SQLite database; point --db or KNOWSIM_DB at a KnowSim Studio database "
                "or a new file name"
            )
        try:
            conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{p} is damaged or not a database ({exc}); restore a backup or use a new file") from None
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{p} was written by a newer KnowSim Studio (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade KnowSim Studio to open it"
            )
        if tables and version == 0 and "runs" not in tables:
            raise StorageError(
                f"{p} is a SQLite database of another application (tables: {', '.join(sorted(tables)[:5])}); "
                "use a new file for KnowSim Studio"
            )

    @contextmanager
    def transaction(self) -> Iterator["Store"]:
        """Group many calls of this thread into one write transaction (bulk imports).

        Inside the block every method of this store, on this thread, shares one connection and
        one ``BEGIN IMMEDIATE`` transaction: all of it is committed at the end, or none of it.
        """
        if getattr(self._local, "db", None) is not None:
            yield self
            return
        with self._write() as db:
            self._local.db = db
            try:
                yield self
            finally:
                self._local.db = None

    @contextmanager
    def _db(self) -> Iterator[Database]:
        """A fresh connection in autocommit mode; sqlite errors become StorageError."""
        shared = getattr(self._local, "db", None)
        if shared is not None:  # inside transaction(): reuse its connection
            yield shared
            return
        conn = None
        try:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            yield Database(conn)
        except sqlite3.Error as exc:
            raise StorageError(f"database {self.path}: {exc}") from None
        finally:
            if conn is not None:
                conn.close()

    @contextmanager
    def _write(self) -> Iterator[Database]:
        """One ``BEGIN IMMEDIATE`` … ``COMMIT`` transaction (rolled back on any error)."""
        if getattr(self._local, "db", None) is not None:  # already inside transaction()
            yield self._local.db
            return
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.conn.rollback()
                raise
            db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._db() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                return  # the common case: no write lock needed just to open the store
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StorageError(f"{self.path}: cannot switch to WAL journaling (got {mode}); is the folder writable?")
        with self._write() as db:
            # under the write lock, so concurrent first openings migrate exactly once
            if MIGRATIONS.pending(db):
                MIGRATIONS.apply(db)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def schema_version(self) -> int:
        with self._db() as db:
            return db.execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        with self._db() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]

    # ------------------------------------------------------------------ liveness
    def _writer_gone(self, pid: Any, start: Any, rhost: Any, beat: Any, lease_until: Any) -> str:
        """Why the writer of a ``running`` run is gone ("" while it may still be writing)."""
        if lease_until is not None and lease_until < self._clock():
            return LEASE_LAPSED
        if rhost == socket.gethostname():
            return "" if pid and _pid_alive(int(pid), start or "") else PROCESS_DIED
        now = datetime.now(timezone.utc)
        age = (now - datetime.fromisoformat(beat)).total_seconds() if beat else STALE_REMOTE_SECONDS + 1
        return "" if age < STALE_REMOTE_SECONDS else PROCESS_DIED

    def mark_dead_runs(self) -> list[str]:
        """Mark ``running`` runs whose writer is gone as ``interrupted``; returns their ids.

        Gone: the run's lease lapsed (a browser session that went away), or, for runs without a
        lease, the writing process no longer exists (same host) or sent no heartbeat for
        :data:`STALE_REMOTE_SECONDS` (another host). Cheap: pages call it before listing runs.
        """
        with self._db() as db:
            rows = db.execute(
                "SELECT id, pid, pid_start, host, heartbeat, lease_until FROM runs WHERE status = 'running'"
            ).fetchall()
        dead = {rid: why for rid, *writer in rows if (why := self._writer_gone(*writer))}
        if dead:
            with self._write() as db:
                for rid, why in dead.items():
                    db.execute(
                        "UPDATE runs SET status = 'interrupted', updated = ?, error = ?, lease_until = NULL "
                        "WHERE id = ? AND status = 'running'",
                        [_now(), why, rid],
                    )
        return list(dead)

    def renew_lease(self, run_id: str, *, seconds: float | None = None) -> bool:
        """Extend the lease of a ``running`` run this process writes; ``seconds`` (re)sets its length.

        The app takes a lease when it starts or resumes a run and renews it while the run is open;
        without ``seconds`` a run that holds no lease keeps none. Returns False when the run is no
        longer running here (e.g. the lease lapsed and the run was marked interrupted): the caller
        must resume it before playing on.
        """
        with self._write() as db:
            cur = db.execute(
                "UPDATE runs SET lease_seconds = COALESCE(?, lease_seconds), "
                "lease_until = ? + COALESCE(?, lease_seconds) "
                "WHERE id = ? AND status = 'running' AND pid = ? AND host = ?",
                [seconds, self._clock(), seconds, run_id, os.getpid(), socket.gethostname()],
            )
            return cur.rowcount == 1

    # ------------------------------------------------------------------ questions
    def add_question(
        self, *, text: str, reference_answer: str = "", domain: str = "", field: str = "",
        source: str = "user", question_id: str | None = None,
    ) -> str:
        """Add a question; adding the same id with the same text again is a no-op."""
        if not text or not text.strip():
            raise StorageError("a question needs a non-empty text")
        qid = question_id or f"q_{uuid.uuid4().hex[:10]}"
        with self._write() as db:
            row = db.execute("SELECT text FROM questions WHERE id = ?", [qid]).fetchone()
            if row is not None:
                if row[0] != text:
                    raise StorageError(f"question id {qid!r} already exists with another text; choose another id")
                return qid
            db["questions"].insert(
                {"id": qid, "text": text, "reference_answer": reference_answer, "domain": domain,
                 "field": field, "source": source, "created": _now()}
            )
        return qid

    _Q_SELECT = (
        "SELECT q.id, q.text, q.reference_answer, q.domain, q.field, q.source, q.created, "
        "(SELECT COUNT(*) FROM graph_versions g WHERE g.question_id = q.id) FROM questions q"
    )

    def list_questions(self, *, search: str = "", domain: str | None = None) -> list[QuestionRow]:
        where, args = [], []
        if search:
            where.append("(q.text LIKE ? OR q.id LIKE ? OR q.field LIKE ?)")
            args += [f"%{search}%"] * 3
        if domain:
            where.append("q.domain = ?")
            args.append(domain)
        sql = self._Q_SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY q.id"
        with self._db() as db:
            return [QuestionRow(*r) for r in db.execute(sql, args).fetchall()]

    def get_question(self, question_id: str) -> QuestionRow:
        with self._db() as db:
            row = db.execute(self._Q_SELECT + " WHERE q.id = ?", [question_id]).fetchone()
        if row is None:
            raise StorageError(f"unknown question id {question_id!r}; `python -m knowsim_core runs` lists runs, "
                               "the Questions page lists questions")
        return QuestionRow(*row)

    def seed_samples(self) -> int:
        """Add every sample question (+ its graph as version 1) that is missing; idempotent."""
        from .samples import load_samples

        added = 0
        with self.transaction():
            for s in load_samples():
                added += self._seed_one(s)
        return added

    def _seed_one(self, sample: Any) -> int:
        with self._write() as db:
            if db.execute("SELECT 1 FROM questions WHERE id = ?", [sample.id]).fetchone():
                return 0
            db["questions"].insert(
                {"id": sample.id, "text": sample.question, "reference_answer": sample.reference_answer,
                 "domain": sample.domain, "field": sample.field, "source": sample.source or "sample",
                 "created": _now()}
            )
            self._insert_graph(db, sample.id, sample.graph, note="sample graph", author="human", parent_id=None)
            return 1

    # ------------------------------------------------------------------ graphs
    @staticmethod
    def _insert_graph(db: Database, qid: str, graph: IUGraph, *, note: str, author: str, parent_id: int | None) -> int:
        """Store ``graph`` as the question's next version — the one door every graph goes through.

        Refuses (GraphError) a graph with errors its parent version does not have; without a
        parent it is kept as authored (an import, a sample, a first extraction): its own cycles
        are allowed, an empty graph, NaN levels, duplicate ids or dangling edges never are.
        """
        parent = None
        if parent_id is not None:
            row = db.execute("SELECT graph_json FROM graph_versions WHERE id = ?", [parent_id]).fetchone()
            parent = IUGraph.from_data(json.loads(row[0])) if row else None
        graph.require_savable(parent, as_authored=parent_id is None)
        version = db.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM graph_versions WHERE question_id = ?", [qid]
        ).fetchone()[0]
        cur = db.execute(
            "INSERT INTO graph_versions (question_id, version, parent_id, note, author, created, graph_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [qid, version, parent_id, note, author, _now(), _graph_json(graph)],
        )
        return int(cur.lastrowid)

    def add_graph_version(
        self, question_id: str, graph: IUGraph, *, note: str = "", author: str = "human", parent_id: int | None = None,
    ) -> int:
        with self._write() as db:
            if not db.execute("SELECT 1 FROM questions WHERE id = ?", [question_id]).fetchone():
                raise StorageError(f"unknown question id {question_id!r}; add the question before its graph")
            if parent_id is not None:
                row = db.execute("SELECT question_id FROM graph_versions WHERE id = ?", [parent_id]).fetchone()
                if row is None or row[0] != question_id:
                    raise StorageError(f"parent graph version {parent_id} is not a version of question {question_id!r}")
            return self._insert_graph(db, question_id, graph, note=note, author=author, parent_id=parent_id)

    _G_SELECT = "SELECT id, question_id, version, parent_id, note, author, created, graph_json FROM graph_versions"

    @staticmethod
    def _graph_row(r: tuple) -> GraphVersion:
        return GraphVersion(*r[:7], graph=IUGraph.from_data(json.loads(r[7])))

    def graph_versions(self, question_id: str) -> list[GraphVersion]:
        with self._db() as db:
            rows = db.execute(self._G_SELECT + " WHERE question_id = ? ORDER BY version", [question_id]).fetchall()
        return [self._graph_row(r) for r in rows]

    def get_graph_version(self, version_id: int) -> GraphVersion:
        with self._db() as db:
            row = db.execute(self._G_SELECT + " WHERE id = ?", [version_id]).fetchone()
        if row is None:
            raise StorageError(f"unknown graph version id {version_id!r}")
        return self._graph_row(row)

    def graph_version_numbers(self, version_ids: list[int]) -> dict[int, int]:
        """``{graph version id: version number}`` for the given ids (no graph is parsed)."""
        ids = sorted({int(v) for v in version_ids if v is not None})
        out: dict[int, int] = {}
        with self._db() as db:
            for i in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
                chunk = ids[i : i + 500]
                marks = ", ".join("?" * len(chunk))
                out.update(db.execute(f"SELECT id, version FROM graph_versions WHERE id IN ({marks})", chunk).fetchall())
        return out

    def latest_graph_version(self, question_id: str) -> GraphVersion | None:
        with self._db() as db:
            row = db.execute(
                self._G_SELECT + " WHERE question_id = ? ORDER BY version DESC LIMIT 1", [question_id]
            ).fetchone()
        return self._graph_row(row) if row else None

    # ------------------------------------------------------------------ initial states
    def set_initial_state(self, question_id: str, level: str, state: KnowledgeState) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO initial_states (question_id, level, state_json) VALUES (?, ?, ?) "
                "ON CONFLICT (question_id, level) DO UPDATE SET state_json = excluded.state_json",
                [question_id, level, json.dumps(state.to_data(), ensure_ascii=False)],
            )

    def get_initial_state(self, question_id: str, level: str) -> KnowledgeState | None:
        with self._db() as db:
            row = db.execute(
                "SELECT state_json FROM initial_states WHERE question_id = ? AND level = ?", [question_id, level]
            ).fetchone()
        return KnowledgeState.from_data(json.loads(row[0])) if row else None

    # ------------------------------------------------------------------ LLM response cache
    def cache_get(self, key: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT value FROM llm_cache WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def cache_put(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO llm_cache (key, value, created) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, value, _now()],
            )

    # ------------------------------------------------------------------ runs
    def create_run(
        self, run: RunRecord, *, graph_version_id: int | None = None, lease_seconds: float | None = None,
        batch_tag: str | None = None,
    ) -> str:
        """Store a run's setup (and any turns it already has) with status ``running``.

        ``lease_seconds``: the app's runs hold a lease (see :meth:`renew_lease`); CLI runs none.
        """
        with self._write() as db:
            rid = self._insert_run(db, run, status="running", graph_version_id=graph_version_id, batch_tag=batch_tag)
            if lease_seconds is not None:
                db.execute("UPDATE runs SET lease_seconds = ?, lease_until = ? WHERE id = ?",
                           [float(lease_seconds), self._clock() + float(lease_seconds), rid])
            return rid

    def save_run(
        self, run: RunRecord, *, status: str = "finished", graph_version_id: int | None = None,
        batch_tag: str | None = None,
    ) -> str:
        """Store a whole run in one transaction (imports, replays)."""
        if status not in STATUSES:
            raise StorageError(f"unknown run status {status!r}; expected one of {', '.join(STATUSES)}")
        with self._write() as db:
            return self._insert_run(db, run, status=status, graph_version_id=graph_version_id, batch_tag=batch_tag)

    def _insert_run(
        self, db: Database, run: RunRecord, *, status: str, graph_version_id: int | None, batch_tag: str | None = None,
    ) -> str:
        rid = run.run_id
        if not rid or db.execute("SELECT 1 FROM runs WHERE id = ?", [rid]).fetchone():
            rid = uuid.uuid4().hex[:12]
        qid = run.question_id
        if not db.execute("SELECT 1 FROM questions WHERE id = ?", [qid]).fetchone():
            db["questions"].insert(
                {"id": qid, "text": run.question or qid, "reference_answer": run.reference_answer,
                 "domain": run.domain, "field": "", "source": str(dict(run.meta).get("source", "run")), "created": _now()}
            )
        gjson = _graph_json(run.graph)
        if graph_version_id is None:
            versions = db.execute(
                "SELECT id, graph_json FROM graph_versions WHERE question_id = ? ORDER BY version DESC", [qid]
            ).fetchall()
            graph_version_id = next((v for v, g in versions if g == gjson), None)
            if graph_version_id is None and not versions:
                graph_version_id = self._insert_graph(
                    db, qid, run.graph, note="graph of an imported run", author="import", parent_id=None
                )
        elif not db.execute(
            "SELECT 1 FROM graph_versions WHERE id = ? AND question_id = ?", [graph_version_id, qid]
        ).fetchone():
            raise StorageError(f"graph version {graph_version_id} is not a version of question {qid!r}")
        setup = run.with_turns(()).to_data()
        for key in ("turns", "metrics", "run_id", "stop_reason"):
            setup.pop(key, None)
        adapters = run.adapter
        now = _now()
        pid = os.getpid()
        db["runs"].insert(
            {"id": rid, "question_id": qid, "graph_version_id": graph_version_id, "level": run.level,
             "assistant": adapters.get("assistant", ""), "user": adapters.get("user", ""),
             "extractor": adapters.get("extractor", ""), "preset": run.params.preset, "seed": run.seed,
             "status": status, "stop_reason": run.stop_reason, "n_turns": 0, "created": now, "updated": now,
             "pid": pid, "pid_start": _process_start(pid), "host": socket.gethostname(), "heartbeat": now,
             "record_schema": run.schema_version, "setup_json": _pack(setup), "batch_tag": batch_tag or None}
        )
        for i, turn in enumerate(run.turns, 1):
            if turn.turn != i:
                raise StorageError(f"run {rid}: turn numbers must be 1, 2, 3, …; found {turn.turn} at position {i}")
            self._insert_turn(db, rid, turn, clock=self._clock())
        if run.turns and status != "running":
            self._set_metrics(db, rid, run)
        return rid

    @staticmethod
    def _insert_turn(db: Database, rid: str, turn: TurnRecord, *, clock: float) -> None:
        """Store one turn and update the run's counters; a stored turn also renews the run's lease."""
        q = turn.quantities
        modes = turn.mode_counts()
        now = _now()
        db.execute(
            "INSERT INTO turns (run_id, turn, user_message, assistant_message, effective_load, overload_threshold, "
            "overload, efficiency, n_upward, redundant, prereq_blocked, effective, overload_wasted, under_absorbed, "
            "extractor_failed, created, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rid, turn.turn, turn.user_message, turn.assistant_message, q.effective_load, q.overload_threshold,
             int(q.overload), q.efficiency, q.n_upward_transitions,
             *(modes.get(m, 0) for m in (FailureMode.REDUNDANT, FailureMode.PREREQ_BLOCKED, FailureMode.EFFECTIVE,
                                         FailureMode.OVERLOAD_WASTED, FailureMode.UNDER_ABSORBED)),
             int(turn.extractor_failed), now, _pack(turn.to_data())],
        )
        db.execute(
            "UPDATE runs SET n_turns = ?, updated = ?, heartbeat = ?, lease_until = ? + lease_seconds, "
            "tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, cost_usd = cost_usd + ? WHERE id = ?",
            [turn.turn, now, now, clock, sum(u.input_tokens for u in turn.usage),
             sum(u.output_tokens for u in turn.usage), sum(u.cost_usd for u in turn.usage), rid],
        )

    @staticmethod
    def _set_metrics(db: Database, rid: str, run: RunRecord) -> None:
        m = run.metrics()
        db.execute(
            "UPDATE runs SET kg = ?, dc = ?, co = ? WHERE id = ?",
            [m.knowledge_gain, m.delivery_calibration, m.cognitive_overload, rid],
        )

    def append_turn(self, run_id: str, turn: TurnRecord) -> None:
        """Add the next completed turn of a running run, in its own transaction."""
        with self._write() as db:
            row = db.execute("SELECT status, n_turns FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise StorageError(_unknown_run(run_id))
            status, n = row
            if status != "running":
                raise StorageError(f"run {run_id} is {status}; resume it before adding turns")
            if turn.turn != n + 1:
                raise StorageError(
                    f"run {run_id} has {n} turns; the next turn must be number {n + 1}, got {turn.turn}"
                )
            self._insert_turn(db, run_id, turn, clock=self._clock())

    def finish_run(self, run_id: str, *, status: str, stop_reason: str | None = None, error: str = "") -> None:
        """Close a run: ``finished``, ``failed`` (with the error) or ``interrupted``."""
        if status not in FINAL_STATUSES:
            raise StorageError(f"a run can finish as {', '.join(FINAL_STATUSES)}, not {status!r}")
        run = self.load_run(run_id)
        with self._write() as db:
            row = db.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is not None and row[0] == "finished" and status != "finished":
                raise StorageError(f"run {run_id} is already finished; it cannot become {status}")
            db.execute(
                "UPDATE runs SET status = ?, stop_reason = ?, error = ?, updated = ?, lease_until = NULL WHERE id = ?",
                [status, stop_reason, error, _now(), run_id],
            )
            if run.turns:
                self._set_metrics(db, run_id, run)

    def reopen_run(self, run_id: str, *, turns: int | None = None, lease_seconds: float | None = None) -> None:
        """Claim a run for resuming: ``running`` again, owned by this process.

        Everything is checked inside the one ``BEGIN IMMEDIATE`` transaction that claims the run, so
        two resumes racing for it cannot both pass the checks. ``turns`` is the number of turns the
        caller loaded: if the run has moved on since, the caller's copy is stale and is refused.
        ``lease_seconds``: the app holds resumed runs under a lease; the command line does not.

        Raises:
            StorageError: unknown run, a finished run, a run another live writer holds, or a run
                that changed since the caller loaded it.
        """
        host = socket.gethostname()
        with self._write() as db:
            row = db.execute(
                "SELECT status, stop_reason, n_turns, pid, pid_start, host, heartbeat, lease_until FROM runs WHERE id = ?",
                [run_id],
            ).fetchone()
            if row is None:
                raise StorageError(_unknown_run(run_id))
            status, stop, n, pid, start, rhost, beat, lease_until = row
            if status == "finished":
                raise StorageError(f"run {run_id} is already finished ({stop}); nothing to resume")
            if status == "running" and pid and pid != os.getpid() and not self._writer_gone(pid, start, rhost, beat, lease_until):
                raise StorageError(f"run {run_id} is still being written by process {pid} on {rhost}; "
                                   "wait for it to finish or stop that process")
            if turns is not None and n != turns:
                raise StorageError(f"run {run_id} changed while it was being resumed (it has {n} turns now, "
                                   f"{turns} were loaded); resume it again")
            now = _now()
            lease = None if lease_seconds is None else float(lease_seconds)
            db.execute(
                "UPDATE runs SET status = 'running', stop_reason = NULL, error = '', pid = ?, pid_start = ?, "
                "host = ?, heartbeat = ?, updated = ?, lease_seconds = ?, lease_until = ? WHERE id = ?",
                [os.getpid(), _process_start(os.getpid()), host, now, now, lease,
                 None if lease is None else self._clock() + lease, run_id],
            )

    def load_run(self, run_id: str) -> RunRecord:
        with self._db() as db:
            row = db.execute("SELECT setup_json, stop_reason FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise StorageError(_unknown_run(run_id))
            rows = db.execute("SELECT record_json FROM turns WHERE run_id = ? ORDER BY turn", [run_id]).fetchall()
        try:
            data = {**_unpack(row[0]), "turns": [_unpack(r[0]) for r in rows], "run_id": run_id, "stop_reason": row[1]}
            return RunRecord.from_data(data)
        except FormatError as exc:
            raise StorageError(f"run {run_id} cannot be read back: {exc}") from None

    _R_SELECT = (
        "SELECT r.id, r.question_id, q.text, r.level, r.assistant, r.user, r.extractor, r.preset, r.seed, "
        "r.status, r.stop_reason, r.n_turns, r.kg, r.dc, r.co, r.created, r.updated, r.error, r.iq_score, "
        "r.tokens_in, r.tokens_out, r.cost_usd, r.graph_version_id, r.batch_tag "
        "FROM runs r JOIN questions q ON q.id = r.question_id"
    )

    def get_run_row(self, run_id: str) -> RunRow:
        with self._db() as db:
            row = db.execute(self._R_SELECT + " WHERE r.id = ?", [run_id]).fetchone()
        if row is None:
            raise StorageError(_unknown_run(run_id))
        return RunRow(*row)

    @staticmethod
    def _run_filters(
        question_id: str | None, level: str | None, assistant: str | None, status: str | Sequence[str] | None,
        text: str | None,
        graph_version_id: int | None = None, batch_tag: str | None = None,
    ) -> tuple[str, list[Any]]:
        where, args = [], []
        if isinstance(status, (tuple, list)):  # any of several statuses ("failed / interrupted only")
            where.append(f"r.status IN ({', '.join('?' * len(status))})")
            args += list(status)
            status = None
        for col, value in (("question_id", question_id), ("level", level), ("assistant", assistant), ("status", status),
                           ("graph_version_id", graph_version_id), ("batch_tag", batch_tag)):
            if value:
                where.append(f"r.{col} = ?")
                args.append(value)
        query = _fts_query(text or "")
        if query:
            where.append(
                "r.id IN (SELECT t.run_id FROM turns_fts f JOIN turns t ON t.rowid = f.rowid WHERE turns_fts MATCH ?)"
            )
            args.append(query)
        return (" WHERE " + " AND ".join(where) if where else ""), args

    def list_runs(
        self, *, question_id: str | None = None, level: str | None = None, assistant: str | None = None,
        status: str | Sequence[str] | None = None, text: str | None = None, graph_version_id: int | None = None,
        limit: int = 200, offset: int = 0, order: str = "created_desc", batch_tag: str | None = None,
    ) -> list[RunRow]:
        """Runs matching every given filter; ``text`` searches the transcripts (all words must occur)."""
        if order not in ORDERS:
            raise StorageError(f"unknown run order {order!r}; expected one of {', '.join(ORDERS)}")
        where, args = self._run_filters(question_id, level, assistant, status, text, graph_version_id, batch_tag)
        sql = f"{self._R_SELECT}{where} ORDER BY {ORDERS[order]} LIMIT ? OFFSET ?"
        with self._db() as db:
            return [RunRow(*r) for r in db.execute(sql, [*args, int(limit), int(offset)]).fetchall()]

    def count_runs(
        self, *, question_id: str | None = None, level: str | None = None, assistant: str | None = None,
        status: str | Sequence[str] | None = None, text: str | None = None, graph_version_id: int | None = None,
        batch_tag: str | None = None,
    ) -> int:
        where, args = self._run_filters(question_id, level, assistant, status, text, graph_version_id, batch_tag)
        with self._db() as db:
            return db.execute(f"SELECT COUNT(*) FROM runs r{where}", args).fetchone()[0]

    def run_facts(
        self, *, question_id: str | None = None, level: str | None = None, assistant: str | None = None,
        preset: str | None = None, status: str = "finished", limit: int | None = None,
    ) -> list[RunFacts]:
        """The population of the cross-run views (Failure modes page, ``failures`` command).

        Runs with at least one turn that match every filter, newest first. ``status`` is one of
        :data:`~knowsim_core.analysis.STATUS_CHOICES` ("finished" by default: a run stopped at
        turn 1 is not averaged with finished ones unless asked). Every filter is applied in SQL
        before ``limit``. Mode counts come from the per-turn columns in the same query; a run with
        no stored metrics (still running, or its writer died) is read back record by record.
        """
        if status not in STATUS_CHOICES:
            raise StorageError(f"unknown status filter {status!r}; expected one of {', '.join(STATUS_CHOICES)}")
        where, args = ["r.n_turns > 0"], []
        for col, value in (("question_id", question_id), ("level", level), ("assistant", assistant), ("preset", preset)):
            if value:
                where.append(f"r.{col} = ?")
                args.append(value)
        if status != "all":
            where.append("r.status = 'finished'" if status == "finished" else "r.status != 'finished'")
        cols = ("redundant", "prereq_blocked", "effective", "overload_wasted", "under_absorbed")
        sums = ", ".join(f"SUM(t.{c})" for c in cols)
        firsts = ", ".join(f"MIN(CASE WHEN t.{c} > 0 THEN t.turn END)" for c in cols)
        sql = (
            "WITH sel AS (SELECT r.rowid AS rk, r.id, r.question_id, r.level, r.assistant, r.preset, r.seed, r.status, "
            f"r.kg, r.dc, r.co, r.n_turns, r.created FROM runs r WHERE {' AND '.join(where)} "
            "ORDER BY r.created DESC, r.rowid DESC" + (" LIMIT ?" if limit is not None else "") + ") "
            f"SELECT sel.id, sel.question_id, sel.level, sel.assistant, sel.preset, sel.seed, sel.status, sel.kg, "
            f"sel.dc, sel.co, sel.n_turns, {sums}, {firsts} FROM sel JOIN turns t ON t.run_id = sel.id "
            "GROUP BY sel.id ORDER BY sel.created DESC, sel.rk DESC"
        )
        with self._db() as db:
            rows = db.execute(sql, [*args, *([int(limit)] if limit is not None else [])]).fetchall()
        out = []
        for rid, qid, lv, asst, pre, seed, st, kg, dc, co, n, *modes in rows:
            if None in (kg, dc, co):
                out.append(run_facts(self.load_run(rid), run_id=rid, status=st))
            else:
                out.append(facts_from_summary(
                    run_id=rid, question_id=qid, level=lv, assistant=asst, preset=pre, kg=kg, dc=dc, co=co,
                    turns=n, mode_counts=modes[:5], first_turn=modes[5:], seed=seed, status=st,
                ))
        return out

    def run_values(self, column: str) -> list[str]:
        """The distinct values of a run column the filters offer (``assistant``, ``preset``, ``level``)."""
        if column not in ("assistant", "preset", "level", "question_id"):
            raise StorageError(f"runs cannot be listed by {column!r}")
        with self._db() as db:
            return [r[0] for r in db.execute(f"SELECT DISTINCT {column} FROM runs ORDER BY {column}").fetchall()]

    # ------------------------------------------------------------------ batches
    def save_batch(self, tag: str, spec: dict[str, Any]) -> None:
        """Record a batch's matrix under its tag (what ``batch --resume TAG`` replays).

        Raises:
            StorageError: the tag is taken.
        """
        with self._write() as db:
            if db.execute("SELECT 1 FROM batches WHERE tag = ?", [tag]).fetchone():
                raise StorageError(f"batch tag {tag!r} exists; continue it with --resume {tag} or choose another --tag")
            db.execute("INSERT INTO batches (tag, created, spec_json) VALUES (?, ?, ?)",
                       [tag, _now(), json.dumps(spec, ensure_ascii=False, sort_keys=True)])

    def get_batch(self, tag: str) -> dict[str, Any] | None:
        """The matrix stored for a batch tag, or None."""
        with self._db() as db:
            row = db.execute("SELECT spec_json FROM batches WHERE tag = ?", [tag]).fetchone()
        return json.loads(row[0]) if row else None

    def token_totals(self, agent_ids: list[str], *, limit: int = 500) -> list[tuple[str, str, str, int, int, int]]:
        """(assistant, user, extractor, turns, tokens in, tokens out) of recent runs that used any of
        ``agent_ids`` and spent tokens — what a batch estimate averages over."""
        if not agent_ids:
            return []
        marks = ", ".join("?" * len(agent_ids))
        with self._db() as db:
            return db.execute(
                f"SELECT assistant, user, extractor, n_turns, tokens_in, tokens_out FROM runs "
                f"WHERE n_turns > 0 AND tokens_in > 0 AND (assistant IN ({marks}) OR user IN ({marks}) "
                f"OR extractor IN ({marks})) ORDER BY created DESC LIMIT ?",
                [*agent_ids, *agent_ids, *agent_ids, int(limit)],
            ).fetchall()

    def mode_summaries(self, run_ids: list[str]) -> dict[str, tuple[tuple[int, ...], tuple[int | None, ...]]]:
        """Per run: failure-mode totals and the first turn showing each mode (FailureMode order),
        from the per-turn scalar columns — no turn record is parsed."""
        cols = ("redundant", "prereq_blocked", "effective", "overload_wasted", "under_absorbed")
        sums = ", ".join(f"SUM({c})" for c in cols)
        firsts = ", ".join(f"MIN(CASE WHEN {c} > 0 THEN turn END)" for c in cols)
        out: dict[str, tuple[tuple[int, ...], tuple[int | None, ...]]] = {}
        with self._db() as db:
            for i in range(0, len(run_ids), 500):  # stay under SQLite's bound-parameter limit
                chunk = run_ids[i : i + 500]
                marks = ", ".join("?" * len(chunk))
                for row in db.execute(
                    f"SELECT run_id, {sums}, {firsts} FROM turns WHERE run_id IN ({marks}) GROUP BY run_id", chunk
                ):
                    out[row[0]] = (tuple(int(v) for v in row[1:6]), tuple(row[6:11]))
        return out

    def delete_run(self, run_id: str) -> None:
        with self._write() as db:
            if db.execute("DELETE FROM runs WHERE id = ?", [run_id]).rowcount == 0:
                raise StorageError(_unknown_run(run_id))

    def set_judgement(self, run_id: str, *, score: float, rationale: str, model: str) -> None:
        """Store the IQ judge's score (1–10) for a run."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE runs SET iq_score = ?, iq_rationale = ?, iq_model = ?, updated = ? WHERE id = ?",
                [float(score), rationale, model, _now(), run_id],
            )
            if cur.rowcount == 0:
                raise StorageError(_unknown_run(run_id))

    def get_judgement(self, run_id: str) -> tuple[float, str, str] | None:
        """(score, rationale, model) or None when the run was not judged."""
        with self._db() as db:
            row = db.execute("SELECT iq_score, iq_rationale, iq_model FROM runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise StorageError(_unknown_run(run_id))
        return None if row[0] is None else (row[0], row[1], row[2])


PROCESS_DIED = "the process writing this run stopped before it finished"
LEASE_LAPSED = "the browser session playing this run went away before it finished; resume it from Saved runs"


def _unknown_run(run_id: str) -> str:
    return f"unknown run id {run_id!r}; `python -m knowsim_core runs` lists the stored runs"


def _fts_query(text: str) -> str:
    """User text as an FTS5 query: every word quoted (no syntax errors), all must occur."""
    words = [w.replace('"', '""') for w in text.replace("\x00", " ").split()]
    return " ".join(f'"{w}"' for w in words if w)

def _graph_json(graph: IUGraph) -> str:
    return json.dumps(graph.to_data(), ensure_ascii=False, sort_keys=True)


__all__ = ["Store", "QuestionRow", "GraphVersion", "RunRow", "SCHEMA_VERSION", "STATUSES", "default_path"]


def _pack(data: Any) -> bytes:
    """A record as stored: JSON without spaces, zlib-compressed.

    A 15-turn offline run is ~140 KB of JSON and ~30 KB packed (``benchmarks/storage.py``); the
    per-IU labels, states and rationales repeat keys and text that compress well. Records are
    read back only through :meth:`Store.load_run` (never queried in SQL), and the CLI's
    ``export RUN_ID --format studio-json`` gives the readable JSON.
    """
    return zlib.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)


def _unpack(value: bytes | str) -> Any:
    """Read a stored record: packed (schema 2) or plain JSON text (schema 1).

    Raises:
        FormatError: the record is damaged.
    """
    try:
        if isinstance(value, bytes):
            value = zlib.decompress(value).decode("utf-8")
        return json.loads(value)
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"a stored record is damaged ({exc})") from None
