"""Every billed model call is in the run's cost, including the calls of a turn that fails (issue 35, item 3).

Against the local wire-format server, every 200 reply carries a known token count and a price of
$0.1 per 100 input tokens. The old code lost the usage of every call made in a turn that then failed:
a tutor and a learner reply billed before the extractor's 500 were stored as 0 tokens, $0 (the turn
record that would have held them is never written), and so ``--max-cost`` could not see them. Each test
fails on that code by comparing the run's stored tokens and cost with what the server billed.
"""

from __future__ import annotations

import json

import pytest

from knowsim_core.engine.records import Ending
from knowsim_core.vocab import EndReason

from knowsim_core.cli import main
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from tests.fakes.llm_server import Fault, FakeLLMServer, KnowSimReplies, Reply

TOKENS = 100  # per 200 reply; priced at $1000 per million input tokens → $0.1 a call
PRICED = {"assistant_id": "compat/priced:adaptive", "user_id": "compat/priced", "extractor_id": "compat/priced"}


def priced_server(monkeypatch, *, retries: int):
    """A KnowSim-speaking stand-in whose every 200 costs TOKENS input tokens, priced so a call is $0.1
    (the compat model "priced"), with the LLM cache off and ``retries`` retries (a generator: yield it)."""
    inner = KnowSimReplies()
    srv = FakeLLMServer(reply=lambda req: Reply(inner(req), input_tokens=TOKENS, output_tokens=0)).start()
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", srv.openai_url)
    monkeypatch.setenv("KNOWSIM_LLM_CACHE", "0")
    monkeypatch.setenv("KNOWSIM_LLM_MAX_RETRIES", str(retries))
    monkeypatch.setenv("KNOWSIM_LLM_PRICES", json.dumps({"priced": [1000.0, 0.0]}))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def server(monkeypatch):
    yield from priced_server(monkeypatch, retries=0)


def failed_first_turn(store, server, *script: Fault):
    server.push(*script)
    live = start_run(store, question_id="sample_lava_lamps", level="novice", seed=1, max_turns=3, **PRICED)
    ending = live.step()  # how the turn ended, as data: the failed call, and what the turn had spent
    assert isinstance(ending, Ending) and ending.reason is EndReason.PROVIDER_ERROR and ending.error
    return store.search.get_row(live.run_id)


def test_an_extractor_500_after_a_billed_learner_and_tutor_reply_keeps_their_cost(seeded_store, server):
    row = failed_first_turn(seeded_store, server, Fault(), Fault(), Fault(status=500))
    assert len(server.requests) == 3 and row.status == "failed" and row.turns == 0
    assert (row.tokens_in, row.cost_usd) == (2 * TOKENS, pytest.approx(0.2))  # was 0 tokens, $0


def test_a_failed_repair_request_keeps_the_billed_first_reply(seeded_store, server):
    # the learner's reply is not JSON (billed: the prompt's words in, 2 words out); the repair request gets a 500
    row = failed_first_turn(seeded_store, server, Fault(text="not json"), Fault(status=500))
    first = server.requests[0]
    assert len(server.requests) == 2
    assert (row.tokens_in, row.tokens_out) == (len(first.text.split()), 2)
    assert row.cost_usd == pytest.approx(len(first.text.split()) * 1000.0 / 1e6)


def test_an_extractor_retry_that_fails_keeps_the_attempts_before_it(seeded_store, server):
    # learner, tutor, then extractor attempt 1 (reply + repair, both unusable), attempt 2 → 500
    row = failed_first_turn(seeded_store, server, Fault(), Fault(), Fault(text="x"), Fault(text="x"), Fault(status=500))
    assert len(server.requests) == 5
    unusable = [len(r.text.split()) for r in server.requests[2:4]]
    assert row.tokens_in == 2 * TOKENS + sum(unusable) and row.tokens_out == 2
    assert row.cost_usd == pytest.approx((2 * TOKENS + sum(unusable)) * 1000.0 / 1e6)


def test_a_batch_counts_a_failed_turns_calls_in_what_it_spent(db_path, server, capsys):
    """What --max-cost compares with the budget (the batch's tally) includes a failed turn's calls."""
    server.push(Fault(), Fault(), Fault(status=500))
    code = main(["batch", "--questions", "sample_lava_lamps", "--levels", "novice", "--assistants",
                 PRICED["assistant_id"], "--user", PRICED["user_id"], "--extractor", PRICED["extractor_id"],
                 "--max-turns", "2", "--db", str(db_path), "--tag", "storm"])
    out, err = capsys.readouterr()
    assert code == 1 and "failed:" in err
    assert f"; {2 * TOKENS:,} tokens, $0.2000)" in out  # was "0 tokens, $0.0000"
    (row,) = Store(db_path).search.list(RunFilter(batch_tag="storm"))
    assert row.cost_usd == pytest.approx(0.2)
