"""``batch`` with many conversations in flight, against the local wire-format server.

Each test counts what the server saw (requests in flight at once, per endpoint) and what the
database holds — never how long anything took. A "first wave" barrier in the reply function
(:class:`~tests.fakes.llm_server.FirstWave`) holds the first N requests until N are in flight at
once: if the batch cannot get N conversations going, the barrier breaks and the test fails on a
count, not on a clock.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace

import pytest

from knowsim_core.batch.plan import BatchSpec, estimate, model_name
from knowsim_core.cli import main
from knowsim_core.llm.prices import PriceTable
from knowsim_core.llm.settings import LLMSettings
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from tests.fakes.llm_server import Fault, FakeLLMServer, FirstWave, KnowSimReplies, Reply

QUESTIONS = "sample_lava_lamps,sample_herd_immunity"
LLM = ("--assistants", "compat/fake:adaptive", "--user", "compat/fake", "--extractor", "compat/fake")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def server():
    srv = FakeLLMServer(latency=0.05).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def llm_env(monkeypatch, server):
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", server.openai_url)
    monkeypatch.setenv("KNOWSIM_LLM_CACHE", "0")  # identical first turns must each reach the server
    monkeypatch.delenv("KNOWSIM_LLM_MAX_CONCURRENCY", raising=False)
    return monkeypatch


def test_conversations_in_flight_at_once_reach_the_server(capsys, db_path, server, llm_env):
    server.reply = FirstWave(8)
    code, out, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "novice,intermediate",
                         "--seeds", "2", *LLM, "--max-turns", "2", "--concurrency", "8", "--db", str(db_path))
    assert code == 0, err
    assert server.peak_in_flight == 8  # one process, eight conversations waiting on the model at once
    store = Store(db_path)
    assert store.search.count(RunFilter(status="finished")) == 8
    assert len(server.requests) == 8 * 2 * 3  # 2 turns × (user, assistant, extractor), one call each


def test_the_per_endpoint_limit_holds_across_conversations(capsys, db_path, server, llm_env):
    llm_env.setenv("KNOWSIM_LLM_MAX_CONCURRENCY", "3")
    server.reply = FirstWave(3)
    code, _, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "novice,intermediate",
                       "--seeds", "2", *LLM, "--max-turns", "2", "--concurrency", "8", "--db", str(db_path))
    assert code == 0, err
    assert server.peak_in_flight == 3  # eight conversations, never more than three calls at the endpoint
    assert Store(db_path).search.count(RunFilter(status="finished")) == 8


@pytest.mark.skipif(not os.access("/usr/sbin/nginx", os.X_OK), reason="nginx (scripts/bootstrap.sh test installs it)")
def test_two_servers_behind_the_router_share_the_conversations_and_a_429_burst_on_one_loses_no_run(
        capsys, db_path, llm_env, tmp_path):
    """Several servers are one URL behind a router (was: a comma-separated list sent round robin)."""
    from knowsim_core.llm import router

    with FakeLLMServer(reply=KnowSimReplies(), latency=0.05) as a, FakeLLMServer(reply=KnowSimReplies(), latency=0.05) as b:
        live = router.start([a.openai_url, b.openai_url], workdir=tmp_path / "router")
        try:
            llm_env.setenv("KNOWSIM_COMPAT_BASE_URL", live.url + "/")
            llm_env.setenv("KNOWSIM_LLM_MAX_RETRIES", "5")
            a.push(*[Fault(status=429, retry_after_ms=200) for _ in range(4)])  # a rate-limit burst at server a
            code, out, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "novice,intermediate",
                                 "--seeds", "2", *LLM, "--max-turns", "2", "--concurrency", "8", "--db", str(db_path),
                                 "--json")
        finally:
            live.stop()
        assert code == 0, err
        results = json.loads(out)
        assert [r["status"] for r in results] == ["finished"] * 8
        calls = 8 * 2 * 3
        assert len(a.requests) + len(b.requests) == calls + 4  # the four 429s were retried, nothing was lost
        assert len(a.requests) > 4 and len(b.requests) > 0
    store = Store(db_path)
    used = {json.loads(dict(store.runs.load(r["run_id"]).meta)["agents"])["user"]["base_url"] for r in results}
    assert used == {live.url}  # each run records the one URL it talked to


def test_max_cost_stops_starting_conversations_at_the_budget(capsys, db_path, server, llm_env):
    llm_env.setenv("KNOWSIM_LLM_PRICES", json.dumps({"priced": [1000.0, 0.0]}))  # $0.1 per 100-token call
    inner = KnowSimReplies()
    server.reply = lambda req: Reply(inner(req), input_tokens=100, output_tokens=0)
    priced = ("--assistants", "compat/priced:adaptive", "--user", "compat/priced", "--extractor", "compat/priced")
    # an earlier run of the same agents gives the estimate its tokens per call
    code, _, err = cli(capsys, "batch", "--questions", "sample_lava_lamps", "--levels", "novice", *priced,
                       "--max-turns", "2", "--db", str(db_path), "--tag", "history")
    assert code == 0, err
    store = Store(db_path)
    per_conversation = store.search.list(RunFilter(batch_tag="history"))[0].cost_usd
    assert per_conversation == pytest.approx(0.6)  # 2 turns × 3 calls × $0.1

    budget = 2.5 * per_conversation
    code, out, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "all", *priced, "--max-turns", "2",
                         "--concurrency", "4", "--max-cost", f"{budget}", "--db", str(db_path), "--tag", "capped")
    assert code == 1
    assert "estimated cost: ≈ $3.60" in out  # 6 conversations × $0.60, from the earlier run's tokens
    assert "the budget of $1.50 was reached: 2 finished, 0 interrupted, 4 not started" in err
    assert "--resume capped" in err
    rows = store.search.list(RunFilter(batch_tag="capped"))
    assert len(rows) == 2 and all(r.status == "finished" for r in rows)  # in-flight ones were not cut short
    assert sum(r.cost_usd for r in rows) <= budget


def test_dry_run_prints_the_estimate_and_writes_nothing(capsys, seeded_store, db_path, tmp_path):
    files = sorted(p for p in tmp_path.iterdir() if p.name.startswith("studio.db"))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    code, out, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "all", *LLM, "--seeds", "3",
                         "--dry-run", "--db", str(db_path))
    assert code == 0, err
    assert "matrix: 18 conversation(s) × up to 15 turns" in out
    assert "model calls: ≈ 810" in out and "rough default" in out
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(tmp_path.iterdir()) if p.name.startswith("studio.db")}
    assert after == before
    store = Store(db_path)
    assert store.search.count() == 0 and store.search.get_batch(out.split()[1].rstrip(":")) is None

    code, out, _ = cli(capsys, "batch", "--questions", QUESTIONS, *LLM, "--max-cost", "1", "--dry-run",
                       "--db", str(db_path))
    assert code == 0 and "note: --max-cost cannot limit fake (not in the price table" in out

    missing = tmp_path / "nowhere.db"
    code, out, _ = cli(capsys, "batch", "--questions", "all", "--dry-run", "--db", str(missing))
    assert code == 0 and "offline agents cost nothing" in out and not missing.exists()


def test_without_flags_offline_matrices_use_a_process_per_core_and_model_batches_threads(
        capsys, monkeypatch, seeded_store, db_path):
    """The default mode: offline agents are CPU-bound (threads would share one core under the GIL),
    model-bound batches wait on latency (threads); an explicit choice always wins."""
    monkeypatch.setattr("os.cpu_count", lambda: 4)

    def mode(*argv: str, questions: str = QUESTIONS) -> str:
        code, out, err = cli(capsys, "batch", "--questions", questions, "--dry-run", "--db", str(db_path), *argv)
        assert code == 0, err
        return out.splitlines()[0].split("(", 1)[1].rstrip(")")

    assert mode() == "4 worker processes"  # 2 questions × 3 levels × 5 assistants = 30 conversations
    assert mode("--assistants", "offline/simple", "--levels", "novice") == "2 worker processes"  # 2 conversations
    assert mode("--assistants", "offline/simple", "--levels", "novice", questions="sample_lava_lamps") == \
        "one at a time, in this process"
    assert mode(*LLM) == "up to 6 at once"  # 16 threads, but only 6 conversations: what will really run
    assert mode("--concurrency", "3") == "up to 3 at once"
    assert mode("--workers", "1") == "one at a time, in this process"  # one conversation at once: threads only contend
    assert mode("--workers", "1", *LLM) == "one at a time, in this process"  # --concurrency N is the way to 16
    assert mode("--workers", "3", *LLM) == "3 worker processes"


def test_a_matrix_of_offline_assistants_and_a_baseline_user_is_offline(capsys, monkeypatch, db_path):
    """``baseline/copy-last`` calls no model: the dry run estimates 0 calls, names no price-table
    miss and picks worker processes (the prefix test it replaced counted 750 calls and 16 threads)."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    code, out, err = cli(capsys, "batch", "--questions", "all", "--levels", "novice", "--assistants", "offline",
                         "--user", "baseline/copy-last", "--dry-run", "--db", str(db_path))
    assert code == 0, err
    assert out.splitlines()[0].endswith("(2 worker processes)")
    assert "model calls: 0 (offline agents only)" in out and "price table" not in out


