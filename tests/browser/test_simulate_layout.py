"""Simulate at 1400×900 in Debian's chromium: what a new user sees without scrolling.

Clicking an IU shows its explanation inside the viewport; no transport label is cut; the gauge
keeps one scale across steps; a typed assistant reply recolours the graph as the stored record
says; a fork opens the pair and its Compare view; no Deploy button. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import math

from urllib.parse import parse_qs, urlparse

import pytest

from knowsim_core.services.fork import fork_link
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store

from tests.browser.conftest import ARTIFACTS, wait_idle
from tests.browser.test_app_part1_browser import _click_node, expected_nodes, open_played_run, wait_graph

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1400, "height": 900}
# every gauge on the page: its axis range as plotly drew it
GAUGE_RANGES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(el => el.data && el.data[0] && el.data[0].type === 'indicator')
  .map(el => el._fullData[0].gauge.axis.range)"""
# the gauge's needle and the load chart's bars as plotly drew them (the charts are updated in place)
CHART_STATE_JS = """() => { const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(el => el._fullData);
  const gauge = plots.find(el => el._fullData[0].type === 'indicator');
  const bars = plots.find(el => el._fullData[0].type === 'bar');
  return {gauge: gauge ? gauge._fullData[0].value : null, bars: bars ? bars._fullData[0].y.length : 0}; }"""
# any element inside a button whose text does not fit (what shows as "B…")
CUT_LABELS_JS = """() => [...document.querySelectorAll('[data-testid="stButton"] button, [data-testid="stPopover"] button')]
  .filter(b => b.offsetParent !== null)
  .flatMap(b => [b, ...b.querySelectorAll('*')])
  .filter(el => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
  .map(el => el.closest('button').innerText.replace(/\\s+/g, ' '))"""


