"""Plain-words reasons why an IU did or did not advance in a turn (pure: no streamlit).

Reads only a stored :class:`TurnRecord` (its per-IU :class:`NodeTurn` and the turn's load), so a
stored, replayed or imported run is explained exactly like a live one. The cases follow the
order of the update (spec §4.6–§4.10): already known, not mentioned, shallow teaching on an IU the
learner already met, the prerequisite ceiling, then the overload dropoff.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowsim_core.graph import IUGraph
from knowsim_core.records import RunRecord, TurnRecord
from knowsim_core.rules import NodeTurn
from knowsim_core.signals import TeachingQuality
from knowsim_core.state import IUState

from .theme import state_name


def _load_words(rec: TurnRecord) -> str:
    q = rec.quantities
    return f"load {q.effective_load:.1f} vs capacity {q.overload_threshold}, η = {q.efficiency:.2f}"


def _blockers(node: NodeTurn, rec: TurnRecord, graph: IUGraph, ceiling_source: str) -> list[tuple[str, IUState]]:
    """The prerequisites at the lowest state, i.e. the ones that set the ceiling."""
    prereqs = graph.index.prereqs.get(node.id, ())
    if not prereqs:
        return []
    by_id = {n.id: n for n in rec.nodes}
    # under paper-final the ceiling reads prerequisites already updated this turn (live)
    states = {
        p: (by_id[p].post if ceiling_source == "live" else by_id[p].pre)
        for p in prereqs
        if p in by_id
    }
    if not states:
        return []
    low = min(states.values())
    return [(p, s) for p, s in states.items() if s == low]


def why(node: NodeTurn, rec: TurnRecord, graph: IUGraph, *, ceiling_source: str = "live") -> str:
    """One sentence: why ``node`` moved (or not) in turn ``rec``."""
    pre, post = node.pre, node.post
    mentioned = node.quality not in (None, TeachingQuality.NOT_MENTIONED.value)
    if post > pre:
        text = f"advanced: {state_name(pre)} → {state_name(post)}"
        if node.quality == TeachingQuality.SHALLOW.value:
            text += " (shallow teaching can only lift an unaware IU to struggling)"
        if node.efficiency is not None:
            text += (
                f"; the turn was overloaded ({_load_words(rec)}), this IU kept "
                f"{node.efficiency:.2f} of a step; {node.carry:.2f} of a step carried forward"
            )
        return text
    if pre == IUState.KNOWS_WELL:
        return "already known well" + (" — teaching it again was redundant" if mentioned else "")
    if not mentioned:
        return f"not mentioned this turn; stays {state_name(pre)}"
    if node.quality == TeachingQuality.SHALLOW.value and pre != IUState.UNAWARE:
        return (
            f"only taught shallowly: shallow teaching cannot advance an IU that is already "
            f"{state_name(pre)} (it needs a well-explained turn)"
        )
    if node.proposed <= pre:
        blockers = _blockers(node, rec, graph, ceiling_source)
        if blockers:
            names = ", ".join(f"{p} is only {state_name(s)}" for p, s in blockers)
            return f"blocked: prerequisite {names} (ceiling {state_name(node.ceiling)})"
        return f"blocked by its prerequisite ceiling ({state_name(node.ceiling)})"
    # proposed to rise, but the overload dropoff kept it where it was
    eff = node.efficiency if node.efficiency is not None else rec.quantities.efficiency
    return (
        f"overloaded: {_load_words(rec)}; this IU got {eff:.2f} of a step, "
        f"{node.carry:.2f} of a step carried forward (was {node.prior_carry:.2f})"
    )


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One row of the selected IU's history table."""

    turn: int
    state: IUState
    teaching: str
    attempt: str
    mode: str
    reason: str


def iu_history(run: RunRecord, node_id: str, *, upto: int | None = None) -> list[HistoryRow]:
    """The IU's state after each turn (turn 0 = the start), its labels and the reason, up to ``upto``."""
    graph = run.graph
    label = graph.index.label_of[node_id]
    source = run.params.ceiling_source
    rows = [HistoryRow(0, run.initial_state.state_of(label), "", "", "", "starting state")]
    turns = run.turns if upto is None else run.turns[:upto]
    for rec in turns:
        node = rec.node(node_id)
        mode = dict(rec.modes).get(node_id)
        rows.append(
            HistoryRow(
                rec.turn, node.post, node.quality or TeachingQuality.NOT_MENTIONED.value,
                node.attempt.value, mode.title if mode is not None else "", why(node, rec, graph, ceiling_source=source),
            )
        )
    return rows
