"""How often the paper's LLM-simulated learner attempts an IU in a turn — measured, not chosen.

In the paper's structured recordings (novice, adaptive, gpt-4.1 tutor) the simulated learner
reasons about or restates several IUs in most turns, and the extractor labels each such IU's entry
``reasoning`` or ``articulation`` (spec §3.1); those entries are what make the paper's attempt
load (spec §4.3). Real people do this far less. ``offline/knowsim`` stands in for the
paper's learner: each turn it draws, for every IU, whether it attempts it, from the rates in
:data:`RATES_BY_DOMAIN` — one table per domain, by the IU's pre-turn state and by whether the tutor
told the learner about it (in its last reply, only earlier, or never), with no per-question constant.

Each domain's table is measured by :func:`measure_rates` on that domain's structured recordings in the
reference folder's ``examples/`` (MathQA: math_003 and math_004, 30 turns; ExpertQA: expertqa_001,
15 turns). The domains are kept apart because their recorded learners differ (MathQA: 2.07
reasoning and 1.77 articulated IUs per turn; ExpertQA: 2.67 and 0.73), and a pooled table would give
each domain the other's mix. A test checks that each table equals a fresh measurement. "Told in the
last reply" is the recorded extractor's reading of the previous tutor turn (teaching quality other
than ``not_mentioned``); at turn 1 nothing was told. A question of any other domain uses the MathQA
table (:func:`rates_for`).

The knowledge state limits what is drawn (spec §9's hard constraint): an unaware IU the tutor has
never told the learner about is never attempted, whatever the measured rate of that cell (the
paper's learner did attempt such IUs at turn 1; the table shows it, the learner does not do it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from knowsim_core.engine.state import IUState
from knowsim_core.formats.jsonio import read_json

LAST, EARLIER, NEVER = "last", "earlier", "never"  # when the tutor last told the learner about the IU
TOLD = (LAST, EARLIER, NEVER)
REASONING, ARTICULATION = "reasoning", "articulation"
MIN_PAIRS = 10  # a (state, told) cell with fewer recorded pairs uses its state's pooled rates

# (pre-turn state, told) -> (P(reasoning), P(articulation), number of recorded (turn, IU) pairs)
Rates = dict[tuple[int, str], tuple[float, float, int]]
MATH_RATES: Rates = {
    (0, "last"): (0.16, 0.12, 25),
    (0, "earlier"): (0.0, 0.0, 24),
    (0, "never"): (0.081, 0.027, 37),
    (1, "last"): (0.22, 0.22, 173),
    (1, "earlier"): (0.037, 0.061, 82),
    (1, "never"): (0.125, 0.0, 16),
    (2, "last"): (0.062, 0.0, 16),
    (2, "earlier"): (0.091, 0.0, 22),  # pooled (5 pairs of its own)
    (2, "never"): (0.091, 0.0, 22),  # pooled (1 pair of its own)
    (3, "last"): (0.286, 0.107, 28),
    (3, "earlier"): (0.04, 0.08, 25),
    (3, "never"): (0.179, 0.107, 56),  # pooled (3 pairs of its own)
}
EXPERT_RATES: Rates = {
    (0, "last"): (0.091, 0.0, 11),
    (0, "earlier"): (0.083, 0.0, 36),
    (0, "never"): (0.04, 0.0, 25),
    (1, "last"): (0.561, 0.049, 41),
    (1, "earlier"): (0.13, 0.0, 23),
    (1, "never"): (0.027, 0.0, 37),
    (2, "last"): (0.207, 0.0, 29),
    (2, "earlier"): (0.02, 0.0, 51),
    (2, "never"): (0.085, 0.012, 82),  # pooled (2 pairs of its own)
    (3, "last"): (0.033, 0.267, 30),  # pooled (9 pairs of its own)
    (3, "earlier"): (0.0, 0.111, 18),
    (3, "never"): (0.033, 0.267, 30),  # pooled (3 pairs of its own)
}
RATES_BY_DOMAIN: dict[str, Rates] = {"math": MATH_RATES, "expert": EXPERT_RATES}
RATES = MATH_RATES  # the default table (a question of an unknown domain)
# a recording's ``task`` -> the domain name the questions carry (services.importing.DOMAINS)
TASK_DOMAIN = {"math": "math", "expertqa": "expert"}


def rates_for(domain: str) -> Rates:
    """The measured table of ``domain`` (``math`` / ``expert``); MathQA's for any other domain."""
    return RATES_BY_DOMAIN.get(domain, MATH_RATES)


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """One recorded turn of a structured recording, reduced to what the learner's rates and the
    per-turn comparison need."""

    problem_id: str
    turn: int  # 1-based
    domain: str  # "math" / "expert" (TASK_DOMAIN of the recording's task)
    pre: Mapping[str, int]  # IU id -> pre-turn state (0..3)
    told: Mapping[str, str]  # IU id -> LAST / EARLIER / NEVER
    reasoning: tuple[str, ...]  # IU ids with a reasoning entry
    articulation: tuple[str, ...]
    mentioned: int  # IUs the tutor's reply of this turn mentions (the recorded labels)
    attempt_load: float
    comprehension_load: float
    tau: float


