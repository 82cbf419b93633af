"""The app server started as ``make app`` starts it holds no inotify watch (issue 34, item 2).

With Streamlit's default watcher (watchdog), every watched source file put a recursive inotify
watch on its folder — the repository, which holds the ``.venv`` ``make app`` creates (40,000
files): the queue overflowed, each overflow re-scanned the tree, and an idle server used ~42 % of
a core and logged "Inotify queue overflowed" without end. ``.streamlit/config.toml`` now has
Streamlit poll the app's own files. This test starts the server exactly as scripts/bootstrap.sh
does (in the repository, reading its config file, no watcher flag), opens Home so a session
watches its modules, and reads the server's inotify watches from /proc. Idle CPU is measured by
``benchmarks/app.py --idle-only`` (a figure, not a test).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, free_port, wait_idle

pytestmark = pytest.mark.browser


def inotify_watches(pid: int) -> int:
    """How many inotify watches process ``pid`` holds (one ``inotify wd:`` line each in fdinfo)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            count += Path(f"/proc/{pid}/fdinfo/{fd}").read_text().count("inotify wd:")
        except OSError:
            continue  # the fd closed meanwhile
    return count


@pytest.fixture()
def make_app_server(tmp_path):
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    # scripts/bootstrap.sh's last line for `app` (the repository's config file decides the watcher)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--browser.gatherUsageStats", "false",
                             "--server.port", str(port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "KNOWSIM_DB": str(tmp_path / "studio.db")})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    yield proc, url, tmp_path / "server.log"
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:  # a loaded machine can outlast Streamlit's own shutdown
        proc.kill()
        proc.wait()
    log.close()


def test_the_server_watches_its_files_without_inotify(make_app_server, browser):
    proc, url, log = make_app_server
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    page.get_by_role("heading", name="KnowSim Studio").wait_for(timeout=60_000)
    wait_idle(page)
    page.goto(url + "/simulate")  # a second page: its modules are watched too
    wait_idle(page)
    assert inotify_watches(proc.pid) == 0, "the server put inotify watches on the repository"
    page.close()
    assert "Inotify queue overflowed" not in log.read_text(errors="replace")
