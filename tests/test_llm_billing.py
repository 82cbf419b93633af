"""Every billed model call is counted once, and a 200 whose body cannot be used is counted as a
billed call with unknown tokens (issue 35: "a 200 whose body is unusable is not costed"; "a failed
turn's cost is on the run, not on a turn record").

Old behaviour these tests catch: an unusable 200 (HTML, cut short, no reply in it, a token count
over any request's) was retried or failed, and left no trace in any usage — the server billed it,
``--max-cost`` and the run's cost never knew. Its token counts cannot be read, so it is not priced
(nothing would be honest); it is counted in ``Usage.unknown_calls`` (the turn record's usage, or the
failed turn's ending's ``spent`` when the call failed: the chat records every call in its ledger)
and said in the error ("tokens unknown").

Where a failed turn's calls are visible: no record is written for a turn that fails, so its billed
calls are in the run's tokens and cost (the runner adds the ending's ``spent`` when it closes the run) and,
for unusable 200s, in the run's error line; ``explain`` has no turn to show. Resuming replays the
turn: those calls are billed again and counted again, the failed attempt's once.
"""

from __future__ import annotations

import pytest

from knowsim_core.engine.ports import UsageLedger
from knowsim_core.engine.records import TurnRecord
from knowsim_core.vocab import EndReason
from knowsim_core.llm import ProviderCallError, as_messages
from knowsim_core.services.runner import resume_run, start_run
from tests.fakes.llm_server import Fault, Reply, llm_server  # noqa: F401 — fixture
from tests.test_billed_failures import PRICED, TOKENS, priced_server
from tests.test_llm_core import GOOD, Pair, model

PROVIDERS = ("openai", "anthropic", "compat")


def billed(chat):
    """``chat`` recording its calls in a ledger of its own (as a run's agents do in the run's)."""
    chat.ledger = UsageLedger()
    return chat
MSG = as_messages("s", user="q")
UNUSABLE = [Fault(body=b"<html>Bad gateway</html>"), Fault(cut=40), Fault(body=b"{}")]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", UNUSABLE, ids=["html", "cut-connection", "no-reply"])
def test_an_unusable_200_before_a_good_reply_is_one_billed_call_with_unknown_tokens(llm_server, provider, fault):
    llm_server.reply = lambda req: Reply(GOOD, input_tokens=7, output_tokens=3)
    llm_server.push(fault)
    res = model(llm_server, provider).complete(MSG, json_schema=Pair, role="extractor")
    assert len(llm_server.requests) == 2
    assert (res.usage.input_tokens, res.usage.output_tokens) == (7, 3)  # the good reply's, once
    assert res.usage.unknown_calls == 1  # was: no trace of the first, billed, request


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_whose_replies_are_all_unusable_says_tokens_unknown_and_carries_them(llm_server, provider):
    llm_server.push(Fault(body=b"<html>"), Fault(body=b"[1, 2]"))
    chat = billed(model(llm_server, provider, KNOWSIM_LLM_MAX_RETRIES="1"))
    with pytest.raises(ProviderCallError) as err:
        chat.complete(MSG, role="user")
    text = str(err.value)
    assert "\n" not in text and "after 1 retry" in text
    assert "2 unusable replies billed, tokens unknown" in text
    (spent,) = chat.ledger.take()
    assert (spent.role, spent.unknown_calls, spent.input_tokens, spent.cost_usd) == ("user", 2, 0, 0.0)


def test_a_token_count_no_request_can_use_is_a_billed_call_with_unknown_tokens(llm_server):
    llm_server.reply = lambda req: Reply("hi", input_tokens=2**63, output_tokens=1)
    chat = billed(model(llm_server, "openai"))
    with pytest.raises(ProviderCallError, match="1 unusable reply billed, tokens unknown"):
        chat.complete(MSG)
    assert [u.unknown_calls for u in chat.ledger.take()] == [1]


def test_a_request_cut_before_any_status_line_is_not_counted_as_billed(llm_server):
    """No 200 came (the head was still trickling at the deadline): nothing says the call was billed."""
    llm_server.push(Fault(trickle=0.05, trickle_head=True))
    chat = billed(model(llm_server, "openai", KNOWSIM_LLM_TIMEOUT="1", KNOWSIM_LLM_MAX_RETRIES="0"))
    with pytest.raises(ProviderCallError, match="no answer from .* within 1 s") as err:
        chat.complete(MSG)
    assert "billed" not in str(err.value) and chat.ledger.take() == ()


# ---------------------------------------------------------------------- in a run
@pytest.fixture()
def server(monkeypatch):
    yield from priced_server(monkeypatch, retries=1)


def test_an_unusable_extractor_reply_is_on_the_stored_turn_as_a_call_with_unknown_tokens(seeded_store, server):
    server.push(Fault(), Fault(), Fault(body=b"<html>"))  # learner, tutor, extractor: unusable, then retried
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice", seed=1, max_turns=1, **PRICED)
    live.step()
    (turn,) = seeded_store.runs.load(live.run_id).turns  # read back from the database
    assert len(server.requests) == 4
    assert [(u.role, u.unknown_calls) for u in turn.usage] == [("user", 0), ("assistant", 0), ("extractor", 1)]
    assert sum(u.input_tokens for u in turn.usage) == 3 * TOKENS  # the three usable replies, once each
    data = turn.to_data()  # the key is written only when set: records without it read as before
    assert [("unknown_calls" in u) for u in data["usage"]] == [False, False, True]
    assert TurnRecord.from_data(data) == turn
    row = seeded_store.search.get_row(live.run_id)
    assert (row.tokens_in, row.cost_usd) == (3 * TOKENS, pytest.approx(0.3))


