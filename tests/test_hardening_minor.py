"""Issue 23's minor findings, each through the real command line (subprocesses where the terminal,
``/dev/full`` or a second process matters): one line each, never a traceback, nothing lost."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core.cli import main, terminal_safe
from knowsim_core.engine.graph import MAX_IU_TEXT, IUGraph
from knowsim_core.errors import GraphError
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.fakes.llm_server import Fault, FakeLLMServer
from tests.test_realism import human_db

ROOT = Path(__file__).resolve().parent.parent


def cli(*argv: str, stdout=subprocess.PIPE, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    e["PYTHONPATH"] = str(ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "knowsim_core", *argv], cwd=ROOT, env=e, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


@pytest.fixture()
def played(db_path):
    store = Store(db_path)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple",
                     max_turns=2)
    live.run_to_end()
    return live.run_id


# ---------------------------------------------------------------------- 15: /dev/full, long names
@pytest.mark.slow
def test_writing_to_dev_full_ends_in_one_line(played, db_path, tmp_path):
    hdb = human_db(tmp_path)
    for argv in (["export", played, "--format", "studio-json", "--db", str(db_path)],
                 ["runs", "--json", "--db", str(db_path)], ["realism", "--json", "--db", hdb]):
        with open("/dev/full", "w") as full:
            one_line_error(cli(*argv, stdout=full), "No space left on device")


def test_a_100_kb_database_name_ends_in_one_line(tmp_path, capsys):
    name = str(tmp_path / ("a" * 100_000))
    assert main(["runs", "--db", name]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "File name too long" in err and len(err) < 300


# ---------------------------------------------------------------------- 7: a non-JSON 200
@pytest.mark.slow
def test_a_non_json_200_is_a_provider_error_in_one_line_for_run_and_realism(db_path, tmp_path):
    with FakeLLMServer() as srv:
        srv.push(*[Fault(body=b"<html>upstream hiccup</html>")] * 20)
        env = {"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_MAX_RETRIES": "1"}
        out = cli("run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant", "compat/m1",
                  "--max-turns", "1", "--db", str(db_path), env=env)
        one_line_error(out, "unusable reply", "not JSON", "after 1 retry")
        assert len(srv.requests) == 2
        out = cli("realism", "--user", "compat/m1", "--db", human_db(tmp_path), env=env)
        one_line_error(out, "unusable reply", "not JSON")
    assert [r.status for r in Store(db_path).search.list()] == ["failed"]  # the run is kept, with its error


# ---------------------------------------------------------------------- 17
def test_realism_names_an_unknown_conversation_instead_of_saying_there_are_none(tmp_path, capsys):
    db = human_db(tmp_path)
    capsys.readouterr()
    assert main(["realism", "--conversation", "nosuch", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "'nosuch'" in err and "no human conversations in the database" not in err and "1 stored" in err


def test_a_deleted_wal_is_not_called_damage(played, db_path):
    """A program holds the database (its WAL not yet checkpointed) and someone deletes the -wal:
    a reader must say what happened, not that an intact file is damaged."""
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("PRAGMA wal_autocheckpoint = 0")
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM runs").fetchone()  # a snapshot: no checkpoint can pass it
    store = Store(db_path)
    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive",
                     max_turns=2)
    live.run_to_end()
    os.remove(f"{db_path}-wal")
    try:
        out = cli("runs", "--db", str(db_path))
        err = one_line_error(out, "write-ahead log", "was deleted", "not damaged")
        assert "is damaged" not in err
    finally:
        holder.close()


@pytest.mark.parametrize("bad", ["IU\u200b1", "IU\u202e1", "IU\ufeff1", "IU\x001"])
def test_ids_with_invisible_characters_are_refused(bad):
    data = {"nodes": [{"id": "IU1", "concept": "a", "abstraction_level": 0.5, "description": "x"},
                      {"id": bad, "concept": "b", "abstraction_level": 0.2, "description": "y"}], "edges": []}
    with pytest.raises(GraphError, match="invisible character"):
        IUGraph.from_data(data)
    edge = {"nodes": data["nodes"][:1], "edges": [{"from": "IU1", "to": bad}]}
    with pytest.raises(GraphError, match="invisible character"):
        IUGraph.from_data(edge)


def test_bidi_and_zero_width_characters_never_reach_the_terminal():
    assert terminal_safe("run \u202eevil\u202c IU\u200b1 \u2066x\u2069 \ufeffok") == "run evil IU1 x ok"
    assert terminal_safe("naïve · 学生 — ok\n\t") == "naïve · 学生 — ok\n\t"  # visible text is untouched


def test_iu_text_is_bounded():
    node = {"id": "IU1", "concept": "a", "abstraction_level": 0.5, "description": "d" * (MAX_IU_TEXT + 1)}
    with pytest.raises(GraphError, match=f"at most {MAX_IU_TEXT}"):
        IUGraph.from_data({"nodes": [node], "edges": []})
    node["description"] = "d" * MAX_IU_TEXT
    assert IUGraph.from_data({"nodes": [node], "edges": []}).nodes[0].description == node["description"]
