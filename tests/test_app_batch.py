"""AppTest: the Batch page launches a real background batch, watches it through the database, stops
it with a real signal and resumes it.

The waits are bounded polls for a state in the database or of the process; every process a test
starts is killed by process group in ``finally``.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from ui.batch import launcher as bv

PAGE = "../pages/batch.py"
QID = "sample_lava_lamps"
pytestmark = pytest.mark.slow


def wait_until(condition, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def kill_all(db_path) -> None:
    for rec in bv.launches(db_path):
        if bv.alive(rec):
            try:
                os.killpg(rec.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wait_until(lambda: not bv.alive(rec), "the batch process to die", timeout=10)


def page_summary(at: AppTest) -> str:
    """Everything the page wrote under its Summary heading (and around it)."""
    return "\n".join(m.value for m in at.markdown)


def page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for k, v in state.items():
        at.session_state[k] = v
    return at.run()


def test_a_tiny_offline_batch_launches_finishes_and_links_to_failure_modes(seeded_store, db_path):
    at = page(batch_questions=[QID], batch_levels=["novice"], batch_assistants=["offline/adaptive"],
              batch_max_turns=2, batch_tag="tiny")
    assert not at.exception, [e.value for e in at.exception]
    assert "matrix: 1 conversation(s) × up to 2 turns" in " ".join(c.value for c in at.caption)
    assert "estimated cost: $0.00" in " ".join(c.value for c in at.caption)
    try:
        at.button(key="batch_launch").click().run()
        assert not at.exception, [e.value for e in at.exception]
        [rec] = bv.launches(db_path)
        assert rec.tag == "tiny" and "--max-turns" in rec.argv
        store = Store(db_path)
        wait_until(lambda: not bv.alive(rec), "the batch process to end")
        assert store.search.count(RunFilter(batch_tag="tiny", status="finished")) == 1
        [row] = store.search.list(RunFilter(batch_tag="tiny"))
        assert (row.question_id, row.level, row.assistant, row.seed) == (QID, "novice", "offline/adaptive", 1)
        at.run()  # a reload: the page finds the batch again from its record and the database
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="batch_pick").value == "tiny"
        assert "1 / 1 conversations done" in at.get("progress")[0].proto.text
        summary = page_summary(at)
        assert "Its one conversation finished." in summary and "No model calls" in summary
        assert not at.get("code")  # the command's printout is the terminal's, not the page's (issue 47)
        assert not [b for b in at.button if b.key == "batch_resume"]  # nothing left to resume
        assert not [b for b in at.button if b.key == "batch_stop"]

        app = AppTest.from_file("../app.py", default_timeout=60).run()  # in the app: on to Failure modes
        app.switch_page("pages/batch.py").run()
        app.button(key="batch_failures").click().run()
        assert not app.exception, [e.value for e in app.exception]
        assert app.selectbox(key="fm_batch").value == "tiny"
    finally:
        kill_all(db_path)


def test_stop_sends_ctrl_c_and_resume_continues_the_batch(seeded_store, db_path):
    # a matrix long enough to be stopped mid-way: 3 levels × 2 assistants × 30 seeds, one at a time
    at = page(batch_questions=[QID, "sample_herd_immunity"], batch_levels=list(("novice", "intermediate", "advanced")),
              batch_assistants=["offline/adaptive", "offline/simple"], batch_seeds=30, batch_concurrency=1,
              batch_tag="long")
    assert not at.exception, [e.value for e in at.exception]
    store = Store(db_path)
    try:
        at.button(key="batch_launch").click().run()
        [rec] = bv.launches(db_path)
        wait_until(lambda: store.search.count(RunFilter(batch_tag="long", status="finished")) >= 2, "two runs finished")
        assert bv.alive(rec)
        at.run()
        at.button(key="batch_stop").click().run()  # real SIGINT to the process group
        wait_until(lambda: not bv.alive(rec), "the batch to stop")
        counts = bv.progress(store, "long")
        assert counts["cells"] == 360 and 2 <= counts["finished"] < 360 and counts["running"] == 0
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        summary = page_summary(at)
        counts = bv.progress(store, "long")
        assert f"{counts['finished']} of 360 conversations finished; " in summary, summary
        assert "Resume plays the interrupted, failed and not-started conversations" in summary
        # the page's words, not the terminal's: no redrawn progress bar, no Ctrl-C, no command to type
        assert "Ctrl-C" not in summary and "[#" not in summary and "--resume" not in summary, summary
        assert "Ctrl-C" in open(rec.log).read()  # what the command printed, for its terminal
        at.button(key="batch_resume").click().run()
        [again] = bv.launches(db_path)
        assert again.pid != rec.pid and again.argv[:3] == ("batch", "--resume", "long")
        before = counts["finished"]
        wait_until(lambda: store.search.count(RunFilter(batch_tag="long", status="finished")) > before, "the resumed batch to run")
        assert bv.stop(again, now=True)
        wait_until(lambda: not bv.alive(again), "the resumed batch to stop at once")
        assert bv.progress(store, "long")["running"] == 0
    finally:
        kill_all(db_path)


def test_the_form_refuses_an_empty_matrix_and_the_log_tail_keeps_the_last_redraw(tmp_path):
    from knowsim_core.errors import ConfigError

    with pytest.raises(ConfigError, match="at least one question"):
        bv.request(questions=[], levels=["novice"], assistants=["offline/adaptive"], user="offline/knowsim",
                   extractor="offline/lexical", seeds=1, max_turns=None, concurrency=4, tag="t")
    log = tmp_path / "t.log"
    log.write_text("batch t: 2 to run\n\r[#...] 0/2 runs\r[##..] 1/2 runs\r[####] 2/2 runs\n2 of 2 runs finished\n")
    rec = bv.Launch("t", 1, "", ("batch", "--questions", "q", "--concurrency", "8", "--tag", "t"), str(log), 0.0)
    assert bv.log_tail(rec) == ["batch t: 2 to run", "[####] 2/2 runs", "2 of 2 runs finished"]
    assert bv.resume_argv(rec) == ["batch", "--resume", "t", "--concurrency", "8"]
    auto = bv.request(questions=["q"], levels=["novice"], assistants=["offline/adaptive"], user="offline/knowsim",
                      extractor="offline/lexical", seeds=1, max_turns=None, concurrency=0, tag="t").argv()
    assert "--concurrency" not in auto and "--workers" not in auto  # the command picks: a process per core
    rec = bv.Launch("t", 1, "", tuple(auto), str(log), 0.0)
    assert bv.resume_argv(rec) == ["batch", "--resume", "t"]


def test_a_command_line_batch_is_listed_watched_and_resumed_from_the_page(seeded_store, db_path, capsys):
    """Batches this page did not launch (the command line's) are found in the database: watched,
    and resumed here (the resume becomes this page's launch), never offered a Stop."""
    from knowsim_core.cli import main

    argv = ["batch", "--questions", QID, "--levels", "novice", "--assistants", "offline/simple,offline/adaptive",
            "--max-turns", "2", "--tag", "cli-night", "--db", str(db_path)]
    assert main(argv) == 0
    capsys.readouterr()
    Store(db_path).runs.delete([r.id for r in Store(db_path).search.list(RunFilter(batch_tag="cli-night"))])  # as if stopped at once
    at = page(batch_pick="cli-night")
    assert not at.exception, [e.value for e in at.exception]
    pick = at.selectbox(key="batch_pick")
    assert pick.value == "cli-night" and "cli-night (not launched here)" in pick.options
    assert "0 / 2 conversations done" in at.get("progress")[0].proto.text
    assert "not playing now" in " ".join(c.value for c in at.caption)
    assert not [b for b in at.button if b.key in ("batch_stop", "batch_stop_now")]
    try:
        at.button(key="batch_resume").click().run()
        assert not at.exception, [e.value for e in at.exception]
        [rec] = bv.launches(db_path)
        assert rec.tag == "cli-night" and rec.argv == ("batch", "--resume", "cli-night")
        wait_until(lambda: not bv.alive(rec), "the resumed batch to end")
        assert Store(db_path).search.count(RunFilter(batch_tag="cli-night", status="finished")) == 2
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="batch_pick").options.count("cli-night") == 1  # now this page's launch
        assert "2 / 2 conversations done" in at.get("progress")[0].proto.text
    finally:
        kill_all(db_path)


def test_the_summary_is_the_pages_own_account_from_the_database(seeded_store, db_path, tmp_path, capsys):
    """Counts, spending, each failure with its error and what Resume does — read from the database;
    the command's printout only for a batch that stored no plan (issue 47)."""
    import socket

    from knowsim_core.cli import main

    with socket.socket() as s:  # bound, never listening: a model server that refuses the connection
        s.bind(("127.0.0.1", 0))
        dead = f"compat/m@http://127.0.0.1:{s.getsockname()[1]}/v1"
        code = main(["batch", "--questions", QID, "--levels", "novice", "--assistants", f"offline/simple,{dead}",
                     "--max-turns", "2", "--tag", "acct", "--max-cost", "1", "--db", str(db_path)])
    assert code == 1
    capsys.readouterr()
    store = Store(db_path)
    [failed] = store.search.list(RunFilter(batch_tag="acct", status="failed"))
    log = tmp_path / "acct.log"
    log.write_text("\r[###...] 1/2 runs ended\nstopping: nothing new starts (Ctrl-C again to stop at once)\n")
    rec = bv.Launch("acct", 0, "", ("batch", "--questions", QID, "--max-cost", "1", "--tag", "acct"), str(log), 0.0)
    lines = bv.summary(store, rec, bv.progress(store, "acct"))
    assert lines[0] == "1 of 2 conversations finished; 1 failed.", lines
    assert "No model calls (offline agents only)." in lines  # the refused calls were never answered
    assert f"Failed: {QID} · novice · {failed.assistant} · seed 1 — {failed.error}" in lines
    assert "cannot connect" in failed.error
    assert lines[-1].startswith("Resume plays") and not any("Ctrl-C" in x or "[#" in x for x in lines)
    # a batch whose process ended before storing its plan: its last words are all there is
    early_log = tmp_path / "never.log"
    early_log.write_text("python -m knowsim_core: error: the database is read-only\n")
    early = bv.Launch("never", 0, "", ("batch", "--tag", "never"), str(early_log), 0.0)
    [line] = bv.summary(store, early, bv.progress(store, "never"))
    assert line.startswith("The batch stored no plan") and line.endswith("error: the database is read-only")
