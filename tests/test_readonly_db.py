"""A read-only database opens read-only; a foreign SQLite file is refused before anything is written.

Tests run as root in CI, where ``chmod`` does not stop writes and ``os.access`` says every file is
writable. So non-writability is faked through the one check the store uses to decide
(``knowsim_core.storage.connection.writable``), or asked for with ``Store(path, read_only=True)``.
Either way the file is then opened with SQLite's ``mode=ro`` URI, which SQLite enforces for root
too — the digests below prove nothing was written. A WAL file in a read-only folder (where SQLite
cannot create the ``-shm`` it needs even to read; seen as a non-root user, reported as "damaged"
before) is reproduced by making the ``mode=ro`` open fail the way it fails there — and, where root
can drop to ``nobody`` with ``setpriv``, for real in a 0555 folder with no fake at all.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from knowsim_core.errors import StorageError
from knowsim_core.formats import csv_export, studio
from knowsim_core.storage import SCHEMA_VERSION, Store, connection
from knowsim_core.storage.run_filter import RunFilter
from tests.test_storage import digest, stored_run

READ_ONLY = "open read-only"


def built(db_path):
    """A database with one stored 15-turn run, its WAL folded into the main file."""
    store = Store(db_path)
    rid, _ = stored_run(store)
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return rid


def check_read_only(store: Store, rid: str, db_path) -> None:
    before = digest(db_path)
    assert store.read_only
    rows = store.search.list()
    assert [r.id for r in rows] == [rid] and store.search.count(RunFilter(text="lava")) == 1
    assert store.search.count(RunFilter(find="teach")) == 1 and store.search.values("assistant") == ["test/teacher"]
    run = store.runs.load(rid)
    assert studio.loads(studio.dumps(run)) == run and csv_export.dumps(run)
    assert store.questions.list() and store.questions.latest_graph_version(run.question_id) is not None
    assert store.runs.mark_dead() == []
    writes = (
        lambda: store.runs.save(run),
        lambda: store.runs.delete([rid]),
        lambda: store.questions.add(text="a new question"),
        lambda: store.caches.cache_put("k", "v"),
        lambda: store.caches.set_judgement(rid, score=5, rationale="", model="m"),
        lambda: store.runs.finish(rid, status="interrupted"),
    )
    for write in writes:
        with pytest.raises(StorageError, match=f"{READ_ONLY}.*copy it to a writable folder"):
            write()
    assert digest(db_path) == before


def test_a_file_this_process_cannot_write_opens_read_only(db_path, monkeypatch):
    rid = built(db_path)
    monkeypatch.setattr(connection, "writable", lambda path: False)  # what os.access says for a 0444 file
    check_read_only(Store(db_path), rid, db_path)


def test_read_only_on_request_is_enforced_by_sqlite_itself(db_path):
    rid = built(db_path)
    store = Store(db_path, read_only=True)
    check_read_only(store, rid, db_path)
    before = digest(db_path)
    with pytest.raises(StorageError, match=READ_ONLY):  # past the store's own check: SQLite refuses (mode=ro)
        with store._conn.db() as db:
            db.execute("DELETE FROM runs")
    assert digest(db_path) == before and Store(db_path).search.count() == 1


def test_a_wal_file_in_a_read_only_folder_is_read_not_called_damaged(db_path, monkeypatch):
    rid = built(db_path)
    real = sqlite3.connect

    def no_shm(target, *a, **kw):  # what a non-root user gets for `mode=ro` on a WAL file in a 0555 folder
        if "mode=ro" in str(target):
            conn = real(target, *a, **kw)
            conn.close()
            return _Failing()
        return real(target, *a, **kw)

    monkeypatch.setattr(connection.sqlite3, "connect", no_shm)
    monkeypatch.setattr(connection, "writable", lambda path: False)
    check_read_only(Store(db_path), rid, db_path)


class _Failing:
    def execute(self, *a):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    def close(self):
        pass


def test_a_read_only_file_that_needs_a_migration_says_how_to_upgrade(db_path):
    built(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="needs upgrading.*read-only; open it once from a writable folder"):
        Store(db_path, read_only=True)


def test_read_only_needs_an_existing_file(tmp_path):
    with pytest.raises(StorageError, match="does not exist"):
        Store(tmp_path / "missing.db", read_only=True)


@pytest.mark.parametrize("ddl, version", [
    ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", 2),  # another app's user_version
    ("CREATE TABLE runs (id TEXT PRIMARY KEY, started REAL)", 0),  # a table name we also use
    ("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)", 0),  # plain defaults
])
def test_a_foreign_sqlite_file_is_refused_before_the_switch_to_wal(db_path, ddl, version):
    conn = sqlite3.connect(db_path)
    conn.execute(ddl)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    before = digest(db_path)
    with pytest.raises(StorageError, match="another application.*use a new file"):
        Store(db_path)
    assert digest(db_path) == before
    assert db_path.read_bytes()[18:20] == b"\x01\x01"  # still a rollback-journal file, never switched to WAL
    conn = sqlite3.connect(db_path)
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")} == {ddl.split()[2]}
    conn.close()


NOBODY_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
SITE = Path(sysconfig.get_paths()["purelib"])
ROOT = Path(__file__).resolve().parent.parent
NOBODY_SCRIPT = """
import sys
sys.path[:0] = [{root!r}, {site!r}]
from knowsim_core.errors import StorageError
from knowsim_core.storage import Store
store = Store({db!r})
print(store.read_only, store.search.count(), len(store.runs.load(store.search.list()[0].id).turns))
try:
    store.runs.delete([store.search.list()[0].id])
