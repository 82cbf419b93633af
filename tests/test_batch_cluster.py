"""``batch --cluster``: a batch played on a real Dask ``LocalCluster`` (two one-thread worker processes on
loopback), stored by the command's process alone (issue 45).

* the offline matrix on the cluster stores, cell by cell, the runs a local batch stores;
* what the scheduler is sent (every task's payload, its events and logs) holds no API key: the workers
  call the model with the key of their own environment;
* Ctrl-C stops a cluster batch cleanly, and ``--resume`` finishes it — on the cluster or locally, and a
  local batch on the cluster;
* a worker killed with SIGKILL mid-batch: every cell has exactly one finished run, no turn is stored
  twice and no billed call is counted twice;
* the missing extra and an unreachable scheduler are one line each, with nothing stored.

The waits are bounded polls for a state of the database; the batches run as the real command.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.protocol.pickle import dumps

from knowsim_core.batch.cluster import cluster_address, is_workers_line, workers_line
from knowsim_core.batch.plan import row_key
from knowsim_core.batch.service import BatchRequest
from knowsim_core.cli import main
from knowsim_core.errors import ConfigError
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import RunStatus
from tests.fakes.llm_server import FakeLLMServer, KnowSimReplies
from tests.test_batch_signals import ROOT, _writers, cli_cmd, ctrl_c, env, wait_for

pytestmark = pytest.mark.slow
OFFLINE = ("--questions", "sample_lava_lamps,sample_herd_immunity", "--levels", "all",
           "--assistants", "offline/simple,offline/adaptive", "--seeds", "2", "--max-turns", "5")  # 24 cells
LLM = ("--questions", "sample_lava_lamps,sample_herd_immunity", "--levels", "all", "--assistants",
       "compat/bench:adaptive", "--user", "compat/bench", "--extractor", "compat/bench", "--max-turns", "3")  # 6 cells
LLM_CELLS, LLM_TURNS = 6, 3
WORKER_KEY = "sk-worker-env-only-4521"  # in the workers' environment
DRIVER_KEY = "sk-driver-env-never-sent-9307"  # in the command's environment: it must never leave it


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer(reply=KnowSimReplies()) as srv:
        yield srv


@pytest.fixture(scope="module")
def cluster(server):
    workers_env = {"KNOWSIM_COMPAT_BASE_URL": server.openai_url, "KNOWSIM_COMPAT_API_KEY": WORKER_KEY,
                   "KNOWSIM_LLM_CACHE": "0"}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      env=workers_env) as cl:
        yield cl


@pytest.fixture()
def slow_model(server):
    """The stand-in model takes 0.25 s per call (conversations are in flight when a test acts)."""
    server.latency = 0.25
    server.clear()
    yield server
    server.latency = 0.0


def driver_env(**extra: str) -> dict[str, str]:
    """The command's environment: the driver's own keys, which no task may carry."""
    return env(KNOWSIM_COMPAT_API_KEY=DRIVER_KEY, OPENAI_API_KEY=DRIVER_KEY, ANTHROPIC_API_KEY=DRIVER_KEY, **extra)


def seeded(path) -> Store:
    store = Store(path)
    store.questions.seed_samples()
    return store


def cells_of(store: Store, tag: str) -> dict[tuple, list]:
    rows = store.search.list(RunFilter(batch_tag=tag), limit=1000)
    out: dict[tuple, list] = {}
    for r in rows:
        out.setdefault(row_key(r), []).append(r)
    return out


def assert_each_cell_finished_once(store: Store, tag: str, cells: int, turns: int) -> None:
    per_cell = cells_of(store, tag)
    assert len(per_cell) == cells and {len(v) for v in per_cell.values()} == {1}, per_cell  # one run per cell
    for [row] in per_cell.values():
        assert row.status == RunStatus.FINISHED, row
        run = store.runs.load(row.id)
        assert [t.turn for t in run.turns] == list(range(1, turns + 1))  # none lost, none stored twice
        # every billed call counted once: the run's totals are its turns' calls (+ none from a lost attempt)
        assert row.tokens_in == sum(u.input_tokens for t in run.turns for u in t.usage), row
    assert store.integrity_check() == "ok"


# ---------------------------------------------------------------------- the same runs
def test_the_offline_matrix_on_the_cluster_stores_the_runs_a_local_batch_stores(cluster, tmp_path, capsys):
    on_cluster, here = seeded(tmp_path / "cluster.db"), seeded(tmp_path / "local.db")
    assert main(["batch", *OFFLINE, "--tag", "c", "--cluster", cluster.scheduler_address,
                 "--db", str(on_cluster.path)]) == 0
    out = capsys.readouterr()
    assert "24 of 24 runs finished" in out.out and "on 2 workers:" in out.err, out
    assert main(["batch", *OFFLINE, "--tag", "c", "--concurrency", "2", "--db", str(here.path)]) == 0
    a, b = cells_of(on_cluster, "c"), cells_of(here, "c")
    assert set(a) == set(b) and len(a) == 24
    for key in a:
        [ra], [rb] = a[key], b[key]
        run_a, run_b = on_cluster.runs.load(ra.id), here.runs.load(rb.id)
        assert (ra.status, ra.stop_reason, ra.turns) == (rb.status, rb.stop_reason, rb.turns) == (
            RunStatus.FINISHED, rb.stop_reason, 5)
        assert (ra.kg, ra.dc, ra.co) == (rb.kg, rb.dc, rb.co), key
        assert run_a.initial_state == run_b.initial_state, key
        assert [t.state_after for t in run_a.turns] == [t.state_after for t in run_b.turns], key
        assert [(t.user_message, t.assistant_message) for t in run_a.turns] == [
            (t.user_message, t.assistant_message) for t in run_b.turns], key
    # only the command's process wrote the cluster's runs (the workers open no database)
    assert {w.pid for w in _writers(on_cluster.path, everyone=True)} == {os.getpid()}


# ---------------------------------------------------------------------- keys stay where they are
class SentToWorkers(SchedulerPlugin):
    """Every task the scheduler is given, as the bytes it sends a worker to run it."""

    def __init__(self) -> None:
        self.payloads: list[bytes] = []

    def update_graph(self, scheduler, *, keys, **kwargs) -> None:  # noqa: ANN001 — Dask's hook
        for key in keys:
            ts = scheduler.tasks.get(key)
            if ts is not None and ts.run_spec is not None:
                self.payloads.append(str(key).encode() + dumps(ts.run_spec))


def test_no_task_carries_a_key_and_the_workers_call_with_their_own(cluster, server, tmp_path, monkeypatch, capsys):
    plugin = SentToWorkers()
    cluster.scheduler.add_plugin(plugin, name="knowsim-sent-to-workers")
    try:
        for k, v in driver_env(KNOWSIM_COMPAT_BASE_URL=server.openai_url + "/driver").items():
            monkeypatch.setenv(k, v)
        store = seeded(tmp_path / "keys.db")
        server.clear()
        assert main(["batch", *LLM, "--tag", "k", "--cluster", cluster.scheduler_address, "--db", str(store.path)]) == 0
        assert f"{LLM_CELLS} of {LLM_CELLS} runs finished" in capsys.readouterr().out
    finally:
        cluster.scheduler.remove_plugin(name="knowsim-sent-to-workers")
    assert len(plugin.payloads) >= LLM_CELLS * LLM_TURNS  # one task per turn of a model-bound conversation
    assert all(b"compat/bench" in p for p in plugin.payloads)  # the tasks name the agents...
    for secret in (DRIVER_KEY, WORKER_KEY):  # ... and carry no key, neither the command's nor a worker's
        assert not any(secret.encode() in p for p in plugin.payloads)
    # the calls were made with the key of the workers' own environment, to their own endpoint
    assert server.requests and {r.api_key for r in server.requests} == {WORKER_KEY}
    assert not any(r.path.startswith("/driver") for r in server.requests)
    with Client(cluster.scheduler_address) as client:
        shown = repr(client.get_events()) + repr(client.get_scheduler_logs()) + repr(client.get_worker_logs())
    assert DRIVER_KEY not in shown and WORKER_KEY not in shown
    stored = store.path.read_bytes() + b"".join(p.read_bytes() for p in store.path.parent.glob("keys.db-*"))
    assert DRIVER_KEY.encode() not in stored and WORKER_KEY.encode() not in stored


# ---------------------------------------------------------------------- Ctrl-C and --resume
def _interrupted(db_path, tag: str, argv: list[str], **environ: str) -> str:
    """Run ``batch`` with ``argv`` until a few turns are stored, press Ctrl-C once; its stderr."""
    store = Store(db_path)
    proc = subprocess.Popen(cli_cmd("batch", *LLM, "--tag", tag, "--concurrency", "3", "--db", str(db_path), *argv),
                            cwd=ROOT, env=driver_env(**environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        wait_for(lambda: sum(r.turns for r in store.search.list(RunFilter(batch_tag=tag), limit=100)) >= 3, proc,
                 "three turns stored", timeout=120)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    rows = store.search.list(RunFilter(batch_tag=tag), limit=100)
    assert rows and RunStatus.RUNNING not in {r.status for r in rows}  # each closed: finished or interrupted
    return err


def test_ctrl_c_stops_a_cluster_batch_and_resume_finishes_it_locally(cluster, slow_model, tmp_path, capsys,
                                                                    monkeypatch):
    store = seeded(tmp_path / "cut.db")
    err = _interrupted(store.path, "cut", ["--cluster", cluster.scheduler_address])
    assert f"--resume cut --db {store.path} --concurrency 3 --cluster {cluster.scheduler_address}" in err, err
    cut = [r for r in store.search.list(RunFilter(batch_tag="cut"), limit=100) if r.status == RunStatus.INTERRUPTED]
    assert cut and all(0 < r.turns < LLM_TURNS for r in cut)  # stopped after the turn in flight, resumable
    # continued here, on this machine's threads, with this process's own endpoint
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", slow_model.openai_url)
    monkeypatch.setenv("KNOWSIM_LLM_CACHE", "0")
    assert main(["batch", "--resume", "cut", "--concurrency", "6", "--db", str(store.path)]) == 0
    assert_each_cell_finished_once(store, "cut", LLM_CELLS, LLM_TURNS)
    assert {r.id for r in cut} <= {r.id for r in store.search.list(RunFilter(batch_tag="cut"), limit=100)}


def test_ctrl_c_stops_a_local_batch_and_resume_finishes_it_on_the_cluster(cluster, slow_model, tmp_path, capsys):
    store = seeded(tmp_path / "here.db")
    _interrupted(store.path, "here", [], KNOWSIM_COMPAT_BASE_URL=slow_model.openai_url, KNOWSIM_LLM_CACHE="0")
    cut = [r for r in store.search.list(RunFilter(batch_tag="here"), limit=100) if r.status == RunStatus.INTERRUPTED]
    assert cut
    assert main(["batch", "--resume", "here", "--cluster", cluster.scheduler_address, "--db", str(store.path)]) == 0
    assert_each_cell_finished_once(store, "here", LLM_CELLS, LLM_TURNS)
    assert {r.id for r in cut} <= {r.id for r in store.search.list(RunFilter(batch_tag="here"), limit=100)}


def test_a_second_ctrl_c_stops_a_cluster_batch_at_once(cluster, slow_model, tmp_path):
    store = seeded(tmp_path / "now.db")
    proc = subprocess.Popen(cli_cmd("batch", *LLM, "--tag", "now", "--concurrency", "6", "--cluster",
                                    cluster.scheduler_address, "--db", str(store.path)),
                            cwd=ROOT, env=driver_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    err = ctrl_c(proc, lambda: sum(r.turns for r in store.search.list(RunFilter(batch_tag="now"), limit=100)) >= 2,
                 "two turns stored", times=2)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    rows = store.search.list(RunFilter(batch_tag="now"), limit=100)
    assert RunStatus.INTERRUPTED in {r.status for r in rows} and RunStatus.RUNNING not in {r.status for r in rows}
    assert store.cells.holders("now") == {}  # every claim released


# ---------------------------------------------------------------------- a worker lost
def test_a_worker_killed_mid_batch_costs_only_its_turn_in_flight(cluster, slow_model, tmp_path):
    store = seeded(tmp_path / "kill.db")
    proc = subprocess.Popen(cli_cmd("batch", *LLM, "--tag", "kill", "--concurrency", "4", "--cluster",
                                    cluster.scheduler_address, "--db", str(store.path)),
                            cwd=ROOT, env=driver_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    with Client(cluster.scheduler_address) as client:
        try:
            pids = client.run(os.getpid)

            def busy_worker() -> str:
                turns = sum(r.turns for r in store.search.list(RunFilter(batch_tag="kill"), limit=100))
                return next((w for w, keys in client.processing().items() if keys), "") if turns >= 2 else ""

            wait_for(lambda: bool(busy_worker()), proc, "two turns stored and a turn in flight", timeout=120)
            os.kill(pids[busy_worker()], signal.SIGKILL)  # as the out-of-memory killer would
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert f"{LLM_CELLS} of {LLM_CELLS} runs finished" in out
    assert_each_cell_finished_once(store, "kill", LLM_CELLS, LLM_TURNS)


def test_a_lost_scheduler_stops_the_batch_with_one_line_and_resume_finishes_it(server, slow_model, tmp_path,
                                                                              monkeypatch, capsys):
    """A cluster of its own, started with the two commands the README gives; its scheduler is killed."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).with_name("dask"))
    cluster_env = env(KNOWSIM_COMPAT_BASE_URL=server.openai_url, KNOWSIM_COMPAT_API_KEY=WORKER_KEY,
                      KNOWSIM_LLM_CACHE="0")
    started = [subprocess.Popen(argv, cwd=tmp_path, env=cluster_env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True) for argv in (
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        [dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
         "--preload", "knowsim_core.batch.remote"])]
    store = seeded(tmp_path / "lost.db")
    try:
        deadline = time.monotonic() + 90
        while True:  # the scheduler listening and its worker joined
            try:
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(1, timeout=60)
                break
            except OSError:
                assert time.monotonic() < deadline, "the scheduler did not start"
                time.sleep(0.2)
        proc = subprocess.Popen(cli_cmd("batch", *LLM, "--tag", "lost", "--concurrency", "4", "--cluster", address,
                                        "--db", str(store.path)), cwd=ROOT, env=driver_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            wait_for(lambda: sum(r.turns for r in store.search.list(RunFilter(batch_tag="lost"), limit=100)) >= 2,
                     proc, "two turns stored", timeout=120)
            os.killpg(started[0].pid, signal.SIGKILL)  # the scheduler
            _, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        for p in started:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"stopped: lost the Dask scheduler at {address}") and "--resume lost" in last, err
    rows = store.search.list(RunFilter(batch_tag="lost"), limit=100)
    assert rows and RunStatus.RUNNING not in {r.status for r in rows}
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", slow_model.openai_url)
    monkeypatch.setenv("KNOWSIM_LLM_CACHE", "0")
    assert main(["batch", "--resume", "lost", "--concurrency", "6", "--db", str(store.path)]) == 0  # here, this time
    assert_each_cell_finished_once(store, "lost", LLM_CELLS, LLM_TURNS)


