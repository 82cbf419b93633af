"""Run lifecycle: leases for runs the app plays, check-and-set reopening (real concurrent
processes), and resumes that send exactly the requests an uninterrupted run sends."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from knowsim_core.vocab import EndReason

from knowsim_core.errors import StorageError
from knowsim_core.llm import LLMSettings
from knowsim_core.prompts import assistant as p_assistant
from knowsim_core.services.runner import resume_run, start_run
from knowsim_core.storage import LEASE_SECONDS, SCHEMA_VERSION, Store
from knowsim_core.storage.connection import pack as _pack, unpack as _unpack
from knowsim_core.storage.run_filter import RunFilter
from tests import storage_fakes as fk
from tests.storage_fakes import Clock
from tests.fakes.llm_server import KnowSimReplies, llm_server  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
AGENTS = dict(assistant_id=fk.ASSISTANT, user_id=fk.USER, extractor_id=fk.EXTRACTOR)
Q = "sample_lava_lamps"


@pytest.fixture()
def clocked(db_path):
    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    return store, clock


# ---------------------------------------------------------------------- leases
def test_an_app_run_whose_lease_lapses_is_left_open_with_its_metrics_and_plays_on(clocked):
    """Issue 47: a run left in a closed tab used to read "running" with no metrics, then "interrupted"
    (listed with the failed runs). It is "open" throughout, with the metrics of its turns so far."""
    store, clock = clocked
    live = start_run(store, question_id=Q, level="novice", seed=3, max_turns=6, lease_seconds=60, **AGENTS)
    live.step()
    row = store.search.get_row(live.run_id)
    m = live.run.metrics()  # the metrics so far are stored with each turn of an open run
    assert (row.status, row.kg, row.dc, row.co) == ("open", m.knowledge_gain, m.delivery_calibration,
                                                    m.cognitive_overload)
    clock.t += 59
    assert store.runs.mark_dead() == [] and store.search.get_row(live.run_id).status == "open"
    clock.t += 2  # the session went away: nobody renewed the lease; this process is still alive
    assert store.runs.mark_dead() == [live.run_id]
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns, row.error, row.kg) == ("open", 1, "", m.knowledge_gain)
    assert store.search.count(RunFilter(status=("failed", "interrupted"))) == 0  # "failed / interrupted only"
    # the abandoned LiveRun refuses to play on (nothing is played or lost): its ending, as data …
    ending = live.step()
    assert ending.reason is EndReason.LEASE_LAPSED and "no longer held by this session" in ending.error
    assert store.search.get_row(live.run_id).turns == 1
    # … and a resume continues it into the run an uninterrupted session would have played
    resumed = resume_run(store, live.run_id, lease_seconds=60).run_to_end()
    full = start_run(store, question_id=Q, level="novice", seed=3, max_turns=6, **AGENTS).run_to_end()
    assert replace(resumed, run_id=None) == replace(full, run_id=None)
    assert store.search.get_row(live.run_id).status == "finished"


def test_each_step_and_the_open_session_renew_the_lease(clocked):
    store, clock = clocked
    live = start_run(store, question_id=Q, level="novice", seed=1, max_turns=6, lease_seconds=60, **AGENTS)
    for _ in range(3):
        clock.t += 50
        live.step()  # renews before the model calls and when the turn is stored
    clock.t += 50
    assert store.runs.renew_lease(live.run_id)  # the app's heartbeat while the run sits open
    clock.t += 50
    assert store.runs.mark_dead() == [] and store.search.get_row(live.run_id).status == "open"
    clock.t += 11
    assert store.runs.mark_dead() == [live.run_id]
    assert not store.runs.renew_lease(live.run_id)  # a released run is not silently taken back (resume claims it)
    assert store.search.get_row(live.run_id).status == "open"


def test_command_line_runs_hold_no_lease_and_keep_the_pid_check(clocked):
    store, clock = clocked
    live = start_run(store, question_id=Q, level="novice", seed=1, max_turns=4, **AGENTS)
    live.step()
    clock.t += 10 * LEASE_SECONDS
    assert store.runs.mark_dead() == []  # written by this live process: still running
    assert store.search.get_row(live.run_id).status == "running"
    assert store.runs.renew_lease(live.run_id)  # ours, running; it stays without a lease
    clock.t += 10 * LEASE_SECONDS
    assert Store(store.path, clock=clock).search.get_row(live.run_id).status == "running"


def test_a_lapsed_lease_of_another_live_process_does_not_block_a_resume(clocked):
    store, clock = clocked
    live = start_run(store, question_id=Q, level="novice", seed=1, max_turns=4, lease_seconds=30, **AGENTS)
    live.step()
    conn = sqlite3.connect(store.path)  # pretend another (live) server process holds it: our parent
    conn.execute("UPDATE runs SET pid = ?, pid_start = NULL WHERE id = ?", [os.getppid(), live.run_id])
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="is open in another Studio"):
        store.runs.reopen(live.run_id, turns=1)
    clock.t += 31
    store.runs.reopen(live.run_id, turns=1)  # its session went away: the run may be taken over
    assert store.search.get_row(live.run_id).status == "running"  # by the command line: no lease


# ---------------------------------------------------------------------- reopening
def test_reopen_never_reopens_or_demotes_a_finished_run(clocked):
    store, _ = clocked
    live = start_run(store, question_id=Q, level="novice", seed=2, max_turns=3, **AGENTS)
    live.run_to_end()
    with pytest.raises(StorageError, match="already finished"):
        store.runs.reopen(live.run_id)
    with pytest.raises(StorageError, match="already finished; it cannot become interrupted"):
        store.runs.finish(live.run_id, status="interrupted")
    assert store.search.get_row(live.run_id).status == "finished"


def test_reopen_refuses_a_copy_loaded_before_the_run_moved_on(clocked):
    store, _ = clocked
    live = start_run(store, question_id=Q, level="novice", seed=2, max_turns=5, **AGENTS)
    live.step()
    store.runs.finish(live.run_id, status="interrupted")
    with pytest.raises(StorageError, match=r"changed while it was being resumed \(it has 1 turns now, 0 were loaded\)"):
        store.runs.reopen(live.run_id, turns=0)
    assert store.search.get_row(live.run_id).status == "interrupted"


RESUMER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from knowsim_core.agents import registry
from tests import storage_fakes as fk

def gated(**_):  # built after the run was loaded and before it is claimed: hold the resume there
    Path({ready!r}).touch()
    while not Path({gate!r}).exists():
        time.sleep(0.01)
    return fk.FakeAssistant()

registry.register("assistant", fk.ASSISTANT, gated)
from knowsim_core.cli import main
sys.exit(main(["run", "--resume", {rid!r}, "--db", {db!r}]))
"""


