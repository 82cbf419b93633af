"""The paper's full loop with LLM agents (compat/<model> at the local wire-format server):
Simulation, stored runs through the runner (timeout mid-run → failed, resumable), the cache on
re-runs, and the command line in a subprocess (run, judge, extract-graph)."""

from __future__ import annotations

import re

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core.agents import registry
from knowsim_core.engine.config import preset
from knowsim_core.llm import LLMSettings, MemoryCache
from knowsim_core.services.runner import resume_run, start_run
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.session import Simulation
from knowsim_core.storage import Store
from tests.fakes.llm_server import Fault, KnowSimReplies, chain_graph, llm_server  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
QID = "sample_lava_lamps"
IDS = {"assistant": "compat/fake:adaptive", "user": "compat/fake", "extractor": "compat/fake"}


def llm_kwargs(srv, cache=None, **env):
    base = {"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, **env}
    return {"settings": LLMSettings.from_sources(env=base), "cache": cache}


def test_full_llm_loop_in_a_simulation_and_cached_rerun(llm_server):
    replies = KnowSimReplies(explain=4)
    llm_server.reply = replies
    cache = MemoryCache()

    def play():
        kw = llm_kwargs(llm_server, cache)
        sim = Simulation(material=get_sample(QID).material, params=preset(max_turns=3),
                         **{k: registry.resolve(k, v, **kw) for k, v in IDS.items()})
        sim.reset(seed=4)
        return sim.run_to_end()

    run = play()
    assert run.stop_reason == "max_turns" and len(run.turns) == 3
    assert dict(run.adapters) == IDS
    described = json.loads(dict(run.meta)["agents"])  # model ids, prompt versions, sampling per role
    assert set(described) == {"assistant", "user", "extractor"}
    assert all(d["prompt_version"] and d["model"] == "compat/fake" for d in described.values())
    assert described["assistant"]["strategy"] == "adaptive" and "temperature" in described["user"]
    assert replies.calls == {"user": 3, "assistant": 3, "extractor": 3}
    for t in run.turns:
        assert [u.role for u in t.usage] == ["user", "assistant", "extractor"]
        assert all(u.input_tokens > 0 and not u.cached for u in t.usage)
        assert not t.extractor_failed and sum(1 for s in t.signals if s.teaching_quality == "well_explained") == 4
    assert run.turns[0].user_message == "I don't really get step 1, can you explain?"
    assert run.metrics().knowledge_gain > 0
    n = len(llm_server.requests)
    again = play()  # the identical configuration: every answer comes from the cache
    assert len(llm_server.requests) == n
    assert [t.state_after for t in again.turns] == [t.state_after for t in run.turns]
    assert all(u.cached for t in again.turns for u in t.usage)


def test_runner_stores_usage_and_a_timeout_leaves_a_resumable_failed_run(llm_server, tmp_path):
    llm_server.reply = KnowSimReplies()
    store = Store(tmp_path / "s.db")
    store.questions.seed_samples()
    kw = llm_kwargs(llm_server, store.caches, KNOWSIM_LLM_TIMEOUT="0.4", KNOWSIM_LLM_MAX_RETRIES="0")
    live = start_run(store, question_id=QID, level="novice", assistant_id=IDS["assistant"], user_id=IDS["user"],
                     extractor_id=IDS["extractor"], seed=2, max_turns=3, settings=kw)
    live.step()
    llm_server.push(Fault(delay=1.2))  # turn 2's first call (the user) times out
    ending = live.step()  # the failed call, as data (the run is stored failed, resumable)
    assert re.search("no answer .* within 0.4 s", ending.error) and not ending.over
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("failed", 1) and "KNOWSIM_LLM_TIMEOUT" in row.error
    assert row.tokens_in > 0 and row.tokens_out > 0
    resumed = resume_run(store, live.run_id, settings=kw)
    final = resumed.run_to_end()
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns, final.stop_reason) == ("finished", 3, "max_turns")
    assert [t.turn for t in store.runs.load(live.run_id).turns] == [1, 2, 3]


def cli(args: list[str], srv, db: Path, **env) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KNOWSIM_"))}
    full_env.update({"KNOWSIM_COMPAT_BASE_URL": srv.openai_url, "KNOWSIM_DB": str(db), "PYTHONPATH": str(ROOT)}, **env)
    return subprocess.run([sys.executable, "-m", "knowsim_core", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=60)


def test_command_line_runs_judges_and_extracts_with_a_compatible_server(llm_server, tmp_path, monkeypatch, capsys):
    replies = KnowSimReplies(score=6, graph=chain_graph(11))
    llm_server.reply = replies
    db = tmp_path / "cli.db"
    p = cli(["run", "--question", QID, "--level", "novice", "--assistant", "compat/fake:socratic",
             "--user", "compat/fake", "--extractor", "compat/fake", "--max-turns", "2", "--json"], llm_server, db)
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)
    assert run["adapters"]["assistant"] == "compat/fake:socratic" and len(run["turns"]) == 2
    assert "SOCRATIC" in llm_server.requests[1].system
    run_id = run["run_id"]

    # judge and extract-graph run in-process (same parser and commands; a subprocess costs seconds)
    code, out, err = main_in_process(["judge", run_id, "--model", "compat/fake", "--json", "--db", str(db)],
                                     monkeypatch, capsys, llm_server)
    assert code == 0, err
    assert json.loads(out)[0]["score"] == 6.0
    assert Store(db).search.get_row(run_id).iq_score == 6.0

    code, out, err = main_in_process(["extract-graph", "--question", QID, "--model", "compat/fake", "--db", str(db),
                                      "--base-url", llm_server.openai_url], monkeypatch, capsys, llm_server,
                                     KNOWSIM_COMPAT_BASE_URL="")
    assert code == 0, err
    versions = Store(db).questions.graph_versions(QID)
    assert versions[-1].author == "compat/fake" and len(versions[-1].graph.nodes) == 11
    assert "saved as graph version" in out


def main_in_process(argv, monkeypatch, capsys, srv, **env):
    from knowsim_core.cli import main

    for k in list(os.environ):
        if k.startswith(("OPENAI_", "ANTHROPIC_", "KNOWSIM_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", srv.openai_url)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_command_line_bad_key_is_one_line_without_the_key(llm_server, tmp_path, monkeypatch, capsys):
    llm_server.push(*[Fault(status=401)] * 3)
    key = "sk-compat-CLI-SECRET-0123456789"
    code, out, err = main_in_process(
        ["run", "--question", QID, "--level", "novice", "--assistant", "compat/fake", "--user", "compat/fake",
         "--max-turns", "1", "--db", str(tmp_path / "k.db")], monkeypatch, capsys, llm_server,
        KNOWSIM_COMPAT_API_KEY=key)
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("error: compat rejected the API key (401)")
    assert "KNOWSIM_COMPAT_API_KEY" in err and key not in err + out and "CLI-SECRET" not in err + out
    row = Store(tmp_path / "k.db").search.list()[0]
    assert row.status == "failed" and key not in row.error
