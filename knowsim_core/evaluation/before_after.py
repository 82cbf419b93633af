"""A batch what-if's failure modes before and after, side by side, per knowledge level.

Both sides are summarised by :func:`knowsim_core.evaluation.analysis.level_summary` — the arithmetic of
the Failure modes page and the ``failures`` command — so a share read here is the share either of
them shows for the same runs. Pure: takes the two populations' :class:`RunFacts`.
"""

from __future__ import annotations

from typing import Any, Sequence

from knowsim_core.engine.facts import RunFacts
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.evaluation.analysis import level_summary
from knowsim_core.vocab import METRIC_KEYS


def before_after(before: Sequence[RunFacts], after: Sequence[RunFacts]) -> list[dict[str, Any]]:
    """One row per (level, measure): each failure mode's share and each metric's mean, before and
    after and the change (after − before); None on a side with no run of that level."""
    sb, sa = level_summary(before)["by_level"], level_summary(after)["by_level"]
    levels = list(dict.fromkeys([*sb, *sa]))
    rows = []
    for level in levels:
        b, a = sb.get(level), sa.get(level)
        rows.append({"level": level, "measure": "runs", "before": b["runs"] if b else 0, "after": a["runs"] if a else 0,
                     "change": (a["runs"] if a else 0) - (b["runs"] if b else 0), "kind": "count"})
        for m in FAILURE_ORDER:
            x = b["modes"][m.title] if b else None
            y = a["modes"][m.title] if a else None
            rows.append({"level": level, "measure": m.title, "before": x, "after": y,
                         "change": None if x is None or y is None else y - x, "kind": "share"})
        for name, key in METRIC_KEYS.items():
            x = b[key] if b else None
            y = a[key] if a else None
            rows.append({"level": level, "measure": name, "before": x, "after": y,
                         "change": None if x is None or y is None else y - x, "kind": "mean"})
    return rows


def cell(value: float | int | None, kind: str, *, signed: bool = False) -> str:
    """A value as the table prints it: a share in per cent, a mean to three places, a count as is."""
    if value is None:
        return "—"
    sign = "+" if signed else ""
    if kind == "share":  # + 0.0: a change that rounds to nothing prints 0.0, not -0.0
        return f"{round(value * 100, 1) + 0.0:{sign}.1f}" + ("" if signed else "%")
    if kind == "mean":
        return f"{round(value, 3) + 0.0:{sign}.3f}"
    return f"{value:{sign}d}"
