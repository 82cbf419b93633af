"""The suite's own rules: browser tests are marked, and missing ../shared fails under CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_shared

ROOT = Path(__file__).resolve().parent.parent


def test_every_browser_test_is_marked_browser():
    """Collecting ``-m 'not browser'`` leaves out every test under tests/browser (two files lacked
    the marker, so ``-m 'not browser'`` still started chromium for them)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "-m", "not browser", "tests/browser"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    selected = [line for line in done.stdout.splitlines() if "::" in line]
    assert selected == [], selected
    everything = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                                 "-m", "browser", "tests/browser"], cwd=ROOT, capture_output=True, text=True,
                                timeout=300)
    assert sum("::" in line for line in everything.stdout.splitlines()) >= 10


def test_missing_shared_data_skips_here_and_fails_under_ci(tmp_path, monkeypatch):
    missing = tmp_path / "shared" / "reference"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared data not found"):
        require_shared(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI needs the shared data"):
        require_shared(missing)
    assert require_shared(tmp_path) == tmp_path  # present: handed back
    assert os.environ["CI"] == "true"


@pytest.mark.parametrize("value", ["true", "1", "yes", "True", "on"])
def test_any_truthy_ci_fails_instead_of_skipping(tmp_path, monkeypatch, value):
    """``CI=1`` skipped silently where a copy tested ``== "true"`` (old test_agreement,
    test_judgments_import). Planted fault: ``== "true"`` in ``in_ci`` fails the "1" case."""
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI needs the shared data"):
        require_shared(tmp_path / "absent")


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off"])
def test_an_explicit_no_ci_skips(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception, match="shared data not found"):
        require_shared(tmp_path / "absent")


def test_only_conftest_decides_what_ci_means():
    """No test file reads the ``CI`` variable itself (five did, three ways): each goes through
    ``require_shared`` / ``in_ci``. Planted fault: ``if os.environ.get("CI") == "true":`` back in
    test_agreement.py fails here."""
    import re

    reads = re.compile(r"""environ(?:\.get\(|\[)\s*["']CI["']|getenv\(\s*["']CI["']""")
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").rglob("*.py"))
                 if p.name != "conftest.py" and p != Path(__file__).resolve() and reads.search(p.read_text())]
    assert offenders == [], offenders
