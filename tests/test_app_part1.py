"""AppTest of the Studio's part-1 pages (Home, Questions, Simulate): offline, no keys, a fresh database.

What is checked against the store and the records, never against copies of the page's output:
runs are stored turn by turn, stepping back does not lose turns, a deep link reopens the same
run and turn, the gauge shows the record's load, the graph data carries the record's states,
and a clicked IU shows the reason that matches what happened to it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.engine.signals import TeachingQuality
from knowsim_core.storage import Store

TIMEOUT = 60
APP = str(Path(__file__).resolve().parent.parent / "app.py")
HOME, QUESTIONS, SIMULATE = "pages/home.py", "pages/questions.py", "pages/simulate.py"


def app(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()  # the frame first (navigation, sidebar), as a browser would
    if page:
        at.switch_page(page).run()
    return at


def elements(at: AppTest, kind: str) -> list:
    out: list = []

    def walk(node) -> None:
        if node.type == kind:
            out.append(node)
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for c in children.values():
                walk(c)

    walk(at._tree)
    return out


def chart_specs(at: AppTest) -> list[dict]:
    """The player's plotly figures (drawn by the live chart component, updated in place)."""
    payloads = [json.loads(el.proto.json) for el in elements(at, "bidi_component")]
    return [p["figure"] for p in payloads if "figure" in p]


def gauge_values(at: AppTest) -> list[float]:
    return [s["data"][0]["value"] for s in chart_specs(at) if s["data"][0]["type"] == "indicator"]


def graph_payloads(at: AppTest) -> list[dict]:
    """The IU graphs' payloads (the live charts are components too)."""
    payloads = [json.loads(el.proto.json) for el in elements(at, "bidi_component")]
    return [p for p in payloads if "nodes" in p]


def status_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("Turn **"))


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def start_demo() -> AppTest:
    at = ok(app())
    at.button(key="start_demo").click().run()
    return ok(at)


# ---------------------------------------------------------------------- pages render
@pytest.mark.parametrize("page", [HOME, QUESTIONS, SIMULATE])
def test_each_page_renders_offline_on_an_empty_database(db, page):
    assert not db.exists()
    at = ok(app(page))
    assert at.title, "every page has a title"
    # the first screen is never empty: opening the app seeded the sample questions
    assert len(Store(db).questions.list()) >= 10


def test_sidebar_shows_the_database_and_offline_provider(db):
    at = ok(app())
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert str(db) in sidebar and "**offline**" in sidebar


def test_home_lists_recent_runs_once_there_are_some(db):
    at = ok(app())
    assert any("No runs yet" in c.value for c in at.caption)
    start_demo()
    at = ok(app())
    links = [el for el in elements(at, "page_link")]
    assert len([l for l in links if "offline/comprehensive" in l.proto.label]) == 2


# ---------------------------------------------------------------------- the demo, stepping, rewinding
def test_demo_steps_three_turns_and_stores_each(db):
    at = start_demo()
    run_id, pair_id = at.query_params["run"], at.query_params["pair"]
    store = Store(db)
    assert {store.search.get_row(run_id).level, store.search.get_row(pair_id).level} == {"novice", "advanced"}
    for n in (1, 2, 3):
        at.button(key="sim_step").click().run()
        ok(at)
        assert at.query_params["turn"] == str(n)
        assert len(store.runs.load(run_id).turns) == n  # stored as it happened
        assert len(store.runs.load(pair_id).turns) == n
    assert status_line(at).startswith("Turn **3** of 3")
    # the gauges show each run's own record
    runs = [store.runs.load(run_id), store.runs.load(pair_id)]
    assert gauge_values(at) == pytest.approx([r.turns[2].quantities.effective_load for r in runs])


def gauge_ranges(at: AppTest) -> list[list[float]]:
    return [s["data"][0]["gauge"]["axis"]["range"] for s in chart_specs(at) if s["data"][0]["type"] == "indicator"]


