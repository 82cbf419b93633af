"""The browser at 1400×900 (issue 47, items 1 and 2): a batch what-if's before and after open side by
side from a link, and Compare answers "why do these two runs differ" above the fold of its panel."""

from __future__ import annotations

import pytest

from knowsim_core.engine.whatif import parse_edit
from knowsim_core.services import whatif
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.browser.conftest import ARTIFACTS, wait_idle

QID = "sample_lava_lamps"


@pytest.fixture(scope="module")
def seeded(studio):
    store = Store(studio.db)
    store.questions.seed_samples()
    for level, seed in (("novice", 1), ("advanced", 1)):
        live = start_run(store, question_id=QID, level=level, assistant_id="offline/adaptive", seed=seed, max_turns=6)
        live.run_to_end()
        store.runs.add_tags(live.run_id, ["src"])
    report = whatif.save_batch(store, "src", [parse_edit("turn=2,iu=IU2,quality=well_explained")], tag="IU2 taught")
    return store, report


def test_before_and_after_open_side_by_side_at_1400_by_900(browser, studio, seeded):
    _, report = seeded
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{studio.url}/failures?before=src&after=IU2%20taught")
    wait_idle(page)
    assert page.get_by_role("tab", name="Before / after").get_attribute("aria-selected") == "true"
    panel = page.locator('[role="tabpanel"]:visible')
    panel.get_by_text("After: every run of src").wait_for(timeout=30_000)
    charts = panel.locator(".js-plotly-plot")
    charts.nth(1).wait_for(timeout=30_000)
    left, right = charts.nth(0).bounding_box(), charts.nth(1).bounding_box()
    assert left["x"] + left["width"] <= right["x"] + 1  # beside each other, not stacked
    assert abs(left["y"] - right["y"]) < 40
    assert right["x"] + right["width"] <= 1400
    assert panel.get_by_text("PREREQ-BLOCKED").count() >= 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "before-after.png"))
    context.close()


def test_compare_of_a_run_and_its_what_if_says_why_at_1400_by_900(browser, studio, seeded):
    store, report = seeded
    src, alt = next(iter(report.stored.items()))
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{studio.url}/simulate?run={src}&pair={alt}&turn=6")
    wait_idle(page)
    page.get_by_text("Compare the two runs").click()
    wait_idle(page)
    why = page.get_by_text("First divergence: turn 2, teaching quality")
    why.wait_for(timeout=30_000)
    why.scroll_into_view_if_needed()
    box = why.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 900 and box["x"] + box["width"] <= 1400
    page.screenshot(path=str(ARTIFACTS / "compare-why.png"))
    context.close()
