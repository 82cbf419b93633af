"""A real browser on Simulate: stored text fetches nothing and keeps the card's layout; and on
Batch: a tag that is a path is refused (issue 23, items 5 and 10).

A run whose messages carry a remote image (a tracking pixel), a heading and display maths is
stored, opened in chromium, and every request the page makes is logged: none may go to the
image's host, and the heading must not be an ``<h1>`` (issue 23, item 10; fails without
``ui.common.safe_text``).
"""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest

from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.browser.conftest import wait_idle

pytestmark = pytest.mark.browser


def test_a_remote_image_in_a_stored_message_is_never_fetched(studio, page):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there; a fetch attempt still shows in the log
    pixel = f"http://127.0.0.1:{port}/pixel.png"
    store = Store(studio.db)
    store.questions.seed_samples()
    live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple")
    live.step()
    run = store.runs.load(live.run_id)
    turn = replace(run.turns[0], assistant_message=f"# Shouting heading\n\n![track]({pixel})\n\n$$x^2$$ done",
                   user_message="a question")
    rid = store.runs.save(replace(run, run_id=None, turns=(turn,)), status="finished")
    page.goto(f"{studio.url}/simulate?run={rid}&turn=1")
    wait_idle(page)
    page.get_by_text("Shouting heading").first.wait_for()
    page.wait_for_timeout(500)
    assert not [u for u in page.requests if f":{port}" in u], [u for u in page.requests if f":{port}" in u]
    chat = page.locator(".st-key-sim_messages")  # the turn's two messages, beside the graph
    assert chat.count() == 1 and "Shouting heading" in chat.inner_text()
    assert chat.locator("h1, h2, img").count() == 0
    assert chat.get_by_role("link", name="track").count() == 1  # the image is a link, loaded only if clicked


def test_a_path_typed_as_a_batch_tag_is_one_error_and_nothing_launches(studio, page):
    """The Batch page in chromium: a traversing tag is refused in one line, no Launch button, no
    traceback, and no file appears outside the launches folder."""
    from ui.batch import launcher as bv

    Store(studio.db).questions.seed_samples()
    page.goto(f"{studio.url}/batch")
    wait_idle(page)
    tag = page.get_by_label("Tag")
    tag.fill("../../../outside/TRAVERSE1")
    tag.press("Enter")
    wait_idle(page)
    page.get_by_text("is not a batch tag").first.wait_for()
    assert page.get_by_role("button", name="Launch").count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    assert bv.launches(studio.db) == []
    assert not list(studio.db.parent.parent.rglob("TRAVERSE1*"))
