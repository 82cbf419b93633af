"""What loads late, loads through one seam: no imports scattered through function bodies.

Start-up stays fast because heavy code is imported on first use, and each heavy thing has one place
that does it and says why:

* the layers of the package (``engine``, ``agents``, ``formats``, ``llm``, ``storage``, ``services``,
  ``evaluation``) are lazy packages (:mod:`knowsim_core.lazy`): code that must start fast writes
  ``from knowsim_core import evaluation`` at its top and ``evaluation.explain.explain_run(...)`` where
  it needs it;
* each heavy third-party library is imported inside a function only in its seam (:data:`SEAMS`); a
  library with a seam is imported nowhere else at all.

So an ``import`` inside a function body is allowed only in the seam of the library it imports. The
checks parse the source with ``ast`` (code no test runs is checked too); planted copies show that
each one finds what it is for. Speed itself is measured by benchmarks/startup.py, not asserted here.
"""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# library (top-level name) -> the one file that imports it, on first use
SEAMS = {
    "openai": "knowsim_core/llm/sdks.py",
    "anthropic": "knowsim_core/llm/sdks.py",
    "httpx": "knowsim_core/llm/sdks.py",
    "httpx2": "knowsim_core/llm/sdks.py",
    "httpcore2": "knowsim_core/llm/sdks.py",
    "sqlite_utils": "knowsim_core/storage/connection.py",
    "networkx": "knowsim_core/engine/digraph.py",
    "scipy": "knowsim_core/evaluation/statlibs.py",
    "sklearn": "knowsim_core/evaluation/statlibs.py",
    "matplotlib": "knowsim_core/evaluation/figures.py",
    "rouge_score": "knowsim_core/evaluation/realism.py",
    "pyvis": "knowsim_core/formats/graph_html.py",
    "pandas": "ui/common/tables.py",
    "distributed": "knowsim_core/batch/cluster.py",
    "dask": "knowsim_core/batch/cluster.py",
}
# the lazy layer packages, and what importing all of them with every seam module must not load
LAYERS = ("engine", "agents", "formats", "llm", "storage", "services", "evaluation")
HEAVY = tuple(sorted(SEAMS)) + ("numpy", "pydantic", "plotly", "streamlit")
# files whose function-body imports are still to be moved to the layers' packages and the seams


def _files(root: Path) -> list[Path]:
    return sorted([*(root / "knowsim_core").rglob("*.py"), *(root / "ui").rglob("*.py"),
                   *(root / "pages").glob("*.py"), root / "app.py"])


def _imports(tree: ast.AST) -> list[tuple[ast.stmt, bool]]:
    """Every import statement with whether it sits inside a function body; imports under
    ``if TYPE_CHECKING:`` are left out (they never run)."""
    out: list[tuple[ast.stmt, bool]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.orelse:
                    walk(sub, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, in_function))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return out


