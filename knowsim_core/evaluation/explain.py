"""Each IU's failure mode and why, for every turn — the one explanation every view shows.

The mode comes from :func:`knowsim_core.engine.failures.classify_one` (the rule of spec §7) and the
plain-words reason is built from the *same* turn-record fields the rule reads (pre state,
pre-turn ceiling, post state, overload), so the two cannot disagree: a why names its mode first
("prereq-blocked: …") and then the reasons, in the order the update applies them (§4.6–§4.10).
Other facts of the turn that did not decide the mode are added after a semicolon ("the turn was
also overloaded (η 0.79)"). IUs with no mode (not mentioned this turn) get a reason too.

Pure: reads a :class:`TurnRecord` (and its run's graph for the prerequisite lists), so a stored,
replayed or imported run is explained exactly like a live one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from knowsim_core.engine.failures import FailureMode, classify_one
from knowsim_core.engine.graph import IUGraph
from knowsim_core.vocab import state_word
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.rules import NodeTurn
from knowsim_core.engine.signals import TeachingQuality
from knowsim_core.engine.state import IUState

# the mode's one spelling (FailureMode.title, as the badges' legend, the charts and the CLI print
# it), in lower case at the head of a reason: another word for it here ("prerequisite-blocked"
# beside "PREREQ-BLOCKED") would read as a second mode
MODE_WORDS: dict[FailureMode, str] = {m: m.title.lower() for m in FailureMode}
_SHALLOW = TeachingQuality.SHALLOW.value
_NOT_MENTIONED = TeachingQuality.NOT_MENTIONED.value


@dataclass(frozen=True, slots=True)
class IUWhy:
    """One IU in one turn: its failure mode (None when it was not explained) and why."""

    id: str
    label: str
    mode: FailureMode | None
    why: str
    before: IUState
    after: IUState

    @property
    def mode_name(self) -> str | None:
        """The paper's name of the mode (``PREREQ-BLOCKED``), None without one."""
        return self.mode.title if self.mode is not None else None

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "mode": self.mode_name, "why": self.why,
                "before": self.before.key, "after": self.after.key}


def explain_turn(rec: TurnRecord, graph: IUGraph, *, ceiling_source: str = "live") -> tuple[IUWhy, ...]:
    """Mode and why of every IU of ``rec``, in node order.

    Args:
        rec: the turn.
        graph: the graph the turn was played on (prerequisite lists name the blockers).
        ceiling_source: the run's ``params.ceiling_source`` (``"live"`` under paper-final: the
            update's ceiling read prerequisites already updated this turn).
    """
    explained = {v for v, _ in rec.modes}
    by_id = {n.id: n for n in rec.nodes}
    out = []
    for n in rec.nodes:
        mode = classify_one(n.pre, n.ceiling_pre, n.post, rec.quantities.overload) if n.id in explained else None
        out.append(IUWhy(n.id, n.label, mode, _why(n, mode, rec, graph, by_id, ceiling_source), n.pre, n.post))
    return tuple(out)


def explain_run(run: RunRecord, *, turn: int | None = None) -> list[tuple[int, tuple[IUWhy, ...]]]:
    """``(turn, explanations)`` for every turn of ``run``, or only turn ``turn`` (1-based)."""
    turns = run.turns if turn is None else [t for t in run.turns if t.turn == turn]
    return [(t.turn, explain_turn(t, run.graph, ceiling_source=run.params.ceiling_source)) for t in turns]


def why_of(run: RunRecord, rec: TurnRecord, node_id: str) -> IUWhy:
    """The explanation of one IU in one turn of ``run``."""
    for w in explain_turn(rec, run.graph, ceiling_source=run.params.ceiling_source):
        if w.id == node_id:
            return w
    raise KeyError(node_id)


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One IU after one turn (turn 0: the start): its state, labels, mode and why."""

    turn: int
    state: IUState
    teaching: str
    attempt: str
    mode: str  # the paper's name, "" without one
    reason: str


def iu_history(run: RunRecord, node_id: str, *, upto: int | None = None) -> list[HistoryRow]:
    """The IU's state after each turn (turn 0 = the start), its labels, mode and why, up to ``upto``."""
    label = run.graph.index.label_of[node_id]
    rows = [HistoryRow(0, run.initial_state.state_of(label), "", "", "", "starting state")]
    for rec in run.turns if upto is None else run.turns[:upto]:
        node, w = rec.node(node_id), why_of(run, rec, node_id)
        rows.append(HistoryRow(rec.turn, node.post, node.quality or _NOT_MENTIONED, node.attempt.value,
                               w.mode_name or "", w.why))
    return rows


# ---------------------------------------------------------------------- the reasons
def _state(s: int) -> str:
    return state_word(s)


def _names(ids: Sequence[str]) -> str:
    ids = list(ids)
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]


def _grouped(states: dict[str, int | None]) -> str:
    """``IU5 and IU7 are only struggling, IU2 is unaware`` (None: a prerequisite that is no IU)."""
    parts = []
    missing = [p for p, s in states.items() if s is None]
    for s in sorted({s for s in states.values() if s is not None}):
        ids = [p for p, x in states.items() if x == s]
        verb = "is" if len(ids) == 1 else "are"
        parts.append(f"{_names(ids)} {verb} {'only ' if s > 0 else ''}{_state(s)}")
    if missing:
        parts.append(f"{_names(missing)} {'is' if len(missing) == 1 else 'are'} not an IU of this graph (read as unaware)")
    return ", ".join(parts)


