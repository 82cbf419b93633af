"""Shared fixtures. The paper's reference data is read from ../shared/reference (never copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_DIR = ROOT.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The reference data folder; skipped with a message when absent (never in CI)."""
    if not REFERENCE_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the reference data at {REFERENCE_DIR}")
        pytest.skip(f"reference data not found at {REFERENCE_DIR} (clone the paper's data there to run this)")
    return REFERENCE_DIR


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
def seeded_store(db_path, monkeypatch):
    """A Store on a fresh database with the sample questions, which the app will also open."""
    from knowsim_core.storage import Store

    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    store = Store(db_path)
    store.seed_samples()
    return store
