"""Aggregation across runs and per-run breakdowns of the failure modes (spec §7, paper Fig. 6 / Tab. 4).

The Failure Modes page answers "*why* did calibration fail?" in two zooms: one run (modes per turn,
modes per IU × turn with the reason) and many runs (mode shares per knowledge level like the
paper's Figure 6; mean KG / DC / CO per level and assistant like its Table 4, with the number of
runs behind every cell so a mean over two runs is not mistaken for a finding). Everything here is
pure: it takes records or small per-run summaries and returns plain data.

Figures meant to be cited follow three rules, the same on the page and on the command line
(``python -m knowsim_core failures``): the population is the **finished** runs unless the caller
asks for another :data:`STATUS_CHOICES` entry (a run stopped at turn 1 would drag every mean
down); every cell carries its ``n``; and where a cell has more than one run, the spread across
its runs is the interquartile range (:data:`SPREAD`), which needs no normality assumption and
stays honest for the handful of seeds a Studio comparison usually has.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean, quantiles
from typing import Any, Sequence

from knowsim_core.engine.config import LEVELS
from knowsim_core.engine.failures import FAILURE_ORDER, FailureMode
from knowsim_core.engine.facts import (  # noqa: F401  (the population rule, owned by engine.facts)
    STATUS_CHOICES, RunFacts, facts_from_summary, run_facts,
)
from knowsim_core.engine.records import RunRecord
from knowsim_core.vocab import (  # noqa: F401  (the views' words for the metrics, owned by the vocabulary)
    METRIC_KEYS, METRIC_NAMES, SPREAD, SPREAD_TEXT,
)

# ---------------------------------------------------------------------- one run
def modes_per_turn(run: RunRecord) -> list[dict[FailureMode, int]]:
    """For each turn, the count of every mode (zeros included) — the stacked bar per turn."""
    return [t.mode_counts() for t in run.turns]


# ---------------------------------------------------------------------- many runs
def _levels(facts: Sequence[RunFacts]) -> list[str]:
    present = {f.level for f in facts}
    return [lv for lv in LEVELS if lv in present] + sorted(present - set(LEVELS))


@dataclass(frozen=True, slots=True)
class LevelShares:
    """Figure 6: for one level, the count and share of each mode over all its runs' explained IUs."""

    level: str
    runs: int
    counts: tuple[int, ...]  # FAILURE_ORDER

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def shares(self) -> tuple[float, ...]:
        t = self.total
        return tuple(c / t if t else 0.0 for c in self.counts)


def shares_by_level(facts: Sequence[RunFacts]) -> list[LevelShares]:
    """Mode counts and shares per knowledge level, levels in the paper's order."""
    out = []
    for lv in _levels(facts):
        sel = [f for f in facts if f.level == lv]
        counts = tuple(sum(f.mode_counts[i] for f in sel) for i in range(len(FAILURE_ORDER)))
        out.append(LevelShares(lv, len(sel), counts))
    return out


@dataclass(frozen=True, slots=True)
class MetricCell:
    """Table 4: one (row, level) cell — the mean of each metric and the runs behind it."""

    row: str
    level: str
    run_ids: tuple[str, ...]
    means: tuple[float, ...]  # METRIC_NAMES
    spreads: tuple[tuple[float, float] | None, ...] = ()  # METRIC_NAMES: (q1, q3), None where n == 1

    @property
    def n(self) -> int:
        return len(self.run_ids)


def spread(values: Sequence[float]) -> tuple[float, float] | None:
    """The :data:`SPREAD` of ``values``: (25th, 75th percentile), interpolated; None for fewer than two."""
    if len(values) < 2:
        return None
    q1, _, q3 = quantiles(values, n=4, method="inclusive")
    return q1, q3


def metric_table(facts: Sequence[RunFacts], *, row: str = "assistant") -> list[MetricCell]:
    """Mean KG / DC / CO per (row value, level) with the run ids behind each cell.

    ``row`` is ``"assistant"`` (the paper's strategies), ``"question_id"``, ``"preset"`` or
    ``"batch"`` (one row per batch tag; single runs under "").
    Empty cells are omitted.
    """
    rows = sorted({getattr(f, row) for f in facts})
    out = []
    for r in rows:
        for lv in _levels(facts):
            sel = [f for f in facts if getattr(f, row) == r and f.level == lv]
            if sel:
                means = tuple(fmean(f.metric(m) for f in sel) for m in METRIC_NAMES)
                spreads = tuple(spread([f.metric(m) for f in sel]) for m in METRIC_NAMES)
                out.append(MetricCell(r, lv, tuple(f.run_id for f in sel), means, spreads))
    return out


def metric_rows(facts: Sequence[RunFacts], *, row: str = "assistant") -> list[dict[str, Any]]:
    """Table 4 as table rows: the row value, level, n, then each metric's mean and its :data:`SPREAD`
    as a (q1, q3) pair, None where the cell has a single run."""
    out = []
    for c in metric_table(facts, row=row):
        line: dict[str, Any] = {row: c.row, "level": c.level, "n runs": c.n}
        for name, mean, s in zip(METRIC_NAMES, c.means, c.spreads):
            line[name] = mean
            line[f"{name} {SPREAD}"] = s
        out.append(line)
    return out


def level_summary(facts: Sequence[RunFacts]) -> dict[str, Any]:
    """Per knowledge level: runs, mode shares (the paper's names; they sum to 1 when any IU was
    explained) and mean KG / DC / CO with their spread — what ``failures --json`` prints.

    The caller chooses the population (``store.search.facts`` filters finished runs by default).
    """
    by_level: dict[str, Any] = {}
    for row in shares_by_level(facts):
        sel = [f for f in facts if f.level == row.level]
        entry: dict[str, Any] = {
            "runs": row.runs,
            "iu_turns": row.total,  # explained IU-turns behind the shares
            "modes": {m.title: share for m, share in zip(FAILURE_ORDER, row.shares)},
        }
        for name in METRIC_NAMES:
            entry[METRIC_KEYS[name]] = fmean(f.metric(name) for f in sel)
        entry["spread"] = {"method": SPREAD, **{
            METRIC_KEYS[name]: (list(s) if (s := spread([f.metric(name) for f in sel])) else None)
            for name in METRIC_NAMES
        }}
        by_level[row.level] = entry
    return {"runs": len(facts), "by_level": by_level}


def representative_run(facts: Sequence[RunFacts], metric: str) -> RunFacts:
    """The run whose ``metric`` is the median of the group — what a click on a mean should open."""
    if not facts:
        raise ValueError("no runs in this cell")
    ordered = sorted(facts, key=lambda f: (f.metric(metric), f.run_id))
    return ordered[(len(ordered) - 1) // 2]


def first_occurrence(facts: Sequence[RunFacts], level: str, mode: FailureMode) -> tuple[str, int] | None:
    """(run id, turn) of the first run of ``level`` in which ``mode`` occurs — a Figure 6 click."""
    i = FAILURE_ORDER.index(mode)
    for f in facts:
        if f.level == level and f.first_turn[i] is not None:
            return f.run_id, f.first_turn[i]
    return None
