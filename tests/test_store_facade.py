"""``Store`` is the database file and its repositories, not a second name for every operation.

It forwarded ~50 one-line methods (``store.load_run`` → ``store.runs.load``) until issue 32: every
operation had two names and every signature two places to change. These checks keep it so: no
method of ``Store`` may only hand its call to a repository, and no caller anywhere in the tree (the
package, the app, the tests, the benchmarks, scripts) may call one of the removed names on a store
(a call written in the old style would fail only when it runs, e.g. on a page nobody opened).
Both read the source with ``ast``, so they also see code that is not imported by any test.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from knowsim_core.storage import Store
from knowsim_core.storage.batch_cells import BatchCells
from knowsim_core.storage.caches import Caches
from knowsim_core.storage.questions import Questions
from knowsim_core.storage.run_search import RunSearch
from knowsim_core.storage.runs import Runs

ROOT = Path(__file__).resolve().parent.parent
STORE_PY = ROOT / "knowsim_core" / "storage" / "store.py"
# the repository attributes and their classes (judgments: its module loads pydantic, so by name)
REPOS = {"questions": Questions, "runs": Runs, "search": RunSearch, "caches": Caches, "cells": BatchCells,
         "judgments": None}
JUDGMENTS = {"add", "add_many", "list", "all", "remove"}
# what Store keeps: the file, its transactions and the lazily made judgments repository
OWN = {"read_only", "transaction", "pinned", "schema_version", "integrity_check", "check_present", "judgments"}
# the names Store forwarded before issue 32 (their callers moved to the repositories)
REMOVED = {
    "add_question", "list_questions", "get_question", "seed_samples", "add_graph_version", "graph_versions",
    "get_graph_version", "latest_graph_version", "graph_version_numbers", "set_initial_state",
    "get_initial_state", "cache_get", "cache_put", "set_judgement", "get_judgement", "add_judgment",
    "add_judgments", "list_judgments", "all_judgments", "remove_judgment", "create_run", "save_run",
    "append_turn", "finish_run", "reopen_run", "load_run", "delete_run", "delete_runs", "mark_dead_runs",
    "renew_lease", "get_run_row", "list_runs", "count_runs", "add_run_tags", "remove_run_tag", "run_tags",
    "all_run_tags", "run_graph_version_numbers", "run_values", "batch_groups", "recent_entries", "run_facts",
    "overload_series", "population_mix", "mixed_graph_versions", "token_totals", "save_batch", "get_batch",
    "list_batches", "claim_cell", "release_cell", "cell_holders", "batch_cell_counts",
}
SKIP = {".git", ".venv", "venv", "__pycache__", "node_modules"}


def forwarders(source: str) -> list[str]:
    """Methods of ``class Store`` whose body (past a docstring) is one call on ``self.<repository>``."""
    out = []
    for cls in ast.walk(ast.parse(source)):
        if not (isinstance(cls, ast.ClassDef) and cls.name == "Store"):
            continue
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = fn.body[1:] if (fn.body and isinstance(fn.body[0], ast.Expr)
                                   and isinstance(fn.body[0].value, ast.Constant)) else fn.body
            if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)):
                continue
            call = body[0].value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Attribute) and call.func.value.attr in REPOS
                    and isinstance(call.func.value.value, ast.Name) and call.func.value.value.id == "self"):
                out.append(f"Store.{fn.name} → self.{call.func.value.attr}.{call.func.attr}")
    return out


def other_owners(files: list[Path]) -> set[str]:
    """Removed names that some class other than Store, its doubles and the repositories defines
    (``cache_get`` / ``cache_put`` of the LLM response cache)."""
    names = set()
    for path in files:
        for cls in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(cls, ast.ClassDef) and "Store" not in cls.name:
                names |= {f.name for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return names & REMOVED


def storeish(e: ast.expr) -> bool:
    name = e.id if isinstance(e, ast.Name) else e.attr if isinstance(e, ast.Attribute) else ""
    if isinstance(e, ast.Call):
        f = e.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in ("Store", "store", "open_store", "get_store")
    return name in ("store", "_store", "db") or name.endswith("_store")


def repository_has(repo: str, name: str) -> bool:
    cls = REPOS[repo]
    return name in JUDGMENTS if cls is None else callable(getattr(cls, name, None))


def old_calls(files: list[Path], root: Path = ROOT) -> list[str]:
    """Calls of removed forwarding names on what may be a store, file:line (relative to ``root``) each."""
    shared = other_owners(files)
    found = []
    for path in files:
        tree = ast.parse(path.read_bytes())
        imported = {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                    if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        rebound = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arg) for a in [n]} | {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        modules = imported - rebound  # a fixture imported from another test module is a parameter too
        classes = {}
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef):
                for f in cls.body:
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        classes.setdefault(f.name, set()).add(cls.name)
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):  # scripts run by subprocess
                for name in REMOVED:
                    at = n.value.find(f".{name}(")
                    if at != -1 and not any(n.value[:at].endswith("." + r) for r in REPOS):
                        found.append(f"{path.relative_to(root)}:{n.lineno}: .{name}( in a string")
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in REMOVED):
                continue
            name, recv = n.func.attr, n.func.value
            if isinstance(recv, ast.Attribute) and recv.attr in REPOS and repository_has(recv.attr, name):
                continue  # e.g. store.search.batch_groups: the repository's own name
            if isinstance(recv, ast.Name) and recv.id in modules:
                continue  # a module's function (facts.run_facts)
            if (isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id in modules
                    and recv.attr not in REPOS):
                continue  # a module's function reached through its lazy package (engine.facts.run_facts)
            if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and name in classes:
                continue  # a repository (or another class) calling its own method
            if name in shared and not storeish(recv):
                continue  # the LLM cache's cache_get on its injected cache
            found.append(f"{path.relative_to(root)}:{n.lineno}: {ast.unparse(n.func)}(…)")
    return found


def tree_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*.py")) if not SKIP.intersection(p.relative_to(root).parts)]


def test_store_keeps_only_what_is_its_own():
    assert forwarders(STORE_PY.read_text()) == []
    public = {n for n, _ in inspect.getmembers(Store) if not n.startswith("_")}
    assert public == OWN, f"Store grew {sorted(public - OWN)}; callers use the repositories (store.runs.…)"
    assert not public & REMOVED


def test_the_repositories_are_attributes_of_an_opened_store(tmp_path):
    store = Store(tmp_path / "s.db")
    for attr, cls in REPOS.items():
        repo = getattr(store, attr)
        assert cls is None or isinstance(repo, cls)
    assert store.judgments is store.judgments  # made once, on first use
    assert {n for n in JUDGMENTS if callable(getattr(store.judgments, n, None))} == JUDGMENTS


def test_no_caller_uses_a_removed_forwarding_name():
    found = old_calls(tree_files(ROOT))
    assert found == [], "call the repository instead (python store_codemod.py rewrites these):\n" + "\n".join(found)


def call(receiver: str, name: str, args: str = "") -> str:
    """Source of one call (the planted snippets are built, so that no literal in this file reads
    as an old-style call to this check or to the codemod)."""
    return f"{receiver}.{name}({args})"


@pytest.mark.parametrize("planted, hit", [
    (f"def f(store):\n    return {call('store', 'load_run', 'rid')}\n", "store.load_run"),
    (f"def f(db):\n    return {call('db', 'list_runs', 'batch_tag=tag')}\n", "db.list_runs"),
    (f"def f(s):\n    return {call('s.search', 'get_row', 'rid')} and {call('s', 'get_run_row', 'rid')}\n",
     "s.get_run_row"),
    (f"def f(store):\n    return {call('store', 'cache_get', 'key')}\n", "store.cache_get"),
    (f"SCRIPT = {'from knowsim_core.storage import Store; ' + call('Store(p)', 'count_runs')!r}\n",
     call("", "count_runs", " in a string")[:-1]),
])
def test_the_caller_check_finds_a_planted_old_call(tmp_path, planted, hit):
    """Not vacuous: one old-style call in an otherwise clean file is found, where the repository's
    own names (``store.search.batch_groups``), a module function and the LLM cache's own
    ``cache_get`` on its injected cache are not."""
    clean = ("from knowsim_core.engine import facts\n\n"
             "def ok(store, run, cache):\n"
             f"    {call('store.search', 'batch_groups')}\n    {call('store.runs', 'append_turn', 'rid, turn')}\n"
             f"    {call('cache', 'cache_get', 'key')}\n    return {call('facts', 'run_facts', 'run')}\n")
    (tmp_path / "clean.py").write_text(clean)
    (tmp_path / "bad.py").write_text(planted)
    owner = tmp_path / "cache.py"  # the LLM cache protocol, the class that owns cache_get
    owner.write_bytes((ROOT / "knowsim_core" / "llm" / "cache.py").read_bytes())
    found = [line.split(": ", 1)[1] for line in old_calls([tmp_path / "clean.py", tmp_path / "bad.py", owner],
                                                          root=tmp_path)]
    assert len(found) == 1 and found[0].startswith(hit), found


def test_the_forwarder_check_finds_a_planted_forwarder():
    planted = STORE_PY.read_text() + (
        "\n    def load_run(self, run_id: str):\n        \"\"\"One more name for it.\"\"\"\n"
        f"        return {call('self.runs', 'load', 'run_id')}\n")
    assert forwarders(planted) == ["Store.load_run → self.runs.load"]
