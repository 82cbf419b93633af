"""The documentation's screenshots, taken from the running Studio at fixed, seeded states.

Each test puts the app in the state a page of ``docs/`` describes (runs played by the command line
with fixed seeds, into this server's database), checks that the state is the one described, and
writes the screenshot into ``docs/assets/screenshots/``. A screenshot is rewritten only when it
differs visibly from the one committed (more than :data:`CHANGED_SHARE` of its pixels), so a run of
the suite leaves the tree clean unless a page changed; nothing in ``docs/`` is drawn by hand.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "docs" / "assets" / "screenshots"
VIEWPORT = {"width": 1400, "height": 900}
CHANGED_SHARE = 0.005  # run ids and times differ between runs; a page that changed differs far more
DEMO = ("sample_follicular_lymphoma", "offline/comprehensive")  # the Home demo's question and tutor

# The share of pixels (0–1) that differ between two PNGs of one size, or 1.0 when the sizes differ:
# decoded and compared in the browser, so the test needs no image library.
_DIFF_JS = """async ([a, b]) => {
  const load = src => new Promise((ok, bad) => { const i = new Image(); i.onload = () => ok(i); i.onerror = bad; i.src = src; });
  const [x, y] = await Promise.all([load(a), load(b)]);
  if (x.width !== y.width || x.height !== y.height) return 1.0;
  const px = img => { const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
                      const g = c.getContext('2d'); g.drawImage(img, 0, 0); return g.getImageData(0, 0, c.width, c.height).data; };
  const p = px(x), q = px(y); let n = 0;
  for (let i = 0; i < p.length; i += 4)
    if (Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2]) > 24) n++;
  return n / (p.length / 4); }"""


def cli(studio, *argv: str) -> str:
    """``python -m knowsim_core`` on this server's database (the public way to make a run)."""
    done = subprocess.run([sys.executable, "-m", "knowsim_core", *argv, "--db", str(studio.db)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout


def newest(studio, *filters: str) -> dict:
    return json.loads(cli(studio, "runs", "--json", *filters))["runs"][0]


def differs(browser, old: bytes, new: bytes) -> float:
    page = browser.new_page()
    try:
        uri = lambda b: "data:image/png;base64," + base64.b64encode(b).decode()  # noqa: E731
        return page.evaluate(_DIFF_JS, [uri(old), uri(new)])
    finally:
        page.close()


def settled(page) -> None:
    """Nothing left to draw: the script is idle and no widget is still a loading placeholder."""
    wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0")


def without_sidebar(page) -> None:
    """Fold the sidebar away with its own control: it shows this machine's database path and
    provider settings, which are not the page being documented."""
    folded = "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right <= 1"
    if page.evaluate(folded):  # the browser remembers a folded sidebar across reloads
        return
    page.locator('[data-testid="stSidebar"]').hover()
    page.locator('[data-testid="stSidebarCollapseButton"] button').click()
    page.wait_for_function(folded)
    page.wait_for_timeout(400)  # the sidebar's slide and the main area's resize


def save(page, browser, name: str) -> Path:
    """The viewport's screenshot as ``docs/assets/screenshots/NAME``, if it changed visibly."""
    new = page.screenshot()
    path = SHOTS / name
    if path.exists() and differs(browser, path.read_bytes(), new) <= CHANGED_SHARE:
        return path
    SHOTS.mkdir(parents=True, exist_ok=True)
    path.write_bytes(new)
    return path


@pytest.fixture()
def screen(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="module")
def demo_runs(studio):
    """The tutorial's two runs: the demo's question and tutor, a novice and an advanced learner."""
    question, tutor = DEMO
    ids = {}
    for level in ("novice", "advanced"):
        cli(studio, "run", "--question", question, "--level", level, "--assistant", tutor, "--seed", "1", "--tag", "demo")
        ids[level] = newest(studio, "--tag", "demo", "--level", level)["id"]
    return ids


def open_turn(page, studio, url: str, turn: int, graphs: int) -> None:
    page.goto(studio.url + url)
    wait_idle(page)
    without_sidebar(page)
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('turn') === '{turn}'")
    page.wait_for_function(f"() => window.__knowsim && {' && '.join(f'window.__knowsim.sim_graph_{i}' for i in range(graphs))}")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2")
    page.get_by_text(f"Turn {turn}").first.wait_for()
    page.wait_for_timeout(400)  # the colour tween


def test_simulate_demo_pair_at_turn_3(studio, screen, browser, demo_runs):
    """README, Home and the first tutorial: the same answer for a novice and an advanced learner."""
    open_turn(screen, studio, f"/simulate?run={demo_runs['novice']}&pair={demo_runs['advanced']}&turn=3", 3, 2)
    badges = screen.evaluate("() => [window.__knowsim.sim_graph_0.badges, window.__knowsim.sim_graph_1.badges]")
    assert all(badges), "each graph shows the turn's failure modes"
    save(screen, browser, "simulate-demo-turn3.png")


def test_simulate_one_iu_explained(studio, screen, browser, demo_runs):
    """The first tutorial: IU10 of the novice run at turn 2, overload-wasted, with its why."""
    open_turn(screen, studio, f"/simulate?run={demo_runs['novice']}&turn=2", 2, 1)
    screen.wait_for_timeout(600)  # the graph's fit after the sidebar folded
    point = screen.evaluate("""() => { const g = window.__knowsim.sim_graph_0;
        const p = g.network.canvasToDOM(g.network.getPosition('IU10')); return [p.x, p.y]; }""")
    box = screen.locator(".ks-canvas canvas").first.bounding_box()
    screen.mouse.click(box["x"] + point[0], box["y"] + point[1])
    settled(screen)
    screen.get_by_text("IU10 — Metabolic imaging with FDG").first.wait_for()
    screen.get_by_text("overload-wasted").first.wait_for()
    save(screen, browser, "simulate-iu-why.png")


def test_failures_across_the_demo_runs(studio, screen, browser, demo_runs):
    screen.goto(f"{studio.url}/failures?tag=demo")
    settled(screen)
    without_sidebar(screen)
    screen.get_by_text("Shares by knowledge level").first.wait_for()
    screen.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 1")
    settled(screen)
    save(screen, browser, "failures-across-runs.png")


def test_graph_editor_and_a_second_version(studio, screen, browser, tmp_path):
    """The second tutorial: the lava-lamps graph, then its v2 (two edges into IU10 removed) in History."""
    cli(studio, "runs")  # the command line seeds the sample questions into a new database
    screen.goto(f"{studio.url}/graph?question=sample_lava_lamps")
    settled(screen)
    without_sidebar(screen)
    screen.get_by_text("Prerequisite edges").first.wait_for()
    screen.wait_for_timeout(600)  # the picture's layout settles
    save(screen, browser, "graph-editor.png")

    graph = json.loads((ROOT / "assets" / "samples" / "sample_lava_lamps.json").read_text())["graph"]
    graph["edges"] = [e for e in graph["edges"] if (e["from"], e["to"]) not in {("IU5", "IU10"), ("IU7", "IU10")}]
    cache = tmp_path / "lava_lamps_v2.json"
    cache.write_text(json.dumps({"sample_lava_lamps": graph}))
    assert "1 graph version(s)" in cli(studio, "import", str(cache))
    screen.reload()
    settled(screen)
    without_sidebar(screen)
    screen.get_by_role("tab", name="History").click()
    settled(screen)
    screen.get_by_text("IU5 → IU10").first.wait_for()
    screen.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollBy(0, 10000)")
    screen.wait_for_timeout(300)
    save(screen, browser, "graph-history.png")


def test_a_real_conversation_read_in_simulate(studio, screen, browser):
    """The third tutorial: the example conversation's reading at turn 1, with the person's thumb."""
    cli(studio, "import", str(ROOT / "docs" / "examples" / "conversation.jsonl"))
    run = newest(studio, "--origin", "recorded")
    open_turn(screen, studio, f"/simulate?run={run['id']}&turn=1", 1, 1)
    save(screen, browser, "simulate-reading.png")


def test_the_batch_page(studio, screen, browser):
    screen.goto(f"{studio.url}/batch")
    settled(screen)
    without_sidebar(screen)
    screen.get_by_text("estimated cost").first.wait_for()
    settled(screen)
    save(screen, browser, "batch.png")


def test_a_replay_file(studio, screen, browser, demo_runs, tmp_path):
    """The how-to on sharing: the novice and advanced runs as one offline replay file, at turn 3."""
    out = tmp_path / "replay.html"
    cli(studio, "export", demo_runs["novice"], "--format", "html", "--pair", demo_runs["advanced"], "-o", str(out))
    screen.goto(out.as_uri() + "#turn=3")
    screen.wait_for_function("() => location.hash === '#turn=3'")
    screen.wait_for_timeout(300)
    save(screen, browser, "replay.png")
