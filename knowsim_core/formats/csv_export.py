"""CSV of turns: one row per turn of one or more runs, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import io
from typing import Iterable

from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.text.redact import redact_urls
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import IUState

COLUMNS: tuple[str, ...] = (
    "run_id", "question_id", "level", "assistant", "user", "extractor", "seed", "turn",
    "comprehension_load", "attempt_load", "effective_load", "overload_threshold", "overload", "efficiency",
    "n_upward_transitions", "transitions", "absorbed_gain", "ic_numerator", "ic_denominator", "zpd_size",
    *(f"n_{s.key}" for s in IUState),
    *(f"mode_{m.value}" for m in FAILURE_ORDER),
    "stop_vote", "extractor_failed", "user_message", "assistant_message",
)


def rows(run: RunRecord) -> Iterable[dict[str, object]]:
    adapters = run.adapter
    for t in run.turns:
        q = t.quantities
        counts = t.state_after.counts()
        modes = t.mode_counts()
        yield {
            "run_id": run.run_id or "", "question_id": run.question_id, "level": run.level,
            "assistant": redact_urls(adapters.get("assistant", "")), "user": redact_urls(adapters.get("user", "")),
            "extractor": redact_urls(adapters.get("extractor", "")), "seed": run.seed, "turn": t.turn,
            "comprehension_load": q.comprehension_load, "attempt_load": q.attempt_load,
            "effective_load": q.effective_load, "overload_threshold": q.overload_threshold,
            "overload": int(q.overload), "efficiency": q.efficiency,
            "n_upward_transitions": q.n_upward_transitions,
            "transitions": ";".join(f"{i}:{a.short}>{b.short}" for i, a, b in t.transitions),
            "absorbed_gain": q.absorbed_gain, "ic_numerator": q.ic_numerator,
            "ic_denominator": q.ic_denominator, "zpd_size": q.zpd_size,
            **{f"n_{s.key}": counts[s] for s in IUState},
            **{f"mode_{m.value}": modes.get(m, 0) for m in FAILURE_ORDER},
            "stop_vote": t.votes.fired or "", "extractor_failed": int(t.extractor_failed),
            "user_message": t.user_message, "assistant_message": t.assistant_message,
        }


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what Excel / LibreOffice / Sheets would execute


def neutralise(value: object) -> object:
    """A text cell a spreadsheet would read as a formula gets a leading ``'`` (OWASP's advice);
    numbers, including negative ones, stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def dumps(runs: RunRecord | Iterable[RunRecord]) -> str:
    """The turns of ``runs`` as CSV text with a header row, safe to open in a spreadsheet."""
    if isinstance(runs, RunRecord):
        runs = [runs]
    buf = io.StringIO()
    # every text cell quoted: a lone carriage return in a message would otherwise end the row
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    for run in runs:
        writer.writerows({k: neutralise(v) for k, v in row.items()} for row in rows(run))
    return buf.getvalue()
