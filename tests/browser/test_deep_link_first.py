"""A deep link that is a fresh server's very first request still opens inside the app's frame."""

from __future__ import annotations

from tests.browser.conftest import StudioServer, wait_idle


def test_first_request_deep_link_runs_the_frame(browser, tmp_path):
    server = StudioServer(tmp_path / "studio.db")
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{server.url}/graph?question=sample_lava_lamps")
        wait_idle(page)
        # the page's own title (the navigation link carries the same words since issue 34 item 18)
        page.get_by_test_id("stHeadingWithActionElements").get_by_text("Graph editor", exact=True).wait_for(
            timeout=30_000)
        sidebar = page.locator('[data-testid="stSidebar"]')
        # the frame's grouped navigation and sidebar, not Streamlit's legacy page list
        sidebar.get_by_text("Correct & analyse").wait_for(timeout=30_000)
        assert sidebar.get_by_text("Database:").count() == 1
        assert "question=sample_lava_lamps" in page.url
        context.close()
    finally:
        server.stop()
