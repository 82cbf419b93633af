"""In a real browser: a click on a judged turn on the Agreement page opens that run at that turn in
Simulate, where the person's thumb is shown."""

from __future__ import annotations

import re

import pytest

from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store
from tests.browser.conftest import wait_idle
from tests.test_app_agreement import conversations

pytestmark = pytest.mark.browser
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]")


def test_a_click_on_a_judged_turn_opens_it_in_simulate(page, studio, tmp_path):
    store = Store(studio.db)
    report = import_path(store, conversations(tmp_path))
    judged = {(rid, j.turn): j for rid in report.runs for j in store.judgments.list(rid)}
    page.goto(studio.url + "/agreement")
    wait_idle(page, 90_000)
    # issue 34 item 11: no emoji on the page (chromium without an emoji font drew 👍/👎 as boxes); the
    # thumbs are material icons, drawn by the icon font Streamlit ships
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("judged turns").first.wait_for(timeout=60_000)
    text = main.inner_text()
    assert not EMOJI.findall(text), sorted(set(EMOJI.findall(text)))
    assert "thumb_up" in text and ":material/" not in text  # an icon-font ligature, not a raw shortcode
    chart = page.locator(".js-plotly-plot").nth(2)  # ROC, modes, then the judged turns
    chart.locator(".scatterlayer .point").first.wait_for(timeout=60_000)
    assert chart.locator(".scatterlayer .point").count() == len(judged) == 18
    chart.locator(".scatterlayer .point").first.click(force=True)
    page.wait_for_url(re.compile(r"/simulate\?run=\w+&turn=\d+"), timeout=60_000)
    wait_idle(page, 60_000)
    m = re.search(r"run=(\w+)&turn=(\d+)", page.url)
    run_id, turn = m.group(1), int(m.group(2))
    assert (run_id, turn) in judged  # the turn that was clicked is a judged one
    thumb = "up ·" if judged[(run_id, turn)].liked else "down ·"  # after the icon ligature
    page.get_by_text(f"{thumb} the person in the conversation").first.wait_for(timeout=30_000)
    assert not [u for u in page.requests if not u.startswith(("http://127.0.0.1", "data:", "blob:", "about:"))]