def _roots(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    return ["." if node.level else (node.module or "").split(".")[0]]


def offences(root: Path) -> list[str]:
    """``file:line: what`` for every import outside its place (see the module docstring)."""
    found = []
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        for node, in_function in _imports(ast.parse(path.read_text())):
            where = f"{rel}:{node.lineno}: {ast.unparse(node)}"
            for lib in _roots(node):
                seam = SEAMS.get(lib)
                if seam is not None and rel != seam:
                    found.append(f"{where} — {lib} is imported only by {seam}")
                elif in_function and seam is None:
                    found.append(f"{where} — inside a function: import it at the module's top, or reach "
                                 "its layer through the layer's package (from knowsim_core import evaluation)")
    return found


def test_every_import_inside_a_function_is_its_librarys_seam():
    assert offences(ROOT) == []


def test_every_seam_exists_and_imports_its_library():
    for lib, seam in SEAMS.items():
        path = ROOT / seam
        if not path.exists():  # a module this tree does not have: nothing may import the library at all
            continue
        libs = {r for node, _ in _imports(ast.parse(path.read_text())) for r in _roots(node)}
        assert lib in libs or lib in ("httpx", "dask"), f"{seam} does not import {lib}"


@pytest.mark.parametrize("target, planted, expected", [
    ("knowsim_core/evaluation/agreement.py", "def _late():\n    from sklearn.metrics import f1_score\n",
     "sklearn is imported only by knowsim_core/evaluation/statlibs.py"),
    ("knowsim_core/agents/llm.py", "import openai\n", "openai is imported only by knowsim_core/llm/sdks.py"),
    ("knowsim_core/storage/questions.py", "class _X:\n    def f(self):\n        import sqlite_utils\n",
     "sqlite_utils is imported only by knowsim_core/storage/connection.py"),
    ("ui/runs/compare.py", "import pandas as pd\n", "pandas is imported only by ui/common/tables.py"),
    ("knowsim_core/commands/explain.py", "def _late():\n    from knowsim_core.evaluation.explain import explain_run\n",
     "inside a function"),
    ("ui/simulate/view.py", "def _late():\n    if True:\n        import numpy\n", "inside a function"),
    ("knowsim_core/llm/sdks.py", "def _late():\n    import json\n", "inside a function"),
])
def test_a_planted_import_out_of_place_is_found(tmp_path, target, planted, expected):
    for name in ("knowsim_core", "ui", "pages"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "app.py", tmp_path / "app.py")
    with open(tmp_path / target, "a") as f:
        f.write("\n\n" + planted)
    found = offences(tmp_path)
    assert len(found) == 1 and found[0].startswith(target) and expected in found[0], found


def test_a_type_checking_import_and_a_seams_own_import_pass(tmp_path):
    (tmp_path / "knowsim_core" / "llm").mkdir(parents=True)
    (tmp_path / "ui").mkdir()
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("")
    (tmp_path / "knowsim_core" / "llm" / "sdks.py").write_text("def __getattr__(name):\n    import openai\n")
    (tmp_path / "knowsim_core" / "llm" / "chat.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import openai\n")
    assert offences(tmp_path) == []


_PROBE = """
import json, sys
import streamlit  # what the app has anyway (it imports plotly)
app = {{m.split(".")[0] for m in sys.modules}}
from knowsim_core import {layers}
from knowsim_core.llm import sdks
from knowsim_core.evaluation import statlibs
from knowsim_core.engine import digraph
from knowsim_core.storage import connection
from ui.common import tables
before = {{m.split(".")[0] for m in sys.modules if m.split(".")[0] in {heavy!r}}} - app
layer_modules = sorted(m for m in sys.modules if m.count(".") >= 2 and m.split(".")[1] in {layers_t!r}
                       and m.startswith("knowsim_core."))
sdks.httpx2, statlibs.scipy_stats  # read: imported now
after = {{m.split(".")[0] for m in sys.modules}}
print(json.dumps({{"before": sorted(before), "httpx2": "httpx2" in after, "scipy": "scipy" in after,
                  "layer_modules": layer_modules}}))
"""


def test_importing_the_layers_and_the_seams_loads_no_heavy_library_until_one_is_read():
    """The packages and seam modules themselves are free: nothing heavy is imported until an attribute
    is read, and then exactly that library (beyond what ``import streamlit`` loads: the app has it)."""
    code = _PROBE.format(layers=", ".join(LAYERS), heavy=HEAVY, layers_t=LAYERS)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == [] and out["httpx2"] and out["scipy"], out
    # only the seam modules imported above (and what they import of their own layer: connection's errors)
    assert set(out["layer_modules"]) <= {"knowsim_core.llm.sdks", "knowsim_core.evaluation.statlibs",
                                         "knowsim_core.engine.digraph", "knowsim_core.storage.connection"}, out


def test_a_lazy_package_loads_a_module_when_first_read_and_refuses_what_it_does_not_have(tmp_path, monkeypatch):
    """:func:`knowsim_core.lazy.attach` on a planted package: a submodule and an exported name load on
    first read (the name is read from its module each time, so a changed module is seen); a name the
    package does not have is an AttributeError; a submodule whose own import fails says so."""
    pkg = tmp_path / "lazy_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from knowsim_core.lazy import attach\n"
                                     "__getattr__, __dir__ = attach(__name__, {'VALUE': 'things'})\n")
    (pkg / "things.py").write_text("VALUE = 1\n")
    (pkg / "broken.py").write_text("import lazy_probe_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        _probe_lazy_package()
    finally:
        for name in [m for m in sys.modules if m.startswith("lazy_probe")]:
            del sys.modules[name]


def _probe_lazy_package() -> None:
    lazy_probe = importlib.import_module("lazy_probe")  # the package planted on sys.path above
    assert "lazy_probe.things" not in sys.modules
    assert lazy_probe.VALUE == 1 and "lazy_probe.things" in sys.modules
    assert "VALUE" in dir(lazy_probe)
    lazy_probe.things.VALUE = 2
    assert lazy_probe.VALUE == 2
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        lazy_probe.nothing  # noqa: B018
    assert not hasattr(lazy_probe, "__wrapped__")
    with pytest.raises(ModuleNotFoundError, match="lazy_probe_missing_dependency"):
        lazy_probe.broken  # noqa: B018
