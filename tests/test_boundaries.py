"""The pure core imports no UI, SDK, database or network module (ARCHITECTURE.md boundaries)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "knowsim_core"
PURE = ["rules", "termination", "metrics", "failures", "graph", "graph_checks", "graph_diff", "state", "signals", "records", "config", "session", "ports", "whatif"]
FORBIDDEN = {"streamlit", "openai", "anthropic", "sqlite3", "sqlite_utils", "socket", "http", "urllib", "requests",
             "httpx", "time", "datetime", "os", "random"}
ALLOWED_EXCEPTIONS = {("state", "random")}  # the sampler takes an injected random.Random stream


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_pure_modules_import_nothing_impure():
    bad = {
        (mod, root)
        for mod in PURE
        for root in imported_roots(PKG / f"{mod}.py") & FORBIDDEN
        if (mod, root) not in ALLOWED_EXCEPTIONS
    }
    assert bad == set()


def test_sdks_are_imported_only_inside_the_llm_package():
    offenders = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "llm":
            continue
        if imported_roots(path) & {"openai", "anthropic"}:
            offenders.append(str(rel))
    assert offenders == []


def test_sql_lives_only_in_storage():
    offenders = [
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.relative_to(PKG).parts[0] != "storage" and imported_roots(p) & {"sqlite3", "sqlite_utils"}
    ]
    assert offenders == []