def test_gauge_keeps_one_scale_across_steps(db):
    from knowsim_core.services.runner import start_run

    store = Store(db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_follicular_lymphoma", level="novice",
                     assistant_id="offline/comprehensive", seed=1, max_turns=5)
    live.run_to_end()
    run = store.runs.load(live.run_id)
    want = [0, max(2 * run.tau, math.ceil(max(t.quantities.effective_load for t in run.turns)))]
    at = ok(app(SIMULATE, run=live.run_id, turn="0"))
    seen = [gauge_ranges(at)[0]]
    for _ in range(5):
        at.button(key="sim_step").click().run()
        seen.append(gauge_ranges(at)[0])
    assert at.query_params["turn"] == "5"
    assert all(r == want for r in seen), seen


def test_step_back_shows_the_stored_turn_without_losing_later_ones(db):
    at = start_demo()
    for _ in range(3):
        at.button(key="sim_step").click().run()
    run_id = at.query_params["run"]
    at.button(key="sim_back").click().run()
    ok(at)
    assert at.query_params["turn"] == "2"
    run = Store(db).runs.load(run_id)
    assert len(run.turns) == 3
    assert gauge_values(at)[0] == pytest.approx(run.turns[1].quantities.effective_load)
    states = graph_payloads(at)[0]["states"]
    expected = [int(run.turns[1].state_after.state_of(run.graph.index.label_of[v])) for v in run.graph.index.ids]
    assert states == expected
    # stepping forward again replays the stored turn 3 instead of playing a new one
    at.button(key="sim_step").click().run()
    assert at.query_params["turn"] == "3" and len(Store(db).runs.load(run_id).turns) == 3


def test_deep_link_reopens_the_same_run_and_turn_and_resumes(db):
    at = start_demo()
    for _ in range(3):
        at.button(key="sim_step").click().run()
    run_id = at.query_params["run"]
    fresh = ok(app(SIMULATE, run=run_id, turn="2"))  # a new session, as after a reload
    assert status_line(fresh).startswith("Turn **2** of 3")
    run = Store(db).runs.load(run_id)
    assert gauge_values(fresh) == pytest.approx([run.turns[1].quantities.effective_load])
    changed = graph_payloads(fresh)[0]["changed"]
    assert changed == sorted(i for i, _, _ in run.turns[1].transitions)
    # step past the stored turns: the run is resumed from the store and turn 4 is stored
    fresh.button(key="sim_step").click().run()
    fresh.button(key="sim_step").click().run()
    ok(fresh)
    assert fresh.query_params["turn"] == "4"
    assert len(Store(db).runs.load(run_id).turns) == 4


def test_unknown_run_in_link_gives_a_clear_message(db):
    at = ok(app(SIMULATE, run="no-such-run", turn="1"))
    assert any("cannot be opened" in e.value for e in at.error)


# ---------------------------------------------------------------------- selecting an IU
def test_clicking_a_node_explains_that_iu(db):
    at = start_demo()
    moved = silent = []
    for turn in range(1, 7):  # step until a turn both advances some IUs and ignores others
        at.button(key="sim_step").click().run()
        run = Store(db).runs.load(at.query_params["run"])
        rec = run.turns[turn - 1]
        moved = [n for n in rec.nodes if n.post > n.pre]
        silent = [n for n in rec.nodes if n.quality == TeachingQuality.NOT_MENTIONED.value and n.pre < 3]
        if moved and silent:
            break
    assert moved and silent, "within six turns the demo both advances and ignores some IUs"
    for node, phrase in ((moved[0], "effective: "), (silent[0], "not mentioned")):
        at.session_state["sim_graph_0"] = {"selected": node.id}  # what a click in the browser sends
        at.run()
        ok(at)
        concept = run.graph.node(node.id).concept
        assert any(m.value == f"**{node.id} — {concept}**" for m in at.markdown)
        line = next(m.value for m in at.markdown if m.value.startswith(f"**Turn {turn}:**"))
        assert phrase in line
        assert graph_payloads(at)[0]["selected"] == node.id


