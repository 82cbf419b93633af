"""Start-up of the command line: only the chosen command is imported, and listing runs imports
neither sqlite-utils nor pandas (issue 32). sqlite-utils, and the pandas it imports, come in only
where a file's tables are created or migrated; opening a store never changes an entry of
``sys.modules`` (issue 44: it hid pandas there while sqlite-utils imported, so another thread's
``import pandas`` in that window failed). Speed itself is measured by benchmarks/startup.py, not
asserted here."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core import cli, commands
from knowsim_core.storage import SCHEMA_VERSION, Store

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
    Store(tmp_path / "x.db")  # created (and migrated) here: the command lists an existing file
    out = _probe("runs", "--db", str(tmp_path / "x.db"))
    assert out["code"] == 0
    assert out["loaded"] == ["knowsim_core.commands.runs"]
    assert out["pandas"] == "pandas"


_HEAVY_PROBE = """
import json, sys
from knowsim_core.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in ("numpy", "knowsim_core.formats.schema", "knowsim_core.formats.judgments") if m in sys.modules)
import numpy  # hidden only while sqlite-utils is imported: a later import gets the real package
print(json.dumps({"code": code, "loaded": loaded, "numpy": numpy.__name__}))
"""


def test_runs_imports_neither_numpy_nor_the_judgments_schema_until_used(tmp_path):
    """``runs`` lists runs: sqlite-utils imported numpy (~0.1 s) and the store imported the judgments'
    file schema (pydantic models, ~0.1 s) on every start. Old code: both were in ``loaded``."""
    Store(tmp_path / "x.db")
    done = subprocess.run([sys.executable, "-c", _HEAVY_PROBE, "runs", "--db", str(tmp_path / "x.db")], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "loaded": [], "numpy": "numpy"}


_LEAN_PROBE = """
import json, sys
from knowsim_core.cli import main
code = main(sys.argv[1:])
heavy = ("sqlite_utils", "pydantic", "knowsim_core.engine.graph", "knowsim_core.engine.records",
         "knowsim_core.engine.facts", "knowsim_core.engine.metrics", "knowsim_core.engine.state")
