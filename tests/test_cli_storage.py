"""Command line over the store: run, batch, runs, export, import — and their error lines."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest

from knowsim_core.cli import main
from knowsim_core.formats import studio
from knowsim_core.engine.records import RunRecord
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

COMMANDS = ("run", "batch", "runs", "export", "import")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "--db" in capsys.readouterr().out


def test_run_prints_a_turn_table_and_stores_the_run(capsys, db_path):
    code, out, _ = cli(capsys, "run", "--question", "sample_lava_lamps", "--level", "novice",
                       "--assistant", "offline/adaptive", "--seed", "2", "--max-turns", "4", "--db", str(db_path))
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["turn", "load"])
    assert [line.split()[0] for line in lines[header + 1 : header + 5]] == ["1", "2", "3", "4"]
    assert "KG " in out and "DC " in out and "CO " in out
    row = Store(db_path).search.list()[0]
    assert (row.status, row.turns, row.question_id, row.seed) == ("finished", 4, "sample_lava_lamps", 2)
    assert row.id in out


def test_run_json_prints_the_stored_run(capsys, db_path):
    code, out, err = cli(capsys, "run", "--question", "sample_dice_reroll_game", "--level", "advanced",
                         "--assistant", "offline/socratic", "--max-turns", "3", "--db", str(db_path), "--json")
    assert code == 0 and "turn" in err  # the table goes to stderr, stdout is pure JSON
    run = studio.loads(out)
    assert Store(db_path).runs.load(run.run_id) == run


def test_runs_json_lists_objects(capsys, db_path):
    for seed in ("1", "2"):
        cli(capsys, "run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant",
            "offline/simple", "--seed", seed, "--max-turns", "2", "--db", str(db_path))
    code, out, _ = cli(capsys, "runs", "--db", str(db_path), "--json")
    rows = json.loads(out)["runs"]
    assert code == 0 and len(rows) == 2
    for r in rows:
        assert {"id", "status", "turns", "question", "level", "assistant"} <= set(r)
        assert (r["status"], r["turns"], r["level"], r["assistant"]) == ("finished", 2, "novice", "offline/simple")
        assert r["question"].startswith("Priya lines up")
    code, out, _ = cli(capsys, "runs", "--db", str(db_path))
    assert code == 0 and all(r["id"] in out for r in rows)


def test_export_formats_and_import_round_trip(capsys, db_path, tmp_path):
    cli(capsys, "run", "--question", "sample_herd_immunity", "--level", "intermediate", "--assistant",
        "offline/adaptive", "--max-turns", "5", "--db", str(db_path))
    rid = Store(db_path).search.list()[0].id
    code, out, _ = cli(capsys, "export", rid, "--format", "studio-json", "--db", str(db_path))
    run = studio.loads(out)
    assert code == 0 and run == Store(db_path).runs.load(rid)
    code, ref, _ = cli(capsys, "export", rid, "--format", "reference-json", "--db", str(db_path))
    rec = json.loads(ref)[0]
    assert rec["problem_id"] == "sample_herd_immunity" and rec["task"] == "expertqa"
    assert len(rec["knowledge_state_history"]) == 6 and len(rec["turn_metrics_history"]) == 5
    code, text, _ = cli(capsys, "export", rid, "--format", "csv", "--db", str(db_path))
    assert len(list(csv.DictReader(io.StringIO(text)))) == 5

    path = tmp_path / "run.json"
    path.write_text(out)
    other = tmp_path / "other.db"
    code, msg, _ = cli(capsys, "import", str(path), "--db", str(other))
    assert code == 0 and "1 run(s) stored" in msg
    assert Store(other).runs.load(rid) == run


def test_batch_runs_the_matrix(capsys, db_path):
    code, out, err = cli(capsys, "batch", "--questions", "sample_lava_lamps,sample_fed_rate_hikes", "--levels",
                         "novice,advanced", "--assistants", "offline/simple,offline/oracle", "--seeds", "2",
                         "--max-turns", "2", "--db", str(db_path), "--json")
    results = json.loads(out)
    assert code == 0 and len(results) == 16 and all(r["status"] == "finished" for r in results)
    assert "16/16 runs" in err
    store = Store(db_path)
    assert store.search.count(RunFilter(status="finished")) == 16
    assert {(r.question_id, r.level, r.assistant, r.seed) for r in store.search.list()} == {
        (q, lv, a, s) for q in ("sample_lava_lamps", "sample_fed_rate_hikes") for lv in ("novice", "advanced")
        for a in ("offline/simple", "offline/oracle") for s in (1, 2)
    }


@pytest.mark.parametrize(
    "argv,message",
    [
        (["export", "nope", "--format", "csv"], "unknown run id 'nope'"),
        (["run", "--question", "nope", "--level", "novice", "--assistant", "offline/simple"], "unknown question id"),
        (["run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant", "offline/simpel"], "did you mean 'offline/simple'"),
        (["run", "--level", "novice"], "run needs --question, --assistant"),
        (["batch", "--questions", "sample_lava_lamps", "--levels", "expert"], "unknown level 'expert'"),
        (["batch", "--questions", "sample_lava_lamps", "--seeds", "0"], "--seeds must be at least 1"),
        (["run", "--resume", "nope"], "unknown run id"),
    ],
)
def test_errors_are_one_line(capsys, db_path, argv, message):
    code, out, err = cli(capsys, *argv, "--db", str(db_path))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_bad_files_give_one_line_and_stay_untouched(capsys, tmp_path):
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n" * 50)
    digest = hashlib.sha256(notes.read_bytes()).hexdigest()
    for argv in (["runs"], ["export", "x", "--format", "csv"], ["import", str(notes)]):
        code, _, err = cli(capsys, *argv, "--db", str(notes))
        assert code == 2 and "is not a SQLite database" in err and err.count("\n") == 1
    assert hashlib.sha256(notes.read_bytes()).hexdigest() == digest
    db = tmp_path / "s.db"
    bad = tmp_path / "cut.json"
    bad.write_text('{"format": "knowsim-studio-run", "turns": [')
    code, _, err = cli(capsys, "import", str(bad), "--db", str(db))
    assert code == 2 and "truncated" in err and Store(db).search.count() == 0


def test_studio_json_of_a_run_is_what_load_gives(capsys, db_path):
    cli(capsys, "run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant", "offline/oracle",
        "--max-turns", "2", "--db", str(db_path))
    rid = Store(db_path).search.list()[0].id
    _, out, _ = cli(capsys, "export", rid, "--format", "studio-json", "--db", str(db_path))
    assert RunRecord.from_json(out) == Store(db_path).runs.load(rid)
