"""The one-click demo (no streamlit): the paper's Figure 1 situation.

The follicular-lymphoma question, the same comprehensive assistant, a novice and an advanced
learner — two stored runs played side by side, showing the same answer overload one learner and
suit the other.
"""

from __future__ import annotations

from knowsim_core.services.runner import start_run

DEMO_QUESTION = "sample_follicular_lymphoma"
DEMO_ASSISTANT = "offline/comprehensive"
DEMO_LEVELS = ("novice", "advanced")
DEMO_SEED = 1


def start_demo(store, *, question_id: str = DEMO_QUESTION, assistant_id: str = DEMO_ASSISTANT) -> dict:
    """Create the two demo runs (not yet stepped); returns ``{run_id: LiveRun}`` in level order."""
    runs = {}
    for level in DEMO_LEVELS:
        live = start_run(store, question_id=question_id, level=level, assistant_id=assistant_id, seed=DEMO_SEED)
        runs[live.run_id] = live
    return runs
