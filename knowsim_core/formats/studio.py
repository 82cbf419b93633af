"""Studio JSON: one run with all its turn records; ``read(write(run)) == run`` exactly.

The format is :meth:`RunRecord.to_data` (``"format": "knowsim-studio-run"``, a ``turns`` list of
turn records each with its 1-based ``turn``). A file may also hold a list of such runs. A run's
judgments (people's and researchers' 👍/👎 on its turns, :mod:`.judgments`) travel beside the
record in a top-level ``judgments`` list, and so do its filing — the researcher's ``tags`` and the
``batch_tag`` it was stored with — so an import into another database files it as before. Its
lineage needs nothing extra: a fork's or a what-if's link to its source (``forked_from``) is in the
record's ``meta``. Older files without these keys read as before.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from knowsim_core.engine.config import RuleParams
from knowsim_core.errors import FormatError, KnowSimError
from knowsim_core.engine.records import RunRecord
from knowsim_core.formats import jsonio, schema
from knowsim_core.formats.jsonio import parse_json
from knowsim_core.formats.judgments import Judgment, judgments_from_data
from knowsim_core.formats.reference import graph_from_data
from knowsim_core.text.tags import check_batch_tag, check_run_tag

FORMAT = "knowsim-studio-run"
NO_READING_KEY = "no_reading"  # services.reading: a recorded conversation kept without IUs, and why


class TranscriptGraphIn(schema.GraphIn):
    """The graph of a run kept without a reading (its meta says why): no IUs, no edges."""

    nodes: list[schema.NodeIn] = Field(default=[], max_length=0)
    edges: list[schema.EdgeIn] = Field(default=[], max_length=0)


class TranscriptRunIn(schema.RunIn):
    graph: TranscriptGraphIn


def _is_transcript(d: dict) -> bool:
    meta, graph = d.get("meta"), d.get("graph")
    return (isinstance(meta, dict) and bool(meta.get(NO_READING_KEY)) and isinstance(graph, dict)
            and graph.get("nodes") == [])


def dumps(run: RunRecord, *, indent: int | None = 2, judgments: list[Judgment] | tuple[Judgment, ...] = (),
          tags: list[str] | tuple[str, ...] = (), batch_tag: str | None = None) -> str:
    """The run as Studio JSON text (FormatError rather than invalid JSON for a non-finite number),
    with its ``judgments``, ``tags`` and ``batch_tag`` when it has any."""
    data = run.to_data()
    if judgments:
        data["judgments"] = [j.to_data() for j in judgments]
    if tags:
        data["tags"] = sorted(tags)
    if batch_tag:
        data["batch_tag"] = batch_tag
    return jsonio.dumps(data, indent=indent)


def filing_per_run(data: Any) -> list[tuple[list[str], str | None]]:
    """``(tags, batch tag)`` of each run of a Studio file (already parsed JSON), in file order.

    Raises:
        FormatError: naming the run, the field and what a tag may be.
    """
    items = data if isinstance(data, list) else [data]
    out = []
    for i, d in enumerate(items):
        where = f"run #{i + 1} field" if len(items) > 1 else "run field"
        d = d if isinstance(d, dict) else {}
        raw_tags, batch = d.get("tags", []), d.get("batch_tag")
        if not isinstance(raw_tags, list) or len(raw_tags) > schema.MAX_ENTRIES:
            raise FormatError(f"{where} tags: expected a list of at most {schema.MAX_ENTRIES} tags")
        tags = []
        for j, t in enumerate(raw_tags):
            if not isinstance(t, str):
                raise FormatError(f"{where} tags[{j}]: expected text, got {type(t).__name__}")
            try:
                tags.append(check_run_tag(t))
            except KnowSimError as exc:
                raise FormatError(f"{where} tags[{j}]: {exc}") from None
        if batch is not None:
            if not isinstance(batch, str):
                raise FormatError(f"{where} batch_tag: expected a batch tag, got {type(batch).__name__}")
            try:
                check_batch_tag(batch, what="batch_tag")
            except KnowSimError as exc:
                raise FormatError(f"{where} {exc}") from None
        out.append((list(dict.fromkeys(tags)), batch))
    return out


def judgments_per_run(data: Any) -> list[list[Judgment]]:
    """The ``judgments`` of each run of a Studio file (already parsed JSON), in file order.

    Raises:
        FormatError: naming the run and the field path.
    """
    items = data if isinstance(data, list) else [data]
    out = []
    for i, d in enumerate(items):
        where = f"run #{i + 1} field judgments" if len(items) > 1 else "run field judgments"
        js = judgments_from_data(d.get("judgments") if isinstance(d, dict) else None, where)
        turns = len(d.get("turns") or ()) if isinstance(d, dict) else 0
        bad = next((j for j in js if j.turn > turns), None)
        if bad is not None:
            raise FormatError(f"{where}: judges turn {bad.turn}, but the run has {turns} turn(s)")
        out.append(js)
    return out


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
            transcript = _is_transcript(d)  # a recorded conversation without IUs: no graph to check
            schema.check(TranscriptRunIn if transcript else schema.RunIn, d, f"{where or 'run'}".rstrip(": "),
                         "fix that field or export the run again from KnowSim Studio")
            name = f"{where or 'run'}".rstrip(": ")
            if not transcript:
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
