"""In a real browser: a Home link to another turn of the run already open in Simulate opens that
turn (it showed the open turn and rewrote the link to it). Only the browser shows that Streamlit
drops the Simulate widgets on leaving the page, which is how the page knows it was just entered."""

from __future__ import annotations

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.browser.conftest import wait_idle

pytestmark = pytest.mark.browser

URL_TURN = "() => new URLSearchParams(location.search).get('turn')"


def test_a_home_link_to_another_turn_of_the_open_run_opens_that_turn(studio, page):
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple",
                     seed=5, max_turns=4)
    live.run_to_end()
    last = len(store.runs.load(live.run_id).turns)
    assert last >= 2
    page.goto(f"{studio.url}/simulate?run={live.run_id}&turn=1")
    wait_idle(page)
    page.get_by_text("Turn 1 of").first.wait_for()
    page.locator('[data-testid="stSidebar"]').get_by_text("Home", exact=True).click()
    wait_idle(page)
    link = page.locator(f".st-key-home_recent [data-testid='stPageLink-NavLink'][href*='{live.run_id}']").first
    link.click()  # Home links each recent run at its last turn
    wait_idle(page)
    page.get_by_text(f"Turn {last} of").first.wait_for(timeout=15_000)
    page.wait_for_timeout(500)  # the address is rewritten after the page is drawn
    assert page.evaluate(URL_TURN) == str(last)
    # the page's own moves still work after it: Back goes to the turn before
    page.locator(".st-key-sim_back button").first.click()
    page.wait_for_function(f"() => ({URL_TURN})() === '{last - 1}'", timeout=15_000)
