"""Play works from any turn before the last, however the cursor got there (issue 34, item 1).

Play/Pause sits in a fragment of its own that does not tick; Start, Back, Step and the scrubber
live in the ticking fragment. Before the fix a step there redrew only its own fragment, so Play
kept the state it was drawn with: after Play reached the last turn and Start rewound to turn 0,
Play stayed disabled ("0/15, Play disabled" until a reload); after Step reached the last turn,
Play stayed enabled but did nothing. Run in Debian's chromium at 1400×900.
"""

from __future__ import annotations

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store

from tests.browser.conftest import wait_idle
from tests.browser.test_simulate_layout import screen  # noqa: F401 — the laptop-sized page fixture
from tests.browser.test_trust import choose_speed

pytestmark = pytest.mark.browser
TURNS = 4
PLAY = ".st-key-sim_play button"


def finished_run(studio, seed: int) -> str:
    """A stored run played to its end (``TURNS`` turns)."""
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_herd_immunity", level="novice", assistant_id="offline/adaptive",
                     seed=seed, max_turns=TURNS)
    while not live.done:
        live.step()
    assert len(live.run.turns) == TURNS
    return live.run_id


def wait_turn(page, turn: int, timeout_s: float = 30) -> None:
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{turn}'",
                           timeout=timeout_s * 1000)
    wait_idle(page)


def play_enabled(page) -> bool:
    button = page.locator(PLAY).first
    button.wait_for()
    return button.is_enabled()


def open_at(studio, page, rid: str, turn: int) -> None:
    page.goto(f"{studio.url}/simulate?run={rid}&turn={turn}")
    wait_idle(page)
    page.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0")
    choose_speed(page, "fast (0.5 s)")


def play_to_the_end(page) -> None:
    page.locator(PLAY, has_text="Play").first.click()
    wait_turn(page, TURNS)
    page.locator(PLAY, has_text="Play").first.wait_for(timeout=10_000)  # it stopped by itself


def test_play_after_rewinding_from_the_end(studio, screen):
    """Deep link near the end → Play → last turn → Start: Play is enabled and plays again."""
    open_at(studio, screen, finished_run(studio, seed=41), TURNS - 2)
    play_to_the_end(screen)
    assert not play_enabled(screen), "at the last turn there is nothing to play"
    screen.locator(".st-key-sim_rewind button").first.click()
    wait_turn(screen, 0)
    assert play_enabled(screen), "Play stayed disabled after Start (turn 0)"
    play_to_the_end(screen)
    # Back from the end and Space (Play's shortcut) plays the last turn again
    screen.locator(".st-key-sim_back button").first.click()
    wait_turn(screen, TURNS - 1)
    assert play_enabled(screen), "Play stayed disabled after Back"
    screen.locator("body").press("Space")
    wait_turn(screen, TURNS)


def test_step_to_the_end_disables_play_and_back_enables_it(studio, screen):
    open_at(studio, screen, finished_run(studio, seed=42), TURNS - 2)
    # item 16: the player's graph labels (15 px font × the view's scale) are drawn at 11 px or more
    # (fitted into its 310 px, the 16-IU graph drew them at ~7 px); the lower rows pan instead
    scale = screen.evaluate("() => window.__knowsim.sim_graph_0.network.getScale()")
    assert scale * 15 >= 11 - 0.01, scale * 15
    assert play_enabled(screen)
    for turn in (TURNS - 1, TURNS):
        screen.locator(".st-key-sim_step button").first.click()
        wait_turn(screen, turn)
    assert not play_enabled(screen), "Play stayed enabled (and inert) at the last turn reached by Step"
    screen.locator(".st-key-sim_back button").first.click()
    wait_turn(screen, TURNS - 1)
    assert play_enabled(screen)
    play_to_the_end(screen)
