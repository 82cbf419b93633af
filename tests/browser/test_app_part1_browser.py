"""The Simulate page in a real browser (Debian's chromium): demo, steps, colours, clicks, no network, no XSS."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from knowsim_core.engine.graph import IUGraph
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from ui.common.theme import STATE_STYLE

from tests.browser.conftest import ARTIFACTS, graph_nodes, nodes_outside_canvas, wait_idle

pytestmark = pytest.mark.browser
EVIL = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def expected_nodes(run, turn: int) -> dict[str, tuple[int, str, bool]]:
    state = run.turns[turn - 1].state_after if turn else run.initial_state
    moved = {i for i, _, _ in run.turns[turn - 1].transitions} if turn else set()
    out = {}
    for v in run.graph.index.ids:
        s = state.state_of(run.graph.index.label_of[v])
        out[v] = (int(s), STATE_STYLE[s].colour, v in moved)
    return out


def shown_nodes(page, key: str) -> dict[str, tuple[int, str, bool]]:
    return {n["id"]: (n["state"], n["colour"], n["changed"]) for n in graph_nodes(page, key) or []}


def wait_graph(page, key: str, want: dict, timeout_ms: int = 15_000) -> None:
    """Poll the browser's DataSet until it shows ``want`` (the colour tween takes ~0.2 s)."""
    deadline = page.evaluate("performance.now()") + timeout_ms
    while page.evaluate("performance.now()") < deadline:
        if shown_nodes(page, key) == want:
            return
        page.wait_for_timeout(50)
    shown = shown_nodes(page, key)
    if shown != want:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"failed-{key}.png"))
    assert shown == want, ({k: (shown.get(k), v) for k, v in want.items() if shown.get(k) != v}, page.console_errors)


def test_demo_three_steps_colours_match_the_stored_records(studio, page):
    page.goto(studio.url)
    wait_idle(page)
    page.get_by_role("button", name="Start the demo").click()
    page.wait_for_url("**/simulate?*")
    wait_idle(page)
    store = Store(studio.db)
    ids = query(page)
    runs = {"sim_graph_0": ids["run"], "sim_graph_1": ids["pair"]}
    for key, rid in runs.items():
        wait_graph(page, key, expected_nodes(store.runs.load(rid), 0))
    for turn in (1, 2, 3):
        page.get_by_role("button", name="Step").click()
        page.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{turn}'")
        for key, rid in runs.items():
            run = store.runs.load(rid)
            assert len(run.turns) == turn  # stored as it was played
            wait_graph(page, key, expected_nodes(run, turn))
    # the keyboard: ← steps back, → forward again
    page.locator("body").press("ArrowLeft")
    page.wait_for_function("() => new URLSearchParams(location.search).get('turn') === '2'")
    wait_graph(page, "sim_graph_0", expected_nodes(store.runs.load(runs["sim_graph_0"]), 2))
    page.locator("body").press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('turn') === '3'")
    wait_idle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "simulate.png"), full_page=True)
    for key in runs:  # the side-by-side graphs (18 IUs, 8 levels deep) show every IU without panning
        assert nodes_outside_canvas(page, key) == [], key
    outside = [u for u in page.requests if not u.startswith(("http://127.0.0.1", "ws://127.0.0.1", "blob:", "data:"))]
    assert outside == [], f"requests left localhost: {outside}"
    assert any("/app/static/vendor/vis-network.min.js" in u for u in page.requests)


def open_played_run(studio, page, turns: int = 2):
    """A stored run of the largest sample played for ``turns`` turns, open in Simulate at its last
    turn with the graph drawn; returns the live run."""
    store = Store(studio.db)
    store.questions.seed_samples()  # idempotent; the app does it too on its first page
    live = start_run(store, question_id="sample_transformer_attention", level="intermediate",
                     assistant_id="offline/adaptive", seed=5)
    for _ in range(turns):
        live.step()
    page.goto(f"{studio.url}/simulate?run={live.run_id}&turn={turns}")
    wait_idle(page)
    wait_graph(page, "sim_graph_0", expected_nodes(store.runs.load(live.run_id), turns))
    return live