def test_threads_store_the_same_runs_as_one_at_a_time(capsys, tmp_path):
    """Offline conversations in threads: the same stored runs as a sequential batch."""
    runs = {}
    for n in (1, 8):
        db = tmp_path / f"c{n}.db"
        code, _, err = cli(capsys, "batch", "--questions", QUESTIONS, "--levels", "novice,advanced",
                           "--assistants", "offline/simple,offline/adaptive", "--max-turns", "4",
                           "--concurrency", str(n), "--db", str(db), "--tag", "t")
        assert code == 0, err
        store = Store(db)
        runs[n] = {(r.question_id, r.level, r.assistant, r.seed): replace(store.runs.load(r.id), run_id=None)
                   for r in store.search.list(RunFilter(batch_tag="t"))}
    assert len(runs[1]) == 8 and runs[1] == runs[8]


def test_estimate_counts_llm_calls_and_prices_models():
    spec = BatchSpec(("q1", "q2"), ("novice",), ("openai/gpt-4o-mini:socratic", "offline/simple"), 1,
                     "openai/gpt-4o-mini", "offline/lexical", "paper-final", 3)
    prices = PriceTable({"gpt-4o-mini": (1.0, 2.0)})
    est = estimate(spec, 4, prices=prices, history=[("openai/gpt-4o-mini:socratic", "openai/gpt-4o-mini",
                                                     "offline/lexical", 2, 4000, 400)])
    # per turn: the LLM user always, the LLM assistant in half of the cells → 1.5 calls × 3 turns × 4
    assert est.calls == 18 and est.llm_agents_per_turn == 2
    # 1000 in / 100 out per call → $0.0012 per call
    assert est.per_conversation_usd == pytest.approx(3 * (0.0012 + 0.0012 / 2))
    assert "1 earlier run(s)" in est.tokens_source
    assert model_name("compat/llama3:8b@http://h/v1") == "llama3:8b"
    assert model_name("anthropic/claude-haiku-4-5:simple") == "claude-haiku-4-5"
    unpriced = estimate(BatchSpec(("q",), ("novice",), ("compat/local",), 1, "offline/knowsim", "offline/lexical",
                                  "paper-final", 2), 1, prices=prices)
    assert unpriced.cost_usd == 0 and unpriced.unpriced == ("local",)