def test_a_failed_turns_calls_are_counted_once_on_the_run_and_again_when_the_turn_is_replayed(seeded_store, server):
    """The extractor gets two unusable 200s: the turn fails. Its learner and tutor replies are in the
    run's cost once; the run's error says the unusable ones were billed with unknown tokens. The
    resumed run replays the turn (billed again: counted again, and only that)."""
    server.push(Fault(), Fault(), Fault(body=b"<html>"), Fault(body=b"<html>"))
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice", seed=1, max_turns=1, **PRICED)
    ending = live.step()
    assert ending.reason is EndReason.PROVIDER_ERROR and "2 unusable replies billed, tokens unknown" in ending.error
    row = seeded_store.search.get_row(live.run_id)
    assert row.status == "failed" and row.turns == 0 and "tokens unknown" in row.error
    assert (row.tokens_in, row.cost_usd) == (2 * TOKENS, pytest.approx(0.2))

    again = resume_run(seeded_store, live.run_id)
    again.step()
    row = seeded_store.search.get_row(live.run_id)
    assert row.status == "finished" and len(server.requests) == 4 + 3
    assert (row.tokens_in, row.cost_usd) == (5 * TOKENS, pytest.approx(0.5))


def test_a_batch_says_how_many_billed_calls_its_cost_cannot_include(db_path, server, capsys):
    """What a ``--max-cost`` user reads: the cost, and the billed calls whose tokens are unknown (one
    unusable extractor reply, retried) beside it. Old code: the summary showed the cost alone."""
    from knowsim_core.cli import main

    server.push(Fault(), Fault(), Fault(body=b"<html>"))
    code = main(["batch", "--questions", "sample_lava_lamps", "--levels", "novice", "--assistants",
                 PRICED["assistant_id"], "--user", PRICED["user_id"], "--extractor", PRICED["extractor_id"],
                 "--max-turns", "1", "--db", str(db_path), "--tag", "flaky"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert f"; {3 * TOKENS:,} tokens, $0.3000 + 1 billed call with tokens unknown)" in out


class _Interrupting:
    """An assistant that is stopped (Ctrl-C, or a bug in it) after the learner's billed reply."""

    reads_state = False

    def __init__(self, exc: BaseException):
        self.exc = exc

    def reply(self, ctx):
        raise self.exc


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt(), "interrupted"), (RuntimeError("bug"), "failed")])
def test_calls_billed_before_ctrl_c_or_an_agents_bug_are_in_the_runs_cost(seeded_store, server, exc, status):
    """Old code: the runner closed the run without the turn's billed learner reply (cost $0)."""
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice", seed=1, max_turns=2, **PRICED)
    live.sim.assistant = _Interrupting(exc)
    with pytest.raises(type(exc)):
        live.step()
    row = seeded_store.search.get_row(live.run_id)
    assert row.status == status and row.turns == 0
    assert (row.tokens_in, row.cost_usd) == (TOKENS, pytest.approx(0.1))  # the learner's reply, once


# ---------------------------------------------------------------------- issue 49, item 5: usage that is not a count
NOT_COUNTS = [-100, "abc", 1e30, 1.5, float("nan"), True, [3]]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("usage", NOT_COUNTS, ids=["negative", "text", "1e30", "fraction", "nan", "true", "list"])
def test_a_200_whose_usage_is_not_a_token_count_is_a_billed_call_with_unknown_tokens(llm_server, provider, usage):
    """Old code read -100, "abc" and 1e30 as 0 tokens: a billed call priced $0 and counted nowhere,
    while a count of 10^23 was flagged. Now each is flagged the same way, and not retried."""
    llm_server.reply = lambda req: Reply("hi", input_tokens=usage, output_tokens=1)
    chat = billed(model(llm_server, provider))
    with pytest.raises(ProviderCallError, match="1 unusable reply billed, tokens unknown") as err:
        chat.complete(MSG, role="assistant")
    assert "not a count of tokens" in str(err.value) and "\n" not in str(err.value)
    assert len(llm_server.requests) == 1  # the same server would say the same again
    (spent,) = chat.ledger.take()
    assert (spent.unknown_calls, spent.input_tokens, spent.cost_usd) == (1, 0, 0.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_that_is_a_count_is_read_as_one(llm_server, provider):
    """Whole numbers written as floats (12.0) are counts; a server reporting no usage is 0 tokens."""
    llm_server.reply = lambda req: Reply("hi", input_tokens=12.0, output_tokens=0)
    assert model(llm_server, provider).complete(MSG).usage.input_tokens == 12


def test_a_batch_counts_a_reply_with_a_negative_token_count_beside_its_cost(db_path, server, capsys):
    """What ``--max-cost`` reports: the extractor's reply says -100 tokens. Old code: $0.2000 and
    nothing else, as if the call were free."""
    from knowsim_core.cli import main

    calls = iter(range(10**6))
    inner = server.reply
    server.reply = lambda req: (Reply(inner(req).text, input_tokens=-100, output_tokens=0) if next(calls) == 2
                                else inner(req))
    code = main(["batch", "--questions", "sample_lava_lamps", "--levels", "novice", "--assistants",
                 PRICED["assistant_id"], "--user", PRICED["user_id"], "--extractor", PRICED["extractor_id"],
                 "--max-turns", "1", "--db", str(db_path), "--tag", "negative-usage"])
    out, _ = capsys.readouterr()
    assert code in (0, 1), out
    assert "$0.2000" in out and "+ 1 billed call with tokens unknown" in out, out