def _resumer(tmp: Path, name: str, rid: str, db: Path, gate: Path) -> tuple[subprocess.Popen, Path]:
    ready = tmp / f"{name}.ready"
    script = RESUMER.format(root=str(ROOT), ready=str(ready), gate=str(gate), rid=rid, db=str(db))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, ready


def _wait_for(path: Path, procs) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        for p in procs:
            assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def _interrupted_run(db_path: Path) -> str:
    store = Store(db_path)
    store.questions.seed_samples()
    live = start_run(store, question_id=Q, level="advanced", seed=5, max_turns=6, **AGENTS)
    live.step()
    live.step()
    store.runs.finish(live.run_id, status="interrupted")
    return live.run_id


def _assert_finished_intact(db_path: Path, rid: str) -> None:
    store = Store(db_path)  # a new opening also marks dead writers: the run must not be demoted
    row = store.search.get_row(rid)
    assert (row.status, row.turns, row.stop_reason) == ("finished", 6, "max_turns")
    assert [t.turn for t in store.runs.load(rid).turns] == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_a_resume_that_loaded_the_run_before_another_finished_it_loses_cleanly(db_path, tmp_path):
    rid = _interrupted_run(db_path)
    late_gate, open_gate = tmp_path / "late.go", tmp_path / "open.go"
    open_gate.touch()
    late, late_ready = _resumer(tmp_path, "late", rid, db_path, late_gate)
    _wait_for(late_ready, [late])  # the late resume has read the run (2 turns, interrupted) …
    first, _ = _resumer(tmp_path, "first", rid, db_path, open_gate)
    out, err = first.communicate(timeout=120)  # … while another resume plays it to the end
    assert first.returncode == 0, err
    late_gate.touch()
    out, err = late.communicate(timeout=120)
    assert late.returncode == 2
    assert err.strip().splitlines() == [f"error: run {rid} is already finished (max_turns); nothing to resume"]
    _assert_finished_intact(db_path, rid)


