"""Knowledge states: the ordinal IU state, the per-label state map, initial-state sampling.

Spec §1.1 (labels), §1.4 (stored form), §2 (initial states). A :class:`KnowledgeState` is keyed
by *label* (``"IU3: concept"``) like the reference's stored states, so recorded runs load
unchanged; the rules look labels up through the graph's id↔label map and never parse them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from enum import IntEnum
from typing import Any, NamedTuple

from knowsim_core.engine.config import LEVELS, LevelRatios, RuleParams
from knowsim_core.errors import ConfigError, FormatError, GraphError
from knowsim_core.engine.graph import IUGraph


class IUState(IntEnum):
    """The four ordinal knowledge states (spec conventions). "Known" means ≥ PARTIAL."""

    UNAWARE = 0
    STRUGGLING = 1
    PARTIAL = 2
    KNOWS_WELL = 3

    @property
    def key(self) -> str:
        """The stored name (``partial_understanding`` …)."""
        return _NAMES[self]

    @property
    def short(self) -> str:
        return "USPK"[self]

    @classmethod
    def parse(cls, name: Any) -> "IUState":
        try:
            return _BY_NAME[name]
        except (KeyError, TypeError):
            raise FormatError(
                f"unknown knowledge state {name!r}; expected one of {', '.join(_NAMES)}"
            ) from None


_NAMES = ("unaware", "struggling", "partial_understanding", "knows_well")
_BY_NAME = {n: IUState(i) for i, n in enumerate(_NAMES)}
STATES: tuple[IUState, ...] = tuple(IUState)  # STATES[i] is IUState(i) without the enum call
STATE_NAMES: tuple[str, ...] = _NAMES


class LabelState(NamedTuple):
    """The stored state of one IU label.

    ``carry`` is ``fractional_progress`` (None: absent or null, read as 0.0); ``evidence`` the
    extractor's rationale written by the last update (None: not written yet).
    """

    state: IUState
    carry: float | None = None
    evidence: str | None = None


class KnowledgeState(Mapping[str, LabelState]):
    """An immutable, ordered map label → :class:`LabelState` (key order is kept, spec §4.10)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, LabelState] | None = None):
        self._items: dict[str, LabelState] = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, label: str) -> LabelState:
        return self._items[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # dict-speed overrides of the Mapping mixins (the rules call these in their hot loop)
    def get(self, label: str, default: LabelState | None = None) -> LabelState | None:
        return self._items.get(label, default)

    def __contains__(self, label: object) -> bool:
        return label in self._items

    def items(self):
        return self._items.items()

    def values(self):
        return self._items.values()

    def keys(self):
        return self._items.keys()

    def as_dict(self) -> dict[str, LabelState]:
        """The underlying label → entry dict, without a copy (read it, never mutate it)."""
        return self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KnowledgeState):
            return list(self._items.items()) == list(other._items.items())
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._items.items()))
        return self._hash

    def __repr__(self) -> str:
        inner = ", ".join(f"{k.split(':')[0]}={v.state.short}" for k, v in self._items.items())
        return f"KnowledgeState({inner})"

    def state_of(self, label: str) -> IUState:
        """The state of a label; a label that is absent is unaware (spec §1.1)."""
        entry = self._items.get(label)
        return IUState.UNAWARE if entry is None else entry.state

    def counts(self) -> dict[IUState, int]:
        out = {s: 0 for s in IUState}
        for entry in self._items.values():
            out[entry.state] += 1
        return out

    # -------------------------------------------------------------- JSON (reference form)
    def to_data(self, *, full: bool = True) -> dict[str, dict[str, Any]]:
        """``{label: {"state", "evidence", "fractional_progress"}}``; absent parts are omitted."""
        out: dict[str, dict[str, Any]] = {}
        for label, e in self._items.items():
            d: dict[str, Any] = {"state": e.state.key}
            if full and e.evidence is not None:
                d["evidence"] = e.evidence
            if full and e.carry is not None:
                d["fractional_progress"] = e.carry
            out[label] = d
        return out

    @classmethod
    def from_data(cls, data: Any) -> "KnowledgeState":
        """Read ``{label: {"state": name, ...}}`` (or ``{label: name}``).

        Raises:
            FormatError: naming the label whose state is unreadable.
        """
        if not isinstance(data, dict):
            raise FormatError(f"a knowledge state must be an object of labels, got {type(data).__name__}")
        items: dict[str, LabelState] = {}
        for label, v in data.items():
            raw = v.get("state") if isinstance(v, dict) else v
            try:
                st = IUState.parse(raw)
            except FormatError as exc:
                raise FormatError(f"state of {label!r}: {exc}") from None
            carry = v.get("fractional_progress") if isinstance(v, dict) else None
            evidence = v.get("evidence") if isinstance(v, dict) else None
            items[label] = LabelState(st, None if carry is None else float(carry), evidence)
        return cls(items)

    @classmethod
    def uniform(cls, graph: IUGraph, state: IUState = IUState.UNAWARE) -> "KnowledgeState":
        return cls({lab: LabelState(state) for lab in graph.index.labels})

    @classmethod
    def from_ids(cls, graph: IUGraph, states: Mapping[str, IUState]) -> "KnowledgeState":
        """Build from ``{id: state}``; ids not given are unaware."""
        unknown = [i for i in states if i not in graph.index.label_of]
        if unknown:
            raise GraphError(f"unknown IU ids {unknown}; this graph has {list(graph.index.ids)}")
        return cls(
            {graph.index.label_of[i]: LabelState(IUState(states.get(i, 0))) for i in graph.index.ids}
        )


