"""Save what-ifs as runs: one run with its labels edited (or on another graph version), or every
run of a batch or tag with the same edits.

A saved what-if is a stored run like any other: its source's setup, messages and recorded labels,
the edits applied (:func:`knowsim_core.engine.whatif.apply_edits`) and every turn from the first
edited one recomputed by the rules — no model call. Its ``meta`` links it to its source
(``forked_from``, ``forked_at_turn``: the first turn the edits changed) and records the edits in
the ``--set`` syntax (``whatif``), so Saved runs, exports and ``diff`` can say what it is.

A batch what-if stores one run per source run, all filed under one run tag, rather than
computing on the fly: then the Failure modes page, ``failures --tag`` and every other cross-run
view read the "after" population exactly as they read any other (same SQL, same arithmetic, the
same finished-runs rule), each "after" run opens, replays and diffs against its source, and the
result survives the session. Every source run gets its what-if, including those the edits do not
change (a turn they lack, an IU not in their graph), so "before" and "after" hold the same runs. A
what-if takes the source's status as "finished" or "interrupted" (the rule imports use), so the
finished-runs population of both sides is the same set. Running the same batch what-if again
stores only what is missing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Sequence

from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.whatif import (
    WHATIF_KEY, LabelEdit, apply_edits, edits_spec, parse_edits, what_if_version,
)
from knowsim_core.errors import ConfigError
from knowsim_core.services.fork import FORKED_AT, FORKED_FROM
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.text.tags import check_run_tag
from knowsim_core.vocab import RunStatus

WHATIF_OF = "whatif_of"  # meta of a batch what-if's run: the batch or tag whose runs it edited
WHATIF_GRAPH = "whatif_graph_version"  # meta: the graph version number a what-if was re-played on
DEFAULT_TAG = "what-if"
_LINK_KEYS = (FORKED_FROM, FORKED_AT, WHATIF_KEY, WHATIF_OF, WHATIF_GRAPH)
BATCH_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class WhatIfRun:
    """A what-if computed from a source run, not yet stored."""

    run: RunRecord
    first_turn: int | None  # the first turn the edits changed (1 on another graph version)
    skipped: tuple[str, ...]  # edits that could not apply to this run, and why
    graph_version_id: int | None = None


def whatif_edits(run: RunRecord) -> tuple[LabelEdit, ...] | None:
    """The edits a saved what-if was made with (None for a run that is not one)."""
    spec = dict(run.meta).get(WHATIF_KEY)
    return None if spec is None else parse_edits(str(spec))


def describe(run: RunRecord, *, source: str | None = None) -> str | None:
    """One line saying what a saved what-if is ("labels edited: turn=1,iu=IU10,…"), None otherwise.

    ``source``: how to name the run it was made from (``Parent.words()``: "deleted run …" once that
    run is gone); by default ``run <id>``."""
    meta = dict(run.meta)
    if WHATIF_KEY not in meta:
        return None
    parts = []
    if meta.get(WHATIF_KEY):
        parts.append(f"labels edited: {meta[WHATIF_KEY]}")
    if meta.get(WHATIF_GRAPH) is not None:
        parts.append(f"re-played on graph v{meta[WHATIF_GRAPH]}")
    if meta.get(WHATIF_OF):
        parts.append(f"one of the what-ifs of {meta[WHATIF_OF]}")
    named = source or f"run {meta.get(FORKED_FROM)}"
    return f"what-if of {named}" + (" — " + "; ".join(parts) if parts else "")


def compute(store: Store, source_id: str, edits: Sequence[LabelEdit], *, graph_version: int | None = None) -> WhatIfRun:
    """The what-if of stored run ``source_id`` (labels edited, optionally on graph version number
    ``graph_version`` of its question), without storing it.

    Raises:
        StorageError: an unknown run or graph version.
        ConfigError: no edit and no graph version.
    """
    source = store.runs.load(source_id)
    if not edits and graph_version is None:
        raise ConfigError("a what-if needs an edit (turn=…,iu=…,quality=…) or another graph version")
    if graph_version is None:
        res = apply_edits(source, edits)
        return WhatIfRun(res.run, res.first_turn, res.skipped, store.search.get_row(source_id).graph_version_id)
    version = next((v for v in store.questions.graph_versions(source.question_id) if v.version == graph_version), None)
    if version is None:
        raise ConfigError(f"question {source.question_id} has no graph version {graph_version}")
    res = apply_edits(source, edits)  # the labels first (their skips), then the whole run on the version
    alt = what_if_version(res.run, version.graph).run
    return WhatIfRun(alt, 1, res.skipped, version.id)


def _record(source_id: str, w: WhatIfRun, edits: Sequence[LabelEdit], *, graph_version: int | None,
            of: str | None) -> RunRecord:
    meta = [(k, v) for k, v in w.run.meta if k not in _LINK_KEYS]
    meta += [(FORKED_FROM, source_id), (FORKED_AT, w.first_turn or 0), (WHATIF_KEY, edits_spec(edits))]
    if graph_version is not None:
        meta.append((WHATIF_GRAPH, graph_version))
    if of:
        meta.append((WHATIF_OF, of))
    return replace(w.run, run_id=None, meta=tuple(meta))


def _status(store: Store, source_id: str) -> str:
    row = store.search.get_row(source_id)
    return RunStatus.FINISHED if row.status == RunStatus.FINISHED else RunStatus.INTERRUPTED


def save(store: Store, source_id: str, edits: Sequence[LabelEdit], *, tags: Sequence[str] = (DEFAULT_TAG,),
         graph_version: int | None = None) -> tuple[str, WhatIfRun]:
    """Store the what-if of ``source_id`` as a run of its own, filed under ``tags``; returns its id.

    Raises:
        StorageError / ConfigError: as :func:`compute`; ConfigError for a bad tag (nothing stored).
    """
    clean = [check_run_tag(t) for t in tags]
    w = compute(store, source_id, edits, graph_version=graph_version)
    record = _record(source_id, w, edits, graph_version=graph_version, of=None)
    with store.transaction():
        rid = store.runs.save(record, status=_status(store, source_id), graph_version_id=w.graph_version_id)
        if clean:
            store.runs.add_tags(rid, clean)
    return rid, w


# ---------------------------------------------------------------------- a batch
@dataclass
class BatchWhatIf:
    """What :func:`save_batch` did: the what-if tag, and per source run what became of it."""

    source: str  # the batch or tag edited
    tag: str  # the tag the what-if runs are filed under
    spec: str
    stored: dict[str, str] = field(default_factory=dict)  # source id -> new what-if run id
    already: dict[str, str] = field(default_factory=dict)  # source id -> what-if stored by an earlier call
    unchanged: list[str] = field(default_factory=list)  # sources the edits changed nothing in
    not_applied: dict[str, tuple[str, ...]] = field(default_factory=dict)  # source id -> edits skipped, why
    left_out: list[str] = field(default_factory=list)  # sources still running (not yet a record)

    @property
    def runs(self) -> int:
        return len(self.stored) + len(self.already)

    def summary(self) -> str:
        parts = [f"what-if {self.spec!r} of {self.source}: {len(self.stored)} run(s) stored under tag {self.tag!r}"]
        if self.already:
            parts.append(f"{len(self.already)} stored before")
        if self.unchanged:
            parts.append(f"{len(self.unchanged)} unchanged by the edits (kept, so both sides hold the same runs)")
        if self.not_applied:
            first = next(iter(self.not_applied.values()))[0]
            parts.append(f"an edit did not apply to {len(self.not_applied)} run(s) (e.g. {first})")
        if self.left_out:
            parts.append(f"{len(self.left_out)} still running, left out")
        return "; ".join(parts)


def default_tag(source: str, edits: Sequence[LabelEdit]) -> str:
    """``what-if <8 hex>`` from the source and the edits: the same batch what-if always gets the
    same tag, so running it again finds what it stored."""
    digest = hashlib.sha256(f"{source}\n{edits_spec(edits)}".encode()).hexdigest()[:8]
    return f"{DEFAULT_TAG} {digest}"


def sources(store: Store, source: str) -> list:
    """The stored runs of batch or tag ``source`` that have turns, oldest first."""
    rows = store.search.list(RunFilter(tag=source), limit=BATCH_LIMIT, order="created_asc")
    return [r for r in rows if r.turns > 0]


def save_batch(store: Store, source: str, edits: Sequence[LabelEdit], *, tag: str | None = None) -> BatchWhatIf:
    """Store the what-if of every run of batch (or tag) ``source``, filed under ``tag``.

    Raises:
        ConfigError: no edits, no run of ``source``, a bad tag, the tag of the source itself, or a
            tag that already holds what-ifs of other edits (nothing stored then).
    """
    if not edits:
        raise ConfigError("a batch what-if needs at least one edit: --set turn=…,iu=…,quality=…")
    spec = edits_spec(edits)
    tag = check_run_tag(tag or default_tag(source, edits))
    if tag == source:
        raise ConfigError(f"the what-if tag must differ from {source!r}, or its runs would join the 'before' side")
    found = sources(store, source)
    if not found:
        raise ConfigError(f"no stored run with turns is of batch or tag {source!r}; see `runs --tag {source}`")
    report = BatchWhatIf(source, tag, spec)
    earlier: dict[str, str] = {}
    for row in store.search.list(RunFilter(tag=tag), limit=BATCH_LIMIT):
        run = store.runs.load(row.id)
        meta = dict(run.meta)
        if meta.get(WHATIF_KEY) != spec:
            raise ConfigError(f"tag {tag!r} already holds runs that are not what-ifs {spec!r} "
                              f"(e.g. {row.id}); choose another tag")
        earlier[str(meta.get(FORKED_FROM))] = row.id
    with store.transaction():  # all of the batch or none of it
        for row in found:
            if row.id in earlier.values():
                continue
            if row.id in earlier:
                report.already[row.id] = earlier[row.id]
                continue
            if row.status == RunStatus.RUNNING:
                report.left_out.append(row.id)
                continue
            res = apply_edits(store.runs.load(row.id), edits)
            w = WhatIfRun(res.run, res.first_turn, res.skipped, row.graph_version_id)
            if res.skipped:
                report.not_applied[row.id] = res.skipped
            if res.first_turn is None:
                report.unchanged.append(row.id)
            status = RunStatus.FINISHED if row.status == RunStatus.FINISHED else RunStatus.INTERRUPTED
            rid = store.runs.save(_record(row.id, w, edits, graph_version=None, of=source), status=status,
                                  graph_version_id=row.graph_version_id)
            store.runs.add_tags(rid, [tag])
            report.stored[row.id] = rid
    return report


def source_tags(store: Store) -> list[str]:
    """Every batch tag and run tag that files runs: what a batch what-if can edit."""
    return sorted({*store.search.values("batch_tag"), *store.search.all_tags()})


def whatif_tags(store: Store, source: str) -> list[str]:
    """The tags holding a batch what-if of ``source`` (read from one run of each tag: a batch
    what-if's tag holds nothing else, :func:`save_batch` refuses to mix)."""
    out = []
    for tag in store.search.all_tags():
        rows = store.search.list(RunFilter(tag=tag), limit=1)
        if tag != source and rows and dict(store.runs.load(rows[0].id).meta).get(WHATIF_OF) == source:
            out.append(tag)
    return out


def batch_spec(store: Store, tag: str) -> str | None:
    """The edits of the batch what-if filed under ``tag`` (None when its runs are not one)."""
    rows = store.search.list(RunFilter(tag=tag), limit=1)
    if not rows:
        return None
    spec = dict(store.runs.load(rows[0].id).meta).get(WHATIF_KEY)
    return None if spec is None else str(spec)


__all__ = ["BatchWhatIf", "DEFAULT_TAG", "WHATIF_GRAPH", "WHATIF_OF", "WhatIfRun", "compute", "default_tag",
           "batch_spec", "describe", "save", "save_batch", "source_tags", "sources", "whatif_edits", "whatif_tags"]
