"""The four IU-state colours, the five failure-mode colours and the on-screen glossary, defined once.

Colours are from the Okabe–Ito palette (safe for the common colour-vision deficiencies); each
state also has its own glyph (a quarter-filled circle, drawn in the node label) and border, so
the state can be read without colour at all (greyscale print, achromatopsia).
"""

from __future__ import annotations

from dataclasses import dataclass

from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.state import IUState


@dataclass(frozen=True, slots=True)
class StateStyle:
    name: str  # shown to people
    colour: str  # node fill
    font: str  # label colour readable on the fill
    glyph: str  # non-colour cue in the label
    border_width: int  # non-colour cue on the node
    dashed: bool  # non-colour cue on the node


STATE_STYLE: dict[IUState, StateStyle] = {
    IUState.UNAWARE: StateStyle("unaware", "#D9D9D9", "#000000", "○", 1, True),
    IUState.STRUGGLING: StateStyle("struggling", "#E69F00", "#000000", "◔", 2, False),
    IUState.PARTIAL: StateStyle("partial", "#56B4E9", "#000000", "◑", 2, False),
    IUState.KNOWS_WELL: StateStyle("knows well", "#009E73", "#FFFFFF", "●", 4, False),
}
BORDER_COLOUR = "#333333"
CHANGED_COLOUR = "#CC79A7"  # Okabe–Ito reddish purple: the ring around IUs that moved this turn
SELECTED_COLOUR = "#0072B2"  # Okabe–Ito blue
EDGE_COLOUR = "#8C8C8C"

# Load gauge bands, as shares of the capacity τ
GAUGE_OK = "#E8F4EC"
GAUGE_NEAR = "#FCEFD2"
GAUGE_OVER = "#F8D9CC"
GAUGE_BAR = "#0072B2"
GAUGE_THRESHOLD = "#D55E00"  # vermillion line at τ (and a load rise)
GAUGE_BETTER = "#009E73"  # bluish green: a load fall
NEAR_SHARE = 0.75


def state_colour(state: IUState | int) -> str:
    """The fill colour of a state (used by every view that colours IUs)."""
    return STATE_STYLE[IUState(state)].colour


def state_name(state: IUState | int) -> str:
    return STATE_STYLE[IUState(state)].name


def state_badge(state: IUState | int) -> str:
    """Glyph + name, e.g. ``◑ partial`` — for tables, where colour is not available."""
    s = STATE_STYLE[IUState(state)]
    return f"{s.glyph} {s.name}"


# ---------------------------------------------------------------------- failure modes
# Five colours from Paul Tol's "muted" scheme (distinguishable under the common colour-vision
# deficiencies), chosen so that none is one of the state colours above: a failure chart must not
# say "green" for EFFECTIVE where the graph says "green" for knows well. Charts name every mode in
# their legend and hover (no fill patterns: Streamlit's plotly.js drops patterned stacked bars, see
# ui/failure_views.py). Every view that colours a mode (Simulate,
# Failure modes, Compare) takes it from here.
MODE_COLORS: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#DDCC77",  # sand: effort spent on what was already known
    FailureMode.PREREQ_BLOCKED: "#882255",  # wine: stopped by a prerequisite
    FailureMode.EFFECTIVE: "#332288",  # indigo: the turn worked for this IU
    FailureMode.OVERLOAD_WASTED: "#CC6677",  # rose: lost to overload
    FailureMode.UNDER_ABSORBED: "#999933",  # olive: teachable, not overloaded, still not absorbed
}
MODE_FONT: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#000000",
    FailureMode.PREREQ_BLOCKED: "#FFFFFF",
    FailureMode.EFFECTIVE: "#FFFFFF",
    FailureMode.OVERLOAD_WASTED: "#000000",
    FailureMode.UNDER_ABSORBED: "#000000",
}


# The letter on a failure-mode badge in the graph (a non-colour cue, named in the legend)
MODE_BADGE: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "R",
    FailureMode.PREREQ_BLOCKED: "P",
    FailureMode.EFFECTIVE: "E",
    FailureMode.OVERLOAD_WASTED: "O",
    FailureMode.UNDER_ABSORBED: "U",
}


def mode_colour(mode: FailureMode | str) -> str:
    """The colour of a failure mode (accepts the enum or its value, e.g. ``"prereq_blocked"``)."""
    return MODE_COLORS[FailureMode(mode)]


# ---------------------------------------------------------------------- words on screen
# Short definitions shown as help icons and in the Simulate glossary (spec §4.2–§4.9).
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
}


def glossary_help(*terms: str) -> str:
    """The definitions of ``terms`` as one help-tooltip text."""
    return "\n\n".join(f"**{t}** — {GLOSSARY[t]}" for t in terms)
