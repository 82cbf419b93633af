"""Nothing on screen stale or selected without being chosen, at 1400×900 in Debian's chromium.

Issue 24's three major findings, each reproduced as a researcher met it: the Compare panel after
a fork and 15 steps, the selection after deleting a run, and Play at every speed.
"""

from __future__ import annotations

import time

import pytest

from knowsim_core.storage import Store

from tests.browser.conftest import ARTIFACTS, wait_idle
from tests.browser.test_app_part1_browser import expected_nodes
from tests.browser.test_simulate_layout import (  # noqa: F401 — screen: the laptop-sized page fixture
    fork_with_a_typed_reply, handed_over, query, screen,
)

pytestmark = pytest.mark.browser


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
            run = store.runs.load(rid)
            pytest.fail(f"try {attempt + 1} at {speed}: stalled at turn {url_turn(screen)} "
                        f"({len(run.turns)} stored, {run.stop_reason}) after {time.monotonic() - started:.1f} s")
        # it stops by itself at the end: the button offers Play again and the run is finished
        screen.locator(".st-key-sim_play button", has_text="Play").first.wait_for(timeout=10_000)
        run = store.runs.load(rid)
        assert len(run.turns) == PLAY_TURNS and run.stop_reason is not None


def graph_states(page, key: str) -> dict[str, int]:
    return page.evaluate("(key) => Object.fromEntries(window.__knowsim[key].nodes.get().map(n => [n.id, n.state]))", key)


def compare_metrics_text(page) -> str:
    """The text of the Compare panel's metric table (glide's accessible table mirrors its canvas)."""
    panel = page.locator('[data-testid="stExpander"]', has_text="Compare the two runs")
    return panel.locator('[data-testid="stDataFrame"]').first.evaluate(
        "el => [...el.querySelectorAll('table td, table th')].map(c => c.textContent).join(' | ')")


def test_compare_after_a_fork_and_15_steps_equals_the_stored_records(studio, screen):
    from knowsim_core.services.fork import fork_link
    from ui.runs.compare import metric_deltas

    store, live, child_id = fork_with_a_typed_reply(studio, screen, interrupted=True)
    assert fork_link(store.runs.load(child_id)) == (live.run_id, 2)
    for turn in range(3, 16):
        screen.locator(".st-key-sim_step button").first.click()
        screen.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{turn}'", timeout=30_000)
        wait_idle(screen)
    a, b = store.runs.load(live.run_id), store.runs.load(child_id)
    assert len(b.turns) == 15 and len(a.turns) == 15
    # the two graphs of the panel show each run's stored state after turn 15
    screen.get_by_text("B: state after turn 15").first.wait_for(timeout=15_000)
    for side, run in (("A", a), ("B", b)):
        want = {v: s for v, (s, _, _) in expected_nodes(run, 15).items()}
        screen.wait_for_function(
            "([key, want]) => { const g = (window.__knowsim || {})[key]; if (!g) return false;"
            " const got = Object.fromEntries(g.nodes.get().map(n => [n.id, n.state]));"
            " return Object.entries(want).every(([k, v]) => got[k] === v); }",
            arg=[f"sim_cmp_graph_{side}", want], timeout=15_000)
    # and its metric table holds the stored KG of both runs and their difference
    text = compare_metrics_text(screen)
    kg = metric_deltas(a, b)[0]
    ARTIFACTS.mkdir(exist_ok=True)
    screen.screenshot(path=str(ARTIFACTS / "compare-after-fork-15.png"))
    assert all(f"{kg[c]:g}" in text for c in ("A", "B", "B − A")), (kg, text)


def _tick_row(page, row: int) -> None:
    """Tick row ``row`` (0-based) of the Saved runs table: the checkboxes sit in its first column."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 15, box["y"] + 35 + 35 * row + 17)
    wait_idle(page)


def test_after_a_delete_no_unchosen_run_is_selected(studio, screen):
    from tests.part2_support import make_run

    store = Store(studio.db)
    store.questions.seed_samples()
    g = store.questions.latest_graph_version("sample_dice_reroll_game").graph
    for seed in range(1, 10):
        store.runs.save(make_run(g, question_id="sample_dice_reroll_game", level="novice", seed=seed, max_turns=3),
                       batch_tag="delete-check")
    screen.goto(f"{studio.url}/runs?batch=delete-check")
    wait_idle(screen)
    screen.get_by_text("9 runs match").first.wait_for()
    _tick_row(screen, 6)  # row 7, as in the report
    screen.get_by_role("button", name="Delete…").click()
    screen.get_by_role("dialog").get_by_role("button", name="Delete", exact=True).click()
    screen.get_by_text("Deleted run").first.wait_for()
    wait_idle(screen)
    screen.get_by_text("8 runs match").first.wait_for()
    # nothing is selected: no actions for a selection, and one new tick selects exactly one run
    assert screen.get_by_text("selected · export or delete").count() == 0
    _tick_row(screen, 2)
    screen.get_by_role("button", name="Delete 1 selected…").wait_for(timeout=10_000)
    assert screen.get_by_role("button", name="Delete 2 selected…").count() == 0
