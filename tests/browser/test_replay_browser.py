"""The exported replay opened from disk (``file://``) in headless chromium with the network blocked.

Every request is routed: a ``file://`` request (the page itself) goes on, anything else is aborted
and recorded, and the test fails on any. Checks: ``#turn=1`` shows turn 1, → moves to ``#turn=2``
(and the button to ``#turn=3``), a shared ``#turn=N`` link opens that turn, the why text on the page
equals ``explain --json``'s; a run with hostile text runs no script, loads nothing and shows the
text verbatim; a pair export shows both runs.
"""

from __future__ import annotations

import json

import pytest

from knowsim_core.cli import main
from tests.test_replay_export import HOSTILE, hostile_run, stored

pytestmark = pytest.mark.browser


@pytest.fixture()
def offline_page(browser):
    """A page whose every non-file request is aborted and recorded (``page.blocked``)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = context.new_page()
    pg.blocked, pg.errors = [], []  # type: ignore[attr-defined]

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            pg.blocked.append(r.request.url)  # type: ignore[attr-defined]
            r.abort()

    context.route("**/*", route)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type == "error" and pg.errors.append(m.text))  # type: ignore[attr-defined]
    yield pg
    assert pg.blocked == [], f"the replay tried to fetch {pg.blocked}"  # type: ignore[attr-defined]
    context.close()


def export_file(store, tmp_path, *ids: str, name="replay.html"):
    out = tmp_path / name
    extra = ["--pair", ids[1]] if len(ids) > 1 else []
    assert main(["export", ids[0], *extra, "--format", "html", "-o", str(out), "--db", str(store.path)]) == 0
    return out


def explain_json(store, run_id: str, capsys) -> dict[int, list[dict]]:
    capsys.readouterr()
    assert main(["explain", run_id, "--db", str(store.path), "--json"]) == 0
    return {t["turn"]: t["ius"] for t in json.loads(capsys.readouterr().out)["turns"]}


def shown(page, column: int = 0) -> dict:
    """What one run's column shows: its turn, label, messages and {IU: (mode, why)}."""
    return page.evaluate(
        """(i) => { const c = document.querySelectorAll('section.run')[i];
               const rows = [...c.querySelectorAll('tr.iu')].map(tr => [tr.dataset.iu,
                   tr.querySelector('td.mode').textContent, tr.querySelector('td.why').textContent]);
               return {turn: c.dataset.turn, label: document.getElementById('turn-label').textContent,
                       user: c.querySelector('[data-role=user]').textContent,
                       assistant: c.querySelector('[data-role=assistant]').textContent,
                       head: c.querySelector('h2').textContent, rows}; }""",
        column,
    )


def expected_rows(ius: list[dict]) -> list[list[str]]:
    return [[iu["id"], iu["mode"] or "–", iu["why"]] for iu in ius]


