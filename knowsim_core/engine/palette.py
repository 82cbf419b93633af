"""The Studio's colours as plain values, below every layer that draws.

The app (``ui/theme.py``), the single-file run replay (``formats/replay_html.py``) and the paper
figures (``evaluation/figures.py``) must say the same colour for the same thing, and only ``ui`` may
import streamlit — so the values live here and ``ui.theme`` re-reads them. Pure data: no imports
beyond the two enums the keys are made of.

States: Okabe–Ito (safe for the common colour-vision deficiencies), each with a glyph so a state
reads without colour. Failure modes: five colours of Paul Tol's "muted" scheme, none of them a
state colour (a failure chart must not say "green" for EFFECTIVE where the graph says "green" for
knows well).
"""

from __future__ import annotations

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
