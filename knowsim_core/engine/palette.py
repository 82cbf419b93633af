"""The Studio's colours and state names as plain values, below every layer that draws.

The app (``ui/theme.py``), the graph HTML export (``formats/graph_html.py``), the single-file run
replay (``formats/replay_html.py``), the paper figures (``evaluation/figures.py``) and the plain-words
explanations (``evaluation/explain.py``) must say the same colour and name for the same thing, and
only ``ui`` may import streamlit — so the values live here, in the lowest layer every reader can
import, and ``ui.theme`` re-reads them (they once disagreed: the export's "unaware" was #bbbbbb,
the app's #D9D9D9). Pure data.

States: Okabe–Ito (safe for the common colour-vision deficiencies); each state also has its own
glyph (drawn in the node label) and border, so it reads without colour at all (greyscale print,
achromatopsia). Failure modes: five colours of Paul Tol's "muted" scheme, none of them a state
colour (a failure chart must not say "green" for EFFECTIVE where the graph says "green" for knows
well).
"""

from __future__ import annotations

from dataclasses import dataclass

from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.state import IUState

STATE_COLOURS: dict[IUState, str] = {
    IUState.UNAWARE: "#D9D9D9",
    IUState.STRUGGLING: "#E69F00",
    IUState.PARTIAL: "#56B4E9",
    IUState.KNOWS_WELL: "#009E73",
}
STATE_FONTS: dict[IUState, str] = {
    IUState.UNAWARE: "#000000",
    IUState.STRUGGLING: "#000000",
    IUState.PARTIAL: "#000000",
    IUState.KNOWS_WELL: "#FFFFFF",
}
STATE_GLYPHS: dict[IUState, str] = {
    IUState.UNAWARE: "○",
    IUState.STRUGGLING: "◔",
    IUState.PARTIAL: "◑",
    IUState.KNOWS_WELL: "●",
}
STATE_NAMES: dict[IUState, str] = {
    IUState.UNAWARE: "unaware",
    IUState.STRUGGLING: "struggling",
    IUState.PARTIAL: "partial",
    IUState.KNOWS_WELL: "knows well",
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

MODE_COLOURS: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#DDCC77",  # sand: effort spent on what was already known
    FailureMode.PREREQ_BLOCKED: "#882255",  # wine: stopped by a prerequisite
    FailureMode.EFFECTIVE: "#332288",  # indigo: the turn worked for this IU
    FailureMode.OVERLOAD_WASTED: "#CC6677",  # rose: lost to overload
    FailureMode.UNDER_ABSORBED: "#999933",  # olive: teachable, not overloaded, still not absorbed
}
MODE_FONTS: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#000000",
    FailureMode.PREREQ_BLOCKED: "#FFFFFF",
    FailureMode.EFFECTIVE: "#FFFFFF",
    FailureMode.OVERLOAD_WASTED: "#000000",
    FailureMode.UNDER_ABSORBED: "#000000",
}


@dataclass(frozen=True, slots=True)
class StateStyle:
    name: str  # shown to people ("knows well"; the stored key is IUState.key, "knows_well")
    colour: str  # node fill
    font: str  # label colour readable on the fill
    glyph: str  # non-colour cue in the label
    border_width: int  # non-colour cue on the node
    dashed: bool  # non-colour cue on the node


_BORDERS: dict[IUState, tuple[int, bool]] = {
    IUState.UNAWARE: (1, True),
    IUState.STRUGGLING: (2, False),
    IUState.PARTIAL: (2, False),
    IUState.KNOWS_WELL: (4, False),
}
STATE_STYLE: dict[IUState, StateStyle] = {
    s: StateStyle(STATE_NAMES[s], STATE_COLOURS[s], STATE_FONTS[s], STATE_GLYPHS[s], *_BORDERS[s]) for s in IUState
}
UNSTATED_COLOUR = "#9ECAE1"  # an IU drawn with no state (a bare graph)


def state_word(state: IUState | int) -> str:
    """The state's name for people: ``partial``, ``knows well``."""
    return STATE_NAMES[IUState(state)]
