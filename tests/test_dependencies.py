"""Every third-party package the code imports is declared, with bounds the installed version meets.

``numpy`` and ``httpx2`` were imported but undeclared, and ``openai>=2.0`` admitted releases without
``httpx2``: this reads every import (including those inside functions) of the shipped code and the
tests and checks them against ``requirements.txt`` / ``requirements-dev.txt``.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = [ROOT / "knowsim_core", ROOT / "ui", ROOT / "pages", ROOT / "app.py"]
DEV = [ROOT / "tests", ROOT / "benchmarks"]
LOCAL = {"knowsim_core", "ui", "pages", "tests", "app", "benchmarks"}
# Optional extras that `make test` installs beside requirements-dev.txt: the code imports them lazily, only
# where .importlinter allows (requirements-cluster.txt: Dask, in knowsim_core.batch.cluster / .remote).
EXTRAS = (ROOT / "requirements-cluster.txt",)


def _files(paths: list[Path]) -> list[Path]:
    return [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]


def imported(paths: list[Path]) -> set[str]:
    roots: set[str] = set()
    for f in _files(paths):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.split(".")[0])
    return {r for r in roots if r not in sys.stdlib_module_names and r not in LOCAL}


def declared(path: Path) -> dict[str, Requirement]:
    out: dict[str, Requirement] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            out |= declared(path.parent / line[3:].strip())
        elif line:
            req = Requirement(line)
            out[_norm(req.name)] = req
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(modules: set[str]) -> dict[str, set[str]]:
    dists = md.packages_distributions()
    return {m: {_norm(d) for d in dists.get(m, [])} for m in modules}


def with_extras(path: Path) -> dict[str, Requirement]:
    """The requirements of ``path`` and of the optional extras."""
    out = declared(path)
    for extra in EXTRAS:
        out |= declared(extra)
    return out


def test_every_runtime_import_is_a_declared_runtime_requirement():
    reqs = with_extras(ROOT / "requirements.txt")
    missing = {m: d for m, d in distributions(imported(RUNTIME)).items() if not d & set(reqs)}
    assert not missing, f"imported but not in requirements.txt: {missing}"


def test_every_test_and_benchmark_import_is_declared():
    reqs = with_extras(ROOT / "requirements-dev.txt")
    missing = {m: d for m, d in distributions(imported(DEV)).items() if not d & set(reqs)}
    assert not missing, f"imported but not in requirements-dev.txt: {missing}"


def test_the_installed_versions_meet_the_declared_bounds():
    for name, req in with_extras(ROOT / "requirements-dev.txt").items():
        version = md.version(name)
        assert req.specifier.contains(version, prereleases=True), f"{name} {version} is outside {req.specifier}"
