"""The UI's colours (failure modes, rings, gauge) and the on-screen glossary.

Every colour, state name and failure-mode word is the vocabulary's (:mod:`knowsim_core.vocab`),
re-exported here for the views, so the app, the exported graph, the replay, the paper figures and
the command line draw and spell a state or a mode alike.
"""

from __future__ import annotations

from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.metrics import METRIC_GLOSSARY
from knowsim_core.engine.state import IUState
from knowsim_core.vocab import (  # noqa: F401  (re-exported: the views import them from here)
    BORDER_COLOUR, CHANGED_COLOUR, EDGE_COLOUR, GAUGE_BAR, GAUGE_BETTER, GAUGE_NEAR, GAUGE_OK, GAUGE_OVER,
    GAUGE_THRESHOLD, MODE_COLOURS, MODE_FONTS, MODE_LETTERS, NEAR_SHARE, SELECTED_COLOUR, STATE_STYLE, StateStyle,
    state_word,
)


def state_name(state: IUState | int) -> str:
    return state_word(state)


def state_badge(state: IUState | int) -> str:
    """Glyph + name, e.g. ``◑ partial`` — for tables, where colour is not available."""
    s = STATE_STYLE[IUState(state)]
    return f"{s.glyph} {s.name}"


# ---------------------------------------------------------------------- failure modes
# Charts name every mode in their legend and hover (no fill patterns: Streamlit's plotly.js drops
# patterned stacked bars, see ui/runs/failure_views.py). Every view that colours a mode (Simulate,
# Failure modes, Compare) takes it from here.
MODE_COLORS: dict[FailureMode, str] = MODE_COLOURS
MODE_FONT: dict[FailureMode, str] = MODE_FONTS
# The letter on a failure-mode badge in the graph (a non-colour cue, named in the legend): the
# vocabulary's, the same as the replay's and the ``run`` command's.
MODE_BADGE: dict[FailureMode, str] = MODE_LETTERS


def mode_colour(mode: FailureMode | str) -> str:
    """The colour of a failure mode (accepts the enum or its stored key)."""
    return MODE_COLORS[FailureMode(mode)]


# ---------------------------------------------------------------------- words on screen
# Short definitions shown as help icons and in the Simulate glossary (spec §4.2–§4.9, §6).
GLOSSARY: dict[str, str] = {
    "τ": "the learner's capacity for one turn: how much load a turn can carry before it is overloaded "
         "(τ grows with the number of IUs in the graph).",
    "load": "the effective load L of a turn: the weight of every IU the reply mentions (heavier for IUs the "
            "learner knows less) plus the cost of the learner's own attempts. A turn is overloaded when L ≥ τ.",
    "η": "the turn's efficiency, between 0 and 1: 1 when the load is within τ, falling as the load exceeds τ. "
         "In an overloaded turn an IU only gets η of the step it would have taken.",
    "ceiling": "the highest state an IU can reach this turn, set by its weakest prerequisite "
               "(unaware or struggling → struggling; partial → partial; known well → known well).",
    "carry": "the fraction of a step an IU kept from overloaded turns; it adds up over consecutive overloaded "
             "turns that keep teaching the IU and is lost otherwise.",
    "step": "one move up the state ladder: unaware → struggling → partial → knows well.",
    **METRIC_GLOSSARY,  # KG, DC and CO: their scale and a worked line (the core's words)
}
METRIC_TERMS = tuple(METRIC_GLOSSARY)  # "KG", "DC", "CO"


def glossary_help(*terms: str) -> str:
    """The definitions of ``terms`` as one help-tooltip text."""
    return "\n\n".join(f"**{t}** — {GLOSSARY[t]}" for t in terms)