def test_turn_hash_keys_buttons_and_the_why_text(seeded_store, tmp_path, offline_page, capsys):
    rid = stored(seeded_store, turns=4)
    run = seeded_store.runs.load(rid)
    whys = explain_json(seeded_store, rid, capsys)
    url = export_file(seeded_store, tmp_path, rid).as_uri()
    page = offline_page
    page.goto(url + "#turn=1")
    s = shown(page)
    assert s["turn"] == "1" and s["label"] == "Turn 1 of 4"
    assert (s["user"], s["assistant"]) == (run.turns[0].user_message, run.turns[0].assistant_message)
    assert s["rows"] == expected_rows(whys[1])
    page.keyboard.press("ArrowRight")
    page.wait_for_function("location.hash === '#turn=2'")
    s = shown(page)
    assert s["turn"] == "2" and s["rows"] == expected_rows(whys[2])
    assert s["assistant"] == run.turns[1].assistant_message
    page.click("#next")
    page.wait_for_function("location.hash === '#turn=3'")
    assert shown(page)["rows"] == expected_rows(whys[3])
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("location.hash === '#turn=2'")
    # the graph: every IU drawn, coloured by its state after the shown turn
    fills = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('svg g[data-iu]')]
                               .map(g => [g.dataset.iu, g.querySelector('rect').getAttribute('fill')]))""")
    from knowsim_core.vocab import STATE_COLOURS
    assert fills == {n.id: STATE_COLOURS[n.post] for n in run.turns[1].nodes}
    # each explained IU's badge shows its mode's letter as the vocabulary spells it (the page once took
    # the first character of whatever name it was sent; the run command printed B/W/A for P/O/U)
    from knowsim_core.vocab import FAILURE_ORDER, MODE_LETTERS
    badges = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('section.run svg g[data-iu]')]
                               .map(g => { const t = g.querySelector('text[font-weight="700"]');
                                           return [g.dataset.iu, t.getAttribute('visibility') === 'visible'
                                                                 ? t.textContent : ''] }))""")
    letter = {m.title: MODE_LETTERS[m] for m in FAILURE_ORDER}
    assert badges == {iu["id"]: letter[iu["mode"]] if iu["mode"] else "" for iu in whys[2]}
    assert any(badges.values())
    # a shared link opens its turn directly; turn 0 is the start; out of range is clamped
    page.goto(url + "#turn=4")
    assert shown(page)["rows"] == expected_rows(whys[4]) and page.is_disabled("#next")
    page.goto(url + "#turn=0")
    s = shown(page)
    assert s["turn"] == "0" and s["assistant"] == "" and page.is_disabled("#prev")
    page.goto(url + "#turn=99")
    assert shown(page)["turn"] == "4"
    assert page.evaluate("() => location.hash") == "#turn=4"  # the address names the turn shown, not 99
    page.goto("about:blank")
    page.goto(url + "#turn=77")  # a fresh load of an out-of-range link too
    assert shown(page)["turn"] == "4"
    assert page.evaluate("() => location.hash") == "#turn=4"
    assert page.errors == []


def test_hostile_text_exports_inert(seeded_store, tmp_path, offline_page):
    rid = hostile_run(seeded_store, stored(seeded_store, turns=2))
    page = offline_page
    page.goto(export_file(seeded_store, tmp_path, rid).as_uri() + "#turn=1")
    page.wait_for_timeout(300)  # an injected onerror or script would have run by now
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.evaluate("document.scripts.length") == 2  # the data and our code, nothing injected
    s = shown(page)
    assert s["assistant"] == HOSTILE and s["user"] == HOSTILE + " turn 1"  # shown verbatim, as text
    assert page.evaluate("document.querySelector('p.question').textContent") == HOSTILE
    page.keyboard.press("ArrowRight")
    page.wait_for_function("location.hash === '#turn=2'")
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


def test_pair_shows_both_runs_side_by_side(seeded_store, tmp_path, offline_page, capsys):
    a, b = stored(seeded_store, turns=3), stored(seeded_store, level="advanced", turns=2)
    whys_a, whys_b = explain_json(seeded_store, a, capsys), explain_json(seeded_store, b, capsys)
    page = offline_page
    page.goto(export_file(seeded_store, tmp_path, a, b).as_uri() + "#turn=2")
    left, right = shown(page, 0), shown(page, 1)
    assert left["head"].startswith(f"Run {a}") and right["head"].startswith(f"Run {b}")
    assert left["rows"] == expected_rows(whys_a[2]) and right["rows"] == expected_rows(whys_b[2])
    boxes = page.evaluate("[...document.querySelectorAll('section.run')].map(c => c.getBoundingClientRect().x)")
    assert len(boxes) == 2 and boxes[1] > boxes[0]  # side by side at a desktop width
    page.keyboard.press("ArrowRight")  # the shorter run keeps its last turn and says so
    page.wait_for_function("location.hash === '#turn=3'")
    right = shown(page, 1)
    assert right["turn"] == "2" and right["rows"] == expected_rows(whys_b[2])
    assert "ended at turn 2" in page.evaluate("document.querySelectorAll('[data-role=status]')[1].textContent")
    assert page.errors == []