# ---------------------------------------------------------------------- a fresh run from the form
def test_setup_form_starts_a_stored_run(db):
    at = ok(app(SIMULATE, question="sample_lava_lamps"))
    assert at.selectbox(key="setup_question").value == "sample_lava_lamps"
    at.radio(key="setup_level").set_value("advanced")
    at.selectbox(key="setup_assistant").set_value("offline/socratic")
    at.number_input(key="setup_seed").set_value(7)
    at.number_input(key="setup_max_turns").set_value(4)
    at.button(key="setup_start").click().run()
    ok(at)
    row = Store(db).search.get_row(at.query_params["run"])
    assert (row.question_id, row.level, row.assistant, row.seed) == ("sample_lava_lamps", "advanced", "offline/socratic", 7)
    for _ in range(4):
        assert not at.button(key="sim_step").disabled
        at.button(key="sim_step").click().run()
    assert len(Store(db).runs.load(row.id).turns) == 4
    assert Store(db).search.get_row(row.id).status == "finished"
    assert at.button(key="sim_step").disabled  # max turns reached: nothing more to play


def test_custom_initial_state_is_used(db):
    at = ok(app(SIMULATE, question="sample_dice_reroll_game"))
    at.radio(key="setup_level").set_value("custom").run()
    editor_key = "setup_custom_states_0"
    at.session_state[editor_key] = {"edited_rows": {0: {"state": "knows_well"}, 1: {"state": "unaware"}},
                                    "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key="setup_start").click().run()
    ok(at)
    run = Store(db).runs.load(at.query_params["run"])
    assert run.level == "custom"  # labelled as a hand-set start, not as a level's ratios
    first, second = run.graph.index.ids[:2]
    assert run.initial_state.state_of(run.graph.index.label_of[first]) == 3
    assert run.initial_state.state_of(run.graph.index.label_of[second]) == 0


# ---------------------------------------------------------------------- questions
def test_questions_search_add_and_simulate(db):
    at = ok(app(QUESTIONS))
    at.text_input(key="q_search").set_value("lymphoma").run()
    assert any("sample_follicular_lymphoma" in m.value for m in at.markdown)
    assert not any("sample_lava_lamps" in m.value for m in at.markdown)
    at.text_input(key="q_search").set_value("").run()
    at.text_area(key="q_new_text").set_value("Why is the sky blue?")
    at.text_input(key="q_new_domain").set_value("physics")
    next(b for b in at.button if b.label == "Add").click().run()
    ok(at)
    assert any(q.text == "Why is the sky blue?" and q.domain == "physics" for q in Store(db).questions.list())
    at.button(key="q_sim_sample_lava_lamps").click().run()
    ok(at)
    assert at.selectbox(key="setup_question").value == "sample_lava_lamps"


def test_hostile_text_only_travels_as_data(db):
    """An IU whose text is markup reaches the graph as data, never as component source."""
    from knowsim_core.engine.graph import IUGraph

    store = Store(db)
    store.questions.seed_samples()
    evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    base = store.questions.latest_graph_version("sample_lava_lamps").graph.to_data()
    base["nodes"][0]["concept"] = evil
    base["nodes"][0]["description"] = evil
    gv = store.questions.add_graph_version("sample_lava_lamps", IUGraph.from_data(base), note=evil)
    from knowsim_core.services.runner import start_run

    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple",
                     graph_version_id=gv)
    live.step()
    at = ok(app(SIMULATE, run=live.run_id, turn="1"))
    comp = elements(at, "bidi_component")[0].proto
    assert evil not in comp.js_content and evil not in comp.html_content and evil not in comp.css_content
    assert json.loads(comp.json)["nodes"][0][2] == evil


def test_custom_start_by_clicking_an_iu(db):
    at = ok(app(SIMULATE, question="sample_dice_reroll_game"))
    at.radio(key="setup_level").set_value("custom").run()
    graph = Store(db).questions.latest_graph_version("sample_dice_reroll_game").graph
    target = graph.index.ids[-1]  # a deep IU, unaware in a sampled novice
    at.session_state["setup_custom_graph"] = {"selected": target}
    at.run()
    ok(at)
    at.button_group(key=f"setup_pick_{target}").set_value("partial").run()
    ok(at)
    at.button(key="setup_start").click().run()
    run = Store(db).runs.load(at.query_params["run"])
    assert run.initial_state.state_of(run.graph.index.label_of[target]) == 2


