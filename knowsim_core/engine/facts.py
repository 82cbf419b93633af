"""One run's summary for the cross-run views (:class:`RunFacts`), built from its records or from
the scalars storage keeps, so that storage and the analysis views share one definition.

The population rule lives here too: cross-run figures count **finished** runs unless the caller asks
for another :data:`STATUS_CHOICES` entry. The views' words for the metrics and their spread are the
vocabulary's (:mod:`knowsim_core.vocab`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.engine.records import RunRecord
from knowsim_core.vocab import POPULATIONS, RunStatus

STATUS_CHOICES: tuple[str, ...] = POPULATIONS  # the population of the cross-run views


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the cross-run views need from one run (small, cacheable, built once per run)."""

    run_id: str
    question_id: str
    level: str
    assistant: str
    preset: str
    kg: float
    dc: float
    co: float
    turns: int
    mode_counts: tuple[int, ...]  # in FAILURE_ORDER
    first_turn: tuple[int | None, ...]  # first turn showing each mode, in FAILURE_ORDER
    seed: int = 0
    status: str = RunStatus.FINISHED  # the stored run's status (vocab.RunStatus)
    batch: str = ""  # the batch tag the run was stored with ("" for a single run)

    def metric(self, name: str) -> float:
        return {"KG": self.kg, "DC": self.dc, "CO": self.co}[name]


def run_facts(run: RunRecord, *, run_id: str | None = None, status: str = RunStatus.FINISHED,
              batch: str = "") -> RunFacts:
    """Summarise one run for aggregation (counts cover every turn played, spec §7)."""
    counts = [0] * len(FAILURE_ORDER)
    first: list[int | None] = [None] * len(FAILURE_ORDER)
    pos = {m: i for i, m in enumerate(FAILURE_ORDER)}
    for t in run.turns:
        for _, mode in t.modes:
            i = pos[mode]
            counts[i] += 1
            if first[i] is None:
                first[i] = t.turn
    m = run.metrics()
    return RunFacts(
        run_id=run_id or run.run_id or "",
        question_id=run.question_id,
        level=run.level,
        assistant=run.adapter.get("assistant", ""),
        preset=run.params.preset,
        kg=float(m.knowledge_gain),
        dc=float(m.delivery_calibration),
        co=float(m.cognitive_overload),
        turns=len(run.turns),
        mode_counts=tuple(counts),
        first_turn=tuple(first),
        seed=run.seed,
        status=status,
        batch=batch,
    )


def facts_from_summary(
    *, run_id: str, question_id: str, level: str, assistant: str, preset: str, kg: float, dc: float, co: float,
    turns: int, mode_counts: Sequence[int], first_turn: Sequence[int | None], seed: int = 0,
    status: str = RunStatus.FINISHED, batch: str = "",
) -> RunFacts:
    """RunFacts from stored scalars (run metrics + per-turn mode columns), without the records."""
    return RunFacts(
        run_id=run_id, question_id=question_id, level=level, assistant=assistant, preset=preset,
        kg=float(kg), dc=float(dc), co=float(co), turns=turns,
        mode_counts=tuple(int(c or 0) for c in mode_counts), first_turn=tuple(first_turn), seed=int(seed),
        status=status, batch=batch or "",
    )
