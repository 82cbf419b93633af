"""When a conversation stops (spec §5): votes recorded after every turn's update.

The reference rule (default) and the paper's rule (an option) both read only the per-turn
quantities and the state after the turn. Paper runs record the stop *virtually* and play all 15
turns; Studio can also stop for real after the firing turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from knowsim_core.engine.config import RuleParams
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.rules import TurnQuantities
from knowsim_core.engine.state import IUState, KnowledgeState
from knowsim_core.vocab import STOP_MASTERY as MASTERY, STOP_OVERLOAD as COGNITIVE_OVERLOAD


@dataclass(frozen=True, slots=True)
class StopVotes:
    """The termination votes after one turn ("goal reached" and "overload" kept apart)."""

    rule: str
    mastery: bool
    known_share: float  # share of the graph's IUs at knows_well after the turn
    window: tuple[int, ...]  # 1-based turns of the overload window (empty before it opens)
    overloaded_turns: int
    upward_transitions: int
    silent_turns: int
    persistent_overload: bool

    @property
    def fired(self) -> str | None:
        if self.mastery:
            return MASTERY
        if self.persistent_overload:
            return COGNITIVE_OVERLOAD
        return None

    def explain(self) -> str:
        """One line for the turn card."""
        parts = [f"mastery: {'yes' if self.mastery else 'no'} ({self.known_share:.0%} known well)"]
        if self.window:
            parts.append(
                f"overload window turns {self.window[0]}–{self.window[-1]}: "
                f"{self.overloaded_turns} overloaded, {self.upward_transitions} upward"
            )
        else:
            parts.append("overload window not open yet")
        return "; ".join(parts)


def stop_votes(
    graph: IUGraph,
    history: Sequence[TurnQuantities],
    state: KnowledgeState,
    params: RuleParams,
) -> StopVotes:
    """Votes after turn ``len(history)`` (``history`` ends with the turn just played)."""
    t = len(history)
    labels = graph.index.labels
    n_known = sum(1 for lab in labels if state.state_of(lab) == IUState.KNOWS_WELL)
    share = n_known / len(labels) if labels else 1.0
    if params.termination == "reference":
        # every entry of the state dict, foreign labels included (spec §5.1)
        mastery = bool(len(state)) and all(e.state == IUState.KNOWS_WELL for e in state.values())
    else:
        mastery = share >= params.mastery_fraction
    w = params.overload_window
    window: tuple[int, ...] = ()
    over = up = silent = 0
    persistent = False
    if t >= params.overload_min_turn and t >= w:
        recent = history[t - w :]
        window = tuple(range(t - w + 1, t + 1))
        over = sum(1 for q in recent if q.overload)
        up = sum(q.n_upward_transitions for q in recent)
        silent = sum(1 for q in recent if q.ic_denominator == 0)
        if params.termination == "reference":
            persistent = over >= 2 and up <= 1
        else:
            votes = (over >= w - 1) + (up == 0) + (silent == w)
            persistent = votes >= 2
    return StopVotes(params.termination, mastery, share, window, over, up, silent, persistent)


def first_stop(votes: Sequence[StopVotes]) -> tuple[int | None, str | None]:
    """(0-based virtual_early_stop_turn, reason) of the first firing vote, or (None, None)."""
    for i, v in enumerate(votes):
        if v.fired:
            return i, v.fired
    return None, None
