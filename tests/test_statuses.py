"""Every status has one name (issue 44): the statuses are ``StrEnum``s in ``knowsim_core/vocab.py``.

A stored run's status (:class:`~knowsim_core.vocab.RunStatus`), a batch cell's outcome
(:class:`~knowsim_core.vocab.CellOutcome`), a cell claim's (:class:`~knowsim_core.vocab.ClaimOutcome`)
and a cross-run view's population (:class:`~knowsim_core.vocab.Population`) were loose strings —
``"finished"`` spelled 45 times in 18 files, ``"interrupted"`` 23 times in 11 — so a renamed or
misspelt status was found by no one. This scanner reads the package, ``ui/``, ``pages/``, ``app.py``
and ``benchmarks/`` and fails on a status written as a string outside its owner:

* a word that only ever names a status (``"interrupted"``, ``"not started"``, ``"unfinished"``)
  anywhere;
* a word that is also ordinary English or another field (``"finished"``, ``"running"``, ``"failed"``,
  ``"skipped"``, ``"lost"``, ``"mine"``, ``"taken"``, ``"done"``) where it stands for a status:
  compared with, passed as, assigned to or indexing something named status / outcome / counts, or
  a ``"status"`` entry's value;
* a run status quoted inside SQL (``status = 'running'``): the statements take it as a parameter.

Docstrings are prose and are not read. The migrations are history (the ``CHECK`` constraint of the
``runs`` table spells the statuses as they were stored) and are not read either.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from knowsim_core import vocab
from tests.test_vocabulary import _docstrings, _strings, _values

ROOT = Path(__file__).resolve().parent.parent
OWNER = Path("knowsim_core/vocab.py")
HISTORY = {Path("knowsim_core/storage/migrations.py")}

ALL_WORDS = {str(s) for enum in (vocab.RunStatus, vocab.CellOutcome, vocab.ClaimOutcome) for s in enum} | {
    str(vocab.Population.UNFINISHED)}
OWN_WORDS = {str(vocab.RunStatus.INTERRUPTED), str(vocab.CellOutcome.NOT_STARTED), str(vocab.Population.UNFINISHED)}
SHARED_WORDS = ALL_WORDS - OWN_WORDS
STATUSISH = re.compile(r"status|outcome|counts", re.IGNORECASE)
SQL_STATUS = re.compile(r"'(%s)'" % "|".join(map(re.escape, vocab.RUN_STATUSES)))


def _status_context(tree: ast.AST, skip: set[int]) -> list[ast.Constant]:
    """String constants that stand for a status (see the module docstring)."""
    out: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(STATUSISH.search(ast.unparse(o)) for o in operands if not isinstance(o, ast.Constant)):
                out += [c for o in operands for c in _values(o, skip) if isinstance(o, (ast.Constant, ast.Tuple,
                                                                                       ast.List, ast.Set))]
        elif isinstance(node, ast.keyword) and node.arg and STATUSISH.search(node.arg):
            out += _values(node.value, skip)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(STATUSISH.search(ast.unparse(t)) for t in targets):
                out += _values(node.value, skip)
        elif isinstance(node, ast.arg) and STATUSISH.search(node.arg):
            pass  # a default is read below, with its function
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)]
            out += [c for a, d in pairs if STATUSISH.search(a.arg) for c in _values(d, skip)]
        elif isinstance(node, ast.Subscript) and STATUSISH.search(ast.unparse(node.value)):
            out += _values(node.slice, skip)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and STATUSISH.search(k.value):
                    out += _values(v, skip)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "Outcome", "Claim", "Closing"):
            out += [c for a in node.args for c in _values(a, skip)]
    return out


def scan_python(text: str, where: str) -> list[str]:
    """Every status written as a string in this Python source, as ``where:line: what``."""
    tree = ast.parse(text)
    skip = _docstrings(tree)
    hits: list[str] = []
    for c in _strings(tree, skip):
        if c.value in OWN_WORDS:
            hits.append(f"{where}:{c.lineno}: status {c.value!r} (use the vocab enum)")
        found = SQL_STATUS.search(c.value)
        if found and c.value != found.group(0):
            hits.append(f"{where}:{c.lineno}: status {found.group(1)!r} in SQL (pass RunStatus as a parameter)")
    hits += [f"{where}:{c.lineno}: status {c.value!r} (use the vocab enum)"
             for c in _status_context(tree, skip) if c.value in SHARED_WORDS]
    return sorted(set(hits))


def scan_tree(root: Path) -> list[str]:
    paths = [*sorted((root / "knowsim_core").rglob("*.py")), *sorted((root / "ui").rglob("*.py")),
             *sorted((root / "pages").glob("*.py")), root / "app.py", *sorted((root / "benchmarks").glob("*.py"))]
    hits: list[str] = []
    for path in paths:
        rel = path.relative_to(root)
        if path.exists() and rel != OWNER and rel not in HISTORY:
            hits += scan_python(path.read_text(), str(rel))
    return hits


def test_no_status_literal_outside_its_owner():
    assert scan_tree(ROOT) == []


def test_the_words_are_the_stored_ones(tmp_path):
    """The database keeps readable strings: the enum values are those its runs table allows (the
    CHECK of migration 0001, widened by 0010 for "open")."""
    assert list(vocab.RUN_STATUSES) == ["running", "finished", "failed", "interrupted", "open"]
    from knowsim_core.storage import Store

    Store(tmp_path / "s.db")
    import sqlite3

    conn = sqlite3.connect(tmp_path / "s.db")
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
    conn.close()
    check = re.search(r"status TEXT NOT NULL CHECK \(status IN \(([^)]*)\)\)", sql)
    assert check and [w.strip(" '") for w in check.group(1).split(",")] == list(vocab.RUN_STATUSES)


@pytest.mark.parametrize("planted,what", [
    # as they were written before the enums
    ('STATUSES = ("running", "finished", "failed", "interrupted")\n', "status 'running'"),
    ('if row.status == "finished":\n    pass\n', "status 'finished'"),
    ('out.status, out.error = "failed", str(exc)\n', "status 'failed'"),
    ('store.runs.finish(rid, status="interrupted", error=STOP_ERROR)\n', "status 'interrupted'"),
    ('out = Outcome(cell.index, "not started")\n', "status 'not started'"),
    ('if claim.outcome != "mine":\n    pass\n', "status 'mine'"),
    ('return Claim("taken", holder=int(pid))\n', "status 'taken'"),
    ('done = counts["finished"] + counts["failed"]\n', "status 'finished'"),
    ('def facts(self, *, status: str = "finished"):\n    pass\n', "status 'finished'"),
    ('rows = db.execute("SELECT id FROM runs WHERE status = \'running\'")\n', "status 'running' in SQL"),
    ('rows.append({"status": "skipped", "turns": 0})\n', "status 'skipped'"),
])
def test_a_planted_status_literal_is_found(planted, what):
    assert any(what in hit for hit in scan_python(planted, "planted.py")), planted


@pytest.mark.parametrize("prose", [
    'print("stopping: nothing new starts; the runs in flight finish their turn")\n',
    'who = f"process {pid} {\'running\' if live else \'ended\'}"\n',
    'report = {"skipped": skipped, "turns": turns}\n',
])
def test_the_same_words_in_other_senses_are_left_alone(prose):
    assert scan_python(prose, "prose.py") == []
