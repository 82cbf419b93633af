"""Above the fold at 1400×900 in Debian's chromium (issue 34, item 8).

Old: the turn's 👍/👎 sat inside the messages' scroll box (a long reply hid it), and in typed mode
the compose box pushed the messages and the why panel below 900 px.
"""

from __future__ import annotations

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store

from tests.browser.conftest import wait_idle
from tests.browser.test_simulate_layout import screen, shot  # noqa: F401 — the 1400×900 page fixture

pytestmark = pytest.mark.browser
BOTTOM_JS = """(sel) => { const el = document.querySelector(sel); if (!el) return null;
  const r = el.getBoundingClientRect(); return r.bottom; }"""


def typed_run(studio, turns: int = 2) -> str:
    store = Store(studio.db)
    store.seed_samples()
    live = start_run(store, question_id="sample_herd_immunity", level="novice", assistant_id="human", seed=3,
                     max_turns=6)
    for _ in range(turns):
        live.sim.assistant.put("R0 is the average number of people one infected person infects when nobody is "
                               "immune. " * 6)  # a long reply: the messages box scrolls
        live.step()
    store.finish_run(live.run_id, status="interrupted", error="handed over to the app")
    return live.run_id


def test_typed_mode_keeps_compose_messages_judgments_and_why_above_900px(studio, screen):
    rid = typed_run(studio)
    screen.goto(f"{studio.url}/simulate?run={rid}&turn=2", timeout=90_000)
    wait_idle(screen, timeout=90_000)  # a loaded 2-core machine: the first page of a server is slow
    screen.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    shot(screen, "typed-above-the-fold.png")
    # the judgment buttons are not inside the scrolling messages box
    assert screen.locator(".st-key-sim_messages .st-key-sim_judge_0_judgments").count() == 0
    assert screen.locator(".st-key-sim_judge_0_judgments").count() == 1
    for sel in (".st-key-sim_send button", ".st-key-sim_messages", ".st-key-sim_judge_0_judgments",
                ".st-key-sim_iu_box_0"):
        bottom = screen.evaluate(BOTTOM_JS, sel)
        assert bottom is not None and bottom <= 900, (sel, bottom)
