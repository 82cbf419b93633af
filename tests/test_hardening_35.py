"""Issue 35's minor findings that are not about model replies (those are in test_llm_bounds.py): each
test names the old behaviour it catches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
QID = "sample_lava_lamps"


def cli(*argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    e["PYTHONPATH"] = str(ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "knowsim_core", *argv], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


# ---------------------------------------------------------------------- compare of a run with no turns
def test_comparing_a_run_without_turns_shows_its_starting_state():
    """Old code: ``run.turns[min(turn, 0) - 1]`` on an empty tuple → IndexError (ui/compare.py:43)."""
    from dataclasses import replace

    from knowsim_core.formats.samples import load_samples
    from tests.part2_support import make_run
    from ui.compare import state_diff, why_diff

    g = next(s for s in load_samples() if s.id == QID).graph
    b = make_run(g, question_id=QID, level="advanced", seed=2, max_turns=4)
    empty = replace(make_run(g, question_id=QID, level="novice", seed=1, max_turns=4), turns=(), stop_reason=None)
    rows = state_diff(empty, b, 3)
    start = {v: empty.initial_state.state_of(empty.graph.index.label_of[v]) for v in g.index.ids}
    from ui.theme import state_badge
    assert [r["A"] for r in rows] == [state_badge(start[r["IU"]]) for r in rows]
    assert all(r["A mode"] == "" for r in why_diff(empty, b, 3))
