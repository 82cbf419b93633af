"""Typed turns and forks: the researcher as a participant (core + AppTest, offline, a fresh database).

A typed message must be treated exactly like an agent's: the same extractor and rules, stored
with the agent id ``human``. So each check replays the stored text through the offline extractor
and :func:`session.play_turn` and compares with what the page stored — never with the page's
own output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.agents import registry
from knowsim_core.agents.human import HUMAN_ID, AwaitingInput, HumanAssistant, HumanUser, next_user_turn
from knowsim_core.errors import ConfigError
from knowsim_core.services.fork import FORKED_AT, FORKED_FROM, fork_link, fork_run
from knowsim_core.engine.ports import ExtractorContext, Message, QuestionMaterial
from knowsim_core.services.runner import start_run
from knowsim_core.engine.session import derive_seed, play_turn
from knowsim_core.storage import Store

from tests.test_app_part1 import SIMULATE, app, graph_payloads, ok, status_line

QUESTION = "sample_lava_lamps"


@pytest.fixture()
def db(seeded_store) -> Path:
    """The path of a database with the sample questions (conftest's seeded_store), which the app opens."""
    return seeded_store.path


def teaching_reply(graph) -> str:
    """A reply that explains the graph's root IUs in the graph's own words (the extractor sees teaching)."""
    roots = [n for n in graph.nodes if not graph.index.prereqs.get(n.id)]
    return " ".join(f"{n.concept}: {n.description}" for n in roots[:2])


def expected_turn(run, turn: int):
    """Turn ``turn`` recomputed from its stored messages: the offline extractor, then the rules."""
    rec = run.turns[turn - 1]
    prior = []
    for t in run.turns[: turn - 1]:
        prior += [Message("user", t.user_message), Message("assistant", t.assistant_message)]
    material = QuestionMaterial(run.question_id, run.question, run.reference_answer, run.graph)
    pre = run.turns[turn - 2].state_after if turn > 1 else run.initial_state
    ex = registry.resolve("extractor", run.adapter["extractor"]).extract(ExtractorContext(
        turn=turn, material=material, state=pre, history=tuple(prior), user_message=rec.user_message,
        assistant_message=rec.assistant_message, seed=derive_seed(run.seed, turn, "extractor"),
    ))
    return play_turn(run.graph, pre, ex.entries, turn=turn, tau=run.tau, params=run.params,
                     history=[t.quantities for t in run.turns[: turn - 1]])


# ---------------------------------------------------------------------- core
def test_human_agents_wait_for_text_and_are_registered():
    assistant = registry.resolve("assistant", HUMAN_ID)
    user = registry.resolve("user", HUMAN_ID)
    assert isinstance(assistant, HumanAssistant) and isinstance(user, HumanUser)
    assert assistant.id == user.id == "human" and assistant.waiting
    with pytest.raises(AwaitingInput):
        assistant.reply(None)  # nothing typed: a named error, never an empty message
    with pytest.raises(ConfigError, match="empty"):
        assistant.put("   ")
    assistant.put("  hello  ")
    assert assistant.reply(None).message == "hello"
    with pytest.raises(AwaitingInput):  # a typed message is used once
        assistant.reply(None)
    with pytest.raises(ConfigError):  # only the two conversational sides can be typed
        registry.resolve("extractor", HUMAN_ID)


def test_a_typed_reply_answers_the_message_the_page_showed(db):
    store = Store(db)
    live = start_run(store, question_id=QUESTION, level="novice", assistant_id=HUMAN_ID, seed=3)
    shown = next_user_turn(live.sim).message  # what the page shows before you type
    assert next_user_turn(live.sim).message == shown  # asked once, held until the step
    with pytest.raises(AwaitingInput):
        live.step()
    assert len(store.runs.load(live.run_id).turns) == 0  # nothing stored while waiting
    live.sim.assistant.put(teaching_reply(live.run.graph))
    rec = live.step()
    run = store.runs.load(live.run_id)
    assert rec.user_message == shown and run.adapter["assistant"] == "human"
    want = expected_turn(run, 1)
    assert rec.signals == want.signals and rec.state_after == want.state_after and rec.nodes == want.nodes


def test_fork_keeps_the_first_turns_and_plays_the_typed_reply(db):
    store = Store(db)
    parent = start_run(store, question_id=QUESTION, level="novice", assistant_id="offline/adaptive", seed=2)
    for _ in range(3):
        parent.step()
    reply = teaching_reply(parent.run.graph)
    child = fork_run(store, parent.run_id, 2, reply)
    p, c = store.runs.load(parent.run_id), store.runs.load(child.run_id)
    assert child.run_id != parent.run_id and fork_link(c) == (parent.run_id, 2)
    assert dict(c.meta)[FORKED_FROM] == parent.run_id and dict(c.meta)[FORKED_AT] == 2
    assert c.turns[0] == p.turns[0]  # the turns before the fork are the parent's
    assert c.turns[1].user_message == p.turns[1].user_message and c.turns[1].assistant_message == reply
    want = expected_turn(c, 2)
    assert c.turns[1].signals == want.signals and c.turns[1].state_after == want.state_after
    child.step()  # then the parent's own agents go on
    assert len(store.runs.load(child.run_id).turns) == 3
    assert store.runs.load(child.run_id).adapter == p.adapter
    with pytest.raises(Exception, match="turns 1–3"):
        fork_run(store, parent.run_id, 9, reply)


# ---------------------------------------------------------------------- the page
def start_typed(side: str) -> AppTest:
    at = ok(app(SIMULATE, question=QUESTION))
    at.radio(key="setup_writer").set_value(side).run()
    at.button(key="setup_start").click().run()
    return ok(at)


def test_typed_assistant_turn_on_the_page_is_stored_as_human(db):
    at = start_typed("assistant")
    run_id = at.query_params["run"]
    graph = Store(db).runs.load(run_id).graph
    assert at.button(key="sim_step").disabled  # the next turn needs your reply
    learner = [m.value for m in at.markdown]
    assert any(m.startswith("**The learner says:** ") for m in learner)  # one line: the box fits 900 px
    reply = teaching_reply(graph)
    at.text_area(key="sim_typed").input(reply).run()
    at.button(key="sim_send").click().run()
    ok(at)
    run = Store(db).runs.load(run_id)
    assert run.adapter["assistant"] == "human" and len(run.turns) == 1
    rec = run.turns[0]
    assert rec.assistant_message == reply
    assert any(rec.user_message in m for m in learner)  # the message you answered is the one stored
    want = expected_turn(run, 1)
    assert rec.signals == want.signals and rec.state_after == want.state_after
    assert any(s.teaching_quality != "not_mentioned" for s in rec.signals), "the reply teaches something"
    # the graph shows the stored states
    states = graph_payloads(at)[0]["states"]
    assert states == [int(rec.state_after.state_of(graph.index.label_of[v])) for v in graph.index.ids]
    assert at.query_params["turn"] == "1" and status_line(at).startswith("Turn **1** of 1")


def test_typed_user_turn_on_the_page(db):
    at = start_typed("user")
    run_id = at.query_params["run"]
    at.text_area(key="sim_typed").input("What makes the wax rise and fall?").run()
    at.button(key="sim_send").click().run()
    ok(at)
    run = Store(db).runs.load(run_id)
    assert run.adapter["user"] == "human" and run.adapter["assistant"] != "human"
    assert run.turns[0].user_message == "What makes the wax rise and fall?"
    assert run.turns[0].assistant_message.strip()  # the agent answered your message
    want = expected_turn(run, 1)
    assert run.turns[0].signals == want.signals and run.turns[0].state_after == want.state_after


def test_fork_on_the_page_opens_the_pair_and_compare(db):
    store = Store(db)
    parent = start_run(store, question_id=QUESTION, level="novice", assistant_id="offline/comprehensive", seed=1)
    for _ in range(3):
        parent.step()
    at = ok(app(SIMULATE, run=parent.run_id, turn="2"))
    assert not at.text_area, "the reply box is only sent when asked for"
    at.toggle(key="sim_fork_open_0").set_value(True).run()
    reply = teaching_reply(parent.run.graph)
    at.text_area(key=f"sim_fork_text_{parent.run_id}_2").input(reply).run()
    at.button(key="sim_fork_0").click().run()
    ok(at)
    assert at.query_params["run"] == parent.run_id and at.query_params["turn"] == "2"
    child_id = at.query_params["pair"]
    child = store.runs.load(child_id)
    assert fork_link(child) == (parent.run_id, 2)
    assert child.turns[0] == store.runs.load(parent.run_id).turns[0]
    assert len(child.turns) == 2 and child.turns[1].assistant_message == reply
    assert any("is a fork of run" in c.value for c in at.caption)
    # the Compare view is on the page, on the pair
    assert any(m.value.startswith("**Per-IU states**") for m in at.markdown)
    assert [p["key"] for p in graph_payloads(at)][:2] == ["sim_graph_0", "sim_graph_1"]


def test_link_without_turn_opens_a_finished_run_at_its_last_turn(db):
    store = Store(db)
    live = start_run(store, question_id=QUESTION, level="novice", assistant_id="offline/simple", seed=1, max_turns=4)
    live.run_to_end()
    assert store.search.get_row(live.run_id).status == "finished"
    at = ok(app(SIMULATE, run=live.run_id))
    assert at.query_params["turn"] == "4" and status_line(at).startswith("Turn **4** of 4")
    # an unfinished run still opens at its start
    other = start_run(store, question_id=QUESTION, level="novice", assistant_id="offline/simple", seed=2)
    other.step()
    at = ok(app(SIMULATE, run=other.run_id))
    assert at.query_params["turn"] == "0"


def test_sending_an_empty_reply_says_what_to_do_and_plays_nothing(db):
    at = start_typed("assistant")
    at.button(key="sim_send").click().run()
    ok(at)
    assert any("type the assistant's message first" in e.value for e in at.error)
    assert len(Store(db).runs.load(at.query_params["run"]).turns) == 0


def test_the_fork_of_a_typed_run_goes_on_typed_beside_its_parent(db):
    store = Store(db)
    parent = start_run(store, question_id=QUESTION, level="novice", assistant_id=HUMAN_ID, seed=5)
    for text in ("Let us start with counting.", "Now the shelf."):
        parent.sim.assistant.put(text)
        parent.step()
    store.runs.finish(parent.run_id, status="interrupted", error="handed over to the app")
    at = ok(app(SIMULATE, run=parent.run_id, turn="2"))
    at.toggle(key="sim_fork_open_0").set_value(True).run()
    at.text_area(key=f"sim_fork_text_{parent.run_id}_2").input("Count the arrangements first.").run()
    at.button(key="sim_fork_0").click().run()
    ok(at)
    child_id = at.query_params["pair"]
    assert store.runs.load(child_id).adapter["assistant"] == "human"
    # only the child waits for a reply at turn 2; the parent has nothing new at this turn
    at.text_area(key="sim_typed_1").input("Then the lamps that are on.").run()
    at.button(key="sim_send_1").click().run()
    ok(at)
    child = store.runs.load(child_id)
    assert [t.assistant_message for t in child.turns] == ["Let us start with counting.", "Count the arrangements first.",
                                                          "Then the lamps that are on."]
    assert len(store.runs.load(parent.run_id).turns) == 2  # the parent was not played
    assert not at.error, [e.value for e in at.error]  # and waiting for its own reply is no error
