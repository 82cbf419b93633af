"""How a run ends is data, the same in the command line, the app and a batch (issue 44).

``Simulation.step`` returns a turn's record or an :class:`~knowsim_core.engine.records.Ending`; the
agents record every billed call in the run's usage ledger when it is made, and the one ``play()``
loop (and the app's one step) stores each ending with the status ``status_of`` gives it. One table
of endings × the three callers; each case checks the stored status and that the calls billed are in
the run's cost exactly once.

The assistant here bills $0.25 for every reply through the ledger it is handed, and misbehaves from
turn 2 on: it raises (a bug), writes nothing, or is stopped by Ctrl-C (a real SIGINT to this
process). The old code carried a failed turn's cost on the exception (``KnowSimError.spent``) or on
``Simulation.unrecorded_spent``, counted a batch's turns in two places, and a lapsed lease dropped
the learner's message that had been asked for and billed but never answered.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

import tests.storage_fakes as fk
from knowsim_core.agents import registry
from knowsim_core.agents.human import next_user_turn
from knowsim_core.cli import main
from knowsim_core.engine.ports import AssistantTurn, UserTurn
from knowsim_core.engine.records import Usage
from knowsim_core.services.runner import start_run
from knowsim_core.storage import LEASE_SECONDS, Store
from knowsim_core.vocab import STOP_EMPTY_ASSISTANT, RunStatus
from tests.storage_fakes import Clock

Q = "sample_lava_lamps"
BILLING = "test/billing"
BILLING_USER = "test/billing-learner"
PRICE = 0.25
BEHAVIOUR = {"how": "ok"}  # what the billing assistant does from turn 2 on (read when it replies)


def _bill(ledger, role: str) -> None:
    ledger.record(Usage(role=role, model=BILLING, input_tokens=100, output_tokens=10, cost_usd=PRICE))


class BillingAssistant(fk.FakeAssistant):
    id = BILLING

    def bill_to(self, ledger) -> None:
        self.ledger = ledger

    def reply(self, ctx):
        _bill(self.ledger, "assistant")  # billed before anything can go wrong
        how = BEHAVIOUR["how"] if ctx.turn >= 2 else "ok"
        if how == "raises":
            raise RuntimeError("a bug in the tutor")
        if how == "empty":
            return AssistantTurn("   ")
        if how == "ctrl-c":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)  # the main thread: interrupted here; a batch thread: its handler asks for a stop
        return super().reply(ctx)


class BillingUser(fk.FakeUser):
    id = BILLING_USER

    def bill_to(self, ledger) -> None:
        self.ledger = ledger

    def respond(self, ctx):
        _bill(self.ledger, "user")
        return UserTurn(f"Question {ctx.turn}: what happens next?")


registry.register("assistant", BILLING, lambda **_: BillingAssistant(), "bills every reply; misbehaves on cue")
registry.register("user", BILLING_USER, lambda **_: BillingUser(), "bills every message")

AGENTS = ["--user", fk.USER, "--extractor", fk.EXTRACTOR, "--max-turns", "4"]


def _row(db):
    (row,) = Store(db).search.list(limit=10)
    return row


def via_cli(db, how, capsys):
    argv = ["run", "--question", Q, "--level", "novice", "--assistant", BILLING, *AGENTS, "--db", str(db)]
    if how == "raises":
        with pytest.raises(RuntimeError, match="a bug in the tutor"):  # a bug keeps its traceback
            main(argv)
        return None
    return main(argv)


def via_app(db, how, capsys):
    from ui.simulate.player import Player

    store = Store(db)
    live = start_run(store, question_id=Q, level="novice", assistant_id=BILLING, user_id=fk.USER,
                     extractor_id=fk.EXTRACTOR, max_turns=4, lease_seconds=LEASE_SECONDS)  # as the setup form does
    p = Player(store, (live.run_id,), live={live.run_id: live})
    if how == "raises":
        with pytest.raises(RuntimeError, match="a bug in the tutor"):
            while p.forward():
                pass
    elif how == "ctrl-c":
        with pytest.raises(KeyboardInterrupt):
            while p.forward():
                pass
    else:
        while p.forward():
            pass
    return None


def via_batch(db, how, capsys):
    extra = ["--seeds", "2", "--max-cost", "0.3"] if how == "budget" else []
    # --concurrency 1: this process's threads, where the agents registered here exist
    code = main(["batch", "--questions", Q, "--levels", "novice", "--assistants", BILLING, *AGENTS,
                 "--concurrency", "1", "--tag", "contract", "--db", str(db), *extra])
    _, err = capsys.readouterr()
    if how == "budget":  # the batch's own figure is the stored one: each call counted once
        assert "budget of $0.30 was reached: 1 finished, 0 interrupted, 1 not started" in err
        assert f"(${4 * PRICE:.4f} spent)" in err
    return code


CALLERS = {"cli": via_cli, "app": via_app, "batch": via_batch}
# (caller, ending): exit code (None: not a command), stored status, stop reason, turns, calls billed
CASES = {
    ("cli", "raises"): (None, RunStatus.FAILED, None, 1, 2),
    ("cli", "empty"): (0, RunStatus.FINISHED, STOP_EMPTY_ASSISTANT, 1, 2),
    ("cli", "ctrl-c"): (130, RunStatus.INTERRUPTED, None, 1, 2),
    ("app", "raises"): (None, RunStatus.FAILED, None, 1, 2),
    ("app", "empty"): (None, RunStatus.FINISHED, STOP_EMPTY_ASSISTANT, 1, 2),
    ("app", "ctrl-c"): (None, RunStatus.INTERRUPTED, None, 1, 2),
    ("batch", "raises"): (1, RunStatus.FAILED, None, 1, 2),
    ("batch", "empty"): (0, RunStatus.FINISHED, STOP_EMPTY_ASSISTANT, 1, 2),
    # a batch's Ctrl-C lets the turn in flight end, then stops the conversation before the next one
    ("batch", "ctrl-c"): (130, RunStatus.INTERRUPTED, None, 2, 2),
    # the budget: the conversation in flight ends; no other starts
    ("batch", "budget"): (1, RunStatus.FINISHED, "max_turns", 4, 4),
}


@pytest.mark.parametrize("caller, how", list(CASES), ids=[f"{c}-{h}" for c, h in CASES])
def test_each_ending_is_stored_with_its_status_and_its_cost_counted_once(seeded_store, db_path, capsys, caller, how):
    code, status, stop, turns, calls = CASES[(caller, how)]
    BEHAVIOUR["how"] = how
    try:
        got = CALLERS[caller](db_path, how, capsys)
    finally:
        BEHAVIOUR["how"] = "ok"
    assert got == code
    row = _row(db_path)
    assert (row.status, row.stop_reason, row.turns) == (status, stop, turns)
    assert row.cost_usd == pytest.approx(calls * PRICE)  # every billed call, once
    assert (row.tokens_in, row.tokens_out) == (100 * calls, 10 * calls)
    if status is RunStatus.FAILED:
        assert "RuntimeError: a bug in the tutor" in row.error  # the evidence is kept with the run
    if status is RunStatus.INTERRUPTED:
        assert row.error


def test_an_app_run_whose_lease_lapses_keeps_the_learner_message_it_paid_for(db_path):
    """The app's fourth ending. The learner's next message is asked for (billed) and shown; the
    person leaves; the lease lapses and another page leaves the run open (its hold released). The open page's
    heartbeat then closes its copy as lapsed, and the billed message is in the run's cost once
    (the old code dropped it with the page's Simulation)."""
    from ui.simulate.player import Player

    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    live = start_run(store, question_id=Q, level="novice", assistant_id="human", user_id=BILLING_USER,
                     extractor_id=fk.EXTRACTOR, max_turns=4, lease_seconds=LEASE_SECONDS)
    p = Player(store, (live.run_id,), live={live.run_id: live})
    next_user_turn(live.sim)  # billed: shown above the reply box
    live.sim.assistant.put("Let me explain it step by step.")
    assert p.forward() and p.turn == 1
    next_user_turn(live.sim)  # billed, never answered
    clock.t += LEASE_SECONDS + 1
    assert store.runs.mark_dead() == [live.run_id]
    p.hold_leases()  # the page's heartbeat finds the lease gone
    row = store.search.get_row(live.run_id)
    # left open with its turn (issue 47: not "interrupted", which listed it among the failed runs)
    assert (row.status, row.turns, row.error) == (RunStatus.OPEN, 1, "")
    assert row.cost_usd == pytest.approx(2 * PRICE)  # the stored turn's message and the one never answered
    p.hold_leases()
    assert store.search.get_row(live.run_id).cost_usd == pytest.approx(2 * PRICE)  # not twice
    assert re.search(r"no longer held by this session", live.ending.error)