@pytest.fixture()
def screen(browser):
    """A page the size of a laptop screen (the main area scrolls; nothing here may need it)."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.console_errors = []  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))  # type: ignore[attr-defined]
    yield pg
    context.close()


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def handed_over(store: Store, **kw) -> str:
    """A stored run this process will not write (the app resumes it)."""
    store.questions.seed_samples()
    live = start_run(store, **kw)
    store.runs.finish(live.run_id, status="interrupted", error="handed over to the app")
    return live.run_id


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def main_scroll(page) -> int:
    return page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]'); return m ? m.scrollTop : 0; }")


def test_a_click_shows_the_iu_explanation_without_scrolling(studio, screen):
    live = open_played_run(studio, screen)
    node = live.run.graph.nodes[5]
    _click_node(screen, "sim_graph_0", node.id)
    title = screen.get_by_text(f"{node.id} — {node.concept}").first
    title.wait_for()
    reason = screen.get_by_text("Turn 2:").first
    reason.wait_for()
    assert main_scroll(screen) == 0, "nothing scrolled"
    for el in (title, reason):
        box = el.bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= VIEWPORT["height"], box
    # the panel sits beside the graph, not under it
    graph_box = screen.locator(".ks-canvas").first.bounding_box()
    assert title.bounding_box()["x"] > graph_box["x"] + graph_box["width"]
    shot(screen, "simulate-1400x900-selected-iu.png")


def test_transport_labels_fit_and_there_is_no_deploy_button(studio, screen):
    rid = handed_over(Store(studio.db), question_id="sample_herd_immunity", level="novice",
                      assistant_id="offline/simple", seed=2, max_turns=6)
    for width in (1400, 1280):
        screen.set_viewport_size({"width": width, "height": 900})
        screen.goto(f"{studio.url}/simulate?run={rid}&turn=0")
        wait_idle(screen)
        screen.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0")
        for key, name in (("sim_rewind", "Start"), ("sim_back", "Back"), ("sim_step", "Step"), ("sim_play", "Play"),
                          ("sim_close", "Close")):
            button = screen.locator(f".st-key-{key} button").first
            button.wait_for(state="visible")  # the first paint of a page can take a moment
            assert name in button.inner_text(), key
        assert screen.evaluate(CUT_LABELS_JS) == [], f"labels cut at {width} px"
        # the shortcut is named in the tooltip
        screen.locator(".st-key-sim_step button").first.hover()
        screen.get_by_text("(shortcut: →)").first.wait_for(timeout=5_000)
        screen.mouse.move(0, 0)
    assert screen.locator('[data-testid="stAppDeployButton"]').count() == 0
    assert screen.get_by_role("button", name="Deploy").count() == 0
    shot(screen, "simulate-1280x900.png")


def test_the_gauge_keeps_its_scale_over_five_steps(studio, screen):
    store = Store(studio.db)
    rid = handed_over(store, question_id="sample_follicular_lymphoma", level="novice",
                      assistant_id="offline/comprehensive", seed=1, max_turns=8)
    screen.goto(f"{studio.url}/simulate?run={rid}&turn=0")
    wait_idle(screen)
    screen.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length > 0")
    ranges = [screen.evaluate(GAUGE_RANGES_JS)]
    for turn in range(1, 6):
        screen.locator(".st-key-sim_step button").first.click()
        screen.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{turn}'")
        wait_idle(screen)
        ranges.append(screen.evaluate(GAUGE_RANGES_JS))
        # each step's needle and bars are that turn's record (the charts stay mounted: never stale)
        load = store.runs.load(rid).turns[turn - 1].quantities.effective_load
        screen.wait_for_function(f"() => {{ const s = ({CHART_STATE_JS})(); "
                                 f"return s.bars === {turn} && Math.abs(s.gauge - {load}) < 1e-9; }}", timeout=10_000)
    run = store.runs.load(rid)
    loads = [t.quantities.effective_load for t in run.turns[:5]]
    # the scale is max(2τ, the heaviest turn played so far): stepping never rescales the dial, only a
    # newly played turn heavier than 2τ and every earlier one widens it (ui/gauge.gauge_top) — and
    # every needle fits the scale it is drawn on
    expected = [[[0, max(2 * run.tau, math.ceil(max(loads[:k], default=0)), 1)]] for k in range(6)]
    assert ranges == expected, (ranges, expected, loads)
    assert all(r[0][1] >= load for r, load in zip(ranges[1:], loads))
    shot(screen, "simulate-gauge-turn5.png")


def test_a_typed_assistant_reply_recolours_the_graph_as_stored(studio, screen):
    store = Store(studio.db)
    rid = handed_over(store, question_id="sample_lava_lamps", level="novice", assistant_id="human", seed=4)
    first = store.runs.load(rid)
    graph = first.graph
    # one root the learner does not know yet, in the graph's own words: a novice told two roots at once
    # is overloaded (the reader reads several neighbours as mentioned too) and learns nothing that turn
    root = next(n for n in graph.nodes if not graph.index.prereqs.get(n.id)
                and first.initial_state.state_of(graph.index.label_of[n.id]) == 0)
    reply = f"{root.concept}: {root.description}"
    screen.goto(f"{studio.url}/simulate?run={rid}&turn=0")
    wait_idle(screen)
    wait_graph(screen, "sim_graph_0", expected_nodes(store.runs.load(rid), 0))
    screen.get_by_text("The learner says:").first.wait_for()
    screen.get_by_label("Your reply as the assistant").fill(reply)
    screen.get_by_role("button", name="Send").click()  # as a person would: type, then click Send
    screen.wait_for_function("() => new URLSearchParams(location.search).get('turn') === '1'")
    run = store.runs.load(rid)
    assert run.adapter["assistant"] == "human" and run.turns[0].assistant_message == reply
    assert run.turns[0].transitions, "the typed reply taught something"
    wait_graph(screen, "sim_graph_0", expected_nodes(run, 1))
    wait_idle(screen)
    shot(screen, "simulate-typed-turn.png")


def fork_with_a_typed_reply(studio, screen, *, interrupted: bool = False):
    """A 3-turn lava-lamps run (``interrupted``: handed over to the app as an interrupted run),
    forked at turn 2 in Simulate with a typed reply and opened beside its fork; (store, live run,
    fork id)."""
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive", seed=6)
    for _ in range(3):
        live.step()
    if interrupted:
        store.runs.finish(live.run_id, status="interrupted", error="handed over to the app")
    screen.goto(f"{studio.url}/simulate?run={live.run_id}&turn=2")
    wait_idle(screen)
    screen.get_by_text("Fork at turn 2").first.click()
    box = screen.get_by_label("Your reply for this turn")
    box.fill("Start with what you already know: warm wax is less dense than the liquid, so it rises.")
    box.press("Control+Enter")
    wait_idle(screen)
    screen.get_by_role("button", name="Fork and compare").click()
    screen.wait_for_function("() => new URLSearchParams(location.search).get('pair')")
    wait_idle(screen)
    return store, live, query(screen)["pair"]


def test_a_fork_opens_the_pair_and_compare(studio, screen):
    store, live, child_id = fork_with_a_typed_reply(studio, screen)
    child = store.runs.load(child_id)
    assert fork_link(child) == (live.run_id, 2) and len(child.turns) == 2
    screen.get_by_text("Per-IU states").first.wait_for()
    wait_graph(screen, "sim_graph_1", expected_nodes(child, 2))
    shot(screen, "simulate-fork-compare.png")
