"""The layers of ARCHITECTURE.md as executable checks.

The import contracts live in ``.importlinter`` (layers, no cycles, only ``cli`` imports
``commands``, the SDKs only in ``llm``, SQL only in ``storage``) and are checked by import-linter,
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
    ("ui/theme.py", "from knowsim_core.commands import runs  # planted: ui -> commands\n"),
    ("knowsim_core/engine/state.py", "def _late():\n    from knowsim_core.engine import session  # planted cycle\n"),
])
def test_a_planted_violation_breaks_a_contract(tmp_path, planted):
    """The contracts are not vacuous: the same tree with one bad import (even inside a function) fails."""
    for name in ("knowsim_core", "ui"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target, line = planted
    with open(tmp_path / target, "a") as f:
        f.write("\n" + line)
    out = lint(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "BROKEN" in out.stdout


def test_the_engine_reads_no_clock_environment_or_global_rng():
    bad = {
        (p.name, root)
        for p in (PKG / "engine").glob("*.py")
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


def test_no_module_imports_another_modules_private_names():
    files = [*PKG.rglob("*.py"), *(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    offenders = [hit for p in files for hit in _private_imports(p)]
    assert offenders == []
