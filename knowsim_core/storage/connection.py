"""One connection helper under every repository: how the Studio's SQLite file is opened.

* **A fresh connection per call.** Streamlit runs every script on its own thread and sqlite3
  connections are bound to the thread that made them, so nothing holds a connection between
  calls; :meth:`Connection.transaction` shares one only for the calls of one block on one thread,
  and :meth:`Connection.pinned` keeps one open for a long series of calls on one thread (a whole
  conversation): opening a connection costs more than appending a turn, and closing the last one
  to a WAL file checkpoints it, so a batch that opened one per turn spent most of its time there.
* **WAL + ``busy_timeout`` + ``BEGIN IMMEDIATE``.** Readers never block the writer, and a writer
  takes the write lock up front instead of upgrading a read lock half-way (which is what makes
  deferred transactions fail with "database is locked" under several writing processes). A writer
  that finds the lock taken waits in SQLite's own busy handler, up to ``BUSY_TIMEOUT_MS``.
* **Read-only files open read-only.** A database whose file or folder this process may not write
  (``os.access``, see :func:`writable`) — or one opened with ``read_only=True`` — is opened with
  SQLite's ``mode=ro`` URI, so SQLite itself refuses every write, even for root. A WAL database in
  a read-only folder cannot create its ``-shm`` file even to read; then it is opened
  ``immutable=1``, which is safe there because no writer can create the ``-wal`` it would need.
  Any write then fails with one message saying what to do (:meth:`Connection.read_only_error`).
* **A file is created once.** The first connection to a new path creates the file; after that every
  connection opens it with SQLite's ``mode=rw`` (or ``mode=ro``), which never creates one. A
  database deleted or moved while the Studio has it open is then one line saying so
  (:meth:`Connection.gone_error`) on every call, instead of an empty file made by the next
  connection and a "no such table" traceback on every page. Put back, the file is used again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import zlib
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from knowsim_core.errors import FormatError, StorageError


def table_helpers() -> ModuleType:
    """sqlite-utils (its ``Database`` and ``Migrations``), imported on first use: the Studio's one
    import of it. Importing it imports pandas whenever pandas is installed (~0.5 s; Streamlit brings
    it), which the repositories' own SQL never needs: only creating or migrating tables does."""
    import sqlite_utils

    return sqlite_utils


class Database:
    """One open connection as the repositories use it: ``execute`` and ``conn`` are sqlite3's own;
    ``utils`` is sqlite-utils' ``Database`` over the same connection, for the migrations.

    The repositories read and write with their own SQL on sqlite3; sqlite-utils is imported only
    where the Studio creates or migrates its tables (a new file, an older schema). Importing it
    imports pandas whenever pandas is installed (~0.5 s; Streamlit brings it), which a command
    listing runs or a batch worker appending turns should not pay. What its ``Database`` did to
    every connection it wrapped (``PRAGMA recursive_triggers``) :meth:`Connection._open` does itself.
    """

    __slots__ = ("conn", "_utils")

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._utils: Any = None

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        return self.conn.execute(sql) if parameters is None else self.conn.execute(sql, parameters)

    @property
    def utils(self) -> Any:
        """sqlite-utils' ``Database`` over this connection, made on first use (migrations take one)."""
        if self._utils is None:
            self._utils = table_helpers().Database(self.conn, recursive_triggers=False)
        return self._utils


DEFAULT_DB = Path("~/.knowsim/studio.db")
ENV_DB = "KNOWSIM_DB"
BUSY_TIMEOUT_MS = 60_000
SQLITE_HEADER = b"SQLite format 3\x00"


