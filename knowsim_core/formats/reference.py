"""Read the reference implementation's data formats (spec §1.2–§1.5).

Items JSONL, IU caches, the initial-state cache, and recorded run files. A recorded structured
conversation becomes a :class:`RunRecord` by re-applying the rules to its recorded labels, chained
from its recorded s_0 (no model call); baseline records carry no state and are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..config import RuleParams, preset
from ..errors import FormatError, GraphError
from ..graph import IUGraph
from ..records import RunRecord
from ..session import play_turn
from ..signals import normalize_entries
from ..state import KnowledgeState
from .jsonio import read_json

TASK_KEYS = {"competition_math": "math", "math": "math", "expertqa": "expertqa"}


@dataclass(frozen=True, slots=True)
class ReferenceItem:
    id: str
    task: str  # "math" | "expertqa"
    question: str
    reference_answer: str
    field: str
    splits: tuple[str, ...]
    source_index: int | None


def item_from_data(d: Any, where: str = "item") -> ReferenceItem:
    """One items-JSONL object (math: problem/solution; ExpertQA: question/answers)."""
    if not isinstance(d, dict) or "id" not in d:
        raise FormatError(f"{where}: not a reference item (needs an object with an 'id')")
    if "problem" in d:
        return ReferenceItem(
            d["id"], "math", d["problem"], d.get("solution", ""), d.get("type", "Math"),
            tuple(d.get("split", ())), d.get("source_index"),
        )
    if "question" in d:
        answer = ""
        for variant in (d.get("answers") or {}).values():
            answer = variant.get("revised_answer_string") or variant.get("answer_string") or ""
            break
        field = (d.get("metadata") or {}).get("field", "Expert")
        return ReferenceItem(
            d["id"], "expertqa", d["question"], answer, field, tuple(d.get("split", ())), d.get("source_index")
        )
    raise FormatError(f"{where}: item {d['id']!r} has neither 'problem' nor 'question'")


def load_items(path: str | Path) -> list[ReferenceItem]:
    """Items of a ``paper_subset/*.jsonl`` file, in file order."""
    items = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FormatError(f"file not found: {path}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{path} line {n} is not JSON ({exc.msg})") from None
        items.append(item_from_data(d, f"{path} line {n}"))
    return items


def load_iu_cache(path: str | Path) -> dict[str, IUGraph]:
    """``{problem id: IUGraph}`` of an ``iu_cache/*.json`` file."""
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise FormatError(f"{path} is not an IU cache (expected {{problem id: graph}})")
    out = {}
    for pid, g in data.items():
        try:
            out[pid] = IUGraph.from_data(g)
        except GraphError as exc:
            raise FormatError(f"{path}: graph {pid}: {exc}") from None
    return out


def load_init_cache(path: str | Path) -> dict[str, dict[str, dict[str, KnowledgeState]]]:
    """``{task: {problem id: {level: s_0}}}`` (task keys normalised to math / expertqa)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(f"{path} is not an initial-state cache")
    out: dict[str, dict[str, dict[str, KnowledgeState]]] = {}
    for task, items in data.items():
        if task.startswith("_"):
            continue
        key = TASK_KEYS.get(task, task)
        out[key] = {
            pid: {lvl: KnowledgeState.from_data(s) for lvl, s in levels.items()}
            for pid, levels in items.items()
        }
    return out


def load_run_file(path: str | Path) -> list[dict[str, Any]]:
    """The raw records of a reference run file (a JSON list of conversation records)."""
    data = read_json(path)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) and "problem_id" in r for r in data):
        raise FormatError(f"{path} is not a reference run file (expected a list of records with problem_id)")
    return data


def is_structured(record: dict[str, Any]) -> bool:
    return bool(record.get("knowledge_state_history")) and bool(record.get("iu_analysis_history"))


def iter_structured(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (r for r in records if is_structured(r))


def run_from_reference(
    record: dict[str, Any], graph: IUGraph, params: RuleParams | None = None
) -> RunRecord:
    """Replay a structured recording on its recorded labels, chained, into a RunRecord."""
    params = params or preset()
    pid = record.get("problem_id", "?")
    if not is_structured(record):
        raise FormatError(f"record {pid} is a baseline record without knowledge states; nothing to replay")
    labels = set(graph.index.labels)
    s0 = KnowledgeState.from_data(record["initial_knowledge_state"])
    foreign = [lab for lab in s0 if lab not in labels]
    if foreign:
        raise FormatError(
            f"record {pid}: its states name IUs that are not in the given graph ({foreign[0]!r}…); "
            "pass the IU cache the run was made with"
        )
    tau = int(record.get("initial_overload_threshold") or params.capacity(len(graph.nodes)))
    convo = record.get("conversation") or []
    turns = []
    history = []
    state = s0
    for i, raw in enumerate(record["iu_analysis_history"]):
        user = convo[2 * i][1] if 2 * i < len(convo) else ""
        assistant = convo[2 * i + 1][1] if 2 * i + 1 < len(convo) else ""
        rec = play_turn(
            graph, state, normalize_entries(raw or []), turn=i + 1, tau=tau, params=params,
            history=history, user_message=user, assistant_message=assistant,
            extractor_failed=not raw,
        )
        turns.append(rec)
        history.append(rec.quantities)
        state = rec.state_after
    return RunRecord(
        question_id=pid,
        question=record.get("problem", ""),
        reference_answer=record.get("reference_answer", ""),
        graph=graph,
        level=record.get("knowledge_level", "novice"),
        initial_state=s0,
        tau=tau,
        params=params,
        seed=0,
        adapters=(
            ("assistant", f"recorded/{record.get('assistant_strategy', 'unknown')}"),
            ("user", f"recorded/{record.get('simulation_method', 'structured')}"),
            ("extractor", "recorded/labels"),
        ),
        turns=tuple(turns),
        stop_reason=record.get("stop_reason") or "max_turns",
        meta=(("source", "reference-run"), ("task", record.get("task", ""))),
    )
