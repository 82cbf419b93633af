"""``Store``: the one object the rest of the Studio holds — one database file and its repositories.

It opens the file once (check, migrate, mark the runs of dead writers), then each repository
opens its own fresh connection per call through the shared :class:`~.connection.Connection`.
Callers reach the data through the repositories, each the one owner of its tables:

* ``store.questions`` (:class:`~.questions.Questions`): questions, their graph versions, the samples;
* ``store.runs`` (:class:`~.runs.Runs`): create, append turns, finish, reopen, load, delete, tags, leases;
* ``store.search`` (:class:`~.run_search.RunSearch`): which runs — pages, counts, batch groups,
  cross-run facts — each taking one :class:`~.run_filter.RunFilter`; stored batch matrices;
* ``store.caches`` (:class:`~.caches.Caches`): initial states, IQ judgements, and the LLM
  response cache (it is the ``ResponseCache`` a model is given: ``cache=store.caches``);
* ``store.judgments`` (:class:`~.judgments.Judgments`, made on first use): 👍/👎 on turns;
* ``store.cells`` (:class:`~.batch_cells.BatchCells`): which process plays which cell of a batch.

``Store`` itself keeps only what belongs to the file: opening, checking and migrating it, ``path``,
``read_only``, ``schema_version``, ``integrity_check()``, ``check_present()`` (still there, not deleted
or moved since it was opened), ``transaction()`` and ``pinned()`` (which
span every repository, since they share the connection). It forwards no repository's methods
(``store.load_run`` beside ``store.runs.load`` would be two names for every operation, and a second
place to change a signature); ``tests/test_store_facade.py`` keeps it so.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from knowsim_core.errors import StorageError
from knowsim_core.storage.batch_cells import BatchCells
from knowsim_core.storage.caches import Caches
from knowsim_core.storage.connection import Connection, default_path
from knowsim_core.storage.judgments import Judgments
from knowsim_core.storage.migrations import check_file, migrate
from knowsim_core.storage.questions import Questions
from knowsim_core.storage.run_search import RunSearch
from knowsim_core.storage.runs import Runs


class Store:
    """All persistent data of the Studio in one SQLite file (see the package docstring).

    Args:
        path: the database file (default ``$KNOWSIM_DB`` or ``~/.knowsim/studio.db``).
        clock: Unix seconds; leases are judged by it (tests pass a fake one).
        read_only: open for reading only; by default, when the file or its folder is not writable.
    """

    def __init__(self, path: str | Path | None = None, *, clock: Callable[[], float] = time.time,
                 read_only: bool | None = None):
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._conn = Connection(self.path, read_only=read_only)
        check_file(self.path)
        if not self._conn.read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create the folder for the database {self.path}: {exc}") from None
        migrate(self._conn)
        self.questions = Questions(self._conn)
        self.runs = Runs(self._conn, clock=clock)
        self.search = RunSearch(self._conn, self.runs)
        self.caches = Caches(self._conn)
        self._judgments: Judgments | None = None
        self.cells = BatchCells(self._conn, clock=clock)
        try:  # the dead-run sweep at open: runs whose writer died read as interrupted from here on
            self.runs.mark_dead()
        except StorageError as exc:
            if "disk is full" not in str(exc) and "No space left" not in str(exc):
                raise
            # a full disk must not stop reading: dead writers' runs stay listed as running until
            # there is room to mark them (the next opening does)

    def check_present(self) -> None:
        """Raise a one-line StorageError when the file was deleted or moved since it was opened
        (every call would say so too; the app asks once per page, before drawing anything)."""
        self._conn.check_present()

    @property
    def read_only(self) -> bool:
        """True when every write is refused (the file or its folder is not writable, or asked so)."""
        return self._conn.read_only

    @contextmanager
    def transaction(self) -> Iterator["Store"]:
        """Group many calls of this thread into one write transaction (bulk imports).

        Inside the block every repository of this store, on this thread, shares one connection and
        one ``BEGIN IMMEDIATE`` transaction: all of it is committed at the end, or none of it.
        """
        with self._conn.transaction():
            yield self

    @contextmanager
    def pinned(self) -> Iterator["Store"]:
        """Reuse one connection for this thread's calls in the block (e.g. one conversation's
        turns); each write stays its own transaction."""
        with self._conn.pinned():
            yield self

    @property
    def schema_version(self) -> int:
        """The file's schema version (``PRAGMA user_version``; :data:`~.migrations.SCHEMA_VERSION` once migrated)."""
        with self._conn.db() as db:
            return db.execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        """SQLite's verdict on the whole file: ``"ok"``, or what is broken."""
        with self._conn.db() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]

    @property
    def judgments(self) -> Judgments:
        """The judgments repository (made on first use, as most commands and a batch use none)."""
        if self._judgments is None:
            self._judgments = Judgments(self._conn)
        return self._judgments