def test_clicking_a_node_selects_it_and_a_reload_keeps_the_view(studio, page):
    live = open_played_run(studio, page)
    node = live.run.graph.nodes[3]
    _click_node(page, "sim_graph_0", node.id)
    page.get_by_text(f"{node.id} — {node.concept}").first.wait_for()
    page.get_by_text("Turn 2:").first.wait_for()
    page.reload()
    wait_idle(page)
    assert query(page)["turn"] == "2"
    wait_graph(page, "sim_graph_0", expected_nodes(live.store.runs.load(live.run_id), 2))


def _click_node(page, key: str, node_id: str) -> None:
    point = page.evaluate(
        """([key, id]) => { const g = window.__knowsim[key];
              const p = g.network.canvasToDOM(g.network.getPosition(id)); return [p.x, p.y]; }""",
        [key, node_id],
    )
    box = page.locator(".ks-canvas canvas").first.bounding_box()
    page.mouse.click(box["x"] + point[0], box["y"] + point[1])
    wait_idle(page)


def test_markup_in_iu_text_renders_as_text_everywhere(studio, page):
    store = Store(studio.db)
    qid = store.questions.add(text=f"Question {EVIL}", reference_answer=EVIL, domain="security")
    data = store.questions.latest_graph_version("sample_lava_lamps").graph.to_data()
    data["nodes"][0]["concept"] = EVIL
    data["nodes"][0]["description"] = EVIL
    gv = store.questions.add_graph_version(qid, IUGraph.from_data(data), note=EVIL)
    live = start_run(store, question_id=qid, level="novice", assistant_id="offline/comprehensive",
                     graph_version_id=gv)
    live.step()
    page.goto(f"{studio.url}/simulate?run={live.run_id}&turn=1")
    wait_idle(page)
    page.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0")
    first = live.run.graph.nodes[0].id
    page.locator(".ks-canvas canvas").first.hover()
    _click_node(page, "sim_graph_0", first)
    page.get_by_text(EVIL).first.wait_for()  # shown literally in the IU panel
    _assert_no_script_ran(page)
    page.goto(f"{studio.url}/questions")
    wait_idle(page)
    page.get_by_text(f"Question {EVIL}").first.wait_for()
    _assert_no_script_ran(page)
    page.goto(f"{studio.url}/simulate?question={qid}")
    wait_idle(page)
    _assert_no_script_ran(page)
    page.goto(studio.url)  # Home lists the run under its question id
    wait_idle(page)
    _assert_no_script_ran(page)


def _assert_no_script_ran(page) -> None:
    page.wait_for_timeout(300)  # a failing <img> fires onerror almost at once
    assert page.evaluate("window.__pwned") is None


def test_play_advances_on_its_own_and_pause_stops_it(studio, page):
    """Play advances turn by turn with no click; Pause stops it. Waits on the page's state (the
    turn in the address, the Play/Pause label), never on a fixed wall time: it timed out at 20 s
    on a busy machine and passed alone. Timeouts here only stop a hang. How long "stopped" is
    watched for comes from the page's own pace: three of the ticks measured while it played (at
    least 2.5 s, two ticks at the default speed on an idle machine). Planted fault: a Pause that
    leaves the ticking fragment running fails the last turn check."""
    import time

    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_herd_immunity", level="novice", assistant_id="offline/simple",
                     seed=2, max_turns=6)
    store.runs.finish(live.run_id, status="interrupted", error="handed over to the app")  # the app resumes it
    page.goto(f"{studio.url}/simulate?run={live.run_id}&turn=0")
    wait_idle(page)
    play = page.locator(".st-key-sim_play button")  # by key: a role-name match on "Play" also finds "Export replay"
    play.filter(has_text="Play").first.click()
    turn_at_least = "n => Number(new URLSearchParams(location.search).get('turn')) >= n"
    page.wait_for_function(turn_at_least, arg=1, timeout=180_000)
    first_tick = time.monotonic()
    page.wait_for_function(turn_at_least, arg=2, timeout=180_000)
    tick = time.monotonic() - first_tick
    # Play/Pause lives outside the ticking fragment, so one click is enough while it plays
    play.filter(has_text="Pause").first.click()
    play.filter(has_text="Play").first.wait_for(timeout=180_000)
    wait_idle(page)
    stopped = int(query(page)["turn"])
    page.wait_for_timeout(max(2500, 3 * tick * 1000))  # three ticks at the pace the page just showed
    assert int(query(page)["turn"]) == stopped
    run = store.runs.load(live.run_id)
    assert len(run.turns) >= stopped  # every played turn was stored
    wait_graph(page, "sim_graph_0", expected_nodes(run, stopped))