def test_runs_lists_a_batch_and_resume_needs_a_known_tag(capsys, db_path):
    for tag in ("one", "two"):
        code, _, err = cli(capsys, "batch", "--questions", "sample_lava_lamps", "--levels", "novice",
                           "--assistants", "offline/simple", "--seeds", "2", "--max-turns", "2", "--tag", tag,
                           "--db", str(db_path))
        assert code == 0, err
    code, out, _ = cli(capsys, "runs", "--batch", "two", "--json", "--db", str(db_path))
    assert code == 0 and [r["batch_tag"] for r in json.loads(out)["runs"]] == ["two", "two"]
    assert Store(db_path).search.count(RunFilter(batch_tag="one")) == 2
    code, out, err = cli(capsys, "batch", "--resume", "two", "--db", str(db_path))
    assert code == 0 and "0 to run" in out and "2 already finished" in out
    for argv, message in (
        (["--resume", "nope"], "no batch tagged 'nope'"),
        (["--questions", "sample_lava_lamps", "--tag", "one"], "batch tag 'one' exists; continue it with --resume one"),
        (["--questions", "sample_lava_lamps", "--workers", "2", "--concurrency", "4"], "not both"),
        (["--resume", "one", "--questions", "all"], "drop --questions"),
        (["--questions", "sample_lava_lamps", "--user", "compat/m@http://a/v1,http://b/v1"], "behind one router"),
    ):
        code, _, err = cli(capsys, "batch", *argv, "--db", str(db_path))
        assert code == 2 and message in err and err.count("\n") == 1, err


def test_resume_continues_a_failed_run_from_its_last_turn(capsys, db_path, server, llm_env):
    llm_env.setenv("KNOWSIM_LLM_MAX_RETRIES", "0")
    server.reply = KnowSimReplies()
    server.push(*[Fault() for _ in range(4)], Fault(status=500))  # the 5th call: turn 2's assistant
    argv = ("--questions", "sample_lava_lamps", "--levels", "novice", "--seeds", "2", *LLM, "--max-turns", "2",
            "--concurrency", "1", "--db", str(db_path))
    code, out, err = cli(capsys, "batch", *argv, "--tag", "flaky")
    assert code == 1 and "1 of 2 runs finished" in out and "failed: sample_lava_lamps novice" in err
    store = Store(db_path)
    failed = store.search.list(RunFilter(batch_tag="flaky", status="failed"))
    assert len(failed) == 1 and failed[0].turns == 1
    code, out, err = cli(capsys, "batch", "--resume", "flaky", "--db", str(db_path))
    assert code == 0 and "1 to run" in out and "1 already finished" in out, err
    rows = store.search.list(RunFilter(batch_tag="flaky"))
    assert len(rows) == 2 and all(r.status == "finished" and r.turns == 2 for r in rows)
    assert failed[0].id in {r.id for r in rows}  # the same run, continued — not a new one