@pytest.mark.slow
def test_two_resumes_released_at_once_one_wins_the_other_gets_one_line(db_path, tmp_path):
    rid = _interrupted_run(db_path)
    gate = tmp_path / "go"
    procs = [_resumer(tmp_path, f"r{i}", rid, db_path, gate) for i in range(2)]
    for _, ready in procs:
        _wait_for(ready, [p for p, _ in procs])
    gate.touch()
    results = [(p.returncode, err) for p, _ in procs for _, err in [p.communicate(timeout=120)]]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2).strip().splitlines()
    assert len(loser) == 1 and loser[0].startswith(f"error: run {rid} is ")
    assert "already finished" in loser[0] or "still being written by process" in loser[0]
    _assert_finished_intact(db_path, rid)


# ---------------------------------------------------------------------- resume = uninterrupted
LLM_IDS = {"assistant_id": "compat/fake:adaptive", "user_id": "compat/fake", "extractor_id": "compat/fake"}
EXPERT_Q = "sample_herd_immunity"  # domain "expert": the assistant's system prompt is not the maths tutor's


def _settings(srv) -> dict:
    env = {"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_LLM_MAX_RETRIES": "0"}
    return {"settings": LLMSettings.from_sources(env=env), "cache": None}  # no cache: every call is sent


def _bodies(srv, start: int) -> list[str]:
    return [json.dumps(r.body, sort_keys=True) for r in srv.requests[start:]]


def _timeless(run):
    """The run without its id and the measured call latencies (the only things allowed to differ)."""
    turns = tuple(replace(t, usage=tuple(replace(u, latency_ms=0.0) for u in t.usage)) for t in run.turns)
    return replace(run, run_id=None, turns=turns)


def test_a_resumed_llm_run_sends_the_requests_of_an_uninterrupted_run(llm_server, tmp_path):
    store = Store(tmp_path / "llm.db")
    store.questions.seed_samples()
    kw = dict(question_id=EXPERT_Q, level="novice", seed=7, max_turns=4, **LLM_IDS)

    llm_server.reply = KnowSimReplies(explain=2)
    start = len(llm_server.requests)
    full = start_run(store, **kw, settings=_settings(llm_server)).run_to_end()
    uninterrupted = _bodies(llm_server, start)
    assert len(uninterrupted) == 12

    llm_server.reply = KnowSimReplies(explain=2)
    start = len(llm_server.requests)
    live = start_run(store, **kw, settings=_settings(llm_server))
    live.step()
    live.step()
    store.runs.finish(live.run_id, status="interrupted")  # the session is gone after turn 2
    resumed = resume_run(Store(store.path), live.run_id, settings=_settings(llm_server)).run_to_end()
    interrupted_then_resumed = _bodies(llm_server, start)

    assert interrupted_then_resumed == uninterrupted  # system prompts, histories, seeds, sampling
    roles = KnowSimReplies()
    systems = {r.system for r in llm_server.requests[start:] if roles.role_of(r) == "assistant"}
    assert systems == {p_assistant.system_prompt("adaptive", "expert")}  # after the resume too
    assert _timeless(resumed) == _timeless(full)
    assert store.runs.load(live.run_id).domain == "expert"