_STATE = {"unaware": 0, "struggling": 1, "partial_understanding": 2, "knows_well": 3}


def recorded_turns(reference: str | Path) -> list[RecordedTurn]:
    """Every turn of every structured recording under ``reference/examples`` (file and record order)."""
    out: list[RecordedTurn] = []
    for path in sorted((Path(reference) / "examples").glob("*.json")):
        for rec in read_json(path):
            if rec.get("run_type") != "KS-based" or not rec.get("iu_analysis_history"):
                continue
            task = str(rec.get("task") or rec["problem_id"].rsplit("_", 1)[0])
            domain = TASK_DOMAIN.get(task, task)
            told_at: dict[str, int] = {}  # IU id -> last 1-based turn whose reply mentioned it
            history = rec["knowledge_state_history"]
            for t, (entries, metrics) in enumerate(zip(rec["iu_analysis_history"], rec["turn_metrics_history"]), 1):
                pre = {label.split(":", 1)[0].strip(): _STATE[v["state"]] for label, v in history[t - 1].items()}
                told = {iu: LAST if told_at.get(iu) == t - 1 else EARLIER if iu in told_at else NEVER for iu in pre}
                ids = [e for e in entries if isinstance(e, dict) and e.get("id") in pre]
                out.append(RecordedTurn(
                    problem_id=rec["problem_id"], turn=t, domain=domain, pre=pre, told=told,
                    reasoning=tuple(e["id"] for e in ids if e.get("user_attempt_type") == REASONING),
                    articulation=tuple(e["id"] for e in ids if e.get("user_attempt_type") == ARTICULATION),
                    mentioned=len({e["id"] for e in ids if e.get("teaching_quality") not in (None, "not_mentioned")}),
                    attempt_load=float(metrics["attempt_load"]), comprehension_load=float(metrics["comprehension_load"]),
                    tau=float(metrics["overload_threshold"]),
                ))
                for e in ids:
                    if e.get("teaching_quality") not in (None, "not_mentioned"):
                        told_at[e["id"]] = t
    return out


def measure_rates(turns: Iterable[RecordedTurn]) -> Rates:
    """One domain's table (:data:`RATES_BY_DOMAIN`) from its recorded turns: per (pre-turn state, told) cell, the share of (turn, IU)
    pairs with a reasoning entry and with an articulation entry (3 places), and the number of
    pairs the shares come from. A cell with fewer than :data:`MIN_PAIRS` pairs takes its state's
    shares pooled over the three told-cells (a rule fixed before measuring, so that one recorded
    pair cannot set a rate of 0 or 1)."""
    n: dict[tuple[int, str], int] = {(s, t): 0 for s in range(4) for t in TOLD}
    r = dict.fromkeys(n, 0)
    a = dict.fromkeys(n, 0)
    for turn in turns:
        rs, ars = set(turn.reasoning), set(turn.articulation)
        for iu, s in turn.pre.items():
            key = (s, turn.told[iu])
            n[key] += 1
            r[key] += iu in rs
            a[key] += iu in ars and iu not in rs
    out = {}
    for (s, how), cnt in n.items():
        cells = [(s, how)] if cnt >= MIN_PAIRS else [(s, t) for t in TOLD]
        pairs = sum(n[c] for c in cells)
        out[(s, how)] = (round(sum(r[c] for c in cells) / pairs, 3) if pairs else 0.0,
                         round(sum(a[c] for c in cells) / pairs, 3) if pairs else 0.0, pairs)
    return out


def draw_attempts(
    rng: random.Random, state: Mapping[str, IUState], told: Mapping[str, str], order: Iterable[str],
    rates: Mapping[tuple[int, str], tuple[float, float, int]] = RATES,
) -> tuple[list[str], list[str]]:
    """``(reasoning, articulation)`` IU ids for one turn: one uniform draw per IU (in ``order``)
    against its cell's rates; an unaware IU never told about is skipped (no draw is spent on it,
    so the rest of the turn does not depend on it)."""
    reasoning: list[str] = []
    articulation: list[str] = []
    for iu in order:
        s = int(state[iu])
        how = told.get(iu, NEVER)
        if s == int(IUState.UNAWARE) and how == NEVER:
            continue
        pr, pa, _ = rates[(s, how)]
        u = rng.random()
        if u < pr:
            reasoning.append(iu)
        elif u < pr + pa:
            articulation.append(iu)
    return reasoning, articulation
