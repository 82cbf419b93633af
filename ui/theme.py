"""The four IU-state colours and their non-colour cues, defined once for every view.

Colours are from the Okabe–Ito palette (safe for the common colour-vision deficiencies); each
state also has its own glyph (a quarter-filled circle, drawn in the node label) and border, so
the state can be read without colour at all (greyscale print, achromatopsia).
"""

from __future__ import annotations

from dataclasses import dataclass

from knowsim_core.state import IUState


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
