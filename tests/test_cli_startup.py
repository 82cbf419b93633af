"""Start-up of the command line: only the chosen command is imported, and sqlite-utils does not pull
in pandas (issue 32). The old code imported every command module for any command and imported
pandas through sqlite-utils; the first two tests fail on it. Speed itself is measured by
benchmarks/startup.py, not asserted here."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core import cli

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import json, sys
from knowsim_core.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith("knowsim_core.commands.") or m == "pandas")
import pandas  # the block around sqlite-utils' import is gone: a later import gets the real package
print(json.dumps({"code": code, "loaded": loaded, "pandas": pandas.__name__}))
"""


def _probe(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_runs_imports_only_its_own_command_and_no_pandas(tmp_path):
    out = _probe("runs", "--db", str(tmp_path / "x.db"))
    assert out["code"] == 0
    assert out["loaded"] == ["knowsim_core.commands.runs"]
    assert out["pandas"] == "pandas"


_HEAVY_PROBE = """
import json, sys
from knowsim_core.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in ("numpy", "knowsim_core.formats.schema", "knowsim_core.storage.judgments") if m in sys.modules)
import numpy  # hidden only while sqlite-utils is imported: a later import gets the real package
print(json.dumps({"code": code, "loaded": loaded, "numpy": numpy.__name__}))
"""


def test_runs_imports_neither_numpy_nor_the_judgments_schema_until_used(tmp_path):
    """``runs`` lists runs: sqlite-utils imported numpy (~0.1 s) and the store imported the judgments'
    file schema (pydantic models, ~0.1 s) on every start. Old code: both were in ``loaded``."""
    done = subprocess.run([sys.executable, "-c", _HEAVY_PROBE, "runs", "--db", str(tmp_path / "x.db")], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "loaded": [], "numpy": "numpy"}


def test_judgments_are_stored_through_the_store_made_on_first_use(tmp_path):
    from knowsim_core.storage import Store

    store = Store(tmp_path / "j.db")
    assert store.judgments.all() == {}  # the repository is made on first use, and works


def test_a_command_that_imports_another_gets_both_and_nothing_else(tmp_path):
    out = _probe("failures", "--db", str(tmp_path / "x.db"), "--json")
    assert out["code"] == 0
    assert "knowsim_core.commands.failures" in out["loaded"]
    assert "knowsim_core.commands.batch" not in out["loaded"]


def test_every_command_module_is_named_by_its_file():
    for name, module in cli.command_modules().items():
        assert importlib.import_module(f"knowsim_core.commands.{module}").NAME == name


def test_help_still_lists_every_command_with_its_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name, module in cli.command_modules().items():
        assert name in text
        help_words = importlib.import_module(f"knowsim_core.commands.{module}").HELP.split()[:3]
        assert " ".join(help_words) in " ".join(text.split())


def test_an_unknown_command_is_refused_with_the_full_list(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["rnus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "'runs'" in err and "'batch'" in err
