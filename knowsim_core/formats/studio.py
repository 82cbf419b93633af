"""Studio JSON: one run with all its turn records; ``read(write(run)) == run`` exactly.

The format is :meth:`RunRecord.to_data` (``"format": "knowsim-studio-run"``, a ``turns`` list of
turn records each with its 1-based ``turn``). A file may also hold a list of such runs.
"""

from __future__ import annotations

from typing import Any

from knowsim_core.engine.config import RuleParams
from knowsim_core.errors import FormatError
from knowsim_core.engine.records import RunRecord
from knowsim_core.formats import jsonio, schema
from knowsim_core.formats.jsonio import parse_json
from knowsim_core.formats.reference import graph_from_data

FORMAT = "knowsim-studio-run"


def dumps(run: RunRecord, *, indent: int | None = 2) -> str:
    """The run as Studio JSON text (FormatError rather than invalid JSON for a non-finite number)."""
    return jsonio.dumps(run.to_data(), indent=indent)


def loads(text: str) -> RunRecord:
    """One run from Studio JSON text.

    Raises:
        FormatError: not JSON (e.g. a truncated export), another format, or damaged fields.
    """
    runs = runs_from_data(parse_json(text, "this Studio file"))
    if len(runs) != 1:
        raise FormatError(f"expected one run in this Studio file, found {len(runs)}")
    return runs[0]


def is_studio(data: Any) -> bool:
    if isinstance(data, dict):
        return data.get("format") == FORMAT
    return isinstance(data, list) and bool(data) and all(isinstance(d, dict) and d.get("format") == FORMAT for d in data)


def runs_from_data(data: Any) -> list[RunRecord]:
    """A run or a list of runs (already parsed JSON), each checked against :class:`schema.RunIn` first.

    Raises:
        FormatError: naming the run, the field path and the fix.
    """
    items = data if isinstance(data, list) else [data]
    if len(items) > schema.MAX_RECORDS:
        raise FormatError(f"this Studio file holds {len(items)} runs; split it into files of at most {schema.MAX_RECORDS}")
    out = []
    for i, d in enumerate(items):
        where = f"run #{i + 1}: " if len(items) > 1 else ""
        if isinstance(d, dict) and d.get("format") == FORMAT:
            schema.check(schema.RunIn, d, f"{where or 'run'}".rstrip(": "),
                         "fix that field or export the run again from KnowSim Studio")
            name = f"{where or 'run'}".rstrip(": ")
            graph_from_data(d["graph"], f"{name} field graph")
            schema.check(RuleParams, d["params"], f"{name} field params",
                         "the rule parameters must be those of a preset (python -m knowsim_core replay --help)")
        try:
            run = RunRecord.from_data(d)
        except FormatError as exc:
            raise FormatError(" ".join(f"{where}{exc}".split())) from None
        for n, t in enumerate(run.turns, 1):
            if t.turn != n:
                raise FormatError(f"{where}turn numbers must be 1, 2, 3, …; found {t.turn} at position {n}")
        out.append(run)
    return out
