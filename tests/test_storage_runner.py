"""runner: start_run / LiveRun / resume_run against a real store, with test-local agents."""

from __future__ import annotations

from dataclasses import replace

import pytest

from knowsim_core.errors import ConfigError, ProviderError, StorageError
from knowsim_core.services import runner
from knowsim_core.services.runner import resume_run, start_run
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.state import initial_state
from knowsim_core.engine.config import preset
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from tests import storage_fakes as fk

AGENTS = dict(assistant_id=fk.ASSISTANT, user_id=fk.USER, extractor_id=fk.EXTRACTOR)
Q = "sample_lava_lamps"


@pytest.fixture()
def store(seeded_store) -> Store:
    return seeded_store


def test_every_step_is_stored_before_it_returns(store):
    """step() on its own (the app's way) writes each turn before returning."""
    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=5, **AGENTS)
    assert store.search.get_row(live.run_id).status == "running"
    seen = []
    while not live.done:
        seen.append((live.step().turn, store.search.get_row(live.run_id).turns))
    assert seen == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    row = store.search.get_row(live.run_id)
    assert (row.status, row.stop_reason, row.turns) == ("finished", "max_turns", 5)
    assert store.runs.load(live.run_id) == live.run
    assert row.graph_version_id == store.questions.latest_graph_version(Q).id


def test_run_to_end_writes_an_offline_conversation_a_few_turns_at_a_time(store, monkeypatch):
    """Issue 32: one transaction per turn was a quarter of an offline batch; the old code wrote
    every turn on its own (seen would be (1, 1), (2, 2), …)."""
    monkeypatch.setattr(runner, "BUFFER_TURNS", 2)
    monkeypatch.setattr(runner, "BUFFER_SECONDS", 3600.0)  # a slow machine must not flush early
    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=5, buffered=True, **AGENTS)
    seen = []
    run = live.run_to_end(progress=lambda rec: seen.append((rec.turn, store.search.get_row(live.run_id).turns)))
    assert seen == [(1, 0), (2, 2), (3, 2), (4, 4), (5, 5)]  # the 5th with the close, in one transaction
    row = store.search.get_row(live.run_id)
    assert (row.status, row.stop_reason, row.turns) == ("finished", "max_turns", 5)
    assert store.runs.load(live.run_id) == run
    reference = start_run(store, question_id=Q, level="novice", seed=4, max_turns=5, **AGENTS)
    while not reference.done:
        reference.step()
    assert store.search.get_row(reference.run_id).kg == row.kg  # the same metrics as turn-by-turn writes


def test_a_buffered_turn_waits_no_longer_than_the_time_bound(store, monkeypatch):
    monkeypatch.setattr(runner, "BUFFER_SECONDS", 0.0)
    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=3, buffered=True, **AGENTS)
    seen = []
    live.run_to_end(progress=lambda rec: seen.append((rec.turn, store.search.get_row(live.run_id).turns)))
    assert seen == [(1, 1), (2, 2), (3, 3)]


def test_interrupting_a_buffered_run_keeps_its_turns(store):
    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=6, buffered=True, **AGENTS)
    live.step()
    live.step()
    assert store.search.get_row(live.run_id).turns == 0
    live.interrupt("stopped by the batch")
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns, row.error) == ("interrupted", 2, "stopped by the batch")
    assert store.runs.load(live.run_id).turns == live.run.turns


def test_initial_state_precedence(store):
    graph = get_sample(Q).graph
    canonical = initial_state(graph, "advanced", preset(), seed=99)
    store.caches.set_initial_state(Q, "advanced", canonical)
    live = start_run(store, question_id=Q, level="advanced", seed=1, max_turns=1, **AGENTS)
    assert live.run.initial_state == canonical
    given = initial_state(graph, "advanced", preset(), seed=7)
    live = start_run(store, question_id=Q, level="advanced", seed=1, max_turns=1, initial_state=given, **AGENTS)
    assert live.run.initial_state == given
    sampled = start_run(store, question_id=Q, level="novice", seed=5, max_turns=1, **AGENTS).run.initial_state
    assert sampled == initial_state(graph, "novice", preset(), seed=5)


def test_pinned_graph_version(store):
    graph = get_sample(Q).graph
    smaller = graph.without_node(graph.index.ids[-1])
    v2 = store.questions.add_graph_version(Q, smaller, note="trimmed")
    first = store.questions.graph_versions(Q)[0].id
    live = start_run(store, question_id=Q, level="novice", graph_version_id=first, max_turns=1, **AGENTS)
    assert live.run.graph == graph
    assert start_run(store, question_id=Q, level="novice", max_turns=1, **AGENTS).run.graph == smaller
    other = store.questions.latest_graph_version("sample_herd_immunity").id
    with pytest.raises(StorageError, match="belongs to 'sample_herd_immunity'"):
        start_run(store, question_id=Q, level="novice", graph_version_id=other, **AGENTS)
    assert v2


