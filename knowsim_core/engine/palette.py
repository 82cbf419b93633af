"""How each IU state looks and is named to people: one palette for the Studio, the HTML export and
the plain-words explanations.

It sits in the engine (which draws nothing) only because it is the lowest layer every reader can
import: ``formats.graph_html`` (which may not import the UI), ``evaluation.explain`` and ``ui.theme``
all read these values, so the exported graph, the app and the "why" texts cannot disagree (they
did: the export's "unaware" was #bbbbbb, the app's #D9D9D9).

Colours are from the Okabe–Ito palette (safe for the common colour-vision deficiencies); each state
also has its own glyph (a quarter-filled circle, drawn in the node label) and border, so the state
can be read without colour at all (greyscale print, achromatopsia).
"""

from __future__ import annotations

from dataclasses import dataclass

from knowsim_core.engine.state import IUState


@dataclass(frozen=True, slots=True)
class StateStyle:
    name: str  # shown to people ("knows well"; the stored key is IUState.key, "knows_well")
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
UNSTATED_COLOUR = "#9ECAE1"  # an IU drawn with no state (a bare graph)


def state_word(state: IUState | int) -> str:
    """The state's name for people: ``partial``, ``knows well``."""
    return STATE_STYLE[IUState(state)].name


__all__ = ["STATE_STYLE", "StateStyle", "UNSTATED_COLOUR", "state_word"]
