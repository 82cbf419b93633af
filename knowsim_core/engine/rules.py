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
from knowsim_core.engine.graph import IUGraph
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


def apply_turn(
    graph: IUGraph,
    pre: KnowledgeState,
    signals: Sequence[IUSignal],
    *,
    tau: int,
    params: RuleParams,
) -> TurnOutcome:
    """One turn of the KnowSim update (spec §4.3–§4.11, §7)."""
    idx = graph.index
    ws, wr, wa = params.mention_weights, params.reasoning_weights, params.articulation_weight

    pre_items = pre.as_dict()
    pre_s: dict[str, int] = {}
    prior_carry: dict[str, float] = {}
    for v, label in zip(idx.ids, idx.labels):
        entry = pre_items.get(label)
        if entry is None:
            pre_s[v], prior_carry[v] = _U, 0.0
        else:
            pre_s[v] = int(entry.state)
            prior_carry[v] = 0.0 if entry.carry is None else entry.carry

    mentioned: list[IUSignal] = []
    by_id: dict[str, IUSignal] = {}
    for s in signals:
        if s.id is not None:
            by_id[s.id] = s
            if s.teaching_quality != _NOT_MENTIONED:
                mentioned.append(s)

    # §4.3 load: advanceable mentions, then review mentions, then every attempt
    comprehension = 0
    for s in mentioned:
        st = pre_s.get(s.id, _U)
        if st != _K:
            comprehension += ws[st]
    for s in mentioned:
        if pre_s.get(s.id, _U) == _K:
            comprehension += ws[_K]
    attempt = 0.0
    for s in signals:
        if s.attempt is _REASONING:
            attempt += wr[pre_s.get(s.id, _U) if s.id is not None else _U]
        elif s.attempt is _ARTICULATION:
            attempt += wa
    load = comprehension + attempt
    overload = load >= tau
    eta = efficiency(load, tau, params)

    # §4.5 hinge: the neediest n_keep mentioned IUs keep η, the rest get the tail share
    n_keep = params.n_keep(len(idx.ids))
    hinge: dict[str, float] = {}
    if eta < 1.0 and params.hinge:
        depth, index_of = idx.depth, idx.index_of
        ranked = sorted(
            mentioned,
            key=lambda s: (-ws[pre_s.get(s.id, _U)], depth.get(s.id, 0), index_of.get(s.id, 0)),
        )
        for r, s in enumerate(ranked):
            hinge[s.id] = eta * (1.0 if r < n_keep else params.hinge_tail)

    # §4.6–§4.10 update in depth order with the cascading ceiling
    live = dict(pre_s)
    pre_turn_ceiling = params.ceiling_source != "live"
    reset_on_step = params.reset_carry_on_transition
    dropoff = eta < 1.0
    out: dict[str, LabelState] = dict(pre_items)
    ceil_pre: dict[str, int] = {}
    by_position: list[NodeTurn | None] = [None] * len(idx.ids)
    for step in idx.plan:
        v, label, prereqs = step.id, step.label, step.prerequisites
        prev = pre_s[v]
        if step.dangling:  # a prerequisite that is no node is unaware
            cp = ceil = _S
        elif not prereqs:
            cp = ceil = _K
        else:  # §4.7 minimum rule: the weakest prerequisite, before the turn and (cascading) now
            cp = _CEILING_OF_MIN[min(pre_s[p] for p in prereqs)]
            ceil = cp if pre_turn_ceiling else _CEILING_OF_MIN[min(live[p] for p in prereqs)]
        ceil_pre[v] = cp
        sig = by_id.get(v)
        tq = sig.teaching_quality if sig is not None else _NOT_MENTIONED
        if tq == _NOT_MENTIONED or (tq == _SHALLOW and prev != _U):
            proposed = prev
        else:
            proposed = max(prev, min(prev + 1, ceil))
        prior = prior_carry[v]
        e = None
        if dropoff and proposed > prev:
            e = hinge.get(v, eta)
            total = prior + (proposed - prev) * e
            steps = int(total)
            new = min(prev + steps, _K)
            carry = max(0.0, total - steps)
            if reset_on_step and steps > 0:
                carry = 0.0
        else:
            new, carry = proposed, 0.0
        if new < prev:  # §4.10 guard; unreachable under §4.8
            new = prev
        live[v] = new
        new_state = STATES[new]
        reasoning = sig.reasoning if sig is not None else None
        out[label] = LabelState(state=new_state, carry=carry, evidence=reasoning or "")
        by_position[step.position] = NodeTurn(
            id=v, label=label, pre=STATES[prev], ceiling_pre=STATES[cp], ceiling=STATES[ceil], quality=tq,
            attempt=sig.attempt if sig is not None else AttemptType.NONE, proposed=STATES[proposed],
            efficiency=e, prior_carry=prior, post=new_state, carry=carry,
        )

    post_state = KnowledgeState(out)
    nodes = tuple(by_position)
    quantities = _quantities(
        graph, mentioned, by_id, pre_s, live, ceil_pre, comprehension, attempt, load, tau,
        overload, eta, n_keep,
    )
    modes = classify(mentioned, pre_s, live, ceil_pre, overload)
    return TurnOutcome(post_state, nodes, quantities, modes)


