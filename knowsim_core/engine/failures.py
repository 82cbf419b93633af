"""The five failure modes of every explained IU in every turn (spec §7, paper App. G).

Evaluated per distinct mentioned node id (shallow or well_explained; unknown ids skipped), in
order, first match wins: REDUNDANT, PREREQ-BLOCKED, EFFECTIVE, OVERLOAD-WASTED, UNDER-ABSORBED.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable, Mapping

# the modes' keys, order and spelling are the vocabulary's (one owner for every view); the rule is here
from knowsim_core.vocab import FAILURE_ORDER, FailureMode

if TYPE_CHECKING:
    from knowsim_core.engine.signals import IUSignal

_P, _K = 2, 3


def classify_one(pre: int, ceiling_pre: int, post: int, overload: bool) -> FailureMode:
    """The failure mode of one explained IU, from its pre/post state and pre-turn ceiling."""
    if pre == _K:
        return FailureMode.REDUNDANT
    if ceiling_pre < _P and post == pre:
        return FailureMode.PREREQ_BLOCKED
    if post > pre:
        return FailureMode.EFFECTIVE
    if overload:
        return FailureMode.OVERLOAD_WASTED
    return FailureMode.UNDER_ABSORBED


def classify(
    mentioned: Iterable["IUSignal"],
    pre: Mapping[str, int],
    post: Mapping[str, int],
    ceiling_pre: Mapping[str, int],
    overload: bool,
) -> tuple[tuple[str, FailureMode], ...]:
    """Modes for the distinct node ids of the explained list E_t, in first-mention order."""
    out: list[tuple[str, FailureMode]] = []
    seen: set[str] = set()
    for s in mentioned:
        v = s.id
        if v in seen or v not in post:
            continue
        seen.add(v)
        out.append((v, classify_one(pre[v], ceiling_pre[v], post[v], overload)))
    return tuple(out)


def count_modes(modes: Iterable[tuple[str, FailureMode]]) -> dict[FailureMode, int]:
    """Counts of each mode, every mode present (zeros included), in taxonomy order."""
    c = Counter(m for _, m in modes)
    return {m: c.get(m, 0) for m in FAILURE_ORDER}
