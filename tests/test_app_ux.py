"""AppTest: the Studio as a new researcher meets it (issue 34) — each test names the old behaviour it catches."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from knowsim_core.services.runner import start_run

from tests.part2_support import runs_table_key

RUNS = "../pages/runs.py"
QID = "sample_lava_lamps"


def _open(page: str, **query) -> AppTest:
    at = AppTest.from_file(page, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _select_run(at: AppTest, run_id: str) -> AppTest:
    rows = list(at.dataframe[0].value["run"])
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [rows.index(run_id[:12])], "columns": [], "cells": []}}
    return at.run()


def test_resume_on_a_typed_run_opens_it_for_typing_and_leaves_it_interrupted(seeded_store):
    """Old: Resume claimed the typed run as ``running`` and stopped on the missing message — the run
    stayed ``running`` for good and left the "failed / interrupted" filter."""
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="human", seed=2, max_turns=4)
    live.sim.assistant.put("Lava lamps heat wax at the bottom; it rises, cools and sinks.")
    live.step()
    seeded_store.runs.finish(live.run_id, status="interrupted", error="the browser session went away")
    at = _open(RUNS)
    at.toggle(key="runs_bad").set_value(True).run()
    at = _select_run(at, live.run_id)
    at.button(key="runs_resume").click().run()
    assert not at.exception, [e.value for e in at.exception]
    row = seeded_store.search.get_row(live.run_id)
    assert (row.status, row.turns) == ("interrupted", 1)
    # the run goes to Simulate at its last turn (here, outside the app's navigation, the page says so)
    assert any(f"Open run {live.run_id} at turn 1" in i.value for i in at.info)
    assert live.run_id[:12] in list(at.dataframe[0].value["run"])  # still under "failed / interrupted"


SIMULATE = "../pages/simulate.py"


def test_compare_right_after_a_fork_compares_both_runs_at_the_same_turn(seeded_store):
    """Old: the Compare panel opened by a fork set A's whole run (8 turns) against B's 3 — the
    KG difference of two lengths, not of the forked reply."""
    from knowsim_core.services.fork import fork_run

    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=6, max_turns=8)
    a = live.run_to_end()
    child = fork_run(seeded_store, live.run_id, 2, "Warm wax is less dense than the oil, so it rises.")
    child.step()
    b = seeded_store.runs.load(child.run_id)
    assert (len(a.turns), len(b.turns)) == (8, 3)
    at = AppTest.from_file(SIMULATE, default_timeout=60)
    at.query_params.update(run=live.run_id, pair=child.run_id, turn="3")
    at.session_state["_ks_compare_open"] = True  # as after a fork
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if list(d.value.columns)[:1] == ["metric"])
    kg = table.set_index("metric").loc["KG"]
    want_a = a.with_turns(a.turns[:3]).metrics().knowledge_gain
    assert kg["A"] == round(want_a, 4) and kg["B"] == round(b.metrics().knowledge_gain, 4)
    assert table.set_index("metric").loc["turns", "A"] == 3
    assert any("as they stood after turn 3" in c.value for c in at.caption)


def _real_conversation(store, tmp_path) -> str:
    """One imported real conversation whose first message is a greeting; its run id."""
    import json

    from knowsim_core.services.importing import import_path

    conv = {"id": "hello1", "level": "novice", "model": "gpt-4o", "rating": 7, "correctness": "correct",
            "messages": [{"role": "user", "content": "Hello, are you functioning properly?"},
                         {"role": "assistant", "content": "Yes! What problem shall we work on?"},
                         {"role": "user", "content": "How many ways can 3 books stand in a row?"},
                         {"role": "assistant", "content": "Multiply the choices for each place: 3 x 2 x 1 = 6."}],
            "concepts": [{"name": "Factorial", "description": "n! is the product of 1 to n: the number of orders."}]}
    path = tmp_path / "convs.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    import_path(store, path)
    return next(r.id for r in store.search.list() if r.assistant.startswith("recorded/"))


def test_a_real_conversation_is_headed_by_title_level_tutor_rating_and_answer(seeded_store, tmp_path):
    """Old: Simulate headed it with its slug and the person's first message
    ("sa_math_… — Hello, are you functioning properly?")."""
    rid = _real_conversation(seeded_store, tmp_path)
    run = seeded_store.runs.load(rid)
    title = seeded_store.questions.get(run.question_id).title
    at = AppTest.from_file(SIMULATE, default_timeout=60)
    at.query_params["run"] = rid
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    head = next(m.value for m in at.markdown if m.value.startswith("**Real conversation**"))
    assert title in head and "Hello" not in title
    assert "novice learner" in head and "tutor gpt-4o" in head and "rated 7/10" in head and "answer correct" in head
    assert not any(m.value.startswith("**Question**") and "Hello, are you" in m.value for m in at.markdown)


def test_after_saving_a_graph_version_one_click_simulates_on_it(seeded_store):
    """Old: nothing on the Graph editor led to Simulate, and Simulate's setup always picked the
    newest version whatever the link said."""
    graph = seeded_store.questions.latest_graph_version(QID).graph
    seeded_store.questions.add_graph_version(QID, graph, note="a second version", author="test")
    at = AppTest.from_file("../pages/graph.py", default_timeout=60)
    at.query_params["question"] = QID
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="graph_simulate").click().run()  # the newest (v2) is picked, as right after a save
    assert any(f"Set up a run of {QID} on graph v2" in i.value for i in at.info)
    # the link Simulate gets (the page switch carries it): its setup picks that version
    for number in (1, 2):
        sim = _open(SIMULATE, question=QID, version=str(number))
        assert sim.selectbox(key=f"setup_graph_{QID}").value.version == number


def test_simulates_graph_never_draws_labels_below_the_minimum(seeded_store):
    """Old: Simulate fitted the whole graph into its 310 px, labels of a 16-IU graph ~7 px; then the
    view kept 11 px labels and panned, which hid the lower rows (issue 47). Now the whole graph is
    fitted and a graph whose whole labels would fall below WHOLE_LABEL_PX is drawn with ids only:
    minScale in the graph's data carries that threshold, and the hint for that case says why
    (the browser's side: tests/browser/test_fit_browser.py)."""
    from tests.test_app_part1 import graph_payloads
    from ui.common.graph_view import HINT_IDS, LABEL_FONT_PX
    from ui.simulate.view import WHOLE_LABEL_PX

    live = start_run(seeded_store, question_id="sample_herd_immunity", level="novice",
                     assistant_id="offline/adaptive", seed=1, max_turns=2)
    live.step()
    at = _open(SIMULATE, run=live.run_id, turn="1")
    payload = next(p for p in graph_payloads(at) if p["key"] == "sim_graph_0")
    assert len(payload["nodes"]) == 16 and payload["compact"] is False
    assert abs(payload["minScale"] * LABEL_FONT_PX - WHOLE_LABEL_PX) < 1e-9 and WHOLE_LABEL_PX >= 9
    assert payload["hintSmall"] == HINT_IDS and "Ids only" in HINT_IDS


def test_failure_modes_warns_of_pooled_versions_only_within_one_question(seeded_store):
    """Old: runs of question A on its v1 and of question B on its v3 — each question on one graph —
    read "These figures pool graph versions v1, v3", and following the advice dropped runs."""
    from tests.part2_support import make_run

    g = seeded_store.questions.latest_graph_version(QID).graph
    other = "sample_dice_reroll_game"
    og = seeded_store.questions.latest_graph_version(other).graph
    for _ in range(2):
        seeded_store.questions.add_graph_version(other, og, note="edited", author="test")
    v3 = seeded_store.questions.latest_graph_version(other)
    assert v3.version == 3
    seeded_store.runs.save(make_run(g, question_id=QID, seed=1, max_turns=3))
    seeded_store.runs.save(make_run(og, question_id=other, seed=2, max_turns=3), graph_version_id=v3.id)
    at = _open("../pages/failures.py")
    assert not [w.value for w in at.warning if "graph versions" in w.value]
    # a second version of one question in the same population is still said, naming the question
    v1 = seeded_store.questions.graph_versions(other)[0]
    seeded_store.runs.save(make_run(og, question_id=other, seed=3, max_turns=3), graph_version_id=v1.id)
    at = _open("../pages/failures.py")
    assert any(f"graph versions v1, v3 of {other}" in w.value for w in at.warning), [w.value for w in at.warning]


def test_simulates_header_names_the_graph_version(seeded_store):
    """Old: the header named level, agents and τ, never which version of the graph the run is on."""
    g = seeded_store.questions.latest_graph_version(QID).graph
    v2 = seeded_store.questions.get_graph_version(seeded_store.questions.add_graph_version(QID, g, note="v2", author="test"))
    v1 = seeded_store.questions.graph_versions(QID)[0]
    for version in (v1, v2):
        live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=1,
                         max_turns=2, graph_version_id=version.id)
        live.step()
        at = _open(SIMULATE, run=live.run_id, turn="1")
        head = next(m.value for m in at.markdown if "learner**" in m.value)
        assert f"graph v{version.version}" in head, head


