"""Questions and their IU graph versions.

Every graph enters through :func:`insert_graph`, the one door that refuses a graph with errors
its parent version does not have — imports, the editor, extraction and stored runs all use it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowsim_core import engine, formats
from knowsim_core.errors import StorageError
from knowsim_core.storage.connection import Connection, Database, exists, insert_row, now
from knowsim_core.text import titles

if TYPE_CHECKING:
    from knowsim_core.engine.graph import IUGraph


@dataclass(frozen=True, slots=True)
class QuestionRow:
    id: str
    text: str
    reference_answer: str
    domain: str
    field: str
    source: str
    created: str
    n_graph_versions: int
    kind: str = "yours"  # one of QUESTION_KINDS
    stored_title: str = ""  # set where the text makes a poor title (a real conversation's "hello")

    @property
    def title(self) -> str:
        """What a picker shows: the stored title, else the text's first sentence (clipped)."""
        return titles.question_title(self.text, self.stored_title)

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)


# The kinds of question, in the order pickers list them (samples first: a new user's first choice)
QUESTION_KINDS = ("sample", "paper", "real", "yours")
KIND_LABELS = {"sample": "Samples", "paper": "Paper (reference set)", "real": "Real conversations",
               "yours": "Yours"}


def kind_rank(kind: str) -> int:
    return QUESTION_KINDS.index(kind) if kind in QUESTION_KINDS else len(QUESTION_KINDS)


@dataclass(frozen=True, slots=True)
class GraphVersion:
    id: int
    question_id: str
    version: int
    parent_id: int | None
    note: str
    author: str
    created: str
    graph: IUGraph


def graph_json(graph: IUGraph) -> str:
    return json.dumps(graph.to_data(), ensure_ascii=False, sort_keys=True)


def insert_graph(db: Database, qid: str, graph: IUGraph, *, note: str, author: str, parent_id: int | None) -> int:
    """Store ``graph`` as the question's next version — the one door every graph goes through.

    Refuses (GraphError) a graph with errors its parent version does not have; without a
    parent it is kept as authored (an import, a sample, a first extraction): its own cycles
    are allowed, an empty graph, NaN levels, duplicate ids or dangling edges never are.
    """
    parent = None
    if parent_id is not None:
        row = db.execute("SELECT graph_json FROM graph_versions WHERE id = ?", [parent_id]).fetchone()
        parent = engine.graph.IUGraph.from_data(json.loads(row[0])) if row else None
    graph.require_savable(parent, as_authored=parent_id is None)
    version = db.execute(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM graph_versions WHERE question_id = ?", [qid]
    ).fetchone()[0]
    return insert_row(db, "graph_versions", {
        "question_id": qid, "version": version, "parent_id": parent_id, "note": note, "author": author,
        "created": now(), "graph_json": graph_json(graph)})


def insert_question(db: Database, **row: Any) -> None:
    """A question row as given plus its creation time (the caller checked the id is free)."""
    insert_row(db, "questions", {"field": "", **row, "created": now()})


