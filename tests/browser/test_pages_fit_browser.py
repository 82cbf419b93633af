"""At 1400×900 in Debian's chromium: the Paper check's and Realism's tables inside the page, the
failure-mode heatmap's hover label inside its plot, and Saved runs' page box a box (issue 47).

Geometry, not pixels. Each fails on the layout before issue 47: the Paper check's per-level grid
was ~2,000 px wide in a 938 px column, Realism's summary ran past the right edge, a why of ~290
characters made a one-line hover label wider than the plot, and the Page number box stretched
across the page.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from knowsim_core.evaluation.explain import explain_run
from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store

from tests.browser.conftest import ROOT, wait_idle
from tests.browser.test_simulate_layout import VIEWPORT, screen, shot  # noqa: F401 — the 1400×900 page
from tests.test_app_realism import CONVS

pytestmark = pytest.mark.browser

# every table or grid drawn on the page that is wider than the page's main column, or scrolls sideways
OVERFLOW_JS = """() => { const main = document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect();
  return [...document.querySelectorAll('[data-testid="stTable"], [data-testid="stDataFrame"]')]
    .filter(el => el.offsetParent !== null)
    .map(el => { const r = el.getBoundingClientRect();
                 const t = el.querySelector('table'), sc = el.querySelector('.dvn-scroller') || (t && t.parentElement) || el;
                 return {right: r.right, mainRight: main.right, scroll: sc.scrollWidth, client: sc.clientWidth,
                         text: el.innerText.slice(0, 40)}; })
    .filter(t => t.right > t.mainRight + 1 || t.scroll > t.client + 1); }"""
TABLES_JS = """() => [...document.querySelectorAll('[data-testid="stTable"], [data-testid="stDataFrame"]')]
  .filter(el => el.offsetParent !== null).length"""


def assert_inside(page) -> None:
    """No table or grid wider than the page: polled a few seconds (a grid measures itself once drawn)."""
    try:
        page.wait_for_function(f"() => ({OVERFLOW_JS})().length === 0", timeout=10_000)
    except Exception:
        pass
    assert page.evaluate(OVERFLOW_JS) == []


def cli(studio, *argv: str) -> None:
    subprocess.run([sys.executable, "-m", "knowsim_core", *argv, "--db", str(studio.db)], cwd=ROOT, check=True,
                   capture_output=True)


def test_the_paper_check_tables_stay_inside_the_page(studio, screen):
    cli(studio, "batch", "--questions", "sample_lava_lamps,sample_herd_immunity", "--levels", "all",
        "--assistants", "offline", "--max-turns", "4", "--tag", "pc")
    screen.goto(f"{studio.url}/failures", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    screen.get_by_role("tab", name="Paper check").click()
    wait_idle(screen)
    toggle = screen.locator(".st-key-pc_paper_only input")
    toggle.wait_for(state="attached", timeout=60_000)
    screen.get_by_text("Only the paper's questions").first.click()  # the samples are not the paper's
    screen.wait_for_function("() => !document.querySelector('.st-key-pc_paper_only input').checked", timeout=30_000)
    wait_idle(screen, timeout=90_000)
    screen.get_by_text("Each assistant (beside, not pooled)").first.wait_for(timeout=90_000)
    screen.wait_for_function(f"() => ({TABLES_JS})() >= 2", timeout=30_000)  # tables drawn, not placeholders
    assert_inside(screen)
    # why the proxy DC reads "—", said on the page
    why = "DC (proxy) “—”: the paper's DC (the legacy proxy) is computed from each turn's record"
    screen.get_by_text(why).first.wait_for()
    shot(screen, "paper-check-1400x900.png")


def test_the_realism_tables_stay_inside_the_page(studio, screen, tmp_path):
    path = tmp_path / "convs.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in CONVS) + "\n")
    store = Store(studio.db)
    store.questions.seed_samples()
    import_path(store, path)
    screen.goto(f"{studio.url}/realism", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    screen.locator(".st-key-realism_score button").click()
    wait_idle(screen, timeout=120_000)
    screen.get_by_text("Summary (headline: no hindsight)").first.wait_for()
    screen.wait_for_function(f"() => ({TABLES_JS})() >= 4", timeout=30_000)  # summary, per level, confusion, turns
    assert_inside(screen)
    shot(screen, "realism-1400x900.png")


def test_the_heatmaps_hover_label_stays_inside_its_plot(studio, screen):
    from knowsim_core.services.runner import start_run

    store = Store(studio.db)
    store.questions.seed_samples()
    run = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive",
                    seed=3).run_to_end()
    turn, why = max(((t, w) for t, whys in explain_run(run) for w in whys), key=lambda tw: len(tw[1].why))
    assert len(why.why) > 200  # the case in question: a why far longer than a line
    screen.goto(f"{studio.url}/failures?run={run.run_id}", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    screen.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=30_000)
    screen.wait_for_timeout(500)
    point = screen.evaluate("""([turn, id]) => { const gd = [...document.querySelectorAll('.js-plotly-plot')]
          .find(el => el._fullData && el._fullData[0].type === 'heatmap');
        gd.scrollIntoView({block: 'center'});
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        return [r.left + xa._offset + xa.d2p(turn), r.top + ya._offset + ya.d2p(id)]; }""", [turn, why.id])
    screen.mouse.move(*point)
    label = screen.locator(".js-plotly-plot .hoverlayer .hovertext").first
    label.wait_for(timeout=10_000)
    box = label.bounding_box()
    plot = screen.evaluate("""() => { const gd = [...document.querySelectorAll('.js-plotly-plot')]
          .find(el => el._fullData && el._fullData[0].type === 'heatmap');
        const r = gd.querySelector('.main-svg').getBoundingClientRect(); return {x: r.left, right: r.right}; }""")
    assert plot["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= plot["right"] + 0.5, (box, plot)
    assert why.why.split()[-1] in label.text_content()  # the whole why, its last word too
    shot(screen, "failure-heatmap-hover.png")


def test_saved_runs_page_box_is_a_box(studio, screen):
    Store(studio.db).questions.seed_samples()
    screen.goto(f"{studio.url}/runs", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    box = screen.locator(".st-key-runs_page").first.bounding_box()
    assert box is not None and box["width"] <= 200, box
