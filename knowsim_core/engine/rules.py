"""The per-turn state update (spec §4) — a pure function of its arguments.

:func:`apply_turn` takes the graph, the state entering the turn, the extractor's normalised
entries, τ and the rule parameters, and returns a :class:`TurnOutcome` with the new state and
everything a viewer needs to explain it. Floats are accumulated with explicit left-to-right loops
in the orders the spec gives (§4.12): the recordings are reproduced bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

from knowsim_core.engine.config import RuleParams
from knowsim_core.engine.failures import FailureMode, classify
from knowsim_core.engine.graph import IUGraph, UpdateStep
from knowsim_core.engine.signals import AttemptType, IUSignal, TeachingQuality
from knowsim_core.engine.state import STATES, IUState, KnowledgeState, LabelState

_U, _S, _P, _K = 0, 1, 2, 3
_NOT_MENTIONED = TeachingQuality.NOT_MENTIONED.value
_SHALLOW = TeachingQuality.SHALLOW.value
_WELL = TeachingQuality.WELL_EXPLAINED.value
_REASONING = AttemptType.REASONING
_CEILING_OF_MIN = (_S, _S, _P, _K)  # ceiling from the weakest prerequisite's state (§4.7)
_ARTICULATION = AttemptType.ARTICULATION


class NodeTurn(NamedTuple):
    """What happened to one IU in one turn (node order)."""

    id: str
    label: str
    pre: IUState
    ceiling_pre: IUState  # min rule on pre-turn states: what the metrics use
    ceiling: IUState  # the ceiling the update used (live, cascading, under paper-final)
    quality: str | None  # teaching quality of its entry ("not_mentioned" without one)
    attempt: AttemptType
    proposed: IUState
    efficiency: float | None  # e of §4.9 when a dropoff applied, else None
    prior_carry: float
    post: IUState
    carry: float


@dataclass(frozen=True, slots=True)
class TurnQuantities:
    """The per-turn quantities of spec §4.11 (names as in the reference's turn metrics)."""

    comprehension_load: float
    attempt_load: float
    effective_load: float
    overload_threshold: int
    overload: bool
    efficiency: float  # η_t
    n_keep: int
    n_upward_transitions: int
    absorbed_gain: float
    ic_numerator: int
    ic_denominator: int
    zpd_size: int
    new_ius: int
    disallowed: int
    perceived_overload_turn: float
    familiarity_term: float
    novelty_term: float
    engagement: float
    absorbed_numerator: int  # strict |A_t| of eq. 2 (update's minimum-rule ceiling)
    absorbed_numerator_code: int  # the reference's newer counter ("any prerequisite at P")
    overall_density: float
    articulation_mode: str
    gap_sum: float
    explained: tuple[str, ...]  # labels taught well_explained this turn, in update order

    @property
    def information_calibration_turn(self) -> float:
        return self.ic_numerator / self.ic_denominator if self.ic_denominator else 0.0


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    state: KnowledgeState
    nodes: tuple[NodeTurn, ...]
    quantities: TurnQuantities
    modes: tuple[tuple[str, FailureMode], ...]  # per distinct mentioned node id, first-mention order


def helper_ceiling_of(states: Sequence[int]) -> int:
    """The reference's newer DC-helper ceiling (spec §6.2): min if ≥ P, else P if any is P."""
    if not states:
        return _K
    low = min(states)
    if low >= _P:
        return low
    return _P if _P in states else _S


def articulation_mode(density: float) -> str:
    """Explicit / Vague / Compliant from the post-update density (spec §4.11)."""
    if density >= 0.6:
        return "Explicit"
    if density >= 0.3:
        return "Vague"
    return "Compliant"


def overall_density(graph: IUGraph, state_by_id: dict[str, int]) -> float:
    """Mean share of known neighbours per node (spec §4.11); 1.0 for an empty graph."""
    idx = graph.index
    if not idx.ids:
        return 1.0
    known = {v for v, s in state_by_id.items() if s >= _P}
    total = 0.0
    for neigh in idx.neighbor_lists:  # node order: the float sum is sequential as in the reference
        total += len(neigh & known) / len(neigh) if neigh else 1.0
    return total / len(idx.ids)


def efficiency(load: float, tau: int, params: RuleParams) -> float:
    """Turn efficiency η (spec §4.4): 1 up to τ, then a softened sigmoid."""
    if load <= tau:
        return 1.0
    x = (load - tau) / (tau * params.sigmoid_softening)
    return 1.0 / (1.0 + x**params.sigmoid_power)


@dataclass(frozen=True, slots=True)
class TurnLoad:
    """The load side of one turn (spec §4.3–§4.5): what the update and the quantities both use."""

    comprehension: float  # Σ mention weights (int 0 when nothing is mentioned, as the reference)
    attempt: float  # Σ reasoning / articulation weights
    tau: int  # overload threshold τ
    eta: float  # turn efficiency η (§4.4)
    n_keep: int  # mentioned IUs that keep η under the hinge (§4.5)

    @property
    def total(self) -> float:
        return self.comprehension + self.attempt

    @property
    def overload(self) -> bool:
        return self.total >= self.tau


def apply_turn(
    graph: IUGraph,
    pre: KnowledgeState,
    signals: Sequence[IUSignal],
    *,
    tau: int,
    params: RuleParams,
) -> TurnOutcome:
    """One turn of the KnowSim update (spec §4.3–§4.11, §7), in four steps: the states entering the
    turn, the turn's load and efficiency, the per-IU update in depth order, and the quantities."""
    idx = graph.index
    pre_items = pre.as_dict()
    pre_state, prior_carry = _entering_states(graph, pre_items)
    mentioned, signal_of = _mentions(signals)
    load = _turn_load(graph, mentioned, signals, pre_state, tau=tau, params=params)
    hinge = _hinge(graph, mentioned, pre_state, load, params)

    # §4.6–§4.10 update in depth order with the cascading ceiling
    post_state = dict(pre_state)  # filled in as the update goes: the "live" states of the cascade
    ceiling_pre: dict[str, int] = {}
    out: dict[str, LabelState] = dict(pre_items)
    by_position: list[NodeTurn | None] = [None] * len(idx.ids)
    live_ceiling = params.ceiling_source == "live"
    for step in idx.plan:
        signal = signal_of.get(step.id)
        node, ceiling_pre[step.id], post_state[step.id] = _update_node(
            step, pre_state, post_state, prior_carry, signal, load, hinge, params, live_ceiling)
        reasoning = signal.reasoning if signal is not None else None
        out[step.label] = LabelState(node.post, node.carry, reasoning or "")
        by_position[step.position] = node

    quantities = _quantities(graph, mentioned=mentioned, signal_of=signal_of, pre_state=pre_state,
                             post_state=post_state, ceiling_pre=ceiling_pre, load=load)
    modes = classify(mentioned, pre_state, post_state, ceiling_pre, load.overload)
    return TurnOutcome(KnowledgeState(out), tuple(by_position), quantities, modes)


def _entering_states(graph: IUGraph, pre_items: dict[str, LabelState]) -> tuple[dict[str, int], dict[str, float]]:
    """State (0-3) and carried-over fraction of every IU entering the turn, by IU id (an IU the
    state does not list is unaware with no carry)."""
    state: dict[str, int] = {}
    carry: dict[str, float] = {}
    for iu_id, label in zip(graph.index.ids, graph.index.labels):
        entry = pre_items.get(label)
        if entry is None:
            state[iu_id], carry[iu_id] = _U, 0.0
        else:
            state[iu_id] = int(entry.state)
            carry[iu_id] = 0.0 if entry.carry is None else entry.carry
    return state, carry


def _mentions(signals: Sequence[IUSignal]) -> tuple[list[IUSignal], dict[str, IUSignal]]:
    """The signals that mention an IU (in signal order, repeats kept) and the last signal per IU id."""
    mentioned: list[IUSignal] = []
    signal_of: dict[str, IUSignal] = {}
    for signal in signals:
        if signal.id is not None:
            signal_of[signal.id] = signal
            if signal.teaching_quality != _NOT_MENTIONED:
                mentioned.append(signal)
    return mentioned, signal_of


def _turn_load(graph: IUGraph, mentioned: list[IUSignal], signals: Sequence[IUSignal], pre_state: dict[str, int],
               *, tau: int, params: RuleParams) -> TurnLoad:
    """§4.3 load — advanceable mentions, then review mentions, then every attempt (the float sums
    in that order) — §4.4 efficiency and §4.5's n_keep."""
    mention_weight = params.mention_weights
    comprehension = 0
    for signal in mentioned:
        state = pre_state.get(signal.id, _U)
        if state != _K:
            comprehension += mention_weight[state]
    for signal in mentioned:
        if pre_state.get(signal.id, _U) == _K:
            comprehension += mention_weight[_K]
    attempt = 0.0
    for signal in signals:
        if signal.attempt is _REASONING:
            attempt += params.reasoning_weights[pre_state.get(signal.id, _U) if signal.id is not None else _U]
        elif signal.attempt is _ARTICULATION:
            attempt += params.articulation_weight
    return TurnLoad(comprehension=comprehension, attempt=attempt, tau=tau,
                    eta=efficiency(comprehension + attempt, tau, params), n_keep=params.n_keep(len(graph.index.ids)))


def load_parts(signals: Sequence[IUSignal], pre_state: dict[str, int], params: RuleParams) -> dict[str | None, float]:
    """Each IU's part of a turn's load (§4.3): the weights of its mentions and of its attempts —
    the terms :func:`_turn_load` adds up, grouped by IU id (``None``: attempts the extractor tied
    to no IU). ``pre_state``: the states entering the turn, by IU id. The parts sum to the turn's
    load up to float rounding (the turn adds the terms in its own order)."""
    parts: dict[str | None, float] = {}
    for signal in signals:
        state = pre_state.get(signal.id, _U) if signal.id is not None else _U
        part = params.mention_weights[state] if signal.id is not None and signal.teaching_quality != _NOT_MENTIONED \
            else 0.0
        if signal.attempt is _REASONING:
            part += params.reasoning_weights[state]
        elif signal.attempt is _ARTICULATION:
            part += params.articulation_weight
        if part:
            parts[signal.id] = parts.get(signal.id, 0.0) + part
    return parts


def _hinge(graph: IUGraph, mentioned: list[IUSignal], pre_state: dict[str, int], load: TurnLoad,
           params: RuleParams) -> dict[str, float]:
    """§4.5 hinge: the neediest ``n_keep`` mentioned IUs keep η, the rest get the tail share (empty
    when η is 1 or the hinge is off)."""
    if not (load.eta < 1.0 and params.hinge):
        return {}
    depth, index_of, weight = graph.index.depth, graph.index.index_of, params.mention_weights
    ranked = sorted(
        mentioned,
        key=lambda signal: (-weight[pre_state.get(signal.id, _U)], depth.get(signal.id, 0), index_of.get(signal.id, 0)),
    )
    return {signal.id: load.eta * (1.0 if rank < load.n_keep else params.hinge_tail)
            for rank, signal in enumerate(ranked)}


def _update_node(step: UpdateStep, pre_state: dict[str, int], live: dict[str, int], prior_carry: dict[str, float],
                 signal: IUSignal | None, load: TurnLoad, hinge: dict[str, float], params: RuleParams,
                 live_ceiling: bool) -> tuple[NodeTurn, int, int]:
    """§4.6–§4.10 for one IU: its ceiling (minimum rule, §4.7), the proposed step (§4.8), the
    efficiency dropoff with carry (§4.9) and the no-regression guard (§4.10). ``live`` holds the
    states updated so far this turn (the cascading ceiling reads it; ``live_ceiling``: the rules
    read it, ``params.ceiling_source == "live"``). Returns the node with its pre-turn ceiling and
    post state as ints (what the cascade and the quantities read)."""
    iu_id, prereqs = step.id, step.prerequisites
    before = pre_state[iu_id]
    if step.dangling:  # a prerequisite that is no node is unaware
        ceiling_pre = ceiling = _S
    elif not prereqs:
        ceiling_pre = ceiling = _K
    else:  # §4.7 minimum rule: the weakest prerequisite, before the turn and (cascading) now
        ceiling_pre = _CEILING_OF_MIN[min([pre_state[p] for p in prereqs])]
        ceiling = _CEILING_OF_MIN[min([live[p] for p in prereqs])] if live_ceiling else ceiling_pre
    quality = signal.teaching_quality if signal is not None else _NOT_MENTIONED
    if quality == _NOT_MENTIONED or (quality == _SHALLOW and before != _U):
        proposed = before
    else:
        proposed = max(before, min(before + 1, ceiling))
    prior = prior_carry[iu_id]
    share = None
    if load.eta < 1.0 and proposed > before:
        share = hinge.get(iu_id, load.eta)
        total = prior + (proposed - before) * share
        steps = int(total)
        after = min(before + steps, _K)
        carry = max(0.0, total - steps)
        if params.reset_carry_on_transition and steps > 0:
            carry = 0.0
    else:
        after, carry = proposed, 0.0
    if after < before:  # §4.10 guard; unreachable under §4.8
        after = before
    # positional, in NodeTurn's field order (a keyword NamedTuple call costs twice as much, 34,000 a matrix)
    node = tuple.__new__(NodeTurn, (iu_id, step.label, STATES[before], STATES[ceiling_pre], STATES[ceiling], quality,
                      signal.attempt if signal is not None else _NO_ATTEMPT, STATES[proposed], share, prior,
                      STATES[after], carry))
    return node, ceiling_pre, after


_NO_ATTEMPT = AttemptType.NONE


def _quantities(
    graph: IUGraph,
    *,
    mentioned: list[IUSignal],
    signal_of: dict[str, IUSignal],
    pre_state: dict[str, int],
    post_state: dict[str, int],
    ceiling_pre: dict[str, int],
    load: TurnLoad,
) -> TurnQuantities:
    """The per-turn quantities of §4.11 from the states before and after the turn (keyword-only:
    three state maps of the same type cannot be swapped silently)."""
    idx = graph.index
    allowed = {signal.id for signal in mentioned}
    n_up = zpd = 0
    gain = 0.0
    for iu_id in idx.ids:
        before = pre_state[iu_id]
        if before != _K and ceiling_pre[iu_id] >= _P:
            zpd += 1
        if iu_id in allowed and post_state[iu_id] > before:
            n_up += 1
            gain += post_state[iu_id] - before
    prereqs = idx.prereqs
    ic_num = new_ius = disallowed = absorbed = absorbed_code = familiar = 0
    for signal in mentioned:
        iu_id = signal.id
        before = pre_state.get(iu_id, _U)
        ceiling = ceiling_pre.get(iu_id, _K)
        rose = iu_id in post_state and post_state[iu_id] > before  # only graph ids have a post state
        if ceiling >= _P and before != _K:
            ic_num += 1
            if rose:
                absorbed += 1
        if rose and helper_ceiling_of([pre_state.get(p, _U) for p in prereqs.get(iu_id, ())]) >= _P:
            absorbed_code += 1
        if before <= _S:
            new_ius += 1
            if ceiling < _P:
                disallowed += 1
        elif iu_id in post_state:  # before >= _P
            familiar += 1
    novel = 0
    for iu_id in dict.fromkeys(signal.id for signal in mentioned):
        if iu_id in post_state and pre_state[iu_id] == _U:
            after = post_state[iu_id]
            if after in (_S, _P) or (after == _K and signal_of[iu_id].attempt is _REASONING):
                novel += 1
    n_mentions = len(mentioned)
    familiarity = familiar / n_mentions if n_mentions else 0.0
    novelty = novel / n_mentions if n_mentions else 0.0
    density = overall_density(graph, post_state)
    explained = tuple(
        idx.label_of[iu_id]
        for iu_id in idx.update_order
        if iu_id in signal_of and signal_of[iu_id].teaching_quality == _WELL
    )
    total = load.total
    return TurnQuantities(
        comprehension_load=load.comprehension,
        attempt_load=load.attempt,
        effective_load=total,
        overload_threshold=load.tau,
        overload=load.overload,
        efficiency=load.eta,
        n_keep=load.n_keep,
        n_upward_transitions=n_up,
        absorbed_gain=gain,
        ic_numerator=ic_num,
        ic_denominator=n_mentions,
        zpd_size=zpd,
        new_ius=new_ius,
        disallowed=disallowed,
        perceived_overload_turn=max(0, total - load.tau) / total if total else 0.0,
        familiarity_term=familiarity,
        novelty_term=novelty,
        engagement=familiarity * novelty if n_mentions else 0.0,
        absorbed_numerator=absorbed,
        absorbed_numerator_code=absorbed_code,
        overall_density=density,
        articulation_mode=articulation_mode(density),
        gap_sum=_gap_sum(graph, allowed, post_state),
        explained=explained,
    )


def _gap_sum(graph: IUGraph, mentioned_ids: set[str], post_s: dict[str, int]) -> float:
    """Σ (h + 3 − a) over mentioned IUs still U/S: hops h to the nearest known ancestor of state a.

    "Nearest" is the first known ancestor a breadth-first search over the prerequisites reaches
    (edge order breaks ties); with none known, h = a = 0.
    """
    ancestors = graph.index.ancestors
    gap = 0
    for v in graph.index.ids:
        if v not in mentioned_ids or post_s[v] > _S:
            continue
        hops = anc = 0
        for p, d in ancestors[v]:
            a = post_s.get(p, _U)
            if a >= _P:
                hops, anc = d, a
                break
        gap += float(hops + 3 - anc)
    return gap