except StorageError as exc:
    print(exc)
"""
# what the script imports, listed by a root process: the files nobody must be able to read. The
# storage layer imports the engine's records (a run's load) on first use, not when it is imported:
# they are imported here as the script's calls will (sqlite-utils is not: a current file is read
# and refused writes with sqlite3 alone).
NEEDED = """
import sys
sys.path[:0] = [{root!r}]
import knowsim_core.storage, knowsim_core.errors, knowsim_core.engine.records
site = {site!r}
tops = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    if f.startswith(site + "/"):
        tops.add(f[len(site) + 1:].split("/")[0])
print("\\n".join(sorted(tops)))
"""


def copy_for_nobody(dest: Path) -> tuple[Path, Path]:
    """Copy the checkout's package and the third-party packages it imports into ``dest`` (world
    readable): the checkout and the virtual environment may live where ``nobody`` cannot read —
    a 0700 home, a ``mktemp -d`` clone — which made this test fail in a private checkout."""
    root, site = dest / "src", dest / "site"
    shutil.copytree(ROOT / "knowsim_core", root / "knowsim_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-c", NEEDED.format(root=str(ROOT), site=str(SITE))],
                         capture_output=True, text=True, check=True)
    site.mkdir()
    for top in out.stdout.split():
        src = SITE / top
        if src.is_dir():
            shutil.copytree(src, site / top, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, site / top)
    for sub in (root, site):
        for path in [sub, *sub.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root, site


def traversable_by_others(path: Path) -> bool:
    """Whether a user other than the owner may reach ``path`` (every ancestor searchable by others)."""
    return all(p.stat().st_mode & 0o001 for p in path.resolve().parents)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not NOBODY_PYTHON.exists(),
                    reason="needs root, setpriv and a system Python of this version to drop to 'nobody'")
def test_as_a_real_unprivileged_user_a_read_only_folder_is_read(tmp_path):
    """The real case, without fakes: root builds the file, then a process as ``nobody`` opens it in a
    0555 folder (0444 file) — as root, chmod would stop nothing. What ``nobody`` runs is copied to
    a folder it can read first, so the test holds wherever the checkout lives."""
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's tmp_path is 0700 (root only)
    if not traversable_by_others(folder):
        shutil.rmtree(folder)
        pytest.skip(f"{folder.parent} cannot be entered by other users, so 'nobody' cannot reach any copy")
    try:
        folder.chmod(0o755)
        root, site = copy_for_nobody(folder)
        data = folder / "data"
        data.mkdir()
        built(data / "studio.db")
        script = folder / "check.py"
        script.write_text(NOBODY_SCRIPT.format(root=str(root), site=str(site), db=str(data / "studio.db")))
        script.chmod(0o644)
        (data / "studio.db").chmod(0o444)
        data.chmod(0o555)
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(NOBODY_PYTHON),
                              "-B", str(script)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-800:]
        first, refusal = out.stdout.splitlines()
        assert first == "True 1 15" and "is open read-only" in refusal and "copy it to a writable folder" in refusal
    finally:
        for path in folder.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)


def test_the_app_shows_a_read_only_database_on_every_page(db_path, monkeypatch):
    """Issue 35: the app's shared store seeded the sample questions on open — a write — so every page
    refused a read-only database ("open read-only … copy it") that the command line reads fine."""
    from streamlit.testing.v1 import AppTest

    rid = built(db_path)
    before = digest(db_path)
    monkeypatch.setattr(connection, "writable", lambda path: False)
    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
    for page in ("pages/home.py", "pages/runs.py", "pages/questions.py", "pages/failures.py", "pages/simulate.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        refusals = [e.value for e in at.error if READ_ONLY in e.value or "read-only" in e.value]
        assert not refusals, (page, refusals)
    assert digest(db_path) == before and Store(db_path).search.list()[0].id == rid