def test_a_run_stored_before_runs_kept_their_domain_resumes_with_the_questions(clocked):
    store, _ = clocked
    live = start_run(store, question_id="sample_crispr_gene_editing", level="novice", seed=1, max_turns=3, **AGENTS)
    live.step()
    store.runs.finish(live.run_id, status="interrupted")
    conn = sqlite3.connect(store.path)
    setup = _unpack(conn.execute("SELECT setup_json FROM runs WHERE id = ?", [live.run_id]).fetchone()[0])
    assert setup.pop("domain") == "expert"
    conn.execute("UPDATE runs SET setup_json = ? WHERE id = ?", [_pack(setup), live.run_id])
    conn.commit()
    conn.close()
    assert store.runs.load(live.run_id).domain == ""  # an old record still loads
    resumed = resume_run(store, live.run_id)
    assert resumed.sim.material.domain == "expert"
    assert resumed.run_to_end().domain == "expert"


# ---------------------------------------------------------------------- the app's player
def test_the_player_holds_a_lease_and_takes_back_a_run_left_open_while_idle(clocked):
    from ui.simulate.player import Player

    store, clock = clocked
    live = start_run(store, question_id=Q, level="novice", seed=6, max_turns=4, **AGENTS)  # as the setup form does
    p = Player(store, (live.run_id,), live={live.run_id: live})
    p.hold_leases()  # what opening the run in the Simulate page does, and its heartbeat after that
    clock.t += LEASE_SECONDS - 1
    p.hold_leases()
    clock.t += LEASE_SECONDS - 1
    assert store.runs.mark_dead() == []
    assert p.forward() and p.turn == 1
    clock.t += LEASE_SECONDS + 1  # the tab sat idle: the lease lapsed and was released, the run left open
    assert store.runs.mark_dead() == [live.run_id]
    assert store.search.get_row(live.run_id).status == "open"
    assert p.forward() and p.turn == 2 and not p.error  # stepping again takes the run back
    assert store.search.get_row(live.run_id).status == "open"
    while p.forward():
        pass
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("finished", 4)


def test_several_statuses_are_filtered_in_sql_before_the_page_limit(clocked):
    store, _ = clocked
    ids = {}
    for seed, status in ((1, "failed"), (2, "finished"), (3, "interrupted"), (4, "finished"), (5, "interrupted")):
        live = start_run(store, question_id=Q, level="novice", seed=seed, max_turns=2, **AGENTS)
        live.step()
        store.runs.finish(live.run_id, status=status)
        ids[seed] = live.run_id
    bad = ("failed", "interrupted")
    assert store.search.count(RunFilter(status=bad)) == 3
    page = [r.id for r in store.search.list(RunFilter(status=bad), limit=2, order="created_asc")]
    assert page == [ids[1], ids[3]]
    assert [r.id for r in store.search.list(RunFilter(status=bad), limit=2, offset=2, order="created_asc")] == [ids[5]]


def test_a_schema_2_database_gains_leases_and_keeps_its_runs(db_path):
    store = Store(db_path)
    store.questions.seed_samples()
    old = start_run(store, question_id=Q, level="novice", seed=1, max_turns=2, **AGENTS).run_to_end()
    conn = sqlite3.connect(db_path)  # what a database written before leases looks like
    conn.execute("ALTER TABLE runs DROP COLUMN lease_seconds")
    conn.execute("ALTER TABLE runs DROP COLUMN lease_until")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0003_run_leases'")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    clock = Clock()
    reopened = Store(db_path, clock=clock)
    assert reopened.schema_version == SCHEMA_VERSION and reopened.runs.load(old.run_id) == old
    live = start_run(reopened, question_id=Q, level="novice", seed=2, max_turns=3, lease_seconds=10, **AGENTS)
    clock.t += 11
    assert reopened.runs.mark_dead() == [live.run_id]
