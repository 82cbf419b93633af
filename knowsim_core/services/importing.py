"""Recognise a file or folder and bring it into the store.

What can be imported (detected from the content, not the file name):

* ``studio-run`` — Studio JSON (one run or a list of runs), stored as they are;
* ``reference-runs`` — the reference implementation's run file (spec §1.5); structured records
  are replayed on their recorded labels into runs (baseline records carry no state and are
  skipped). They need the IU cache the runs were made with: ``graphs=`` or the ``iu_cache/``
  folder beside the file or one level up (its documented companion — other files in the
  file's own folder are never read);
* ``reference-items`` — an items JSONL (§1.2) with its IU cache (and the initial-state cache
  when found one level up) → questions, graph versions and canonical initial states;
* ``reference-folder`` — a folder laid out like the paper's release (``paper_subset/*.jsonl``,
  ``iu_cache/*.json``, ``init_ks_cache.json``) → the same, for every item;
* ``iu-cache`` — an IU cache alone → graph versions of questions already in the store.

Every file is checked against :mod:`.schema` and read whole before the first write; the writes
of one import are one transaction, so a refused file changes nothing. Labels that spec §3.1
tolerates (ids that are not graph nodes, unknown teaching-quality values, non-object entries)
are kept and counted in :attr:`ImportReport.label_notes`.

A Studio file's runs are filed as they were: their tags and batch tag come with them, and a fork or
a saved what-if keeps its link to its source (``forked_from`` in its meta). Where the source comes
in the same file under another id here (a named copy, or a run already stored under another id),
the link is pointed at that id, and sources are stored before their forks whatever the file's order.

A run is never stored twice, and never under another id without saying so. A run already stored
(same contents, under its id or another) is skipped. One whose id is taken by a stored run that
carried on from it — an export made at turn 2 of a run that has 4 turns now — holds nothing the
database lacks: skipped, saying how far the stored run has grown. One whose id is taken by other
contents is stored as a named copy: a new id, the tag ``copy of <id>``, and the pair in
:attr:`ImportReport.copies`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.errors import ConfigError, FormatError, StorageError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.storage import Store
from knowsim_core.formats import realworld, studio
from knowsim_core.formats.jsonio import read_json
from knowsim_core.text.redact import redact_urls
from knowsim_core.formats.reference import (
    ReferenceItem, is_structured, load_init_cache, load_items, load_iu_cache, load_run_file, run_from_reference,
)
from knowsim_core.services.fork import FORKED_FROM
from knowsim_core.services.realworld_import import DEFAULT_EXTRACTOR, import_realworld
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.text.tags import MAX_RUN_TAG
from knowsim_core.vocab import RunStatus

DOMAINS = {"math": "math", "expertqa": "expert"}
INIT_CACHE_NAME = "init_ks_cache.json"


@dataclass
class ImportReport:
    kind: str
    questions: int = 0
    graph_versions: int = 0
    initial_states: int = 0
    runs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    label_notes: dict[str, int] = field(default_factory=dict)  # what §3.1 kept, by kind
    copies: dict[str, str] = field(default_factory=dict)  # id in the file -> the new id its copy is stored under

    def summary(self) -> str:
        parts = [f"{self.kind}:"]
        if not self.runs and self.kind in ("studio-run", "reference-runs"):
            parts.append("no new run stored")
        if self.runs:
            parts.append(f"{len(self.runs)} run(s) stored ({', '.join(self.runs[:5])}{'…' if len(self.runs) > 5 else ''})")
        if self.copies:
            pairs = [f"{old} as {new}" for old, new in list(self.copies.items())[:5]]
            more = f", … {len(self.copies) - 5} more" if len(self.copies) > 5 else ""
            parts.append(f"{len(self.copies)} of them as copies, their ids taken by other runs here "
                         f"(tagged 'copy of <id>'): {', '.join(pairs)}{more}")
        if self.questions or self.graph_versions or self.initial_states or not (self.runs or self.skipped):
            parts.append(
                f"{self.questions} question(s), {self.graph_versions} graph version(s), "
                f"{self.initial_states} initial state(s) added"
            )
        if self.skipped:
            parts.append(f"skipped {len(self.skipped)}: {'; '.join(self.skipped[:3])}")
        if self.label_notes:
            notes = ", ".join(f"{n} {what}" for what, n in sorted(self.label_notes.items()))
            parts.append(f"labels kept as recorded (spec §3.1): {notes}")
        return " ".join(parts)


def detect(path: str | Path) -> str:
    """The kind of ``path`` (see the module docstring).

    Raises:
        FormatError: a file or folder that is none of them, with what was expected.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "paper_subset").is_dir() or (p / "iu_cache").is_dir():
            return "reference-folder"
        conversations = _conversation_file_in(p)
        if conversations is not None:  # the realworld folder: say which file to pass instead
            raise FormatError(f"{p} is a folder; to import its real conversations pass the file {conversations}")
        raise FormatError(f"{p} is a folder without paper_subset/ or iu_cache/; expected the reference data layout")
    if not p.exists():
        raise FormatError(f"file not found: {p}")
    if p.suffix == ".jsonl":
        return "reference-items"
    return _kind_of(read_json(p), p)


