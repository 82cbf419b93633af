"""Stored text rendered without remote fetches or raw layout (issue 23, item 10): the helper's
rules, and the turn card through AppTest. The real browser check is in
``tests/browser/test_stored_text_browser.py``."""

from __future__ import annotations

from dataclasses import replace

from streamlit.testing.v1 import AppTest

from ui.common.safe_text import inline_markdown


def test_images_become_links_inline_and_by_reference():
    out = inline_markdown("see ![pixel](http://tracker.example/q.png) and ![ref][r]\n\n[r]: http://t.example/r.png")
    assert "![" not in out.replace("\\![", "")
    assert "(http://tracker.example/q.png)" in out  # still there, as a link to click, not an image to load


def test_headings_setext_and_tables_read_inline_while_maths_and_emphasis_stay():
    assert inline_markdown("# Huge\n   ### also") == "\\# Huge\n   \\### also"
    assert inline_markdown("Title\n=====\nSub\n---") == "Title\n\\=====\nSub\n\\---"
    assert inline_markdown("| a | b |\n|---|:-:|\n| 1 | 2 |") == "| a | b |\n\\|---|:-:|\n| 1 | 2 |"
    assert inline_markdown("$$\\frac{1}{2}$$ and $|x|$") == "$\\frac{1}{2}$ and $|x|$"
    plain = "**bold**, `code`, [a link](http://x), a - b = c, 2 # 3"
    assert inline_markdown(plain) == plain



def test_no_backslash_run_before_an_image_lets_it_load_under_a_commonmark_parser():
    """``\\![x](url)`` is already an escaped "!"; the filter used to add a backslash, giving
    ``\\\\![x](url)`` = a literal backslash then a real image (a tracking pixel). Whatever run of
    backslashes precedes ``![``, the rendered HTML has no ``<img`` and every URL is still a link."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    for n in range(7):
        slashes = "\\" * n
        for text in (f"a {slashes}![x](http://evil.example/p.png) b",
                     f"{slashes}![y][r]\n\n[r]: http://evil.example/r.png",
                     f"[{slashes}![z](http://evil.example/in.png)](http://ok.example/)",
                     f"{slashes}![x](http://evil.example/1.png){slashes}![x](http://evil.example/2.png)"):
            assert "<img" in md.render(text) or n % 2, (n, text)  # the input really is an image
            html = md.render(inline_markdown(text))
            assert "<img" not in html, (n, text, html)
            assert "http://evil.example/" in html  # kept, as a link to click
            if "<img" not in md.render(text):  # text that was already safe reads exactly as before
                assert html == md.render(text), (n, text, html)




def test_the_turn_card_renders_stored_text_through_the_helper():
    from knowsim_core.services.runner import start_run
    from knowsim_core.storage import Store
    import tempfile, pathlib

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(pathlib.Path(tmp) / "s.db")
        store.questions.seed_samples()
        live = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/simple")
        live.step()
        run = store.runs.load(live.run_id)
    hostile = "# Title\n![pixel](http://127.0.0.1:9/q.png)\n$$x^2$$"
    run = replace(run, turns=(replace(run.turns[0], assistant_message=hostile, user_message="## me"),))
    at = AppTest.from_string("""
import streamlit as st
from ui.simulate.turn_card import render_turn_card
run = st.session_state["run"]
render_turn_card(run, run.turns[0], key="t")
""", default_timeout=60)
    at.session_state["run"] = run
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    bodies = [m.value for m in at.markdown]
    assert "\\## me" in bodies
    assert "\\# Title\n\\![pixel](http://127.0.0.1:9/q.png)\n$x^2$" in bodies