def default_path() -> Path:
    """``$KNOWSIM_DB`` or ``~/.knowsim/studio.db``."""
    return Path(os.environ.get(ENV_DB) or DEFAULT_DB).expanduser()


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def writable(path: Path) -> bool:
    """Whether this process may write the database file and create its journal beside it.

    The one check that decides read-only opening; tests fake a read-only file by replacing it
    (as root, ``chmod`` does not stop writes, and ``os.access`` says so).
    """
    folder = path.parent if path.parent != Path("") else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        return False
    return os.access(folder, os.W_OK) if folder.exists() else True


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection SQLite will not write through (see the module docstring for ``immutable``)."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute("PRAGMA user_version").fetchone()  # opens the file (and the WAL index) now
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise  # e.g. locked: reading it immutable could show a half-written state
    # a WAL file in a folder we cannot write: its -shm cannot be created, so read the file as it is
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)


class Connection:
    """Opens the database file for the repositories: per call, or shared inside one transaction."""

    def __init__(self, path: Path, *, read_only: bool | None = None):
        self.path = path
        if path.is_dir():
            raise StorageError(f"{path} is a folder; --db / KNOWSIM_DB must name a database file")
        self.read_only = (path.exists() and not writable(path)) if read_only is None else bool(read_only)
        if self.read_only and not path.exists():
            raise StorageError(f"{path} does not exist, so it cannot be opened read-only; "
                               "point --db or KNOWSIM_DB at an existing database")
        self._made = path.exists()  # from now on the file must be there: no connection creates it again
        self._rw_uri = f"{Path(os.path.abspath(path)).as_uri()}?mode=rw"  # built once: ~12 µs, a tenth of an open
        self._local = threading.local()

    def read_only_error(self) -> StorageError:
        return StorageError(
            f"{self.path} is open read-only (the file or its folder is not writable), so nothing can be "
            "saved or deleted; copy it to a writable folder or fix its permissions to change it"
        )

    def gone_error(self) -> StorageError:
        return StorageError(
            f"the database {self.path} is gone: it was deleted or moved while the Studio had it open, and "
            "nothing more is written there; put the file back, or start the Studio again to begin a new one"
        )

    def check_present(self) -> None:
        """Raise :meth:`gone_error` when the file, once opened, is no longer there."""
        if self._made and not self.path.exists():
            raise self.gone_error()

    def _open(self) -> sqlite3.Connection:
        try:
            conn = self._connect()
        except sqlite3.OperationalError:
            self.check_present()  # "unable to open database file": say why, when that is why
            raise
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA recursive_triggers = ON")  # as sqlite-utils' Database set it, which wrapped every connection
        if not self.read_only:
            # WAL + NORMAL: a commit survives any crash of this process (SIGKILL included: the
            # crash tests check it); only a power cut may lose the last few commits, never corrupt
            # the file. FULL would fsync on every turn, most of a turn's storage time.
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return connect_read_only(self.path)
        if self._made:  # mode=rw: SQLite opens the file or fails; it never creates one
            return sqlite3.connect(self._rw_uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        self._made = True
        return conn

    @contextmanager
    def db(self) -> Iterator[Database]:
        """A connection in autocommit mode (fresh, or this thread's pinned one); sqlite errors
        become StorageError."""
        shared = getattr(self._local, "db", None)
        if shared is not None:  # inside transaction(): reuse its connection
            yield shared
            return
        pinned = getattr(self._local, "pinned", None)
        conn = None
        try:
            if pinned is not None:
                yield pinned
            else:
                conn = self._open()
                yield Database(conn)
        except sqlite3.Error as exc:
            if self.read_only and "readonly" in str(exc):
                raise self.read_only_error() from None
            raise StorageError(f"database {self.path}: {exc}") from None
        finally:
            if conn is not None:
                conn.close()

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Keep one connection open for this thread's calls inside the block.

        Every write still is its own ``BEGIN IMMEDIATE`` transaction (one per turn), so other
        processes interleave exactly as before; only the opening and closing are saved.
        """
        if getattr(self._local, "pinned", None) is not None or getattr(self._local, "db", None) is not None:
            yield
            return
        try:
            conn = self._open()
        except sqlite3.Error as exc:
            raise StorageError(f"database {self.path}: {exc}") from None
        self._local.pinned = Database(conn)
        try:
            yield
        finally:
            self._local.pinned = None
            conn.close()

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One ``BEGIN IMMEDIATE`` … ``COMMIT`` transaction (rolled back on any error)."""
        if self.read_only:
            raise self.read_only_error()
        if getattr(self._local, "db", None) is not None:  # already inside transaction()
            yield self._local.db
            return
        with self.db() as db:
            begin_immediate(db.conn)  # waits for another writer up to the busy timeout
            try:
                yield db
            except BaseException:
                db.conn.rollback()
                raise
            db.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Share one connection and one write transaction among this thread's calls in the block."""
        if getattr(self._local, "db", None) is not None:
            yield
            return
        with self.write() as db:
            self._local.db = db
            try:
                yield
            finally:
                self._local.db = None


def insert_row(db: Database, table: str, row: dict[str, Any]) -> int:
    """Plain ``INSERT`` of one row, returning its rowid: sqlite-utils' ``table.insert()``
    introspects the table (a dozen PRAGMA queries) on every call, which cost more than the write
    itself on the hot path (a run per conversation, a turn per step of a batch, the samples seeded
    into a new file)."""
    cur = db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     list(row.values()))
    return int(cur.lastrowid)