class Questions:
    """The question library and each question's graph versions."""

    _SELECT = (
        "SELECT q.id, q.text, q.reference_answer, q.domain, q.field, q.source, q.created, "
        "(SELECT COUNT(*) FROM graph_versions g WHERE g.question_id = q.id), q.kind, q.title FROM questions q"
    )
    _G_COLUMNS = ("id", "question_id", "version", "parent_id", "note", "author", "created")

    def __init__(self, conn: Connection):
        self._conn = conn

    def add(
        self, *, text: str, reference_answer: str = "", domain: str = "", field: str = "",
        source: str = "user", question_id: str | None = None, kind: str = "yours", title: str = "",
    ) -> str:
        """Add a question; adding the same id with the same text again is a no-op.

        ``kind`` is one of :data:`QUESTION_KINDS` (what pickers group by); ``title`` only where the
        text's first sentence makes a poor one.
        """
        if not text or not text.strip():
            raise StorageError("a question needs a non-empty text")
        if kind not in QUESTION_KINDS:
            raise StorageError(f"unknown question kind {kind!r}; expected one of {', '.join(QUESTION_KINDS)}")
        qid = question_id or f"q_{uuid.uuid4().hex[:10]}"
        with self._conn.write() as db:
            row = db.execute("SELECT text FROM questions WHERE id = ?", [qid]).fetchone()
            if row is not None:
                if row[0] != text:
                    raise StorageError(f"question id {qid!r} already exists with another text; choose another id")
                return qid
            insert_question(db, id=qid, text=text, reference_answer=reference_answer, domain=domain,
                            field=field, source=source, kind=kind, title=title)
        return qid

    def list(self, *, search: str = "", domain: str | None = None, kind: str | None = None) -> list[QuestionRow]:
        """Questions grouped by kind (samples first), by id within a kind."""
        where, args = [], []
        if kind:
            where.append("q.kind = ?")
            args.append(kind)
        if search:
            where.append("(q.text LIKE ? OR q.id LIKE ? OR q.field LIKE ? OR q.title LIKE ?)")
            args += [f"%{search}%"] * 4
        if domain:
            where.append("q.domain = ?")
            args.append(domain)
        order = " ORDER BY CASE q.kind " + " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(QUESTION_KINDS)) \
            + f" ELSE {len(QUESTION_KINDS)} END, q.id"
        sql = self._SELECT + (" WHERE " + " AND ".join(where) if where else "") + order
        with self._conn.db() as db:
            return [QuestionRow(*r) for r in db.execute(sql, args).fetchall()]

    def get(self, question_id: str) -> QuestionRow:
        with self._conn.db() as db:
            row = db.execute(self._SELECT + " WHERE q.id = ?", [question_id]).fetchone()
        if row is None:
            raise StorageError(f"unknown question id {question_id!r}; `python -m knowsim_core runs` lists runs, "
                               "the Questions page lists questions")
        return QuestionRow(*row)

    def seed_samples(self) -> int:
        """Add every sample question (+ its graph as version 1) that is missing; idempotent."""
        added = 0
        with self._conn.write() as db:  # one transaction for the whole set
            for s in formats.samples.load_samples():
                if exists(db, "questions", "id = ?", [s.id]):
                    continue
                insert_question(db, id=s.id, text=s.question, reference_answer=s.reference_answer,
                                domain=s.domain, field=s.field, source=s.source or "sample", kind="sample")
                insert_graph(db, s.id, s.graph, note="sample graph", author="human", parent_id=None)
                added += 1
        return added

    # ------------------------------------------------------------------ graph versions
    def add_graph_version(
        self, question_id: str, graph: IUGraph, *, note: str = "", author: str = "human", parent_id: int | None = None,
    ) -> int:
        with self._conn.write() as db:
            if not exists(db, "questions", "id = ?", [question_id]):
                raise StorageError(f"unknown question id {question_id!r}; add the question before its graph")
            if parent_id is not None:
                row = db.execute("SELECT question_id FROM graph_versions WHERE id = ?", [parent_id]).fetchone()
                if row is None or row[0] != question_id:
                    raise StorageError(f"parent graph version {parent_id} is not a version of question {question_id!r}")
            return insert_graph(db, question_id, graph, note=note, author=author, parent_id=parent_id)

    def _versions(self, where: str, args: list[Any], *, order_by: str | None = None,
                  limit: int | None = None) -> list[GraphVersion]:
        sql = (f"SELECT {', '.join(self._G_COLUMNS)}, graph_json FROM graph_versions WHERE {where}"
               + (f" ORDER BY {order_by}" if order_by else "") + (f" LIMIT {int(limit)}" if limit is not None else ""))
        with self._conn.db() as db:
            rows = db.execute(sql, args).fetchall()
        return [GraphVersion(*r[:-1], graph=engine.graph.IUGraph.from_data(json.loads(r[-1]))) for r in rows]

    def graph_versions(self, question_id: str) -> list[GraphVersion]:
        return self._versions("question_id = ?", [question_id], order_by="version")

    def get_graph_version(self, version_id: int) -> GraphVersion:
        found = self._versions("id = ?", [version_id])
        if not found:
            raise StorageError(f"unknown graph version id {version_id!r}")
        return found[0]

    def latest_graph_version(self, question_id: str) -> GraphVersion | None:
        found = self._versions("question_id = ?", [question_id], order_by="version DESC", limit=1)
        return found[0] if found else None

    def graph_version_numbers(self, version_ids: list[int]) -> dict[int, int]:
        """``{graph version id: version number}`` for the given ids (no graph is parsed)."""
        ids = sorted({int(v) for v in version_ids if v is not None})
        out: dict[int, int] = {}
        with self._conn.db() as db:
            for i in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
                chunk = ids[i : i + 500]
                marks = ", ".join("?" * len(chunk))
                out.update(db.execute(f"SELECT id, version FROM graph_versions WHERE id IN ({marks})", chunk))
        return out