# ---------------------------------------------------------------------- the Studio's buttons, downloaded for real
def _download(page, label: str, tmp_path):
    button = page.get_by_role("button", name=label, exact=True)
    with page.expect_download() as info:
        button.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


def test_simulates_export_replay_button_downloads_a_replay_that_opens_offline(studio, page, offline_page, tmp_path):
    from tests.browser.test_app_part1_browser import open_played_run

    live = open_played_run(studio, page)
    path = _download(page, "Export replay", tmp_path)
    assert path.name == f"knowsim_replay_{live.run_id}.html"
    offline_page.goto(path.as_uri() + "#turn=2")
    s = shown(offline_page)
    assert s["head"].startswith(f"Run {live.run_id}") and s["label"] == "Turn 2 of 2"
    assert s["assistant"] == live.store.runs.load(live.run_id).turns[1].assistant_message


def test_failure_modes_figure_and_table_downloads(studio, page, tmp_path):
    import xml.etree.ElementTree as ET

    from knowsim_core.services.runner import start_run
    from knowsim_core.storage import Store
    from tests.browser.conftest import wait_idle

    store = Store(studio.db)
    store.questions.seed_samples()
    for level in ("novice", "advanced"):
        start_run(store, question_id="sample_lava_lamps", level=level, assistant_id="offline/simple", seed=4,
                  max_turns=3).run_to_end()
    page.goto(f"{studio.url}/failures")
    wait_idle(page)
    page.get_by_role("tab", name="Across runs").click()
    wait_idle(page)
    svg = _download(page, "Figure (SVG)", tmp_path)
    texts = ["".join(t.itertext()) for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert {"REDUNDANT", "PREREQ-BLOCKED", "EFFECTIVE", "OVERLOAD-WASTED", "UNDER-ABSORBED"} <= set(texts)
    assert _download(page, "Figure (PDF)", tmp_path).read_bytes().startswith(b"%PDF-")
    tex = _download(page, "LaTeX table", tmp_path).read_text()
    assert tex.count(r"\begin{") == tex.count(r"\end{") == 2 and r"\toprule" in tex


def test_a_click_on_an_iu_opens_its_story_and_the_address_keeps_it(seeded_store, tmp_path, offline_page, capsys):
    """Issue 47 item 3: the replay's per-IU timeline. A click on a node (or the IU box) shows the IU's
    story — a row per turn with explain's mode and why — and the address names it (#turn=N&iu=ID)."""
    rid = stored(seeded_store, turns=4)
    whys = explain_json(seeded_store, rid, capsys)
    page = offline_page
    url = export_file(seeded_store, tmp_path, rid).as_uri()
    page.goto(url + "#turn=2")
    assert page.evaluate("getComputedStyle(document.querySelector('.story-table')).display") == "none"
    iu = whys[2][1]["id"]
    page.click(f"section.run svg g[data-iu='{iu}']")
    page.wait_for_function(f"location.hash === '#turn=2&iu={iu}'")

    def story():
        return page.evaluate("""() => [...document.querySelectorAll('.story-table tbody tr')].map(tr =>
            [tr.dataset.turn, tr.className, [...tr.children].map(td => td.textContent)])""")

    rows = story()
    assert [r[0] for r in rows] == ["0", "1", "2", "3", "4"] and rows[2][1] == "current"
    for turn, _, cells in rows[1:]:
        want = next(x for x in whys[int(turn)] if x["id"] == iu)
        assert (cells[8], cells[11]) == (want["mode"] or "–", want["why"])
    page.keyboard.press("ArrowRight")  # stepping keeps the IU and marks the next turn
    page.wait_for_function(f"location.hash === '#turn=3&iu={iu}'")
    assert story()[3][1] == "current"
    other = whys[2][0]["id"]
    page.goto("about:blank")
    page.goto(url + f"#turn=1&iu={other}")  # a shared link opens the IU's story
    assert page.evaluate("document.querySelector('[data-role=story-pick]').value") == other
    assert story()[1][1] == "current"
    assert page.errors == []