def test_scrubber_moves_to_a_turn_and_play_toggles(db):
    at = start_demo()
    for _ in range(3):
        at.button(key="sim_step").click().run()
    scrubber = next(s for s in at.slider if s.key and s.key.startswith("sim_scrub_"))  # keyed by its position
    scrubber.set_value(1).run()
    ok(at)
    assert at.query_params["turn"] == "1" and status_line(at).startswith("Turn **1** of 3")
    at.button(key="sim_play").click().run()
    ok(at)
    assert at.button(key="sim_play").label == "Pause"
    at.button(key="sim_play").click().run()
    assert at.button(key="sim_play").label == "Play"


def test_playback_steps_on_elapsed_time_only():
    from ui.simulate.state import Playback

    pb = Playback(playing=True, speed=1.0, last_step=100.0)
    assert not pb.due(now=100.5)  # a full rerun half a second later must not step
    assert pb.due(now=101.0)
    pb.playing = False
    assert not pb.due(now=200.0)


def test_import_the_reference_folder(db, reference_dir):
    at = ok(app(QUESTIONS))
    before = len(Store(db).questions.list())
    at.text_input(key="q_import_dir").set_value(str(reference_dir)).run()
    at.button(key="q_import").click().run()
    ok(at)
    assert at.success, [e.value for e in at.error]
    after = Store(db).questions.list()
    assert len(after) > before
    imported = next(q for q in after if q.source.startswith("reference"))
    assert Store(db).questions.latest_graph_version(imported.id) is not None


def test_import_of_a_missing_path_says_so_and_changes_nothing(db, tmp_path):
    at = ok(app(QUESTIONS))
    before = len(Store(db).questions.list())
    at.text_input(key="q_import_dir").set_value(str(tmp_path / "nope")).run()
    at.button(key="q_import").click().run()
    assert any("does not exist" in e.value for e in at.error)
    assert len(Store(db).questions.list()) == before


def test_llm_ids_appear_when_a_provider_is_configured_and_keys_never_show(db, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = ok(app(SIMULATE))
    assert not any(o.startswith("openai/") for o in at.selectbox(key="setup_assistant").options)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-secret-123")
    at = ok(app(SIMULATE))
    assert any(o.startswith("openai/") for o in at.selectbox(key="setup_assistant").options)
    assert at.selectbox(key="setup_assistant").value == "offline/adaptive"  # offline stays the default
    shown = " ".join(e.value for e in (*at.markdown, *at.caption))
    assert "sk-env-secret-123" not in shown


def test_a_key_typed_in_the_sidebar_enables_the_provider_for_the_session(db, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def providers(at: AppTest) -> str:
        return next(c.value for c in at.sidebar.caption if c.value.startswith("Providers"))

    assert ":material/radio_button_unchecked: **openai**" in providers(ok(app()))
    # AppTest runs the frame (and so the sidebar) on a session's first run only: type the key
    # into the sidebar box's state before it
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["_llm_openai_api_key"] = "sk-typed-secret-456"
    ok(at.run())
    assert at.sidebar.text_input(key="_llm_openai_api_key").value == "sk-typed-secret-456"
    assert ":material/check_circle: **openai** — key from session" in providers(at)
    shown = " ".join(e.value for e in (*at.markdown, *at.caption, *at.sidebar.caption))
    assert "sk-typed-secret-456" not in shown


def test_glossary_and_legend_on_simulate(db):
    from ui.common.theme import GLOSSARY, STATE_STYLE

    at = start_demo()
    shown = " ".join(m.value for m in at.markdown)
    for term in ("τ", "load", "η", "ceiling", "carry", "step", "KG", "DC", "CO"):  # the metrics too (issue 47)
        assert f"**{term}** — {GLOSSARY[term]}" in shown, term
    legend = " ".join(el.proto.body for el in elements(at, "html"))
    assert all(f"background:{s.colour}" in legend for s in STATE_STYLE.values())