def _conversation_file_in(folder: Path) -> Path | None:
    """A real-conversation file in ``folder`` or one level down (a SimulatorArena annotations file or
    a conversations ``.jsonl``), so a folder passed by mistake is answered with the file to pass.

    Only names that can be one are read (``*annotations*.json``, ``*.jsonl``), and
    :func:`realworld.detect` decides, so a folder of other JSON is never parsed whole.
    """
    for where in (folder, *sorted(d for d in folder.iterdir() if d.is_dir())):
        candidates = sorted(where.glob("*annotations*.json")) + sorted(where.glob("*.jsonl"))
        for f in candidates:
            if f.is_file() and realworld.detect(f):
                return f
    return None


def _kind_of(data: Any, p: Path) -> str:
    if studio.is_studio(data):
        return "studio-run"
    if isinstance(data, dict) and "problem_id" in data:
        return "reference-runs"
    if isinstance(data, list) and data and all(isinstance(r, dict) and "problem_id" in r for r in data):
        return "reference-runs"
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "nodes" in v for v in data.values()):
        return "iu-cache"
    if isinstance(data, dict) and any(k in data for k in ("competition_math", "math", "expertqa")) and "_meta" in data:
        return "init-cache"
    raise FormatError(
        f"{p} is not a file KnowSim Studio can import; expected a Studio run export, a reference run file, "
        "an items .jsonl, an IU cache or the reference data folder"
    )


# ---------------------------------------------------------------------- graph discovery
def _caches_near(path: Path) -> list[Path]:
    """The documented companions of a run or items file: ``iu_cache/*.json`` beside it or one level up."""
    out: list[Path] = []
    for folder in (path.parent / "iu_cache", path.parent.parent / "iu_cache"):
        if folder.is_dir():
            out += sorted(f for f in folder.glob("*.json") if f.is_file())
    return out


def find_graphs(path: Path, graphs: str | Path | None) -> dict[str, IUGraph]:
    """The IU cache given, or the ``iu_cache/`` companions of ``path`` (merged by problem id).

    A companion that is not a valid IU cache is an error naming it (pass ``--graphs`` to use
    another cache); files outside ``iu_cache/`` are never opened.
    """
    if graphs is not None:
        return load_iu_cache(graphs)
    merged: dict[str, IUGraph] = {}
    for cand in _caches_near(path):
        try:
            merged.update(load_iu_cache(cand))
        except FormatError as exc:
            raise FormatError(f"{exc} (read as the IU cache beside {path.name}; pass --graphs to use another)") from None
    return merged


# ---------------------------------------------------------------------- reading (no store)
def read_runs(path: str | Path, *, graphs: str | Path | None = None, params: RuleParams | None = None) -> tuple[list[RunRecord], list[str]]:
    """Runs of a Studio or reference run file, plus notes on skipped records. Nothing is stored."""
    p = Path(path)
    kind = detect(p)
    if kind == "studio-run":
        try:
            runs = studio.runs_from_data(read_json(p))
        except FormatError as exc:
            msg = str(exc)
            raise FormatError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
        for i, run in enumerate(runs, 1):
            _check_run_graph(run, f"{p} run #{i}")
        return runs, []
    if kind != "reference-runs":
        raise FormatError(f"{p} holds {kind.replace('-', ' ')}, not runs")
    records = load_run_file(p)
    graph_of = find_graphs(p, graphs)
    params = params or preset("paper-final")
    runs, skipped = [], []
    for rec in records:
        pid = rec["problem_id"]
        if not is_structured(rec):
            skipped.append(f"{pid} ({rec.get('simulation_method', 'baseline')} record without knowledge states)")
            continue
        if pid not in graph_of:
            where = f"the IU cache {graphs}" if graphs else f"no IU cache beside {p.name} (looked in iu_cache/ here and one level up)"
            raise FormatError(f"record {pid}: {where} has no graph for it; pass --graphs IU_CACHE.json")
        runs.append(run_from_reference(rec, graph_of[pid], params))
    return runs, skipped