def test_the_batch_page_chooses_a_graph_version_and_shows_which(seeded_store):
    """Old: the page had no version choice and never said which graph each question would use."""
    g = seeded_store.questions.latest_graph_version(QID).graph
    seeded_store.questions.add_graph_version(QID, g, note="v2", author="test")
    at = AppTest.from_file("../pages/batch.py", default_timeout=60)
    at.session_state["batch_questions"] = [QID]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"graphs: {QID} v2" in c.value for c in at.caption)  # the newest, said
    at.selectbox(key="batch_graph_version").set_value(1).run()
    assert any(f"graphs: {QID} v1" in c.value for c in at.caption), [c.value for c in at.caption]


def test_wording_one_run_iu_ids_titles_and_the_first_turn_hint(seeded_store):
    """Old: "1 runs match", "IU IU3: …", the Graph editor titled "IU graph", and "Step forward to
    play the first turn" under a disabled Step (a typed run's first message is the researcher's)."""
    from tests.part2_support import make_run
    from ui.graph.editor import apply_edits, node_rows

    g = seeded_store.questions.latest_graph_version(QID).graph
    seeded_store.runs.save(make_run(g, question_id=QID, seed=1, max_turns=2))
    at = _open(RUNS)
    assert at.caption[0].value.startswith("1 run match"), at.caption[0].value
    rows = node_rows(g)
    row = next(i for i, r in enumerate(rows) if r["id"] == "IU3")
    result = apply_edits(g, {"edited_rows": {row: {"concept": "x" * 5000}}}, None)
    assert result.problems and all("IU IU3" not in p for p in result.problems)
    assert any(p.startswith("IU3") for p in result.problems), result.problems
    graph_page = _open("../pages/graph.py")
    assert [t.value for t in graph_page.title] == ["Graph editor"]  # the navigation's name
    typed = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", user_id="human",
                      seed=1, max_turns=3)
    sim = _open(SIMULATE, run=typed.run_id, turn="0")
    assert sim.button(key="sim_step").disabled
    hints = [c.value for c in sim.caption if c.value.startswith("Starting level")]
    assert hints and all("Step forward" not in h and "Type the first message" in h for h in hints), hints


