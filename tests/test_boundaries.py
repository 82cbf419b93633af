"""The layers of ARCHITECTURE.md as executable checks.

The import contracts live in ``.importlinter`` (layers, no cycles, only ``cli`` imports
``commands``, the SDKs only in ``llm``, SQL only in ``storage``; the UI by feature — pages, then
``ui.simulate``, then ``ui.graph | ui.runs | ui.batch | ui.people``, then ``ui.common`` — no page
importing another or drawing a chart itself) and are checked by import-linter,
which reads every import including those inside functions. Two checks it cannot express are here:
the engine reads no clock, environment or global RNG, and no module imports another's ``_private``
names.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "knowsim_core"
LINT = Path(sys.executable).with_name("lint-imports")
ENGINE_FORBIDDEN = {"time", "datetime", "os", "random", "uuid", "secrets"}
ALLOWED = {("state.py", "random")}  # the sampler takes an injected random.Random stream; it never seeds one


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(root / ".importlinter"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_import_contracts_hold():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.mark.parametrize("planted", [
    ("knowsim_core/engine/rules.py", "from knowsim_core.storage import Store  # planted: engine -> storage\n"),
    ("knowsim_core/formats/jsonio.py", "import knowsim_core.storage.runs  # planted: formats -> storage\n"),
    ("ui/common/theme.py", "from knowsim_core.commands import runs  # planted: ui -> commands\n"),
    ("knowsim_core/engine/state.py", "def _late():\n    from knowsim_core.engine import session  # planted cycle\n"),
    ("pages/runs.py", "import sqlite3  # planted: a page speaks SQL\n"),
    ("pages/batch.py", "from knowsim_core.commands import batch as _cmd  # planted: a page imports a command\n"),
    ("knowsim_core/batch/service.py", "def _late():\n    import distributed  # planted: Dask outside the cluster module\n"),
    ("ui/runs/compare.py", "def _late():\n    from ui.simulate import state  # planted: runs -> simulate\n"),
    ("ui/people/realism_view.py", "from ui.runs import compare  # planted: one feature -> another\n"),
    ("ui/common/theme.py", "from ui.graph import keys  # planted: common -> a feature\n"),
    ("ui/common/nav.py", "import pages.home  # planted: ui -> a page\n"),
    ("knowsim_core/services/fork.py", "import pages.runs  # planted: the core -> a page\n"),
    ("pages/home.py", "from pages import runs  # planted: a page imports another\n"),
    ("pages/graph.py", "import plotly.graph_objects as go  # planted: a page builds its chart\n"),
])
def test_a_planted_violation_breaks_a_contract(tmp_path, planted):
    """The contracts are not vacuous: the same tree with one bad import (even inside a function) fails."""
    for name in ("knowsim_core", "ui", "pages"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target, line = planted
    with open(tmp_path / target, "a") as f:
        f.write("\n" + line)
    out = lint(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "BROKEN" in out.stdout


def test_app_py_keeps_the_pages_contracts():
    """app.py is a module, not a package, so import-linter cannot take it as a root: its imports are
    checked here against what the pages' contracts forbid (commands, SDKs, SQL)."""
    tree = ast.parse((ROOT / "app.py").read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    forbidden = ("knowsim_core.commands", "knowsim_core.cli", "openai", "anthropic", "sqlite3", "sqlite_utils")
    assert [m for m in names if m.split(".")[0] in forbidden or m.startswith(forbidden)] == []


def test_the_engine_reads_no_clock_environment_or_global_rng():
    """The engine, and the pure layers beside it: the vocabulary and the presentation helpers."""
    bad = {
        (p.name, root)
        for p in [*(PKG / "engine").glob("*.py"), *(PKG / "presentation").glob("*.py"), PKG / "vocab.py"]
        for root in imported_roots(p) & ENGINE_FORBIDDEN
        if (p.name, root) not in ALLOWED
    }
    assert bad == set()


def _private_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in ("knowsim_core", "ui"):
                continue
            out += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def _is_module(dotted: str, root: Path = ROOT) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _private_reach_ins(path: Path, root: Path = ROOT) -> list[str]:
    """``module._name`` where ``module`` is one of ours bound by an import (``import a.b as m``,
    ``from a import b``): the reach-in the ``from X import _name`` check does not see."""
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("knowsim_core", "ui"):
                    modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in ("knowsim_core", "ui"):
            for a in node.names:
                if _is_module(f"{node.module}.{a.name}", root):
                    modules[a.asname or a.name] = f"{node.module}.{a.name}"
    return [f"{path.relative_to(root)}:{node.lineno}: {modules[node.value.id]}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
            and node.attr.startswith("_") and not node.attr.startswith("__")]


def _files(root: Path = ROOT) -> list[Path]:
    return [*(root / "knowsim_core").rglob("*.py"), *(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py"),
            root / "app.py"]


def test_no_module_imports_another_modules_private_names():
    offenders = [hit for p in _files() for hit in _private_imports(p)]
    assert offenders == []


def test_no_module_reaches_into_another_modules_private_names():
    """Issue 32: seven reach-ins (``_llm._LLMAgent``, ``ot._PROFILE_CACHE`` …) passed the import check."""
    offenders = [hit for p in _files() for hit in _private_reach_ins(p)]
    assert offenders == []


@pytest.mark.parametrize("planted", [
    "from knowsim_core.text import profiles as ot\nx = ot._PROFILE_CACHE\n",
    "import knowsim_core.agents.llm as m\nclass A(m._Anything): pass\n",
    "from knowsim_core.storage import runs\nruns._insert_row\n",
])
def test_a_planted_reach_in_is_found(tmp_path, planted):
    (tmp_path / "knowsim_core" / "text").mkdir(parents=True)
    for rel in ("knowsim_core/__init__.py", "knowsim_core/text/__init__.py", "knowsim_core/text/profiles.py",
                "knowsim_core/agents/__init__.py", "knowsim_core/agents/llm.py", "knowsim_core/storage/__init__.py",
                "knowsim_core/storage/runs.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "planted.py").write_text(planted)
    assert len(_private_reach_ins(tmp_path / "pages" / "planted.py", tmp_path)) == 1