def _run_label_notes(runs: list[RunRecord]) -> dict[str, int]:
    """What spec §3.1 kept in the runs' labels (ids not in the graph, unknown quality values)."""
    notes: dict[str, int] = {}
    for run in runs:
        ids = set(run.graph.index.ids)
        for t in run.turns:
            for s in t.signals:
                if s.id is None:
                    what = "entries without a usable id"
                elif s.id not in ids:
                    what = "labels for IU ids not in the graph"
                else:
                    what = ""
                if what:
                    notes[what] = notes.get(what, 0) + 1
                if not s.recognised:
                    key = "unknown teaching-quality values (count as mentioned)"
                    notes[key] = notes.get(key, 0) + 1
    return notes


def _check_run_graph(run: RunRecord, where: str) -> None:
    labels = set(run.graph.index.labels)
    foreign = [lab for lab in run.initial_state if lab not in labels]
    missing = [lab for lab in labels if lab not in run.initial_state]
    if foreign or missing:
        bad = (foreign or missing)[0]
        raise FormatError(
            f"{where}: its knowledge states do not match its IU graph ({bad!r} "
            f"{'is not in the graph' if foreign else 'has no state'}); the file was edited or mixed up"
        )
    for t in run.turns:
        if set(t.state_after) != set(run.initial_state):
            raise FormatError(f"{where}: turn {t.turn}'s state names other IUs than s_0; the file is damaged")


def read_items(path: Path, graphs: str | Path | None) -> tuple[list[ReferenceItem], dict[str, IUGraph], dict[str, dict[str, KnowledgeState]]]:
    """Items of a JSONL file (or every JSONL of a reference folder) with their graphs and s_0 cache."""
    if path.is_dir():
        files = sorted((path / "paper_subset").glob("*.jsonl"))
        if not files:
            raise FormatError(f"{path}/paper_subset has no .jsonl item files")
        items = [it for f in files for it in load_items(f)]
        graph_of = load_iu_cache(graphs) if graphs else {}
        if not graphs:
            for f in sorted((path / "iu_cache").glob("*.json")):
                graph_of.update(load_iu_cache(f))
        init_path = path / INIT_CACHE_NAME
    else:
        items = load_items(path)
        graph_of = find_graphs(path, graphs)
        init_path = path.parent.parent / INIT_CACHE_NAME
        if not init_path.exists():
            init_path = path.parent / INIT_CACHE_NAME
    init: dict[str, dict[str, KnowledgeState]] = {}
    if init_path.exists():
        for by_pid in load_init_cache(init_path).values():
            init.update(by_pid)
    return items, graph_of, init


