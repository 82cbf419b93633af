"""Real signals to real batches: Ctrl-C to a 2-worker batch's process group, then ``--resume``;
SIGKILL of the parent; one and two Ctrl-Cs to a batch with conversations in flight at a model.

Assertions are on exit codes, output lines, statuses in the database and process liveness — the
only waits are bounded polls for a state to appear.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from knowsim_core.batch.plan import row_key
from knowsim_core.cli import main
from knowsim_core.storage import Store
from knowsim_core.storage.liveness import pid_alive as _pid_alive
from knowsim_core.storage.run_filter import RunFilter
from tests.fakes.llm_server import FakeLLMServer, FirstWave, KnowSimReplies

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
MATRIX = ("--questions", "sample_lava_lamps,sample_herd_immunity", "--levels", "all",
          "--assistants", "offline/simple,offline/adaptive", "--seeds", "2", "--max-turns", "5")  # 24 cells
CELLS = 24


def cli_cmd(*argv: str) -> list[str]:
    return [sys.executable, "-m", "knowsim_core", *argv]


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("KNOWSIM_")}
    e["PYTHONPATH"] = str(ROOT)
    e.update(extra)
    return e


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the batch ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def ctrl_c(proc: subprocess.Popen, condition, what: str, *, times: int = 1, group: bool = True) -> str:
    """Once ``condition`` holds, press Ctrl-C ``times`` (0.3 s apart) — to the process group as a
    terminal does, or to the parent only — and return the batch's stderr; a batch that outlives
    the test is killed."""
    try:
        wait_for(condition, proc, what)
        for i in range(times):
            if i:
                time.sleep(0.3)
            (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return err


def test_ctrl_c_to_a_two_worker_batch_stops_it_and_resume_finishes_exactly_the_rest(db_path, tmp_path, capsys):
    Store(db_path).questions.seed_samples()
    proc = subprocess.Popen(cli_cmd("batch", *MATRIX, "--workers", "2", "--tag", "cut", "--db", str(db_path)),
                            cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    store = Store(db_path)
    try:
        wait_for(lambda: store.search.count(RunFilter(batch_tag="cut", status="finished")) >= 3, proc, "three runs finished")
        started_before = store.search.count(RunFilter(batch_tag="cut"))
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: parent and workers
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    summary = err.strip().splitlines()[-1]
    assert summary.startswith("stopped: ") and "not started" in summary
    assert "batch --resume cut --db" in summary

    rows = store.search.list(RunFilter(batch_tag="cut"), limit=100)
    assert store.search.count(RunFilter(status="running")) == 0
    assert {r.status for r in rows} <= {"finished", "interrupted"}
    # at most the two workers' next conversations began between our count and the signal
    assert len(rows) <= started_before + 2 < CELLS
    assert f"{len(rows) - sum(r.status == 'interrupted' for r in rows)} finished" in summary

    # resume: exactly the missing cells, one run per cell, the same runs as an uninterrupted batch
    code = main(["batch", "--resume", "cut", "--db", str(db_path), "--concurrency", "4"])
    assert code == 0, capsys.readouterr().err
    rows = store.search.list(RunFilter(batch_tag="cut"), limit=100)
    assert len(rows) == CELLS and all(r.status == "finished" for r in rows)
    assert len({row_key(r) for r in rows}) == CELLS

    fresh = tmp_path / "fresh.db"
    assert main(["batch", *MATRIX, "--tag", "whole", "--concurrency", "4", "--db", str(fresh)]) == 0
    whole = Store(fresh)
    expected = {row_key(r): replace(whole.runs.load(r.id), run_id=None) for r in whole.search.list(limit=100)}
    got = {row_key(r): replace(store.runs.load(r.id), run_id=None) for r in rows}
    assert got == expected


def test_killing_the_parent_leaves_no_worker_behind(db_path):
    Store(db_path).questions.seed_samples()
    proc = subprocess.Popen(cli_cmd("batch", *MATRIX, "--workers", "2", "--db", str(db_path)), cwd=ROOT, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    store = Store(db_path)
    try:
        wait_for(lambda: len(_worker_pids(db_path, proc.pid)) >= 2, proc, "both workers writing runs")
        workers = _worker_pids(db_path, proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, no clean-up
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_pid_alive(pid, start) for pid, start in _writers(db_path, everyone=True) if pid in workers):
            assert time.monotonic() < deadline, "a worker survived its parent"
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert store.integrity_check() == "ok"
    Store(db_path)  # reopening marks what the workers left running
    assert store.search.count(RunFilter(status="running")) == 0


def _worker_pids(db_path: Path, parent: int) -> set[int]:
    return {w.pid for w in _writers(db_path, everyone=True)} - {parent}


def _writers(db_path: Path, *, everyone: bool = False) -> list:
    import sqlite3
    from collections import namedtuple

    conn = sqlite3.connect(db_path)
    try:
        where = "" if everyone else " WHERE status = 'running'"
        rows = conn.execute(f"SELECT DISTINCT pid, pid_start FROM runs{where}").fetchall()
    finally:
        conn.close()
    W = namedtuple("W", "pid start")
    return [W(*r) for r in rows if r[0]]


@pytest.fixture()
def slow_server():
    srv = FakeLLMServer(reply=KnowSimReplies()).start()
    try:
        yield srv
    finally:
        srv.stop()


LLM = ("--questions", "sample_lava_lamps,sample_herd_immunity", "--levels", "novice,intermediate", "--seeds", "2",
       "--assistants", "compat/fake:adaptive", "--user", "compat/fake", "--extractor", "compat/fake",
       "--max-turns", "3")


def _llm_batch(srv, db_path, tag, mode=("--concurrency", "4")):
    return subprocess.Popen(cli_cmd("batch", *LLM, *mode, "--tag", tag, "--db", str(db_path)), cwd=ROOT,
                            env=env(KNOWSIM_COMPAT_BASE_URL=srv.openai_url, KNOWSIM_LLM_CACHE="0"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_one_ctrl_c_lets_conversations_in_flight_finish_their_turn(db_path, slow_server):
    slow_server.latency = 0.3
    slow_server.reply = FirstWave(4)  # the first four calls are answered together: four in flight, surely
    proc = _llm_batch(slow_server, db_path, "llm")
    err = ctrl_c(proc, lambda: slow_server.in_flight == 4, "four calls in flight", group=False)
    assert proc.returncode == 130 and "Traceback" not in err, err
    rows = Store(db_path).search.list(RunFilter(batch_tag="llm"))
    assert len(rows) == 4  # the four in flight; none of the other four started
    assert all(r.status == "interrupted" and r.turns >= 1 for r in rows)  # each finished the turn it was in
    assert "0 finished, 4 interrupted, 4 not started" in err
    assert "stopping: nothing new starts; 4 in flight finish their turn (Ctrl-C again to stop at once)" in err


@pytest.mark.parametrize("mode", [("--concurrency", "4"), ("--workers", "2")], ids=["threads", "workers"])
def test_a_second_ctrl_c_stops_at_once_and_marks_what_is_in_flight(db_path, slow_server, mode):
    slow_server.latency = 5.0  # the first turn's calls are still waiting when both signals arrive
    flying = int(mode[1])
    slow_server.reply = FirstWave(flying)
    proc = _llm_batch(slow_server, db_path, "now", mode)
    err = ctrl_c(proc, lambda: slow_server.in_flight == flying, "calls in flight", times=2)
    assert proc.returncode == 130 and "Traceback" not in err, err
    rows = Store(db_path).search.list(RunFilter(batch_tag="now"))
    # nobody waited for the 5-second calls: every run is interrupted before its first turn ended
    assert len(rows) == flying and all(r.status == "interrupted" and r.turns == 0 for r in rows)
    assert f"0 finished, {flying} interrupted, {8 - flying} not started" in err


def _streams(srv) -> Counter:
    """Every request the server received, as canonical JSON (conversations interleave; each one's
    requests carry its whole history, so equal multisets mean equal per-conversation streams)."""
    return Counter(f"{r.path} {json.dumps(r.body, sort_keys=True)}" for r in srv.requests)


def test_an_llm_batch_stopped_by_ctrl_c_and_resumed_sends_the_requests_of_an_uninterrupted_one(
        db_path, tmp_path, slow_server, monkeypatch, capsys):
    slow_server.reply = KnowSimReplies(stateless=True)  # a reply is a function of its request only
    slow_server.latency = 0.1
    for k in [k for k in os.environ if k.startswith("KNOWSIM_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", slow_server.openai_url)
    monkeypatch.setenv("KNOWSIM_LLM_CACHE", "1")
    whole_db = tmp_path / "whole.db"
    assert main(["batch", *LLM, "--tag", "whole", "--concurrency", "2", "--db", str(whole_db)]) == 0
    expected = _streams(slow_server)
    assert sum(expected.values()) == 8 * 3 * 3  # 8 conversations × 3 turns × 3 calls
    slow_server.clear()

    proc = subprocess.Popen(cli_cmd("batch", *LLM, "--concurrency", "2", "--tag", "cut", "--db", str(db_path)),
                            cwd=ROOT, env=env(KNOWSIM_COMPAT_BASE_URL=slow_server.openai_url, KNOWSIM_LLM_CACHE="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    store = Store(db_path)
    err = ctrl_c(proc, lambda: db_path.exists() and store.search.count(RunFilter(batch_tag="cut", status="finished")) >= 1,
                 "a conversation finished")
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert store.search.count(RunFilter(batch_tag="cut", status="finished")) < 8  # there is something to resume
    assert main(["batch", "--resume", "cut", "--concurrency", "2", "--db", str(db_path)]) == 0, capsys.readouterr().err
    assert store.search.count(RunFilter(batch_tag="cut", status="finished")) == 8
    assert _streams(slow_server) == expected