def test_the_graph_editors_messages_use_icons_that_ship_with_the_app(seeded_store):
    """Old: ⛔ / ♻️ / ⚠️ emoji, drawn as empty boxes in Debian's chromium (no emoji font); the
    Material icons come with Streamlit's own font."""
    import unicodedata

    v = seeded_store.questions.latest_graph_version(QID)
    edge = v.graph.edges[0]
    at = _open("../pages/graph.py", question=QID)
    at.session_state[f"edges_{v.id}_0"] = {"edited_rows": {}, "added_rows": [{"from": edge.to, "to": edge.from_}],
                                          "deleted_rows": []}
    at.run()
    icons = [e.proto.icon for e in [*at.error, *at.warning]]
    assert any("cycle" in e.value for e in at.error) and icons
    assert all(i.startswith(":material/") for i in icons if i), icons
    assert not [i for i in icons if any(unicodedata.category(c) == "So" for c in i)]


def test_paper_check_over_all_questions_says_what_it_pools(seeded_store):
    """Old: with "Only the paper's questions" off the tab pooled forks and a question's two graph
    versions without the warning the Across runs tab gives."""
    from knowsim_core.services.fork import fork_run
    from tests.part2_support import make_run

    g = seeded_store.questions.latest_graph_version(QID).graph
    v2 = seeded_store.questions.add_graph_version(QID, g, note="v2", author="test")
    seeded_store.runs.save(make_run(g, question_id=QID, seed=1, max_turns=3), graph_version_id=v2)
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=2,
                     max_turns=3, graph_version_id=seeded_store.questions.graph_versions(QID)[0].id)
    live.run_to_end()
    fork_run(seeded_store, live.run_id, 2, "Warm wax rises because it is less dense.").run_to_end()
    at = _open("../pages/failures.py")
    at.toggle(key="pc_paper_only").set_value(False).run()
    assert not at.exception, [e.value for e in at.exception]
    mine = [w.value for w in at.warning if "Across runs tab" in w.value]
    assert mine and "1 fork of another run" in mine[0] and f"graph versions v1, v2 of {QID}" in mine[0], mine
