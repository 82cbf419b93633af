"""Aggregate metrics over a trajectory (spec §6).

:func:`summary` gives Studio's three headline numbers — KG (eq. 1), DC (eq. 2, strict) and
CO (eq. 3). :func:`reference_metrics` gives the reference code's ``metrics`` dict, field for field,
so a replay can be checked against a recording (legacy proxy for ``absorbed_ic_*`` by default,
as in every shipped recording).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from knowsim_core.engine.rules import TurnQuantities
from knowsim_core.engine.state import IUState, KnowledgeState

REFERENCE_RUN_SOURCE = "reference-run"  # meta "source" of a run replayed from a reference recording
PROXY_DC_REASON = (
    "the recording's DC uses the reference code's legacy proxy for absorbed IC, "
    "min(IUs explained in the ZPD, upward transitions) per turn, which overcounts; "
    "Studio's DC counts an explained IU only if it rose within its prerequisite ceiling (strict, spec §6.2)"
)


# What each headline number means, its scale and a worked line: the Simulate glossary, the replay
# and docs/reference/metrics.md say it in these words (a test holds the page to them).
METRIC_GLOSSARY: dict[str, str] = {
    "KG": "knowledge gain (paper eq. 1): the state steps the learner climbed since the start, summed over every "
          "IU — a whole number from 0 up to the steps the start left to climb (at most 3 per IU). It counts steps, "
          "not IUs known: KG 14 = 14 state steps, which on a 14-IU graph can leave only 2 of the 14 known well "
          "(most IUs one step up, to struggling or partial).",
    "DC": "delivery calibration (paper eq. 2): did the replies teach what the learner could take in? The F1 of "
          "precision (IUs absorbed / IUs taught) and recall (IUs absorbed / IUs teachable), each summed over the "
          "turns; from 0 to 1, higher is better. An IU is teachable in a turn when it is not yet known well and its "
          "ceiling is at least partial; absorbed when it was taught while teachable and rose. DC 0.50 = e.g. 10 "
          "absorbed of 20 taught and of 20 teachable.",
    "CO": "cognitive overload (paper eq. 3): the mean over turns of min(1, load / τ); from 0 to 1, lower is "
          "better, 1 = every turn at or over capacity. CO 0.75 = on average a turn carried three quarters of "
          "what the learner can take in at once.",
}


def kg_line(s0: KnowledgeState, s_t: KnowledgeState) -> str:
    """KG worked out for one run: ``KG 5 = 5 state steps over 17 IUs (at most 40 from this start);
    3 of 17 known well now, 1 at the start``."""
    labels = list(s0)
    gain = raw_progress(s0, s_t)
    room = sum(3 - int(s0.state_of(lab)) for lab in labels)
    well = sum(1 for lab in labels if s_t.state_of(lab) == IUState.KNOWS_WELL)
    well0 = sum(1 for lab in labels if s0.state_of(lab) == IUState.KNOWS_WELL)
    steps = "state step" if gain == 1 else "state steps"
    return (f"KG {gain} = {gain} {steps} over {len(labels)} IUs (at most {room} from this start); "
            f"{well} of {len(labels)} known well now, {well0} at the start")


@dataclass(frozen=True, slots=True)
class Metrics:
    knowledge_gain: int
    delivery_calibration: float
    cognitive_overload: float
    turns: int

    def to_data(self) -> dict[str, Any]:
        return {
            "knowledge_gain": self.knowledge_gain,
            "delivery_calibration": self.delivery_calibration,
            "cognitive_overload": self.cognitive_overload,
            "turns": self.turns,
        }


def _seq_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def _mean(values: Sequence[float]) -> float | None:
    return _seq_sum(values) / len(values) if values else None


def _var(values: Sequence[float]) -> float | None:
    if not values:
        return None
    m = _seq_sum(values) / len(values)
    return _seq_sum((v - m) ** 2 for v in values) / len(values)


def raw_progress(s0: KnowledgeState, s_t: KnowledgeState) -> int:
    """KG of paper eq. 1: Σ over the labels of s_0 of max(0, s_T − s_0)."""
    return sum(max(0, int(s_t.state_of(lab)) - int(e.state)) for lab, e in s0.items())


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def delivery_calibration(turns: Sequence[TurnQuantities], *, numerators: Sequence[int] | None = None) -> float:
    """DC of eq. 2 (strict |A_t| unless other per-turn numerators are given)."""
    nums = [q.absorbed_numerator for q in turns] if numerators is None else numerators
    a = _seq_sum(nums)
    den = _seq_sum(q.ic_denominator for q in turns)
    zpd = _seq_sum(q.zpd_size for q in turns)
    p = a / den if den else 0.0
    r = a / zpd if zpd else 1.0
    return _f1(p, r)


def legacy_proxy_numerators(turns: Sequence[TurnQuantities]) -> list[int]:
    """The reference code's per-turn |A_t| when a turn record lacks it: min(ic_numerator, upward)."""
    return [min(q.ic_numerator, q.n_upward_transitions) for q in turns]


