"""The database file deleted (or moved) while the Studio has it open (issue 49, item 7).

Old behaviour these tests catch: every page of the running app showed a ``StorageError … no such
table`` traceback, and each connection SQLite opened recreated the file, empty (0 bytes) — a file
that then looked like a damaged database. Now the storage layer never creates the file again once
it has opened it: every call says, in one line, that the database is gone and where it was; the app
shows that line on every page and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.errors import StorageError
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from tests.test_storage import stored_run

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 60
GONE = "is gone"


def delete(path: Path) -> None:
    """The database and its WAL companions, as a user deleting the file by hand (or moving it) does."""
    for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        f.unlink(missing_ok=True)


@pytest.fixture()
def stored(db_path):
    store = Store(db_path)
    rid, _ = stored_run(store)
    return store, rid, store.runs.load(rid)


@pytest.mark.parametrize("call", [
    lambda s, rid, run: s.search.list(),
    lambda s, rid, run: s.search.count(RunFilter(text="lava")),
    lambda s, rid, run: s.runs.load(rid),
    lambda s, rid, run: s.runs.save(run),
    lambda s, rid, run: s.questions.list(),
    lambda s, rid, run: s.caches.cache_put("k", "v"),
    lambda s, rid, run: s.schema_version,
], ids=["list", "count", "load", "save", "questions", "cache", "schema"])
def test_every_call_on_a_deleted_database_says_it_is_gone_and_recreates_nothing(stored, db_path, call):
    store, rid, run = stored
    delete(db_path)
    with pytest.raises(StorageError) as err:
        call(store, rid, run)
    msg = str(err.value)
    assert GONE in msg and str(db_path) in msg and "\n" not in msg and "no such table" not in msg
    assert not db_path.exists()  # old code: an empty file, made by the connection that failed


def test_a_read_only_store_says_so_too(stored, db_path):
    reader = Store(db_path, read_only=True)
    delete(db_path)
    with pytest.raises(StorageError, match=GONE):
        reader.search.list()
    assert not db_path.exists()


def test_a_conversation_holding_a_connection_keeps_its_file_and_the_next_one_is_refused(stored, db_path):
    """A pinned connection (a batch's conversation) opened before the deletion is SQLite's own
    business; the next connection is refused, not created."""
    store, rid, _ = stored
    with store.pinned():
        delete(db_path)
        assert [r.id for r in store.search.list()] == [rid]  # the open file, unlinked but still readable
    with pytest.raises(StorageError, match=GONE):
        store.search.list()


def test_the_file_put_back_is_used_again(stored, db_path, tmp_path):
    store, rid, _ = stored
    moved = tmp_path / "elsewhere.db"
    store.integrity_check()  # (a WAL file may still hold the last commits: move the three files)
    for suffix in ("", "-wal", "-shm"):
        src = db_path.with_name(db_path.name + suffix)
        if src.exists():
            src.rename(moved.with_name(moved.name + suffix))
    with pytest.raises(StorageError, match=GONE):
        store.search.list()
    for suffix in ("", "-wal", "-shm"):
        src = moved.with_name(moved.name + suffix)
        if src.exists():
            src.rename(db_path.with_name(db_path.name + suffix))
    assert [r.id for r in store.search.list()] == [rid]


def test_a_new_database_is_still_made_where_none_was(tmp_path):
    path = tmp_path / "sub" / "new.db"
    Store(path).questions.seed_samples()
    assert path.stat().st_size > 0


PAGES = ["pages/home.py", "pages/questions.py", "pages/simulate.py", "pages/batch.py", "pages/graph.py",
         "pages/failures.py", "pages/runs.py", "pages/realism.py", "pages/agreement.py"]


def test_the_app_says_in_one_line_on_every_page_that_the_database_is_gone(db, stored):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and not at.error
    delete(db)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and GONE in errors[0] and str(db) in errors[0], (page, errors)
        assert "\n" not in errors[0].strip()
        assert not db.exists(), page  # old code: a 0-byte file, recreated by the first query
