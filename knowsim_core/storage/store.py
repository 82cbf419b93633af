"""``Store``: the one object the rest of the Studio holds — a facade over the repositories.

It opens the file once (check, migrate, mark dead runs), then each repository opens its own
fresh connection per call through the shared :class:`~.connection.Connection`. New code may
use a repository directly (``store.search.list(...)``, ``store.runs.load(...)``); the methods
below keep the names ~40 call sites already use.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from knowsim_core.errors import StorageError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.state import KnowledgeState
from knowsim_core.storage.batch_cells import BatchCells, Claim
from knowsim_core.storage.caches import Caches
from knowsim_core.storage.connection import Connection, default_path
from knowsim_core.storage.migrations import check_file, migrate
from knowsim_core.storage.questions import GraphVersion, QuestionRow, Questions
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.storage.run_search import BatchGroup, RunRow, RunSearch
from knowsim_core.storage.runs import Runs

if TYPE_CHECKING:  # the judgments' file schema (pydantic models) is imported when judgments are used
    from knowsim_core.storage.judgments import Judgment, Judgments


class Store:
    """All persistent data of the Studio in one SQLite file (see the package docstring).

    Args:
        path: the database file (default ``$KNOWSIM_DB`` or ``~/.knowsim/studio.db``).
        clock: Unix seconds; leases are judged by it (tests pass a fake one).
        read_only: open for reading only; by default, when the file or its folder is not writable.
    """

    def __init__(self, path: str | Path | None = None, *, clock: Callable[[], float] = time.time,
                 read_only: bool | None = None):
        self.path = Path(path).expanduser() if path is not None else default_path()
        self._conn = Connection(self.path, read_only=read_only)
        check_file(self.path)
        if not self._conn.read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create the folder for the database {self.path}: {exc}") from None
        migrate(self._conn)
        self.questions = Questions(self._conn)
        self.runs = Runs(self._conn, clock=clock)
        self.search = RunSearch(self._conn, self.runs)
        self.caches = Caches(self._conn)
        self._judgments: Judgments | None = None
        self.cells = BatchCells(self._conn, clock=clock)
        try:
            self.runs.mark_dead()
        except StorageError as exc:
            if "disk is full" not in str(exc) and "No space left" not in str(exc):
                raise
            # a full disk must not stop reading: dead writers' runs stay listed as running until
            # there is room to mark them (the next opening does)

    @property
    def read_only(self) -> bool:
        """True when every write is refused (the file or its folder is not writable, or asked so)."""
        return self._conn.read_only

    @contextmanager
    def transaction(self) -> Iterator["Store"]:
        """Group many calls of this thread into one write transaction (bulk imports).

        Inside the block every method of this store, on this thread, shares one connection and
        one ``BEGIN IMMEDIATE`` transaction: all of it is committed at the end, or none of it.
        """
        with self._conn.transaction():
            yield self

    @contextmanager
    def pinned(self) -> Iterator["Store"]:
        """Reuse one connection for this thread's calls in the block (e.g. one conversation's
        turns); each write stays its own transaction."""
        with self._conn.pinned():
            yield self

    @property
    def schema_version(self) -> int:
        with self._conn.db() as db:
            return db.execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        with self._conn.db() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]

    # ------------------------------------------------------------------ questions and graphs
    def add_question(self, **kw: Any) -> str:
        return self.questions.add(**kw)

    def list_questions(self, *, search: str = "", domain: str | None = None,
                       kind: str | None = None) -> list[QuestionRow]:
        return self.questions.list(search=search, domain=domain, kind=kind)

    def get_question(self, question_id: str) -> QuestionRow:
        return self.questions.get(question_id)

    def seed_samples(self) -> int:
        return self.questions.seed_samples()

    def add_graph_version(self, question_id: str, graph: IUGraph, **kw: Any) -> int:
        return self.questions.add_graph_version(question_id, graph, **kw)

    def graph_versions(self, question_id: str) -> list[GraphVersion]:
        return self.questions.graph_versions(question_id)

    def get_graph_version(self, version_id: int) -> GraphVersion:
        return self.questions.get_graph_version(version_id)

    def latest_graph_version(self, question_id: str) -> GraphVersion | None:
        return self.questions.latest_graph_version(question_id)

    def graph_version_numbers(self, version_ids: list[int]) -> dict[int, int]:
        return self.questions.graph_version_numbers(version_ids)

    # ------------------------------------------------------------------ caches and judgements
    def set_initial_state(self, question_id: str, level: str, state: KnowledgeState) -> None:
        self.caches.set_initial_state(question_id, level, state)

    def get_initial_state(self, question_id: str, level: str) -> KnowledgeState | None:
        return self.caches.get_initial_state(question_id, level)

    def cache_get(self, key: str) -> str | None:
        return self.caches.cache_get(key)

    def cache_put(self, key: str, value: str) -> None:
        self.caches.cache_put(key, value)

    def set_judgement(self, run_id: str, *, score: float, rationale: str, model: str) -> None:
        self.caches.set_judgement(run_id, score=score, rationale=rationale, model=model)

    def get_judgement(self, run_id: str) -> tuple[float, str, str] | None:
        return self.caches.get_judgement(run_id)

    # ------------------------------------------------------------------ judgments of turns (👍/👎)
    @property
    def judgments(self) -> Judgments:
        """The judgments repository, made on first use: its module imports the judgments' file
        schema (pydantic models, ~0.1 s), which most commands and a batch never need."""
        if self._judgments is None:
            from knowsim_core.storage.judgments import Judgments

            self._judgments = Judgments(self._conn)
        return self._judgments

    def add_judgment(self, run_id: str, judgment: Judgment) -> Judgment:
        return self.judgments.add(run_id, judgment)

    def add_judgments(self, run_id: str, judgments: list[Judgment] | tuple[Judgment, ...]) -> int:
        return self.judgments.add_many(run_id, judgments)

    def list_judgments(self, run_id: str) -> list[Judgment]:
        return self.judgments.list(run_id)

    def all_judgments(self) -> dict[str, list[Judgment]]:
        return self.judgments.all()

    def remove_judgment(self, run_id: str, turn: int, *, source: str, who: str) -> bool:
        return self.judgments.remove(run_id, turn, source=source, who=who)

    # ------------------------------------------------------------------ runs and turns
    def create_run(self, run: RunRecord, **kw: Any) -> str:
        return self.runs.create(run, **kw)

    def save_run(self, run: RunRecord, **kw: Any) -> str:
        return self.runs.save(run, **kw)

    def append_turn(self, run_id: str, turn: TurnRecord) -> None:
        self.runs.append_turn(run_id, turn)

    def finish_run(self, run_id: str, **kw: Any) -> None:
        self.runs.finish(run_id, **kw)

    def reopen_run(self, run_id: str, **kw: Any) -> None:
        self.runs.reopen(run_id, **kw)

    def load_run(self, run_id: str) -> RunRecord:
        return self.runs.load(run_id)

    def delete_run(self, run_id: str) -> None:
        self.runs.delete([run_id])

    def delete_runs(self, run_ids: list[str]) -> None:
        """Delete several runs in one transaction: all of them, or none if any id is unknown."""
        self.runs.delete(list(run_ids))

    def mark_dead_runs(self) -> list[str]:
        return self.runs.mark_dead()

    def renew_lease(self, run_id: str, *, seconds: float | None = None) -> bool:
        return self.runs.renew_lease(run_id, seconds=seconds)

    # ------------------------------------------------------------------ finding runs
    def get_run_row(self, run_id: str) -> RunRow:
        return self.search.get_row(run_id)

    def list_runs(self, *, limit: int = 200, offset: int = 0, order: str = "created_desc",
                  **filters: Any) -> list[RunRow]:
        return self.search.list(RunFilter(**filters), limit=limit, offset=offset, order=order)

    def count_runs(self, **filters: Any) -> int:
        return self.search.count(RunFilter(**filters))

    def add_run_tags(self, run_id: str, tags: list[str]) -> list[str]:
        return self.runs.add_tags(run_id, tags)

    def remove_run_tag(self, run_id: str, tag: str) -> bool:
        return self.runs.remove_tag(run_id, tag)

    def run_tags(self, run_ids: list[str]) -> dict[str, list[str]]:
        return self.search.tags_of(run_ids)

    def all_run_tags(self) -> list[str]:
        return self.search.all_tags()

    def run_graph_version_numbers(self) -> list[int]:
        return self.search.graph_version_numbers()

    def run_values(self, column: str) -> list[Any]:
        return self.search.values(column)

    def batch_groups(self, *, limit: int = 200, unbatched: bool = False, **filters: Any) -> list[BatchGroup]:
        return self.search.batch_groups(RunFilter(**filters), limit=limit, unbatched=unbatched)

    def recent_entries(self, limit: int = 8) -> list[RunRow | BatchGroup]:
        return self.search.recent(limit)

    def run_facts(self, *, status: str = "finished", limit: int | None = None, **filters: Any) -> list:
        return self.search.facts(RunFilter(**filters), status=status, limit=limit)

    def overload_series(self, run_ids: list[str]) -> dict[str, list[tuple[bool, int]]]:
        return self.search.overload_series(run_ids)

    def population_mix(self, *, status: str = "finished", **filters: Any) -> tuple[list[int], int, int]:
        return self.search.population_mix(RunFilter(**filters), status=status)

    def mixed_graph_versions(self, *, status: str = "finished", **filters: Any) -> dict[str, list[int]]:
        return self.search.mixed_versions(RunFilter(**filters), status=status)

    def token_totals(self, agent_ids: list[str], *, limit: int = 500) -> list[tuple[str, str, str, int, int, int]]:
        return self.search.token_totals(agent_ids, limit=limit)

    def save_batch(self, tag: str, spec: dict[str, Any]) -> None:
        self.search.save_batch(tag, spec)

    def get_batch(self, tag: str) -> dict[str, Any] | None:
        return self.search.get_batch(tag)

    def list_batches(self) -> list[tuple[str, str]]:
        return self.search.list_batches()

    def claim_cell(self, tag: str, index: int, key: tuple) -> Claim:
        return self.cells.claim(tag, index, key)

    def release_cell(self, tag: str, index: int) -> None:
        self.cells.release(tag, index)

    def cell_holders(self, tag: str) -> dict[int, int]:
        return self.cells.holders(tag)

    def batch_cell_counts(self, tag: str) -> dict[str, int]:
        return self.cells.status_counts(tag)