def test_bad_setup_is_refused_before_anything_is_stored(store):
    with pytest.raises(ConfigError, match="unknown knowledge level 'expert'"):
        start_run(store, question_id=Q, level="expert", **AGENTS)
    with pytest.raises(StorageError, match="unknown question id"):
        start_run(store, question_id="nope", level="novice", **AGENTS)
    with pytest.raises(ConfigError, match="unknown assistant"):
        start_run(store, question_id=Q, level="novice", assistant_id="offline/nonexistent-xyz",
                  user_id=fk.USER, extractor_id=fk.EXTRACTOR)
    with pytest.raises(ConfigError, match="unknown rule preset"):
        start_run(store, question_id=Q, level="novice", preset="paper-fanfic", **AGENTS)
    qid = store.questions.add(text="No graph yet")
    with pytest.raises(StorageError, match="has no IU graph yet"):
        start_run(store, question_id=qid, level="novice", **AGENTS)
    assert store.search.count() == 0


def test_provider_error_marks_failed_and_resume_finishes(store):
    live = start_run(store, question_id=Q, level="novice", seed=2, max_turns=4,
                     assistant_id=fk.FAILING_ASSISTANT, user_id=fk.USER, extractor_id=fk.EXTRACTOR)
    with pytest.raises(ProviderError, match="rate limited"):
        live.run_to_end()
    row = store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("failed", 1) and "rate limited" in row.error
    with pytest.raises(ProviderError):  # still failing on resume: failed again, nothing lost
        resume_run(store, live.run_id).run_to_end()
    assert store.search.get_row(live.run_id).turns == 1


def test_interrupted_run_resumes_into_the_uninterrupted_run(store):
    live = start_run(store, question_id=Q, level="intermediate", seed=8, max_turns=6, **AGENTS)
    live.step()
    live.step()
    store.runs.finish(live.run_id, status="interrupted")
    resumed = resume_run(store, live.run_id)
    assert store.search.get_row(live.run_id).status == "running"
    run = resumed.run_to_end()
    full = start_run(store, question_id=Q, level="intermediate", seed=8, max_turns=6, **AGENTS).run_to_end()
    assert replace(run, run_id=None) == replace(full, run_id=None)
    assert store.runs.load(live.run_id) == run
    with pytest.raises(StorageError, match="already finished"):
        resume_run(store, live.run_id)


def test_resume_of_a_run_that_had_played_its_last_turn_just_closes_it(store):
    live = start_run(store, question_id=Q, level="novice", seed=1, max_turns=2, **AGENTS)
    live.step()
    rec = live.sim.step()  # the process "dies" after storing the last turn, before closing the run
    store.runs.append_turn(live.run_id, rec)
    store.runs.finish(live.run_id, status="interrupted")
    resumed = resume_run(store, live.run_id)
    assert resumed.done
    row = store.search.get_row(live.run_id)
    assert (row.status, row.stop_reason, row.turns) == ("finished", "max_turns", 2)


def test_imported_recording_cannot_be_resumed(store):
    run = start_run(store, question_id=Q, level="novice", max_turns=2, **AGENTS).run_to_end()
    recorded = replace(run, run_id=None, adapters=(("assistant", "recorded/adaptive"), ("user", "recorded/x"),
                                                    ("extractor", "recorded/labels")))
    rid = store.runs.save(recorded, status="interrupted")
    with pytest.raises(StorageError, match="imported from a recording"):
        resume_run(store, rid)
    assert store.search.get_row(rid).status == "interrupted"


def test_a_run_whose_user_had_said_goodbye_is_closed_as_user_done_on_resume(store):
    """The user's declared end is kept with its turn, so a process dying between that turn and
    closing the run does not let a resume play past the goodbye."""
    live = start_run(store, question_id=Q, level="novice", seed=1, max_turns=5, **AGENTS)
    live.step()
    rec = replace(live.sim.step(), user_done=True)  # as Simulation.step records a user's terminate
    store.runs.append_turn(live.run_id, rec)
    store.runs.finish(live.run_id, status="interrupted")  # the process "died" before closing the run
    assert store.runs.load(live.run_id).turns[-1].user_done is True  # stored and read back
    resumed = resume_run(store, live.run_id)
    assert resumed.done
    row = store.search.get_row(live.run_id)
    assert (row.status, row.stop_reason, row.turns) == ("finished", "user_done", 2)


