"""A real language model end to end: llama-cpp-python's server with Gemma 3 270M on 127.0.0.1.

Started by the launcher `make local-model` uses (:mod:`knowsim_core.llm.local_server`) and stopped by
its own pid. A 270M pretrained model writes anything, so most assertions are what must hold whatever it
writes: the run is stored, finished or stopped with a stated reason; every stored turn is a record the
engine accepted; each extractor reply was schema-valid or counted as failed (refused) with its reason;
`explain` and `failures` agree on the run; calls record tokens and time, at price 0. With every role
played by the local model the conversation must also *complete*: 2 turns, both with a schema-valid
extractor reply (the compact format, whose grammar leaves the model only the labels to choose — before
it, the full format's reply was cut at the cap every time and the run ended after turn 1). Mixed setups:
offline tutor + local learner + offline extractor; local tutor + offline learner + offline extractor,
killed by SIGKILL during turn 2 and resumed — the finished turn is not played again.

The question is a small one made here (4 IUs, same form as the samples): under the grammar the model
writes a token every 0.3–1.5 s on this 2-core machine (``benchmarks/local_model.py``), and the compact
extractor reply is ~110 tokens for 4 IUs (~28 per IU), so a sample's 11–18 IUs would cost CI minutes
more per turn.

Needs ``requirements-local.txt`` (``make test`` installs it). Without it the tests skip, except under
CI (``CI`` set), where they fail: CI must run them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowsim_core.engine.graph import IUGraph
from knowsim_core.llm.local_server import LocalModelError, check_build, find_model, start
from knowsim_core.storage import Store
from tests.conftest import in_ci

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parent.parent
QID = "local_model_fractions"
# reply caps for CI: short replies keep a call to seconds or a minute on a busy 2-core machine
CAPS = "assistant=48,user=96,extractor=360"
ROLES = ("assistant", "user", "extractor")


def tiny_graph() -> IUGraph:
    nodes = [
        ("IU1", "Fractions as parts of a whole", 0.9, "A fraction a/b names a of b equal parts of one whole."),
        ("IU2", "Common denominators", 0.6, "To add fractions, rewrite them over the same denominator first."),
        ("IU3", "Adding numerators", 0.35, "With equal denominators, add the numerators and keep the denominator."),
        ("IU4", "The sum 1/2 + 1/3", 0.1, "1/2 + 1/3 = 3/6 + 2/6 = 5/6."),
    ]
    return IUGraph.from_data({
        "knowledge_areas": ["Fractions"],
        "nodes": [{"id": i, "concept": c, "abstraction_level": lv, "description": d} for i, c, lv, d in nodes],
        "edges": [{"from": a, "to": b, "delta_l": round(la - lb, 6), "reason": "needed first"}
                  for (a, _, la, _), (b, _, lb, _) in zip(nodes, nodes[1:])],
    })


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The real server, started once for this module and stopped by its own pid."""
    try:
        check_build()
        find_model()
    except LocalModelError as exc:
        if in_ci():
            pytest.fail(f"CI runs the local-model tests: {exc}")
        pytest.skip(str(exc))
    rec = tmp_path_factory.mktemp("local") / "local-model.json"
    live = start(record=rec)
    try:
        yield live
    finally:
        pid = live.pid
        live.stop()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone (reaped by stop): nothing of the server is left running
        assert not rec.exists()


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "local.db"
    store = Store(path)
    store.questions.add(question_id=QID, text="What is 1/2 + 1/3?", reference_answer="Over sixths: 3/6 + 2/6 = 5/6.",
                       domain="math", kind="yours")
    store.questions.add_graph_version(QID, tiny_graph(), note="4-IU graph for the local-model test")
    return path