# ---------------------------------------------------------------------- initial states
def _level_ratios(params: RuleParams, level: str) -> LevelRatios:
    if level not in params.init_ratios:
        raise ConfigError(f"unknown knowledge level {level!r}; expected one of {', '.join(LEVELS)}")
    return params.init_ratios[level]


def sample_initial_state(
    graph: IUGraph, ratios: LevelRatios, rng: random.Random
) -> KnowledgeState:
    """The reference's seeded 4-state sampler (spec §2.2), consuming ``rng``.

    One ``random.Random(seed)`` stream is shared by consecutive items, exactly like a reference
    runner invocation; pass a fresh ``Random(seed)`` for a single item.

    Raises:
        GraphError: when no IU can become known or partial (a graph without roots); the
            reference would pick an arbitrary node there, Studio refuses instead.
    """
    graph.require_runnable()
    idx = graph.index
    n = len(idx.ids)
    prereqs = idx.prereqs

    target_k = max(1, min(n - 1, round(ratios.known * n)))
    candidates = list(idx.topo_order)
    rng.shuffle(candidates)
    known: set[str] = set()
    while len(known) < target_k:
        added = False
        remaining: list[str] = []
        for v in candidates:
            if len(known) < target_k and all(p in known for p in prereqs.get(v, ())):
                known.add(v)
                added = True
            else:
                remaining.append(v)
        candidates = remaining
        if not added:
            break

    remaining_n = n - len(known)
    target_p = max(1, min(remaining_n - 1, round(ratios.partial * n))) if remaining_n > 1 else 0
    pool = sorted(v for v in idx.ids if v not in known)
    rng.shuffle(pool)
    partial: list[str] = []
    for v in pool:
        if len(partial) >= target_p:
            break
        ps = prereqs.get(v, ())
        if not ps or any(p in known for p in ps):
            partial.append(v)

    target_s = round(ratios.struggling * n)
    chosen = known | set(partial)
    rest = sorted(v for v in idx.ids if v not in chosen)
    exposed = [v for v in rest if any(p in chosen for p in prereqs.get(v, ()))]
    isolated = [v for v in rest if v not in exposed]
    rng.shuffle(exposed)
    rng.shuffle(isolated)
    band = set((exposed + isolated)[:target_s])

    if not known and not partial:
        raise GraphError(
            "no IU can start as known or partial (the graph has no root IU without prerequisites); "
            "fix the graph's cycles or set the initial state by hand"
        )

    states: dict[str, IUState] = {}
    for v in idx.ids:
        if v in known:
            states[v] = IUState.KNOWS_WELL
        elif v in partial:
            ps = prereqs.get(v, ())
            n_known = sum(1 for p in ps if p in known)
            half = ps and n_known * 2 >= len(ps)
            states[v] = IUState.PARTIAL if half else IUState.STRUGGLING
        elif v in band:
            states[v] = IUState.STRUGGLING
        else:
            states[v] = IUState.UNAWARE
    return KnowledgeState.from_ids(graph, states)


def deterministic_initial_state(graph: IUGraph, ratios: LevelRatios) -> KnowledgeState:
    """The paper's deterministic variant (spec §2.1).

    Counts by rounding; known to the shallowest IUs in topological order, then partial, then
    struggling; ties by graph order.
    """
    graph.require_runnable()
    idx = graph.index
    n = len(idx.ids)
    order = sorted(idx.ids, key=lambda v: (idx.depth[v], idx.index_of[v]))
    n_k = round(ratios.known * n)
    n_p = round(ratios.partial * n)
    n_s = round(ratios.struggling * n)
    states: dict[str, IUState] = {}
    for i, v in enumerate(order):
        if i < n_k:
            states[v] = IUState.KNOWS_WELL
        elif i < n_k + n_p:
            states[v] = IUState.PARTIAL
        elif i < n_k + n_p + n_s:
            states[v] = IUState.STRUGGLING
        else:
            states[v] = IUState.UNAWARE
    return KnowledgeState.from_ids(graph, states)


def initial_state(
    graph: IUGraph, level: str, params: RuleParams, *, seed: int
) -> KnowledgeState:
    """s_0 for one item and level, by the params' init method (fresh seeded stream)."""
    ratios = _level_ratios(params, level)
    if params.init_method == "deterministic":
        return deterministic_initial_state(graph, ratios)
    return sample_initial_state(graph, ratios, random.Random(seed))
