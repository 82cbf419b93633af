"""At 1400×900 in Debian's chromium: the whole IU graph in its canvas on open, the whole assistant
reply in view beside a long learner message, and graph labels broken only where the Studio broke
them (issue 47, "what got in the way").

Geometry, not pixels: every node's bounding box (as vis-network drew it) inside the canvas; the
reply's box inside both the window and the visible part of its scrolling message box; the number
of lines vis-network drew for each label equal to the lines the Studio sent. Each fails on the
layout before issue 47: IU14 of the 14-IU lava-lamp graph lay below its canvas (the view kept
labels at 11 px and panned), a long learner message pushed the reply out of its 210 px box, and
vis-network cut "Expectation-maximizing" into "Expectation-maximizin" / "g".
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from knowsim_core.engine.graph import IUGraph
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

from tests.browser.conftest import ROOT, wait_idle
from tests.browser.test_simulate_layout import VIEWPORT, main_scroll, screen, shot  # noqa: F401 — the 1400×900 page

pytestmark = pytest.mark.browser

# every node's box (canvas → screen pixels, relative to the canvas element) that is not wholly inside it
BOXES_OUTSIDE_JS = """(key) => { const net = window.__knowsim[key].network;
  const w = net.body.container.clientWidth, h = net.body.container.clientHeight;
  return Object.keys(net.getPositions()).map(id => { const b = net.getBoundingBox(id);
      const a = net.canvasToDOM({x: b.left, y: b.top}), c = net.canvasToDOM({x: b.right, y: b.bottom});
      return {id, left: a.x, top: a.y, right: c.x, bottom: c.y}; })
    .filter(r => r.left < -0.5 || r.top < -0.5 || r.right > w + 0.5 || r.bottom > h + 0.5); }"""
# the number of lines vis-network drew for each node's label, beside the label it was given
LABEL_LINES_JS = """(key) => { const g = window.__knowsim[key];
  return g.nodes.get().map(n => ({id: n.id, sent: n.label.split('\\n').length,
                                  drawn: g.network.body.nodes[n.id].labelModule.lineCount})); }"""
RECT_JS = """(sel) => { const e = document.querySelector(sel); if (!e) return null; const r = e.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, scroll: e.scrollHeight, client: e.clientHeight,
          text: e.innerText}; }"""



def played(studio, question: str, level: str, assistant: str, seed: int, turns: int):
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id=question, level=level, assistant_id=assistant, seed=seed)
    for _ in range(turns):
        live.step()
    return store, live


def open_at(studio, page, run_id: str, turn: int) -> None:
    page.goto(f"{studio.url}/simulate?run={run_id}&turn={turn}", timeout=90_000)
    wait_idle(page, timeout=90_000)
    page.wait_for_function("() => window.__knowsim && window.__knowsim.sim_graph_0", timeout=90_000)
    wait_idle(page, timeout=90_000)
    page.wait_for_timeout(500)  # the fit runs after the first drawing


@pytest.mark.parametrize("question", ["sample_lava_lamps", "sample_transformer_attention"])
def test_the_whole_graph_fits_its_canvas_on_open_and_after_a_resize(studio, screen, question):
    store, live = played(studio, question, "novice", "offline/adaptive", 3, 2)
    graph = store.runs.load(live.run_id).graph
    assert len(graph.nodes) >= 14 and max(graph.index.depth.values()) >= 5  # a graph taller than its canvas
    open_at(studio, screen, live.run_id, 2)
    assert main_scroll(screen) == 0
    assert screen.evaluate(BOXES_OUTSIDE_JS, "sim_graph_0") == [], "every IU wholly inside the canvas"
    canvas = screen.locator(".ks-canvas").first.bounding_box()
    assert canvas["y"] + canvas["height"] <= VIEWPORT["height"]
    # what the view offers is said under it: zoom (and, with whole labels, dragging)
    info = screen.locator(".ks-info").first.inner_text()
    assert "scroll to zoom" in info and "hover" in info.lower(), info
    shot(screen, f"fit-{question}-1400x900.png")
    screen.set_viewport_size({"width": 1180, "height": 900})  # the column narrows: fitted again
    screen.wait_for_function(f"(key) => ({BOXES_OUTSIDE_JS})(key).length === 0", arg="sim_graph_0", timeout=10_000)
    screen.set_viewport_size(VIEWPORT)


def test_the_whole_reply_is_in_view_beside_a_long_learner_message(studio, screen):
    store, live = played(studio, "sample_follicular_lymphoma", "novice", "offline/adaptive", 1, 2)
    rec = store.runs.load(live.run_id).turns[1]
    # the case in question: a learner message of several lines before a reply of a dozen
    assert len(rec.user_message) > 600 and len(rec.assistant_message) > 500, (len(rec.user_message),
                                                                             len(rec.assistant_message))
    open_at(studio, screen, live.run_id, 2)
    assert main_scroll(screen) == 0
    box = screen.evaluate(RECT_JS, ".st-key-sim_messages")
    reply = screen.evaluate("""() => {
        const all = document.querySelectorAll(".st-key-sim_messages [data-testid='stMarkdownContainer']");
        const e = all[all.length - 1]; const r = e.getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, text: e.innerText}; }""")
    assert rec.assistant_message.split()[-1] in reply["text"] and rec.assistant_message.split()[0] in reply["text"]
    # the whole reply inside the window and inside the part of its box that is not scrolled away
    assert 0 <= reply["top"] and reply["bottom"] <= VIEWPORT["height"], reply
    assert box["top"] <= reply["top"] and reply["bottom"] <= box["bottom"], (box, reply)
    assert screen.evaluate("() => document.querySelector('.st-key-sim_messages').scrollTop") == 0
    # the learner's message keeps a few lines of its own and scrolls inside them
    learner = screen.evaluate(RECT_JS, ".st-key-sim_learner")
    assert learner is not None and learner["scroll"] > learner["client"] and learner["bottom"] <= reply["top"], learner
    shot(screen, "whole-reply-1400x900.png")


def test_labels_are_drawn_in_the_lines_they_were_sent(studio, screen):
    """A concept with a long hyphenated word: vis-network drew it in more lines than the Studio
    sent, cutting the word where its fixed width ran out."""
    store = Store(studio.db)
    qid = store.questions.add(text="How are mixture models fitted?", question_id="q_em_labels")
    graph = IUGraph.from_data({
        "nodes": [{"id": "IU1", "concept": "Expectation-maximizing algorithm", "abstraction_level": 0.5,
                   "description": "d"},
                  {"id": "IU2", "concept": "Overbuilding/replacement of capacity", "abstraction_level": 0.5,
                   "description": "d"},
                  {"id": "IU3", "concept": "Internationalization everywhere", "abstraction_level": 0.5,
                   "description": "d"}],
        "edges": [{"from": "IU1", "to": "IU2"}, {"from": "IU1", "to": "IU3"}]})
    store.questions.add_graph_version(qid, graph)
    screen.goto(f"{studio.url}/graph?question={qid}", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    screen.wait_for_function("() => Object.keys(window.__knowsim || {}).some(k => k.startsWith('graph_view_'))",
                             timeout=90_000)
    key = screen.evaluate("() => Object.keys(window.__knowsim).find(k => k.startsWith('graph_view_'))")
    lines = screen.evaluate(LABEL_LINES_JS, key)
    assert len(lines) == 3 and all(n["drawn"] == n["sent"] for n in lines), lines
    labels = {n["id"]: n["label"] for n in screen.evaluate(
        "(key) => window.__knowsim[key].nodes.get().map(n => ({id: n.id, label: n.label}))", key)}
    assert "Expectation-\nmaximizing" in labels["IU1"] and "Internationalization" in labels["IU3"].split("\n"), labels


def test_with_no_run_open_the_title_stands_above_the_set_up_form(studio, screen):
    """Beside the open form, the title floated by its middle; above it, it reads as the page's title."""
    Store(studio.db).questions.seed_samples()
    screen.goto(f"{studio.url}/simulate", timeout=90_000)
    wait_idle(screen, timeout=90_000)
    screen.locator(".st-key-setup_start button").wait_for()
    title = screen.locator(".st-key-sim_title h1").first.bounding_box()
    form = screen.locator("[data-testid='stMain'] [data-testid='stExpander']").first.bounding_box()
    assert title["y"] + title["height"] <= form["y"] + 1, (title, form)
    assert abs(title["x"] - form["x"]) <= 2, (title, form)  # one left edge: the title over the form


def test_a_reading_keeps_its_turn_on_screen_and_a_short_message_whole(studio, screen):
    """A reading of a human conversation carries a caption of three lines above the turn: the turn
    gives way (it ran ~80 px below the window), and a one-line learner message is drawn whole (a
    negative margin of Streamlit's once left it 5 px tall in its box)."""
    example = ROOT / "docs" / "examples" / "conversation.jsonl"
    subprocess.run([sys.executable, "-m", "knowsim_core", "import", str(example), "--db", str(studio.db)], cwd=ROOT,
                   check=True, capture_output=True)
    rid = Store(studio.db).search.list(RunFilter(origin="recorded"), limit=1)[0].id
    open_at(studio, screen, rid, 1)
    turn, learner = (screen.evaluate(RECT_JS, s) for s in (".st-key-sim_turn", ".st-key-sim_learner"))
    assert turn["bottom"] <= VIEWPORT["height"], turn
    assert learner["client"] >= learner["scroll"] and "What is 3/4 + 1/6?" in learner["text"], learner
    assert screen.evaluate(BOXES_OUTSIDE_JS, "sim_graph_0") == []
    # four IUs in one row: whole labels, not ids only
    assert screen.evaluate("() => window.__knowsim.sim_graph_0.small") is False
