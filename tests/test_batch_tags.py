"""A batch tag is a name, never a path: the command line, the Batch page and resume all refuse
anything but 1–64 letters, digits, ``-_.``; a failed launch is one line on the page, never a
traceback and never a batch running unseen; the app listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.text.tags import MAX_BATCH_TAG as MAX_TAG, check_batch_tag as check_tag
from knowsim_core.cli import main
from knowsim_core.errors import ConfigError, StorageError
from knowsim_core.storage import Store
from ui.batch import launcher as bv

ROOT = Path(__file__).resolve().parent.parent
BAD_TAGS = ["../../../outside/TRAVERSE1", "a/b", "/abs", "..", ".hidden", "tab\there", "bell\x07", "new\nline",
            "x" * (MAX_TAG + 1), "x" * 100_000, "", "sp ace", "ü-umlaut", "bidi\u202e"]


@pytest.mark.parametrize("tag", ["b20260101-120000-ab12", "my_batch.v2", "A", "x" * MAX_TAG])
def test_good_tags_pass(tag):
    assert check_tag(tag) == tag


@pytest.mark.parametrize("tag", BAD_TAGS, ids=range(len(BAD_TAGS)))
def test_the_command_line_refuses_a_bad_tag_in_one_line_and_stores_nothing(tag, db_path, capsys):
    for flag in (["--questions", "all", "--tag", tag], ["--resume", tag]):
        assert main(["batch", *flag, "--max-turns", "1", "--db", str(db_path)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "is not a batch tag" in err
        assert len(err) < 300
    assert not db_path.exists() or Store(db_path).search.list_batches() == []


@pytest.mark.parametrize("argv", [["--max-turns", "0"], ["--max-turns", "-5"], ["--max-cost", "nan"],
                                  ["--max-cost", "-1"], ["--max-cost", "inf"]])
def test_max_turns_and_max_cost_are_checked_when_the_command_line_is_read(argv, db_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["batch", "--questions", "all", *argv, "--db", str(db_path)])
    assert exit_.value.code == 2 and "expected" in capsys.readouterr().err
    assert not db_path.exists()  # nothing registered: no batch whose every cell would fail


def test_the_page_helpers_refuse_a_traversing_tag_before_any_path_is_built(tmp_path):
    db = tmp_path / "deep" / "er" / "studio.db"
    with pytest.raises(ConfigError, match="is not a batch tag"):
        bv.launch(db, ["batch", "--questions", "all"], "../../../outside/TRAVERSE1")
    with pytest.raises(ConfigError, match="is not a batch tag"):
        bv.request(questions=["q"], levels=["novice"], assistants=["offline/simple"], user="u", extractor="e",
                   seeds=1, max_turns=None, concurrency=0, tag="../x")
    assert list(tmp_path.rglob("*")) == [tmp_path / "deep"] or not (tmp_path / "outside").exists()
    assert not (tmp_path / "outside").exists()


def test_a_launch_whose_record_cannot_be_written_is_one_line_and_leaves_nothing_running(tmp_path):
    db = tmp_path / "studio.db"
    bv.launches_dir(db).write_text("a file where the launches folder should be")
    with pytest.raises(StorageError, match="cannot launch the batch"):
        bv.launch(db, ["batch", "--questions", "all"], "ok-tag")
    assert bv.launches(db) == []


def test_a_forged_launch_record_pointing_outside_is_not_believed(tmp_path):
    db = tmp_path / "studio.db"
    folder = bv.launches_dir(db)
    folder.mkdir()
    (folder / "x.json").write_text('{"tag": "x", "pid": 1, "start": "", "argv": [], "log": "/etc/passwd", '
                                   '"started_at": 1}')
    (folder / "y.json").write_text('{"tag": "../y", "pid": 1, "start": "", "argv": [], "log": "%s", '
                                   '"started_at": 1}' % (folder / "y.log"))
    assert bv.launches(db) == []


@pytest.mark.slow
def test_the_batch_page_shows_a_bad_tag_as_one_error_and_launches_nothing(seeded_store, db_path):
    at = AppTest.from_file("../pages/batch.py", default_timeout=60)
    at.session_state["batch_questions"] = ["sample_lava_lamps"]
    at.session_state["batch_levels"] = ["novice"]
    at.session_state["batch_assistants"] = ["offline/adaptive"]
    at.session_state["batch_tag"] = "../../../outside/TRAVERSE1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("is not a batch tag" in e.value for e in at.error)
    assert not [b for b in at.button if b.key == "batch_launch"]
    assert bv.launches(db_path) == [] and not (db_path.parent.parent / "outside").exists()


def test_the_app_listens_on_127_0_0_1_by_default():
    """``make app`` runs ``streamlit run app.py`` from the checkout, which reads
    ``.streamlit/config.toml``: start it that way and read where the socket is bound."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (bound := _listening(port)):
            assert proc.poll() is None and time.monotonic() < deadline, "the app did not start"
            time.sleep(0.2)
        assert bound == {"127.0.0.1"}, bound
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def _listening(port: int) -> set[str]:
    """Local addresses listening on ``port``, from /proc/net/tcp and tcp6."""
    found = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:
                if v6:
                    found.add("::" if set(addr) == {"0"} else addr)
                else:
                    found.add(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
    return found


def test_an_empty_level_list_is_refused_and_no_batch_is_saved(db_path, capsys):
    assert main(["batch", "--questions", "all", "--levels", ",", "--assistants", "offline/simple",
                 "--tag", "empty-levels", "--max-turns", "1", "--db", str(db_path)]) == 2
    assert "the batch is empty" in capsys.readouterr().err
    assert not db_path.exists() or Store(db_path).search.list_batches() == []
