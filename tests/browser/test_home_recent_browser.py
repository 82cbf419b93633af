"""Home's recent runs in a real browser: a long line wraps instead of being cut (issue 24 item 15).

Streamlit draws a page link's label on one line and cuts it with an ellipsis; only the browser's
layout shows whether the text fits, so the test measures the rendered labels.
"""

from __future__ import annotations

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.browser.conftest import wait_idle

pytestmark = pytest.mark.browser

CUT = """() => [...document.querySelectorAll(".st-key-home_recent [data-testid='stPageLink-NavLink']")].map(link => ({
    text: link.innerText,
    cut: [link, ...link.querySelectorAll('*')].some(el => el.scrollWidth > el.clientWidth + 1),
    overflows: link.getBoundingClientRect().right > link.closest('.st-key-home_recent').getBoundingClientRect().right + 1,
}))"""


def test_recent_run_lines_wrap_and_keep_their_status_and_kg(studio, browser):
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_lava_lamps", level="intermediate",
                     assistant_id="offline/comprehensive", seed=3)
    live.run_to_end()
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        page = context.new_page()
        page.goto(studio.url)
        wait_idle(page)
        page.locator(".st-key-home_recent [data-testid='stPageLink-NavLink']").first.wait_for()
        lines = page.evaluate(CUT)
        for _ in range(20):  # the page's style may land a moment after the first link
            if not [line for line in lines if line["cut"] or line["overflows"]]:
                break
            page.wait_for_timeout(250)
            lines = page.evaluate(CUT)
        mine = [line for line in lines if "offline/comprehensive" in line["text"] and "intermediate" in line["text"]]
        assert mine and " KG " in mine[0]["text"] and "finished" in mine[0]["text"], lines
        assert not [line for line in lines if line["cut"] or line["overflows"]], lines
    finally:
        context.close()
