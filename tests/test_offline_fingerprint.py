"""The offline matrix, turn for turn: one sha256 over every TurnRecord of every sample question ×
level × offline assistant × seeds 1 and 2 (``benchmarks/offline_fingerprint.py``).

A speed-up or refactor must leave it equal. An intended change of the offline agents or the rules
changes it: then update EXPECTED (one line) from ``python benchmarks/offline_fingerprint.py`` and
say in the commit why the behaviour changed.

The digest is over floats, so it is tied to the numeric stack: ``COMPUTED_WITH`` names the versions
it was computed with (those of ``constraints.txt``, which ``make test`` installs); on other versions a
mismatch says so instead of reporting a behaviour change.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = "b9045a91aa48fb5f3f8b970612b605964ee2f75eab945470ea59cf0f9a92b656"
COMPUTED_WITH = {"python": "3.11", "numpy": "2.4.6", "scikit-learn": "1.9.1", "scipy": "1.17.1"}


def installed() -> dict[str, str]:
    import importlib.metadata as md
    import platform

    return {"python": ".".join(platform.python_version_tuple()[:2]),
            **{name: md.version(name) for name in COMPUTED_WITH if name != "python"}}


def test_the_offline_matrix_plays_exactly_as_recorded():
    module = load_script("benchmarks/offline_fingerprint.py")
    digest, runs, turns = module.fingerprint((1, 2))
    differs = {k: (v, installed()[k]) for k, v in COMPUTED_WITH.items() if installed()[k] != v}
    assert digest == EXPECTED, (f"offline matrix changed: {digest} ({runs} conversations, {turns} turns)"
                                + (f"; computed with other versions (expected, installed): {differs}" if differs else ""))


def test_the_fingerprint_names_the_pinned_versions():
    """COMPUTED_WITH is what constraints.txt pins: updating the pins without re-deriving the digest
    (and this dict) fails here. Planted fault: numpy==2.4.5 in constraints.txt."""
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert {k: pins[k] for k in COMPUTED_WITH if k != "python"} == {k: v for k, v in COMPUTED_WITH.items() if k != "python"}
