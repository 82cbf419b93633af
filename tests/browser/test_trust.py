"""Nothing on screen stale or selected without being chosen, at 1400×900 in Debian's chromium.

Issue 24's three major findings, each reproduced as a researcher met it: the Compare panel after
a fork and 15 steps, the selection after deleting a run, and Play at every speed.
"""

from __future__ import annotations

import time

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store

from tests.browser.conftest import ARTIFACTS, wait_idle
from tests.browser.test_app_part1_browser import expected_nodes, wait_graph
from tests.browser.test_simulate_layout import VIEWPORT, handed_over, query

pytestmark = pytest.mark.browser


@pytest.fixture()
def screen(browser):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.console_errors = []  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))  # type: ignore[attr-defined]
    yield pg
    context.close()


def url_turn(page) -> int:
    return int(query(page).get("turn", "0"))


def choose_speed(page, name: str) -> None:
    page.locator(".st-key-sim_speed").click()
    page.get_by_role("option", name=name).click()
    wait_idle(page)


# (speed label, seconds per turn, tries): every speed reaches the last turn every time
SPEED_TRIES = [("fast (0.5 s)", 0.5, 10), ("normal (1 s)", 1.0, 3), ("slow (2 s)", 2.0, 2)]
PLAY_TURNS = 5


@pytest.mark.parametrize("speed,seconds,tries", SPEED_TRIES, ids=[s[0].split()[0] for s in SPEED_TRIES])
def test_play_reaches_the_last_turn_at_every_speed(studio, screen, speed, seconds, tries):
    store = Store(studio.db)
    budget = PLAY_TURNS * seconds * 2 + 8  # twice the nominal pace, plus the first paint and the stop
    for attempt in range(tries):
        rid = handed_over(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive",
                          seed=100 + attempt, max_turns=PLAY_TURNS)
        screen.goto(f"{studio.url}/simulate?run={rid}&turn=0")
        wait_idle(screen)
        screen.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0")
        choose_speed(screen, speed)
        screen.locator(".st-key-sim_play button").first.click()
        started = time.monotonic()
        try:
            screen.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{PLAY_TURNS}'",
                                     timeout=budget * 1000)
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            screen.screenshot(path=str(ARTIFACTS / f"play-stalled-{seconds}.png"))
            run = store.load_run(rid)
            pytest.fail(f"try {attempt + 1} at {speed}: stalled at turn {url_turn(screen)} "
                        f"({len(run.turns)} stored, {run.stop_reason}) after {time.monotonic() - started:.1f} s")
        # it stops by itself at the end: the button offers Play again and the run is finished
        screen.locator(".st-key-sim_play button", has_text="Play").first.wait_for(timeout=10_000)
        run = store.load_run(rid)
        assert len(run.turns) == PLAY_TURNS and run.stop_reason is not None
