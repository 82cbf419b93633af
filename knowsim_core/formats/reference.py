"""Read the reference implementation's data formats (spec §1.2–§1.5).

Items JSONL, IU caches, the initial-state cache, and recorded run files. A recorded structured
conversation becomes a :class:`RunRecord` by re-applying the rules to its recorded labels, chained
from its recorded s_0 (no model call); baseline records carry no state and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.errors import FormatError, GraphError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.agent_id import AgentId
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import play_turn
from knowsim_core.engine.signals import normalize_entries
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.formats import schema
from knowsim_core.formats.jsonio import parse_json, read_json, read_text
from knowsim_core.vocab import STOP_MAX_TURNS

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
    """One items-JSONL object (math: problem/solution; ExpertQA: question/answers).

    Raises:
        FormatError: naming ``where`` and the field, for anything that is not an item.
    """
    fix = "each line must be an item object of the paper's items JSONL (spec §1.2)"
    if not isinstance(d, dict) or "id" not in d:
        raise FormatError(f"{where}: not a reference item (needs an object with an 'id'); {fix}")
    if "problem" in d:
        m = schema.check(schema.MathItemIn, d, where, fix)
        return ReferenceItem(
            m.id, "math", m.problem, m.solution or "", m.type or "Math", tuple(m.split), m.source_index,
        )
    if "question" in d:
        e = schema.check(schema.ExpertItemIn, d, where, fix)
        answer = ""
        for variant in (e.answers or {}).values():
            answer = variant.revised_answer_string or variant.answer_string or ""
            break
        field = (e.metadata.field if e.metadata else None) or "Expert"
        return ReferenceItem(e.id, "expertqa", e.question, answer, field, tuple(e.split), e.source_index)
    raise FormatError(f"{where}: item {d['id']!r} has neither 'problem' nor 'question'; {fix}")


def load_items(path: str | Path) -> list[ReferenceItem]:
    """Items of a ``paper_subset/*.jsonl`` file, in file order."""
    items = []
    lines = read_text(path).splitlines()
    if len(lines) > schema.MAX_RECORDS:
        raise FormatError(f"{path} has {len(lines)} lines; split it into files of at most {schema.MAX_RECORDS}")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        d = parse_json(line, f"{path} line {n}")
        items.append(item_from_data(d, f"{path} line {n}"))
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise FormatError(f"{path}: item id {it.id!r} appears twice; every item needs its own id")
        seen.add(it.id)
    return items


def graph_from_data(data: Any, where: str) -> IUGraph:
    """A graph that may be stored (spec §1.1): strict fields, and no error other than a cycle.

    Cycles are let through because the paper's own graphs have them (§1.1); an empty graph,
    duplicate ids, dangling edges, self-loops or levels outside [0, 1] are refused here, before
    they could become a question's newest version.
    """
    fix = "a graph needs nodes (id, concept, abstraction_level 0–1, description) and edges (from, to) — spec §1.1"
    schema.check(schema.GraphIn, data, where, fix)
    try:
        graph = IUGraph.from_data(data)
    except GraphError as exc:
        raise FormatError(f"{where}: {exc}") from None
    blockers = [i for i in graph.errors() if i.code != "cycle"]
    if blockers:
        raise FormatError(f"{where}: {blockers[0].message}; fix the graph in the file and import it again")
    return graph


def load_iu_cache(path: str | Path) -> dict[str, IUGraph]:
    """``{problem id: IUGraph}`` of an ``iu_cache/*.json`` file, every graph checked."""
    data = read_json(path)
    if not isinstance(data, dict) or not data or not all(isinstance(v, dict) for v in data.values()):
        raise FormatError(f"{path} is not an IU cache (expected a non-empty object {{problem id: graph}})")
    if len(data) > schema.MAX_RECORDS:
        raise FormatError(f"{path} holds {len(data)} graphs; split it into files of at most {schema.MAX_RECORDS}")
    return {pid: graph_from_data(g, f"{path} graph {pid!r}") for pid, g in data.items()}


def load_init_cache(path: str | Path) -> dict[str, dict[str, dict[str, KnowledgeState]]]:
    """``{task: {problem id: {level: s_0}}}`` (task keys normalised to math / expertqa)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(f"{path} is not an initial-state cache (expected an object of tasks, spec §1.4)")
    out: dict[str, dict[str, dict[str, KnowledgeState]]] = {}
    for task, items in data.items():
        if task.startswith("_"):
            continue
        schema.check(
            schema.InitCacheTask, items, f"{path} task {task!r}",
            "expected {problem id: {novice|intermediate|advanced: {label: {\"state\": name}}}} (spec §1.4)",
        )
        key = TASK_KEYS.get(task, task)
        out[key] = {
            pid: {lvl: KnowledgeState.from_data(s) for lvl, s in levels.items()}
            for pid, levels in items.items()
        }
    return out


def load_run_file(path: str | Path) -> list[dict[str, Any]]:
    """The records of a reference run file (a JSON list of conversation records), each checked."""
    data = read_json(path)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) and "problem_id" in r for r in data):
        raise FormatError(f"{path} is not a reference run file (expected a list of records with problem_id)")
    if len(data) > schema.MAX_RECORDS:
        raise FormatError(f"{path} holds {len(data)} records; split it into files of at most {schema.MAX_RECORDS}")
    for i, rec in enumerate(data):
        check_record(rec, f"{path} record #{i + 1} ({str(rec.get('problem_id'))[:40]})")
    return data


def check_record(record: dict[str, Any], where: str) -> None:
    """Refuse a run record whose fields have the wrong type or value (spec §1.5)."""
    fix = "fix that field (spec §1.5 lists the run-record fields) or re-export the run"
    schema.check(schema.RecordIn, record, where, fix)
    for t, entries in enumerate(record.get("iu_analysis_history") or ()):
        for j, e in enumerate(entries or ()):
            if isinstance(e, dict):  # non-objects are dropped by §3.1, not refused
                schema.check(schema.EntryIn, e, f"{where} iu_analysis_history[{t}][{j}]", fix)
    if is_structured(record) and not isinstance(record.get("initial_knowledge_state"), dict):
        raise FormatError(f"{where}: field initial_knowledge_state: a structured record needs s_0; {fix}")


def is_structured(record: dict[str, Any]) -> bool:
    return bool(record.get("knowledge_state_history")) and bool(record.get("iu_analysis_history"))


def iter_structured(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (r for r in records if is_structured(r))


def run_from_reference(
    record: dict[str, Any], graph: IUGraph, params: RuleParams | None = None
) -> RunRecord:
    """Replay a structured recording on its recorded labels, chained, into a RunRecord.

    Raises:
        FormatError: a record with a field of the wrong type or value, a baseline record, or
            states that name IUs the graph does not have.
    """
    params = params or preset()
    pid = str(record.get("problem_id", "?"))[:40]
    check_record(record, f"record {pid}")
    m = schema.check(schema.RecordIn, record, f"record {pid}", "")
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
    tau = m.initial_overload_threshold or params.capacity(len(graph.nodes))
    convo = m.conversation
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
        question_id=m.problem_id,
        question=m.problem or "",
        reference_answer=m.reference_answer or "",
        graph=graph,
        level=m.knowledge_level,
        initial_state=s0,
        tau=tau,
        params=params,
        seed=0,
        adapters=(
            ("assistant", AgentId.recorded(m.assistant_strategy or "unknown").id),
            ("user", AgentId.recorded(m.simulation_method or "structured").id),
            ("extractor", AgentId.recorded("labels").id),
        ),
        turns=tuple(turns),
        stop_reason=m.stop_reason or STOP_MAX_TURNS,
        meta=(("source", "reference-run"), ("task", m.task or "")),
    )
