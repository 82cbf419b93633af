"""Browser fixtures: a real ``streamlit run app.py`` on 127.0.0.1 and Debian's chromium via Playwright.

Never downloads a browser (``/usr/bin/chromium`` is installed by the README's test command). Each
server gets a free port and its own temporary database. Every request the page makes is recorded
so tests can assert that nothing leaves localhost.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("KNOWSIM_CHROMIUM", "/usr/bin/chromium"))
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
ARTIFACTS = ROOT / "test-artifacts"
STARTUP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StudioServer:
    """``python -m streamlit run app.py`` in a subprocess, stopped by its own pid."""

    def __init__(self, db: Path, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = db
        self.log = db.with_suffix(".log")
        cmd = [
            sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
            "--server.port", str(self.port), "--server.address", "127.0.0.1",
            "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
        ]
        full_env = {**os.environ, "KNOWSIM_DB": str(db), **(env or {})}
        self.started = time.monotonic()
        self._log = open(self.log, "wb")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early:\n{self.log.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"streamlit did not become healthy in {STARTUP_TIMEOUT_S}s:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (the README's test command installs Debian's chromium)")
    server = StudioServer(tmp_path_factory.mktemp("studio") / "studio.db")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    """A page with a tall viewport (the main area scrolls) and a log of every request URL."""
    context = browser.new_context(viewport={"width": 1500, "height": 2200})
    pg = context.new_page()
    pg.requests = []  # type: ignore[attr-defined]
    pg.on("request", lambda req: pg.requests.append(req.url))  # type: ignore[attr-defined]
    pg.console_errors = []  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))  # type: ignore[attr-defined]
    yield pg
    context.close()


def wait_idle(page, timeout: float = 120_000) -> None:
    """Connected and not running a script (after the debounce of some widgets). The timeout only
    stops a hang: a script run takes seconds on a busy 2-core machine (30 s was hit under load)."""
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout)
    page.wait_for_timeout(250)
    page.wait_for_selector('[data-test-script-state="notRunning"]', timeout=timeout)


def nodes_outside_canvas(page, key: str) -> list[str]:
    """The IUs of the graph with this key that are drawn (partly) outside its canvas."""
    return page.evaluate(
        """(key) => { const net = window.__knowsim[key].network;
               const box = net.body.container.getBoundingClientRect();
               return Object.entries(net.getPositions()).filter(([id, p]) => {
                   const d = net.canvasToDOM(p);
                   return d.x < 0 || d.y < 0 || d.x > box.width || d.y > box.height; }).map(([id]) => id); }""",
        key,
    )


def graph_nodes(page, key: str) -> list[dict]:
    """The vis-network DataSet of the graph with this key, read back from the browser."""
    return page.evaluate(
        """(key) => { const g = (window.__knowsim || {})[key];
               return g ? g.nodes.get().map(n => ({id: n.id, state: n.state, colour: n.color.background,
                                                     label: n.label, changed: n.changed})) : null; }""",
        key,
    )