def _quantities(
    graph: IUGraph,
    mentioned: list[IUSignal],
    by_id: dict[str, IUSignal],
    pre_s: dict[str, int],
    post_s: dict[str, int],
    ceil_pre: dict[str, int],
    comprehension: float,
    attempt: float,
    load: float,
    tau: int,
    overload: bool,
    eta: float,
    n_keep: int,
) -> TurnQuantities:
    idx = graph.index
    allowed = {s.id for s in mentioned}
    n_up = zpd = 0
    gain = 0.0
    for v in idx.ids:
        before = pre_s[v]
        if before != _K and ceil_pre[v] >= _P:
            zpd += 1
        if v in allowed and post_s[v] > before:
            n_up += 1
            gain += post_s[v] - before
    prereqs = idx.prereqs
    ic_num = new_ius = disallowed = absorbed = absorbed_code = familiar = 0
    for s in mentioned:
        v = s.id
        st = pre_s.get(v, _U)
        c = ceil_pre.get(v, _K)
        rose = v in post_s and post_s[v] > st  # only graph ids have a post state
        if c >= _P and st != _K:
            ic_num += 1
            if rose:
                absorbed += 1
        if rose and helper_ceiling_of([pre_s.get(p, _U) for p in prereqs.get(v, ())]) >= _P:
            absorbed_code += 1
        if st <= _S:
            new_ius += 1
            if c < _P:
                disallowed += 1
        elif v in post_s:  # st >= _P
            familiar += 1
    novel = 0
    for v in dict.fromkeys(s.id for s in mentioned):
        if v in post_s and pre_s[v] == _U:
            p = post_s[v]
            if p in (_S, _P) or (p == _K and by_id[v].attempt is _REASONING):
                novel += 1
    n_e = len(mentioned)
    familiarity = familiar / n_e if n_e else 0.0
    novelty = novel / n_e if n_e else 0.0
    density = overall_density(graph, post_s)
    explained = tuple(
        idx.label_of[v]
        for v in idx.update_order
        if v in by_id and by_id[v].teaching_quality == _WELL
    )
    return TurnQuantities(
        comprehension_load=comprehension,
        attempt_load=attempt,
        effective_load=load,
        overload_threshold=tau,
        overload=overload,
        efficiency=eta,
        n_keep=n_keep,
        n_upward_transitions=n_up,
        absorbed_gain=gain,
        ic_numerator=ic_num,
        ic_denominator=n_e,
        zpd_size=zpd,
        new_ius=new_ius,
        disallowed=disallowed,
        perceived_overload_turn=max(0, load - tau) / load if load else 0.0,
        familiarity_term=familiarity,
        novelty_term=novelty,
        engagement=familiarity * novelty if n_e else 0.0,
        absorbed_numerator=absorbed,
        absorbed_numerator_code=absorbed_code,
        overall_density=density,
        articulation_mode=articulation_mode(density),
        gap_sum=_gap_sum(graph, allowed, post_s),
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