def _prereq_states(node: NodeTurn, graph: IUGraph, by_id: dict[str, NodeTurn], *, live: bool) -> dict[str, int | None]:
    ps = dict.fromkeys(graph.index.prereqs.get(node.id, ()))
    return {p: (None if p not in by_id else int(by_id[p].post if live else by_id[p].pre)) for p in ps}


def _blocked_by(node: NodeTurn, graph: IUGraph, by_id: dict[str, NodeTurn]) -> str:
    """The prerequisites that kept the pre-turn ceiling below partial (the rule's ceiling)."""
    below = {p: s for p, s in _prereq_states(node, graph, by_id, live=False).items() if s is None or s < IUState.PARTIAL}
    return _grouped(below) if below else "its prerequisites were not yet partially understood"


def _ceiling_holders(node: NodeTurn, graph: IUGraph, by_id: dict[str, NodeTurn], live: bool) -> str:
    """The weakest prerequisites, which set the ceiling the update used."""
    states = _prereq_states(node, graph, by_id, live=live)
    if not states:
        return ""
    low = min(-1 if s is None else s for s in states.values())
    return _grouped({p: s for p, s in states.items() if (-1 if s is None else s) == low})


def share(x: float) -> str:
    """A share of a step (η, a carry) in two places, unless rounding would hide that it is below 1.

    An overloaded turn with η = 0.9985 gives an IU 0.9985 of a step — not a whole one, so the IU
    stays where it was; "1.00 of a step" beside "stayed unaware" reads as a contradiction.
    """
    text = f"{x:.2f}"
    if x < 1.0 and text == "1.00":
        longer = f"{x:.4f}"
        text = longer if longer != "1.0000" else "just under 1"
    return text


def _load(rec: TurnRecord) -> str:
    q = rec.quantities
    return f"load {q.effective_load:.1f} vs capacity {q.overload_threshold}, η {share(q.efficiency)}"


def _dropoff(node: NodeTurn, rec: TurnRecord) -> str:
    eff = node.efficiency if node.efficiency is not None else rec.quantities.efficiency
    return f"it got {share(eff)} of a step, {share(node.carry)} carried forward (was {share(node.prior_carry)})"


def _why(node: NodeTurn, mode: FailureMode | None, rec: TurnRecord, graph: IUGraph,
         by_id: dict[str, NodeTurn], ceiling_source: str) -> str:
    if mode is None:
        return _why_unexplained(node)
    q = rec.quantities
    pre, post = int(node.pre), int(node.post)
    head = MODE_WORDS[mode] + ": "
    shallow_stuck = node.quality == _SHALLOW and pre != IUState.UNAWARE
    also_over = f"; the turn was also overloaded (η {share(q.efficiency)})" if q.overload else ""
    if mode is FailureMode.REDUNDANT:
        return head + "it was already known well before this turn, so teaching it again only added load"
    if mode is FailureMode.PREREQ_BLOCKED:
        text = f"ceiling {_state(node.ceiling_pre)} — {_blocked_by(node, graph, by_id)}"
        if node.proposed > node.pre:
            # The rule (failures.classify_one) calls it blocked because the pre-turn ceiling was below
            # partial and it did not move; that is the reason given. The share of a step the turn
            # still proposed is a side fact, never the cause, or the why would contradict its mode.
            rose = "its prerequisites rose during the turn; " if node.ceiling > node.ceiling_pre else ""
            return (head + text + f", so it counts as blocked (the ceiling before the turn decides); {rose}"
                    f"it stayed {_state(pre)} with part of a step pending ({_load(rec)}; {_dropoff(node, rec)})")
        if shallow_stuck:
            text += f"; it was also only taught shallowly, which cannot advance an IU already {_state(pre)}"
        return head + text + also_over
    if mode is FailureMode.EFFECTIVE:
        text = f"{_state(pre)} → {_state(post)}"
        if node.quality == _SHALLOW:
            text += " (shallow teaching lifts an unaware IU only to struggling)"
        if node.efficiency is not None:
            earlier = f" on top of {share(node.prior_carry)} carried from earlier turns" if node.prior_carry else ""
            text += (f"; the turn was overloaded ({_load(rec)}): this IU got {share(node.efficiency)} of a step"
                     f"{earlier}, {share(node.carry)} carried forward")
        return head + text
    # OVERLOAD_WASTED / UNDER_ABSORBED: teachable (pre-turn ceiling ≥ partial), yet it did not advance
    if node.proposed > node.pre:  # only the overload dropoff can stop a proposed step
        return head + f"teachable, but the turn was overloaded ({_load(rec)}); {_dropoff(node, rec)}"
    if shallow_stuck:
        reason = f"it was only taught shallowly, which cannot advance an IU already {_state(pre)} (it needs a well-explained turn)"
    else:
        holders = _ceiling_holders(node, graph, by_id, live=ceiling_source == "live")
        reason = f"its prerequisite ceiling is {_state(node.ceiling)}, so it cannot rise above {_state(pre)}"
        if holders:
            reason += f" — {holders}"
    if mode is FailureMode.OVERLOAD_WASTED:
        return head + f"the turn was overloaded ({_load(rec)}) and {reason}"
    return head + f"the turn was not overloaded ({_load(rec)}), yet {reason}"


def _why_unexplained(node: NodeTurn) -> str:
    pre = int(node.pre)
    if node.quality in (None, _NOT_MENTIONED):
        attempted = node.attempt.value != "none"
        lead = "not mentioned this turn" + (" (the learner attempted it)" if attempted else "")
        return f"{lead}; " + ("already known well" if pre == IUState.KNOWS_WELL else f"stays {_state(pre)}")
    return f"mentioned but not classified this turn; stays {_state(pre)}"
