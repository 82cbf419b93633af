"""One IU's story in Simulate, in a real browser at 1400×900 (issue 47 item 3): a click on a node of
the graph opens the IU's story under the turn and puts ``iu=`` in the address; the address alone
opens it again after a reload; the turn above it still fits the window."""

from __future__ import annotations

import pytest

from tests.browser.conftest import wait_idle
from tests.browser.test_app_part1_browser import _click_node, open_played_run

pytestmark = pytest.mark.browser


@pytest.fixture()
def small_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.requests, pg.console_errors = [], []  # type: ignore[attr-defined]
    pg.on("request", lambda req: pg.requests.append(req.url))  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))  # type: ignore[attr-defined]
    yield pg
    context.close()


def _story_heading(page) -> str:
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="stExpander"] summary')]
                                  .map(s => s.textContent).find(t => t.includes('Story of')) || ''""")


def test_a_node_click_opens_its_story_and_the_address_keeps_it(studio, small_page):
    page = small_page
    live = open_played_run(studio, page, turns=3)
    node = live.run.graph.nodes[2]
    assert "Story of one IU" in _story_heading(page)  # closed until an IU is chosen
    _click_node(page, "sim_graph_0", node.id)
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('iu') === '{node.id}'")
    wait_idle(page)
    assert f"Story of {node.id} over the run" in _story_heading(page)
    # the story's table is drawn inside the panel (a data grid), and the shown turn's words under it
    assert page.locator('[data-testid="stExpander"] [data-testid="stDataFrame"]').count() >= 1
    page.reload()
    wait_idle(page)
    assert f"Story of {node.id} over the run" in _story_heading(page)
    # the panel sits under the turn, which still fits the window above it
    geometry = page.evaluate("""() => {
        const story = [...document.querySelectorAll('[data-testid="stExpander"]')]
            .find(e => e.querySelector('summary').textContent.includes('Story of'));
        const box = document.querySelector('.st-key-sim_messages');
        return {story: story.getBoundingClientRect().top, messages: box.getBoundingClientRect().bottom}; }""")
    assert geometry["messages"] <= 900 and geometry["story"] > geometry["messages"], geometry