print(json.dumps({"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def _a_run():
    from knowsim_core.formats.samples import load_samples
    from tests.part2_support import make_run

    return make_run(load_samples()[0].graph)


def test_listing_the_runs_of_a_current_file_imports_neither_sqlite_utils_nor_the_engine(tmp_path):
    """``runs`` on a file at the current schema reads rows with plain SQL: sqlite-utils (table helpers,
    migrations) and the engine's records and graphs (pydantic) are imported by the code paths that use
    them. Old code: all of them were loaded by ``import knowsim_core.storage``."""
    Store(tmp_path / "x.db").runs.save(_a_run())  # migrated and holding a run, in this process
    done = subprocess.run([sys.executable, "-c", _LEAN_PROBE, "runs", "--db", str(tmp_path / "x.db")], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "loaded": []}
    assert "finished" in done.stdout  # the run was listed


def test_a_run_read_back_and_a_new_file_still_get_what_they_need(tmp_path):
    """The lazy imports are taken where they are needed: migrating a new file (sqlite-utils'
    migrations), loading a run (the records), a filter on typed runs (the records' ids)."""
    from knowsim_core.storage.run_filter import RunFilter

    store = Store(tmp_path / "new.db")
    assert store.schema_version == SCHEMA_VERSION
    rid = store.runs.save(_a_run())
    assert store.runs.load(rid).turns
    assert store.search.count(RunFilter(origin="agents")) == 1 and store.search.count(RunFilter(origin="typed")) == 0


_DRY_PROBE = """
import json, sys
from knowsim_core.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in ("sqlite_utils", "multiprocessing", "knowsim_core.batch.workers")
                                                 if m in sys.modules)}))
"""


def test_a_dry_run_on_a_stored_file_imports_neither_sqlite_utils_nor_the_worker_processes(tmp_path):
    """``batch --dry-run`` plans and prints: it reads the questions, their graph versions and the
    batches in plain SQL, and starts no worker process. Old code: all three were loaded."""
    store = Store(tmp_path / "x.db")
    store.questions.seed_samples()
    argv = ["batch", "--questions", "all", "--levels", "all", "--assistants", "offline", "--workers", "2",
            "--dry-run", "--db", str(tmp_path / "x.db")]
    done = subprocess.run([sys.executable, "-c", _DRY_PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "loaded": []}
    assert "to run" in done.stdout


_MODULES_PROBE = """
import json, sys
seen_none = set()


class Watch:  # asked first about every import: what sys.modules holds while it happens
    def find_spec(self, name, path=None, target=None):
        seen_none.update(k for k, v in list(sys.modules.items()) if v is None)
        return None


sys.meta_path.insert(0, Watch())
before = dict(sys.modules)
from knowsim_core.storage import Store
store = Store(sys.argv[1])
store.questions.seed_samples()
changed = sorted(k for k, v in before.items() if sys.modules.get(k) is not v)
print(json.dumps({"none": sorted(seen_none), "changed": changed,
                  "sqlite_utils": "sqlite_utils" in sys.modules, "pandas": "pandas" in sys.modules}))
"""


@pytest.mark.parametrize("new_file", [True, False])
def test_opening_a_store_changes_no_entry_of_sys_modules(tmp_path, new_file):
    """Old code set ``sys.modules["pandas"] = None`` (and numpy) while sqlite-utils imported: the
    watcher saw both entries as None during the migration of a new file. A current file is read
    with sqlite3 alone and imports no sqlite-utils at all."""
    path = tmp_path / "x.db"
    if not new_file:
        Store(path)
    done = subprocess.run([sys.executable, "-c", _MODULES_PROBE, str(path)], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["none"] == [] and out["changed"] == []
    if not new_file:  # sqlite-utils (and the pandas it imports where installed) only for a migration
        assert (out["sqlite_utils"], out["pandas"]) == (False, False)


def test_judgments_are_stored_through_the_store_made_on_first_use(tmp_path):
    from knowsim_core.storage import Store

    store = Store(tmp_path / "j.db")
    assert store.judgments.all() == {}  # the repository is made on first use, and works


def test_a_command_that_imports_another_gets_both_and_nothing_else(tmp_path):
    out = _probe("failures", "--db", str(tmp_path / "x.db"), "--json")
    assert out["code"] == 0
    assert "knowsim_core.commands.failures" in out["loaded"]
    assert "knowsim_core.commands.batch" not in out["loaded"]


def test_the_command_table_declares_every_command_module_once():
    """The table (name, help, module) replaced reading each command file's source with ``ast``
    (issue 44): a command file missing from the table, or a row naming no file, fails here."""
    files = {p.stem for p in (ROOT / "knowsim_core" / "commands").glob("*.py") if p.stem != "__init__"}
    declared = [c.module for c in commands.COMMANDS]
    assert sorted(declared) == sorted(files)
    assert len({c.name for c in commands.COMMANDS}) == len(commands.COMMANDS)
    for command in commands.COMMANDS:
        mod = importlib.import_module(f"knowsim_core.commands.{command.module}")
        assert callable(mod.add_arguments) and callable(mod.run), command.name
        assert command.help.strip() and "\n" not in command.help


def test_the_full_parser_has_every_commands_real_options(capsys):
    """What the command-line reference is generated from: each sub-parser with its own options."""
    parser = cli.full_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(c.name for c in commands.COMMANDS)
    for name, p in sub.choices.items():
        options = {o for a in p._actions for o in a.option_strings}
        assert options - {"-h", "--help"}, f"{name} has no options of its own"
    assert "--assistants" in {o for a in sub.choices["batch"]._actions for o in a.option_strings}
    assert parser.parse_args(["runs", "--json"]).json is True


def test_help_still_lists_every_command_with_its_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for command in commands.COMMANDS:
        assert command.name in text
        assert " ".join(command.help.split()[:3]) in text


def test_an_unknown_command_is_refused_with_the_full_list(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["rnus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "'runs'" in err and "'batch'" in err