def cli_env(local, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KNOWSIM_"))}
    env.update(PYTHONPATH=str(ROOT), KNOWSIM_DB=str(db), KNOWSIM_LOCAL_MODEL_FILE=str(local.record),
               KNOWSIM_LLM_MAX_TOKENS=CAPS, KNOWSIM_LLM_CACHE="0")
    return env


def cli(args: list[str], env: dict[str, str], timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "knowsim_core", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_args(ids: dict[str, str]) -> list[str]:
    return ["run", "--question", QID, "--level", "novice", "--max-turns", "2", "--seed", "3",
            "--assistant", ids["assistant"], "--user", ids["user"], "--extractor", ids["extractor"]]


def check_stored_run(db: Path, run_id: str, local_roles: set[str]) -> None:
    """What must hold whatever the model wrote."""
    store = Store(db)
    row = store.search.get_row(run_id)
    assert row.status in ("finished", "failed"), row.status
    if row.status == "finished":
        assert row.stop_reason, "a finished run says why it stopped"
    else:
        assert row.error and "\n" not in row.error.strip() and "Traceback" not in row.error, row.error
    run = store.runs.load(run_id)
    assert [t.turn for t in run.turns] == list(range(1, len(run.turns) + 1))  # no turn stored twice
    described = json.loads(dict(run.meta)["agents"])
    for role in local_roles:
        assert described[role]["local_model"] and described[role]["price"].startswith("0: a local model")
        assert described[role]["max_tokens"] == int(dict(p.split("=") for p in CAPS.split(","))[role])
    graph_ids = set(tiny_graph().index.ids)
    for t in run.turns:
        # a record the engine accepted: it round-trips through the stored form unchanged
        assert type(t).from_data(t.to_data()) == t
        roles = [u.role for u in t.usage]
        assert set(roles) <= local_roles and local_roles - {"extractor"} <= set(roles), roles
        for u in t.usage:
            assert u.cost_usd == 0 and u.latency_ms > 0 and u.input_tokens > 0 and u.output_tokens >= 0
        if "extractor" in local_roles:
            if t.extractor_failed:  # refused: counted, with its reason in the turn's notes
                assert any("IU labels" in n or "extractor" in n for n in t.notes), t.notes
            else:  # schema-valid (possibly after the one repair request): labels for this graph's IUs
                assert {s.id for s in t.signals} & graph_ids
    check_explain_agrees_with_failures(db, run_id, store)


def check_explain_agrees_with_failures(db: Path, run_id: str, store: Store) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ex = cli(["explain", run_id, "--db", str(db), "--json"], env, timeout=120)
    assert ex.returncode == 0, ex.stderr
    modes: dict[str, int] = {}
    for t in json.loads(ex.stdout)["turns"]:
        for iu in t["ius"]:
            if iu["mode"]:
                modes[iu["mode"]] = modes.get(iu["mode"], 0) + 1
    fa = cli(["failures", "--db", str(db), "--status", "all", "--question", QID, "--json"], env, timeout=120)
    assert fa.returncode == 0, fa.stderr
    level = json.loads(fa.stdout)["by_level"].get("novice")
    counted = sum(modes.values())
    if level is None or not level["iu_turns"]:
        assert counted == 0
        return
    assert level["iu_turns"] == counted
    for mode, share in level["modes"].items():
        assert round(share * counted) == modes.get(mode, 0), (mode, share, modes)


def test_a_real_model_plays_every_role(local, db):
    """Tutor, learner and extractor all the local model: the 2-turn conversation completes, and each turn's
    extractor reply was schema-valid (the compact format) with labels for every IU of the graph. Old
    behaviour: the full format's reply was cut at the cap, the turn failed and the run ended after turn 1
    (phase_b_empty)."""
    p = cli(run_args(local.server.agent_ids()), cli_env(local, db))
    assert p.returncode == 0, p.stderr
    store = Store(db)
    run_id = store.search.list()[0].id
    check_stored_run(db, run_id, set(ROLES))
    row, run = store.search.get_row(run_id), store.runs.load(run_id)
    assert (row.status, row.stop_reason) == ("finished", "max_turns"), (row.status, row.stop_reason)
    assert [t.turn for t in run.turns] == [1, 2]
    ids = list(tiny_graph().index.ids)
    for t in run.turns:
        assert not t.extractor_failed, t.notes
        assert [s.id for s in t.signals] == ids  # the grammar wrote every id, in graph order
        assert all(s.recognised for s in t.signals)  # and only the schema's labels
    extractor = json.loads(dict(run.meta)["agents"])["extractor"]
    assert extractor["output_format"].startswith("compact (small local model)")
    assert extractor["prompt_version"] == "extractor-v1-compact"


def test_a_run_killed_mid_turn_resumes_without_repeating_a_finished_turn(local, db):
    """The local tutor with the offline learner and extractor (cheap turns, so turn 2 surely starts):
    SIGKILL while turn 2 waits on the model, then ``run --resume``."""
    ids = {"assistant": local.server.agent_ids()["assistant"], "user": "offline/knowsim",
           "extractor": "offline/lexical"}
    env = cli_env(local, db)
    proc = subprocess.Popen([sys.executable, "-m", "knowsim_core", *run_args(ids)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    store = Store(db)
    try:
        while proc.poll() is None:  # wait until turn 1 is stored
            rows = store.search.list()
            if rows and rows[0].turns >= 1:
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()  # turn 2 is being played
        proc.send_signal(signal.SIGKILL)  # no clean-up: the run is left "running" by a dead process
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_id = store.search.list()[0].id
    first = store.runs.load(run_id).turns
    assert len(first) == 1 and store.search.get_row(run_id).status == "running"
    p = cli(["run", "--resume", run_id], env)
    assert p.returncode in (0, 2), p.stderr
    again = store.runs.load(run_id).turns
    assert again[0] == first[0]  # the finished turn was not played again
    if p.returncode == 0:
        assert [t.turn for t in again] == [1, 2]
    check_stored_run(db, run_id, {"assistant"})


def test_offline_tutor_with_the_local_learner(local, db):
    ids = {"assistant": "offline/adaptive", "user": local.server.agent_ids()["user"], "extractor": "offline/lexical"}
    p = cli([*run_args(ids), "--max-turns", "1"], cli_env(local, db))  # one turn: CI time
    assert p.returncode in (0, 2), p.stderr
    check_stored_run(db, Store(db).search.list()[0].id, {"user"})