# ---------------------------------------------------------------------- importing
def import_path(
    store: Store, path: str | Path, *, graphs: str | Path | None = None, params: RuleParams | None = None,
    extractor_id: str | None = None,
) -> ImportReport:
    """Import whatever ``path`` is into ``store`` (see the module docstring).

    ``extractor_id`` reads real conversations (default ``offline/lexical``); other files keep their
    recorded labels, so naming one for them is refused rather than silently ignored.

    Raises:
        FormatError: unreadable or unrecognised input, or runs whose graph does not match; nothing
            has been written then.
        ConfigError: an unknown extractor id, or one given for a file that is not a conversation.
    """
    p = Path(path)
    if realworld.detect(p):  # real human conversations (SimulatorArena release, conversations JSONL)
        return import_realworld(store, p, params=params,  # type: ignore[return-value]
                                extractor_id=extractor_id or DEFAULT_EXTRACTOR)
    kind = detect(p)
    if extractor_id is not None:
        raise ConfigError(f"--extractor reads real conversations; {p.name} holds {kind.replace('-', ' ')}, "
                          "which keep their recorded labels — drop --extractor")
    report = ImportReport(kind)
    if kind in ("studio-run", "reference-runs"):
        runs, report.skipped = read_runs(p, graphs=graphs, params=params)
        if not runs:
            raise FormatError(f"{p}: nothing to import ({'; '.join(report.skipped) or 'no runs'})")
        report.label_notes = _run_label_notes(runs)
        judged = _judgments_of(p, kind, len(runs))
        filed = _filing_of(p, kind, len(runs))
        with store.transaction():
            keys: set[str] = set()  # the contents of the runs listed so far in this file
            ids: set[str] = set()  # the run ids listed so far
            stored_as: dict[str, str] = {}  # id in the file -> the id its run has here (for the forks' links)
            for i in _parents_first(runs):
                judgments, (tags, batch_tag) = judged[i], filed[i]
                run = _relinked(runs[i], stored_as)
                name = run.run_id or f"{run.question_id}/{run.level} (record #{i + 1})"
                key = _content_key(run)
                if key in keys:
                    report.skipped.append(f"{name} (listed twice in this file)")
                    continue
                if run.run_id and run.run_id in ids:
                    raise FormatError(f"{p}: run id {run.run_id} is listed twice with different contents; "
                                      "nothing was imported — keep one of them")
                keys.add(key)
                ids.add(run.run_id)
                taken = _stored_under_id(store, run)
                stored = _stored_copy(store, run, key, taken)
                if stored is not None:
                    report.skipped.append(f"{name} (already stored" + (f" as {stored})" if stored != name else ")"))
                    if run.run_id:
                        stored_as[run.run_id] = stored
                    continue
                if taken is not None and _continues(taken, run):
                    report.skipped.append(f"{name} (already stored: it has {len(taken.turns)} turns now, "
                                          f"{len(run.turns)} in this export)")
                    stored_as[run.run_id] = run.run_id
                    continue
                status = RunStatus.FINISHED if run.stop_reason else RunStatus.INTERRUPTED
                rid = store.runs.save(run, status=status, batch_tag=batch_tag)
                if run.run_id:
                    stored_as[run.run_id] = rid
                if run.run_id and rid != run.run_id:  # the id is taken by other contents: a named copy
                    report.copies[run.run_id] = rid
                    store.runs.add_tags(rid, [copy_tag(run.run_id)])
                if tags:
                    store.runs.add_tags(rid, tags)
                report.runs.append(rid)
                store.judgments.add_many(rid, judgments)
        return report
    if kind == "iu-cache":
        graph_of = load_iu_cache(p)
        known = {q.id for q in store.questions.list()}
        report.skipped = [f"{pid} (no such question)" for pid in graph_of if pid not in known]
        with store.transaction():
            for pid, graph in graph_of.items():
                if pid in known:
                    report.graph_versions += _add_graph_if_new(store, pid, graph, note=f"IU cache {p.name}")
        return report
    if kind == "init-cache":
        raise FormatError(f"{p} is an initial-state cache; import the reference folder that contains it instead")
    items, graph_of, init = read_items(p, graphs)
    with store.transaction():  # all items or none
        _import_items(store, items, graph_of, init, report)
    return report


def _content_key(run: RunRecord) -> str:
    """What makes two runs the same run: everything but the id (adapter ids as an export writes them,
    with any URL redacted, so a run exported and imported again matches the stored one)."""
    data = replace(run, adapters=tuple((role, redact_urls(agent)) for role, agent in run.adapters)).to_data()
    data.pop("run_id", None)
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def copy_tag(run_id: str) -> str:
    """The tag a run stored under a new id carries: the id it has in the file (a run tag has at most
    :data:`~knowsim_core.text.tags.MAX_RUN_TAG` characters; an id too long for it is cut, marked)."""
    tag = f"copy of {run_id}"
    return tag if len(tag) <= MAX_RUN_TAG else tag[:MAX_RUN_TAG - 1] + "…"


def _stored_under_id(store: Store, run: RunRecord) -> RunRecord | None:
    """The stored run that has ``run``'s id, if any (one that cannot be read back counts as none)."""
    if not run.run_id:
        return None
    try:
        return store.runs.load(run.run_id)
    except StorageError:  # no run of that id (or one that cannot be read back: not a copy)
        return None


def _continues(stored: RunRecord, run: RunRecord) -> bool:
    """Whether ``stored`` is ``run`` carried on: the same setup and ``run``'s turns as its first ones,
    and more of them — an export made before the stored run grew (a resumed or forked run's)."""
    n = len(run.turns)
    if len(stored.turns) <= n:
        return False
    earlier = replace(stored, turns=stored.turns[:n], stop_reason=run.stop_reason)
    return _content_key(earlier) == _content_key(run)