def test_a_declaring_user_ends_the_run_and_its_turn_says_so():
    from knowsim_core.agents import registry
    from knowsim_core.engine.ports import UserTurn
    from knowsim_core.engine.session import STOP_USER_DONE, Simulation

    class Leaving:
        id = "test/leaving"

        def respond(self, ctx):
            return UserTurn(message="Thanks, I get it now.", attempt=False, terminate=ctx.turn == 2)

    sample = get_sample(Q)
    sim = Simulation(material=sample.material, assistant=registry.resolve("assistant", "offline/simple"),
                     user=Leaving(), extractor=registry.resolve("extractor", "offline/lexical"), level="novice")
    sim.reset(seed=1)
    run = sim.run_to_end()
    assert run.stop_reason == STOP_USER_DONE and [t.user_done for t in run.turns] == [False, True]
    assert "user_done" not in run.turns[0].to_data()  # written only when set: older records read the same
    assert type(run.turns[1]).from_data(run.turns[1].to_data()) == run.turns[1]


def test_a_leased_step_opens_one_connection_for_the_lease_the_play_and_the_write(store, monkeypatch):
    """Issue 32 (the app's click → new graph data): each connection closed checkpoints the WAL when
    it is the last one open. Old code: the lease was renewed on a connection of its own before the
    step's pinned one, so every leased step opened two (counted here: 2 per step)."""
    from knowsim_core.storage.connection import Connection

    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=3, lease_seconds=60.0, **AGENTS)
    opened = []
    real_open = Connection._open
    monkeypatch.setattr(Connection, "_open", lambda self: opened.append(1) or real_open(self))
    steps = 0
    while not live.done:
        live.step()
        steps += 1
    assert steps == 3 and len(opened) == steps
    assert store.search.get_row(live.run_id).status == "finished"


def test_on_close_runs_inside_the_transaction_that_closes_the_run(store):
    """A batch releases its cell's claim in the run's closing transaction (one write less per
    conversation): what ``on_close`` writes commits with the close, and a failing ``on_close``
    leaves neither stored."""
    import sqlite3

    seen = []

    def on_close() -> None:
        other = sqlite3.connect(store.path)
        try:  # not committed yet: another connection still sees the run open, without its turns
            seen.append(other.execute("SELECT status, n_turns FROM runs WHERE id = ?", [live.run_id]).fetchone())
        finally:
            other.close()
        store.runs.add_tags(live.run_id, ["closed-with-it"])

    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=2, buffered=True, on_close=on_close,
                     **AGENTS)
    live.run_to_end()
    assert seen == [("running", 0)]
    assert store.search.get_row(live.run_id).status == "finished"
    assert store.search.count(RunFilter(tag="closed-with-it")) == 1

    failing: list = []

    def boom() -> None:
        store.runs.add_tags(failing[0].run_id, ["never"])
        raise StorageError("the caller's bookkeeping failed")

    failing.append(start_run(store, question_id=Q, level="novice", seed=5, max_turns=2, buffered=True, on_close=boom,
                             **AGENTS))
    with pytest.raises(StorageError, match="bookkeeping"):
        failing[0].run_to_end()
    row = store.search.get_row(failing[0].run_id)
    # neither the close nor the bookkeeping; the turns played are kept (written without the close)
    assert (row.status, row.turns) == ("running", 2) and store.search.count(RunFilter(tag="never")) == 0


def test_the_records_are_packed_before_the_write_lock_is_taken_the_closing_write_too(store, monkeypatch):
    """Packing a turn (JSON + zlib, ~0.2 ms) holds no lock another writer waits for. The runner
    used to open the closing transaction itself (for ``on_close``) and call ``append_turns`` inside
    it, so a batch conversation's last turns — with 15-turn conversations and a 16-turn buffer, all
    of them — were packed holding the write lock: ~4.9 ms of lock per conversation instead of ~1.6;
    a new run's setup record and a saved run's records were packed inside it too. Each pack here
    checks that a second connection could take the write lock at that moment."""
    import sqlite3

    from knowsim_core.storage import runs as runs_module

    real_pack, locked = runs_module.pack, []

    def pack(data):
        other = sqlite3.connect(store.path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            locked.append(False)
        except sqlite3.OperationalError:
            locked.append(True)
        finally:
            other.close()
        return real_pack(data)

    monkeypatch.setattr(runs_module, "pack", pack)
    monkeypatch.setattr(runner, "BUFFER_TURNS", 3)
    monkeypatch.setattr(runner, "BUFFER_SECONDS", 3600.0)
    released, runs = [], []
    live = start_run(store, question_id=Q, level="novice", seed=4, max_turns=5, buffered=True,  # a batch's cell release:
                     on_close=lambda: released.append(store.search.get_row(runs[0].run_id).turns), **AGENTS)
    runs.append(live)
    assert locked == [False], locked  # the run's setup record (packed inside the lock before, too)
    live.run_to_end()
    assert locked == [False] * 6, locked  # then 3 turns in a flush, 2 with the close: none under the lock
    locked.clear()
    store.runs.save(live.run.with_turns(live.run.turns))  # a whole run at once (imports, replays)
    assert locked == [False] * 6, locked
    assert released == [5] and store.search.get_row(live.run_id).status == "finished"
