"""Shared fixtures. The paper's reference data and the real conversations are read from ../shared
(never copied); :func:`require_shared` is the one place that decides what a missing file does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = ROOT.parent / "shared"
REFERENCE_DIR = SHARED_DIR / "reference"
ARENA_ANNOTATIONS = (SHARED_DIR / "realworld" / "simulatorarena_math"
                     / "math_tutoring_annotations_redacted_for_benchmarking.json")


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _loopback_not_proxied(environ=os.environ) -> None:
    """Behind a proxy (``make test`` in a shell that exports one), urllib's health checks of the
    Studio's test servers on 127.0.0.1 went to the proxy, as do subprocesses' (Streamlit, curl):
    loopback is added to ``NO_PROXY`` for this session when a proxy variable is set. The Studio's own
    LLM clients never proxy loopback anyway (knowsim_core/llm/proxy.py)."""
    if not any(environ.get(v) for v in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                         "all_proxy", "ALL_PROXY")):
        return
    for var in ("no_proxy", "NO_PROXY"):
        have = [e.strip() for e in environ.get(var, "").split(",") if e.strip()]
        environ[var] = ",".join(have + [n for n in LOOPBACK_NAMES if n not in have])


_loopback_not_proxied()


def in_ci(environ=os.environ) -> bool:
    """True when ``CI`` is set to anything but an explicit no (unset, "", "0", "false", "no", "off"):
    ``CI=true``, ``CI=1`` and ``CI=yes`` all mean CI. The one place a test asks (a copy tested
    ``== "true"``, so ``CI=1`` skipped silently)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def load_script(relpath: str, name: str | None = None):
    """The repository's script at ``relpath`` (``benchmarks/x.py``, ``scripts/x.py``: not package modules),
    loaded as a module by its path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name or Path(relpath).stem, ROOT / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def require_shared(path: Path) -> Path:
    """``path`` under ../shared; a test that needs it skips with a message when it is absent, and
    fails under CI (:func:`in_ci`, as CI runs ``make test``), where a silent skip would hide it."""
    if not path.exists():
        if in_ci():
            pytest.fail(f"CI needs the shared data at {path} (../shared beside the checkout)")
        pytest.skip(f"shared data not found at {path} (put ../shared beside the checkout to run this)")
    return path


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The paper's reference data folder (require_shared)."""
    return require_shared(REFERENCE_DIR)


@pytest.fixture(scope="session")
def arena_annotations() -> Path:
    """The 25 real SimulatorArena maths conversations (require_shared)."""
    return require_shared(ARENA_ANNOTATIONS)


@pytest.fixture(scope="session")
def math_graphs(reference_dir):
    from knowsim_core.formats.reference import load_iu_cache

    return load_iu_cache(reference_dir / "iu_cache" / "math.json")


@pytest.fixture(scope="session")
def expert_graphs(reference_dir):
    from knowsim_core.formats.reference import load_iu_cache

    return load_iu_cache(reference_dir / "iu_cache" / "expertqa.json")


@pytest.fixture()
def db_path(tmp_path) -> Path:
    """A fresh database path for one test."""
    return tmp_path / "studio.db"


@pytest.fixture()
def db(db_path, monkeypatch) -> Path:
    """A fresh database path that the app (AppTest) opens too: ``KNOWSIM_DB`` points at it. A test
    module may override ``db`` with its own populated store (written once here, not per file)."""
    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    return db_path


@pytest.fixture()
def seeded_store(db_path, monkeypatch):
    """A Store on a fresh database with the sample questions, which the app will also open."""
    from knowsim_core.storage import Store

    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    store = Store(db_path)
    store.questions.seed_samples()
    return store


BROWSER_DIR = ROOT / "tests" / "browser"


def pytest_collection_modifyitems(config, items):
    """Every test that drives chromium carries the ``browser`` marker (``-m browser`` / ``-m 'not
    browser'`` select by it): each test under tests/browser, and any test using its ``page`` or
    ``browser`` fixtures — set here once rather than remembered per file (two files had forgotten)."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(BROWSER_DIR) or {"page", "browser"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
