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


def test_a_click_on_a_judged_turn_opens_it_in_simulate(page, studio, tmp_path):
    store = Store(studio.db)
    report = import_path(store, conversations(tmp_path))
    judged = {(rid, j.turn): j for rid in report.runs for j in store.list_judgments(rid)}
    page.goto(studio.url + "/agreement")
    wait_idle(page, 90_000)
    chart = page.locator(".js-plotly-plot").nth(2)  # ROC, modes, then the judged turns
    chart.locator(".scatterlayer .point").first.wait_for(timeout=60_000)
    assert chart.locator(".scatterlayer .point").count() == len(judged) == 18
    chart.locator(".scatterlayer .point").first.click(force=True)
    page.wait_for_url(re.compile(r"/simulate\?run=\w+&turn=\d+"), timeout=60_000)
    wait_idle(page, 60_000)
    m = re.search(r"run=(\w+)&turn=(\d+)", page.url)
    run_id, turn = m.group(1), int(m.group(2))
    assert (run_id, turn) in judged  # the turn that was clicked is a judged one
    thumb = "👍 up ·" if judged[(run_id, turn)].liked else "👎 down ·"
    page.get_by_text(f"{thumb} the person in the conversation").first.wait_for(timeout=30_000)
    assert not [u for u in page.requests if not u.startswith(("http://127.0.0.1", "data:", "blob:", "about:"))]
