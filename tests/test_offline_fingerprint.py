"""The offline matrix, turn for turn: one sha256 over every TurnRecord of every sample question ×
level × offline assistant × seeds 1 and 2 (``benchmarks/offline_fingerprint.py``).

A speed-up or refactor must leave it equal. An intended change of the offline agents or the rules
changes it: then update EXPECTED (one line) from ``python benchmarks/offline_fingerprint.py`` and
say in the commit why the behaviour changed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = "2adbcdd38ab882818100f6efc21eefcdab89f7791cfcfee65bfec8822ae12aeb"


def test_the_offline_matrix_plays_exactly_as_recorded():
    spec = importlib.util.spec_from_file_location("offline_fingerprint", ROOT / "benchmarks" / "offline_fingerprint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    digest, runs, turns = module.fingerprint((1, 2))
    assert digest == EXPECTED, f"offline matrix changed: {digest} ({runs} conversations, {turns} turns)"