def legacy_proxy_dc(turns: Sequence[TurnQuantities]) -> float:
    """DC as the shipped recordings report it (``absorbed_ic_f1`` with the legacy proxy, spec §6.2)."""
    return delivery_calibration(turns, numerators=legacy_proxy_numerators(turns))


def cognitive_overload(turns: Sequence[TurnQuantities]) -> float:
    """CO of eq. 3: mean of min(1, L_t/τ)."""
    if not turns:
        return 0.0
    return _seq_sum(min(1.0, q.effective_load / float(q.overload_threshold)) for q in turns) / len(turns)


def summary(s0: KnowledgeState, s_t: KnowledgeState, turns: Sequence[TurnQuantities]) -> Metrics:
    return Metrics(
        knowledge_gain=raw_progress(s0, s_t),
        delivery_calibration=delivery_calibration(turns),
        cognitive_overload=cognitive_overload(turns),
        turns=len(turns),
    )


def reference_metrics(
    s0: KnowledgeState,
    s_t: KnowledgeState,
    turns: Sequence[TurnQuantities],
    *,
    legacy_proxy: bool = True,
) -> dict[str, Any]:
    """The reference code's aggregate ``metrics`` dict (spec §6.1–§6.4)."""
    gain = _seq_sum(q.absorbed_gain for q in turns)
    d = sum(3 - int(e.state) for e in s0.values() if e.state != IUState.KNOWS_WELL)
    raw = raw_progress(s0, s_t)
    num = _seq_sum(float(q.ic_numerator) for q in turns)
    den = _seq_sum(float(q.ic_denominator) for q in turns)
    zpd = _seq_sum(float(q.zpd_size) for q in turns)
    ic_p = num / den if den else 0.0
    ic_r = num / zpd if zpd else 1.0
    if legacy_proxy:
        a_nums = legacy_proxy_numerators(turns)
    else:
        a_nums = [q.absorbed_numerator_code for q in turns]
    a_total = sum(a_nums)
    a_p = a_total / den if den else 0.0
    a_r = a_total / zpd if zpd else 1.0
    po = [q.perceived_overload_turn for q in turns]
    po_mean = _mean(po) or 0.0
    eng = [q.engagement for q in turns]
    eng_mean = _mean(eng) or 0.0
    inverse = max(0.0, 1 - po_mean)
    series = {
        "engagement": eng,
        "information_calibration_turn": [q.information_calibration_turn for q in turns],
        "perceived_overload_turn": po,
        "familiarity_term": [q.familiarity_term for q in turns],
        "novelty_term": [q.novelty_term for q in turns],
    }
    out: dict[str, Any] = {
        "knowledge_gain": gain,
        "normalized_knowledge_gain": gain / d if d else 0,
        "normalized_knowledge_gain_3N": raw / (3 * len(s0)) if len(s0) else 0,
        "raw_state_progress": raw,
        "information_calibration": ic_p,
        "perceived_overload": po_mean,
        "engagement": eng_mean,
        "learning_experience": (inverse + ic_p + eng_mean) / 3,
        "overload_inverse": inverse,
        "ic_numerator_total": num,
        "ic_denominator_total": den,
        "zpd_size_total": zpd,
        "ic_precision": ic_p,
        "ic_recall": ic_r,
        "ic_f1": _f1(ic_p, ic_r),
        "perceived_overload_capacity": cognitive_overload(turns),
        "absorbed_ic_numerator_total": a_total,
        "absorbed_ic_precision": a_p,
        "absorbed_ic_recall": a_r,
        "absorbed_ic_f1": _f1(a_p, a_r),
        "absorbed_ic_uses_legacy_proxy": legacy_proxy,
        "new_ius_total": _seq_sum(float(q.new_ius) for q in turns),
        "disallowed_total": _seq_sum(float(q.disallowed) for q in turns),
    }
    for name, values in series.items():
        out[f"{name}_mean"] = _mean(values)
        out[f"{name}_var"] = _var(values)
    return out