def _stored_copy(store: Store, run: RunRecord, key: str, taken: RunRecord | None) -> str | None:
    """The id of a stored run with the same contents as ``run`` (a re-imported file must not store
    every run again), or None. ``taken``, the run stored under its id, is tried first,
    then the runs of the same question, level and seed with as many turns."""
    if taken is not None and _content_key(taken) == key:
        return run.run_id
    page, offset = 500, 0
    while True:
        rows = store.search.list(RunFilter(question_id=run.question_id, level=run.level, seed=run.seed), limit=page, offset=offset)
        for row in rows:
            if row.turns == len(run.turns) and row.id != run.run_id and _content_key(store.runs.load(row.id)) == key:
                return row.id
        if len(rows) < page:
            return None
        offset += page


def _parents_first(runs: list[RunRecord]) -> list[int]:
    """The positions of ``runs`` with every fork after the run it forked from, when both are in the
    file (otherwise file order): the parent's id here must be known before its fork is stored."""
    position = {r.run_id: i for i, r in enumerate(runs) if r.run_id}
    placed: list[int] = []
    seen: set[int] = set()

    def place(i: int, chain: set[int]) -> None:
        if i in seen or i in chain:  # a loop of links (a hand-edited file) keeps file order
            return
        parent = dict(runs[i].meta).get(FORKED_FROM)
        if parent in position:
            place(position[parent], chain | {i})
        seen.add(i)
        placed.append(i)

    for i in range(len(runs)):
        place(i, set())
    return placed


def _relinked(run: RunRecord, stored_as: dict[str, str]) -> RunRecord:
    """``run`` with its link to its parent pointing at the parent's id here, where the parent came
    in this file under another id (a named copy, or a run already stored under another id)."""
    meta = dict(run.meta)
    parent = meta.get(FORKED_FROM)
    if parent is None or stored_as.get(str(parent), parent) == parent:
        return run
    return replace(run, meta=tuple((k, stored_as[str(parent)] if k == FORKED_FROM else v) for k, v in run.meta))


def _filing_of(p: Path, kind: str, n: int) -> list[tuple[list[str], str | None]]:
    """The tags and batch tag stored beside each run of a Studio file (none for reference run files)."""
    if kind != "studio-run":
        return [([], None) for _ in range(n)]
    try:
        return studio.filing_per_run(read_json(p))
    except FormatError as exc:
        raise FormatError(f"{p}: {exc}") from None


def _judgments_of(p: Path, kind: str, n: int) -> list[list]:
    """The judgments stored beside each run of a Studio file (none for reference run files)."""
    if kind != "studio-run":
        return [[] for _ in range(n)]
    try:
        return studio.judgments_per_run(read_json(p))
    except FormatError as exc:
        raise FormatError(f"{p}: {exc}") from None


def _add_graph_if_new(store: Store, qid: str, graph: IUGraph, *, note: str) -> int:
    target = graph.to_data()
    if any(v.graph.to_data() == target for v in store.questions.graph_versions(qid)):
        return 0
    store.questions.add_graph_version(qid, graph, note=note, author="reference")
    return 1


def _import_items(
    store: Store, items: list[ReferenceItem], graph_of: dict[str, IUGraph],
    init: dict[str, dict[str, KnowledgeState]], report: ImportReport,
) -> None:
    existing = {q.id: q for q in store.questions.list()}
    for it in items:  # check first: a clash must not leave half an import behind
        if it.id in existing and existing[it.id].text != it.question:
            raise FormatError(f"question {it.id} already exists with another text; rename one of them first")
    for it in items:
        if it.id not in existing:
            store.questions.add(
                question_id=it.id, text=it.question, reference_answer=it.reference_answer,
                domain=DOMAINS.get(it.task, it.task), field=it.field, source=f"reference {it.task}", kind="paper",
            )
            report.questions += 1
        graph = graph_of.get(it.id)
        if graph is None:
            report.skipped.append(f"{it.id} (no IU graph found)")
            continue
        report.graph_versions += _add_graph_if_new(store, it.id, graph, note="reference IU cache")
        labels = set(graph.index.labels)
        for level, s0 in init.get(it.id, {}).items():
            if set(s0) != labels:
                report.skipped.append(f"{it.id}/{level} initial state (names other IUs than the graph)")
                continue
            if store.caches.get_initial_state(it.id, level) != s0:
                store.caches.set_initial_state(it.id, level, s0)
                report.initial_states += 1