def update_row(db: Database, table: str, row_id: Any, values: dict[str, Any]) -> None:
    """Plain ``UPDATE`` of the row of ``table`` whose ``id`` is ``row_id``."""
    db.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in values)} WHERE id = ?", [*values.values(), row_id])


def exists(db: Database, table: str, where: str, args: list[Any]) -> bool:
    """Whether a row of ``table`` matches ``where`` (sqlite-utils' ``count_where`` asked SQLite for
    the table and view names first, on every call)."""
    return db.execute(f"SELECT 1 FROM {table} WHERE {where} LIMIT 1", args).fetchone() is not None


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" in any of its forms. Python reports the
    *extended* result code: SQLITE_BUSY_RECOVERY (261), SQLITE_BUSY_SNAPSHOT (517) and
    SQLITE_BUSY_TIMEOUT (773) are SQLITE_BUSY (5) in their low byte. Comparing with 5 alone let a
    variant through as a failure: four batch commands racing on a new file ended one of them with
    "database is locked" under load (the likely path: in WAL mode BEGIN IMMEDIATE answers
    SQLITE_BUSY_SNAPSHOT when another writer commits between its read lock and its write lock, and
    with the busy timeout off SQLite does not retry it itself)."""
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_BUSY


def begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting for another writer's commit in short steps, up to ``BUSY_TIMEOUT_MS``.

    SQLite's own busy handler sleeps 1, 2, 5, 10, … ms between tries, however soon the lock is
    free: a batch worker that found the other one committing (a commit holds the lock ~0.2–1 ms)
    slept a millisecond or more, ~20 times per worker on the offline matrix, its core idle. Here
    the tries come after 50 µs, doubling up to 5 ms; the busy timeout is off only for this statement.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 50e-6
    conn.execute("PRAGMA busy_timeout = 0")  # a taken lock answers SQLITE_BUSY at once
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def pack(data: Any) -> bytes:
    """A record as stored: JSON without spaces, zlib-compressed.

    A 15-turn offline run is ~140 KB of JSON and ~35 KB packed (``benchmarks/storage.py``); the
    per-IU labels, states and rationales repeat keys and text that compress well. Records are
    read back only through ``load_run`` (never queried in SQL), and the CLI's
    ``export RUN_ID --format studio-json`` gives the readable JSON.
    """
    # level 3: half the time of the default 6 for ~8% more bytes (12 KB of turn JSON: 77 µs, 2.35 KB)
    return zlib.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 3)


def unpack(value: bytes | str) -> Any:
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