# ---------------------------------------------------------------------- one-line errors
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_and_stores_nothing(tmp_path):
    store = seeded(tmp_path / "u.db")
    port = free_port()
    done = subprocess.run(cli_cmd("batch", *OFFLINE, "--cluster", f"127.0.0.1:{port}", "--db", str(store.path)),
                          cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} (connection refused)"), done.stderr
    assert "Traceback" not in done.stderr
    assert store.search.list_batches() == [] and store.search.count(RunFilter()) == 0


def test_a_scheduler_without_the_studios_code_is_one_line_and_stores_nothing(tmp_path):
    """`dask scheduler` started outside the checkout, without it on PYTHONPATH, cannot unpickle the
    Studio's tasks: one line saying how to start it, before anything is stored."""
    port = free_port()
    bare = {k: v for k, v in env().items() if k != "PYTHONPATH"}
    scheduler = subprocess.Popen([str(Path(sys.executable).with_name("dask")), "scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], cwd=tmp_path, env=bare,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    store = seeded(tmp_path / "code.db")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert scheduler.poll() is None and time.monotonic() < deadline, "the scheduler did not start"
                time.sleep(0.2)
        done = subprocess.run(cli_cmd("batch", *OFFLINE, "--cluster", f"127.0.0.1:{port}", "--db", str(store.path)),
                              cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    finally:
        os.killpg(scheduler.pid, signal.SIGKILL)
        scheduler.wait()
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: the Dask scheduler at tcp://127.0.0.1:{port} cannot load the Studio's code "
                           "(ModuleNotFoundError"), done.stderr
    assert "checkout on its PYTHONPATH (see docs/how-to/cluster.md)" in last and "Traceback" not in done.stderr
    assert store.search.list_batches() == [] and store.search.count(RunFilter()) == 0


def test_the_missing_extra_is_one_line(tmp_path):
    store = seeded(tmp_path / "m.db")
    code = ("import sys; sys.modules['distributed'] = sys.modules['dask'] = None\n"
            "from knowsim_core.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "batch", *OFFLINE, "--cluster", "tcp://127.0.0.1:8786",
                           "--db", str(store.path)], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("error: batch --cluster needs Dask, an optional extra: install it with "
                                   "`python -m pip install -c constraints.txt -r requirements-cluster.txt`")
    assert store.search.list_batches() == []


# ---------------------------------------------------------------------- the option
def test_the_cluster_option_reads_writes_and_resumes_with_the_request():
    assert cluster_address("10.0.0.5") == "tcp://10.0.0.5:8786"
    assert cluster_address(" sched.lab:9000 ") == "tcp://sched.lab:9000"
    for bad in ("http://h:1", "tcp://h:99999", "tcp://:8786", "tcp://u:p@h:1", "tcp://h:1/x"):
        with pytest.raises(ValueError, match="tcp://HOST:PORT"):
            cluster_address(bad)
    req = BatchRequest(questions=("sample_lava_lamps",), cluster="tcp://127.0.0.1:8786")
    argv = req.argv()
    assert argv[argv.index("--cluster") + 1] == "tcp://127.0.0.1:8786"
    assert BatchRequest.from_argv(argv) == req
    assert req.resume_argv("t") == ["batch", "--resume", "t", "--cluster", "tcp://127.0.0.1:8786"]
    with pytest.raises(ConfigError, match="drop --workers"):
        BatchRequest(workers=2, cluster="tcp://127.0.0.1:8786").check()


def test_the_per_worker_line_says_in_flight_and_ended_and_is_found_again():
    line = workers_line({"tcp://10.0.0.5:40001": (2, 17), "tcp://10.0.0.6:40001": (0, 19)})
    assert line == ("on 2 workers: tcp://10.0.0.5:40001 2 in flight, 17 ended · "
                    "tcp://10.0.0.6:40001 0 in flight, 19 ended")
    assert is_workers_line(line) and not is_workers_line("[####....] 36/40 runs ended · 2 in flight")
    assert workers_line({}) == ""


# ---------------------------------------------------------------------- the Batch page
def test_the_batch_page_runs_a_batch_on_the_cluster_and_shows_its_workers(cluster, seeded_store, db_path):
    from tests.test_app_batch import kill_all, page, wait_until
    from ui.batch import launcher as bv

    form = dict(batch_questions=["sample_lava_lamps"], batch_levels=["novice", "advanced"],
                batch_assistants=["offline/adaptive"], batch_max_turns=2, batch_tag="pc", batch_on_cluster=True)
    port = free_port()
    at = page(**form, batch_cluster=f"127.0.0.1:{port}")
    at.button(key="batch_launch").click().run()
    assert len(at.error) == 1 and at.error[0].value.startswith(
        f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port} (connection refused)"), [e.value for e in at.error]
    assert bv.launches(db_path) == []  # nothing launched to an address where nothing listens
    at = page(**form, batch_cluster=cluster.scheduler_address.removeprefix("tcp://"))
    try:
        at.button(key="batch_launch").click().run()
        assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
        [rec] = bv.launches(db_path)
        assert rec.argv[rec.argv.index("--cluster") + 1] == cluster.scheduler_address
        wait_until(lambda: not bv.alive(rec), "the batch process to end")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert "2 / 2 conversations done" in at.get("progress")[0].proto.text
        shown = " ".join(c.value for c in at.caption)
        assert "ended" in shown and re.search(r"on [12] workers?: tcp://127\.0\.0\.1:\d+ 0 in flight, \d ended", shown)
    finally:
        kill_all(db_path)


# ---------------------------------------------------------------------- the storing half
def test_turns_stored_as_played_elsewhere_are_the_turns_stored_here(tmp_path):
    """What a worker sends (StoredTurn: the columns and the packed record; the run's metrics) stores
    the very rows a local run stores; metrics computed over another number of turns are not believed."""
    from dataclasses import replace as _replace

    from knowsim_core.services.runner import start_run
    from knowsim_core.storage.runs import Closing, StoredTurn

    store = seeded(tmp_path / "st.db")
    here = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive", seed=3,
                     max_turns=4)
    here.run_to_end()
    run = store.runs.load(here.run_id)
    for metrics in (run.metrics(), _replace(run.metrics(), turns=3, knowledge_gain=-99)):
        rid = store.runs.create(run.with_turns(()), graph_version_id=None, batch_tag=None)
        store.runs.append_turns(rid, [StoredTurn.of(t) for t in run.turns],
                                close=Closing(RunStatus.FINISHED, run.stop_reason, metrics=metrics))
        assert store.runs.load(rid).turns == run.turns
        a, b = store.search.get_row(here.run_id), store.search.get_row(rid)
        assert (a.turns, a.kg, a.dc, a.co, a.stop_reason) == (b.turns, b.kg, b.dc, b.co, b.stop_reason)
