"""Finding runs: filters, full-text search over transcripts, pages, per-batch groups, cross-run facts.

Every method that reads a set of runs (``list``, ``count``, ``batch_groups``, ``facts``,
``population_mix``, ``mixed_versions``) takes one :class:`~.run_filter.RunFilter` (default: every
run) plus its own paging, order or status arguments, so a page, a command and a test say which
runs in the same typed words. Every filter is applied in SQL, before ``LIMIT``: a page is never
filtered after the fact in Python. The ``WHERE`` clause (:func:`~.run_filter.where_clause`) is
built by hand because the list joins ``questions`` and the
search is a sub-select on the FTS table (``turns_fts``; turns of runs still open by substring);
sqlite-utils' ``rows_where`` takes exactly such a clause, but not the join.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowsim_core import engine
from knowsim_core.errors import StorageError
from knowsim_core.storage.caches import unknown_run
from knowsim_core.storage.connection import Connection, exists, insert_row, now
from knowsim_core.storage.run_filter import (  # noqa: F401 — where_clause and its words live with RunFilter
    CONTAINS, EXACT, NO_FILTER, ORIGINS, RATED, RunFilter, typed_sql, where_clause,
)
from knowsim_core.storage.runs import MODE_COLUMNS, Runs
from knowsim_core.text import titles
from knowsim_core.vocab import POPULATIONS, Population, RunStatus

if TYPE_CHECKING:
    from knowsim_core.engine.facts import RunFacts

ORDERS = {
    "created_desc": "r.created DESC, r.rowid DESC",
    "created_asc": "r.created ASC, r.rowid ASC",
    "updated_desc": "r.updated DESC, r.rowid DESC",
    "kg_desc": "r.kg DESC, r.created DESC",
    "rating_desc": "r.rating IS NULL, r.rating DESC, r.created DESC",  # unrated runs last either way
    "rating_asc": "r.rating IS NULL, r.rating ASC, r.created DESC",
}
VALUE_COLUMNS = ("assistant", "user", "extractor", "preset", "level", "question_id", "seed", "batch_tag",
                 "correctness")


@dataclass(frozen=True, slots=True)
class RunRow:
    id: str
    question_id: str
    question: str
    level: str
    assistant: str
    user: str
    extractor: str
    preset: str
    seed: int
    status: str
    stop_reason: str | None
    turns: int
    kg: float | None
    dc: float | None
    co: float | None
    created: str
    updated: str
    error: str
    iq_score: float | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    graph_version_id: int | None
    batch_tag: str | None = None  # the `batch --tag` this run belongs to (see the batch_tag migration)
    rating: float | None = None  # the person's rating of a human run (migration 0006_judgments)
    correctness: str | None = None  # their final answer's correctness, as the source wrote it
    question_title: str = ""  # the question's stored title ("" where its text's first sentence serves)

    @property
    def title(self) -> str:
        """The question's title, as every picker and Simulate's header name it (a real conversation
        by its field and concepts, not by its first message)."""
        return titles.question_title(self.question, self.question_title)


@dataclass(frozen=True, slots=True)
class BatchGroup:
    """The runs of one batch tag that match the filters, summed up (one line on Home / Saved runs)."""
    tag: str
    runs: int
    finished: int
    unfinished: int
    turns: int
    kg: float | None  # means over runs with stored metrics
    dc: float | None
    co: float | None
    first: str
    last: str


_SELECT = (
    "SELECT r.id, r.question_id, q.text, r.level, r.assistant, r.user, r.extractor, r.preset, r.seed, "
    "r.status, r.stop_reason, r.n_turns, r.kg, r.dc, r.co, r.created, r.updated, r.error, r.iq_score, "
    "r.tokens_in, r.tokens_out, r.cost_usd, r.graph_version_id, r.batch_tag, r.rating, r.correctness, q.title "
    "FROM runs r JOIN questions q ON q.id = r.question_id"
)


class RunSearch:
    """Read-only queries over runs (plus the batches table they are grouped by)."""

    def __init__(self, conn: Connection, runs: Runs):
        self._conn = conn
        self._runs = runs  # cross-run facts read a run without stored metrics record by record

    def get_row(self, run_id: str) -> RunRow:
        with self._conn.db() as db:
            row = db.execute(_SELECT + " WHERE r.id = ?", [run_id]).fetchone()
        if row is None:
            raise StorageError(unknown_run(run_id))
        return RunRow(*row)

    def list(self, run_filter: RunFilter = NO_FILTER, *, limit: int = 200, offset: int = 0,
             order: str = "created_desc") -> list[RunRow]:
        """One page of the runs matching the filter (its ``text`` searches the transcripts), in ``order``."""
        if order not in ORDERS:
            raise StorageError(f"unknown run order {order!r}; expected one of {', '.join(ORDERS)}")
        where, args = _where(run_filter)
        sql = f"{_SELECT}{where} ORDER BY {ORDERS[order]} LIMIT ? OFFSET ?"
        with self._conn.db() as db:
            return [RunRow(*r) for r in db.execute(sql, [*args, int(limit), int(offset)]).fetchall()]

    def count(self, run_filter: RunFilter = NO_FILTER) -> int:
        where, args = _where(run_filter)
        with self._conn.db() as db:
            return db.execute(f"SELECT COUNT(*) FROM runs r{where}", args).fetchone()[0]

    def graph_version_numbers(self) -> list[int]:
        """The graph version numbers stored runs were simulated on (v1, v2, … across questions)."""
        with self._conn.db() as db:
            return [v for (v,) in db.execute(
                "SELECT DISTINCT g.version FROM runs r JOIN graph_versions g ON g.id = r.graph_version_id "
                "ORDER BY g.version")]

    def values(self, column: str) -> list[Any]:
        """The distinct values of a run column the filters offer as a dropdown (NULL left out)."""
        if column not in VALUE_COLUMNS:
            raise StorageError(f"runs cannot be listed by {column!r}; expected one of {', '.join(VALUE_COLUMNS)}")
        with self._conn.db() as db:
            return [r[0] for r in db.execute(
                f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY {column}").fetchall()]

    def batch_groups(self, run_filter: RunFilter = NO_FILTER, *, limit: int = 200,
                     unbatched: bool = False) -> list[BatchGroup]:
        """One summary per batch tag over the runs matching the filter, newest batch first.
        With ``unbatched`` the runs of no batch form one more group, tagged ``""``."""
        return self._groups(*_where(run_filter), limit=limit, unbatched=unbatched)

    def _groups(self, where: str, args: list[Any], *, limit: int, unbatched: bool = False) -> list[BatchGroup]:
        if not unbatched:
            where = (where + " AND" if where else " WHERE") + " r.batch_tag IS NOT NULL"
        sql = (
            "SELECT COALESCE(r.batch_tag, ''), COUNT(*), SUM(r.status = ?), SUM(r.status != ?), "
            f"SUM(r.n_turns), AVG(r.kg), AVG(r.dc), AVG(r.co), MIN(r.created), MAX(r.created) FROM runs r{where} "
            "GROUP BY r.batch_tag ORDER BY MAX(r.created) DESC LIMIT ?"
        )
        with self._conn.db() as db:
            return [BatchGroup(*r) for r in db.execute(sql, [RunStatus.FINISHED, RunStatus.FINISHED, *args,
                                                              int(limit)]).fetchall()]

    def recent(self, limit: int = 8) -> list[RunRow | BatchGroup]:
        """The newest entries, a batch's runs folded into one :class:`BatchGroup` (Home's list).

        The newest ``limit`` single runs and the newest ``limit`` batches, each limited in SQL, hold
        the newest ``limit`` entries overall; merging them by time picks those. Both lookups are
        answered from the (batch_tag, created) index; only the chosen batches are summarised.
        """
        with self._conn.db() as db:
            singles = [RunRow(*r) for r in db.execute(
                f"{_SELECT} WHERE r.batch_tag IS NULL ORDER BY r.created DESC, r.rowid DESC LIMIT ?", [int(limit)])]
            tags = [t for (t,) in db.execute(
                "SELECT batch_tag FROM runs WHERE batch_tag IS NOT NULL GROUP BY batch_tag "
                "ORDER BY MAX(created) DESC LIMIT ?", [int(limit)])]
        # "any of these tags" is no RunFilter condition (a filter holds one tag): the keywords directly
        groups = self._groups(*where_clause(batch_tag=tags), limit=limit) if tags else []
        entries: list[RunRow | BatchGroup] = [*singles, *groups]
        entries.sort(key=lambda e: e.last if isinstance(e, BatchGroup) else e.created, reverse=True)
        return entries[:limit]

    def facts(self, run_filter: RunFilter = NO_FILTER, *, status: str = Population.FINISHED,
              limit: int | None = None) -> list[RunFacts]:
        """The population of the cross-run views (Failure modes page, ``failures`` command).

        Runs with at least one turn that match the filter, newest first. ``status`` (the view's
        finished / all / unfinished choice, not the filter's run statuses) is one of
        :class:`~knowsim_core.vocab.Population` (finished runs by default: a run stopped at
        turn 1 is not averaged with finished ones unless asked). Every filter is applied in SQL
        before ``limit``. Mode counts come from the per-turn columns in the same query; a run with
        no stored metrics (still running, or its writer died) is read back record by record.
        """
        where, args = self._facts_where(run_filter, status=status)
        sums = ", ".join(f"SUM(t.{c})" for c in MODE_COLUMNS)
        firsts = ", ".join(f"MIN(CASE WHEN t.{c} > 0 THEN t.turn END)" for c in MODE_COLUMNS)
        sql = (
            "WITH sel AS (SELECT r.rowid AS rk, r.id, r.question_id, r.level, r.assistant, r.preset, r.seed, r.status, "
            "r.batch_tag, "
            f"r.kg, r.dc, r.co, r.n_turns, r.created FROM runs r{where} "
            "ORDER BY r.created DESC, r.rowid DESC" + (" LIMIT ?" if limit is not None else "") + ") "
            f"SELECT sel.id, sel.question_id, sel.level, sel.assistant, sel.preset, sel.seed, sel.status, sel.batch_tag, sel.kg, "
            f"sel.dc, sel.co, sel.n_turns, {sums}, {firsts} FROM sel JOIN turns t ON t.run_id = sel.id "
            "GROUP BY sel.id ORDER BY sel.created DESC, sel.rk DESC"
        )
        with self._conn.db() as db:
            rows = db.execute(sql, [*args, *([int(limit)] if limit is not None else [])]).fetchall()
        out = []
        for rid, qid, lv, asst, pre, seed, st, tag, kg, dc, co, n, *modes in rows:
            if None in (kg, dc, co):
                out.append(engine.facts.run_facts(self._runs.load(rid), run_id=rid, status=st, batch=tag or ""))
            else:
                out.append(engine.facts.facts_from_summary(
                    run_id=rid, question_id=qid, level=lv, assistant=asst, preset=pre, kg=kg, dc=dc, co=co,
                    turns=n, mode_counts=modes[:5], first_turn=modes[5:], seed=seed, status=st, batch=tag or "",
                ))
        return out

    def overload_series(self, run_ids: list[str]) -> dict[str, list[tuple[bool, int]]]:
        """Per run, (overload flag, upward transitions) of every stored turn in turn order — what
        the overload stop rule reads (spec §5.1), from the turn columns, without the records (the
        paper check of the Failure modes page asks it for hundreds of runs)."""
        out: dict[str, list[tuple[bool, int]]] = {rid: [] for rid in run_ids}
        with self._conn.db() as db:
            for i in range(0, len(run_ids), 500):  # under SQLite's bound-variable limit
                chunk = run_ids[i:i + 500]
                marks = ", ".join("?" * len(chunk))
                for rid, over, up in db.execute(
                        f"SELECT run_id, overload, n_upward FROM turns WHERE run_id IN ({marks}) ORDER BY run_id, turn",
                        chunk).fetchall():
                    out[rid].append((bool(over), int(up)))
        return out

    @staticmethod
    def _facts_where(run_filter: RunFilter, *, status: str) -> tuple[str, list[Any]]:
        """The cross-run population's ``WHERE``: the filter, at least one turn, and the status choice."""
        if status not in POPULATIONS:
            raise StorageError(f"unknown status filter {status!r}; expected one of {', '.join(POPULATIONS)}")
        where, args = _where(run_filter)
        # extractor 'none': a recorded conversation kept without a reading (no IUs, so no modes or metrics)
        where = (where + " AND" if where else " WHERE") + " r.n_turns > 0 AND r.extractor != 'none'"
        if status != Population.ALL:
            where += " AND r.status = ?" if status == Population.FINISHED else " AND r.status != ?"
            args = [*args, RunStatus.FINISHED]
        return where, args

    def population_mix(self, run_filter: RunFilter = NO_FILTER, *,
                       status: str = Population.FINISHED) -> tuple[list[int], int, int]:
        """(graph version numbers, forks, runs with a typed side) in the population :meth:`facts`
        reads with the same filter and status — what a view must say before it pools them."""
        where, args = self._facts_where(run_filter, status=status)
        with self._conn.db() as db:
            versions = [v for (v,) in db.execute(
                "SELECT DISTINCT g.version FROM runs r JOIN graph_versions g ON g.id = r.graph_version_id"
                f"{where} ORDER BY g.version", args)]
            forks, typed = db.execute(
                "SELECT COALESCE(SUM(r.forked_from IS NOT NULL), 0), "
                f"COALESCE(SUM({typed_sql()}), 0) FROM runs r{where}", args).fetchone()
        return versions, int(forks), int(typed)

    def mixed_versions(self, run_filter: RunFilter = NO_FILTER, *,
                       status: str = Population.FINISHED) -> dict[str, list[int]]:
        """``{question id: its graph version numbers}`` for the questions whose runs in the
        :meth:`facts` population (same filter and status) span more than one version of their graph — what
        pooling mixes. Runs of different questions on v1 and v3 are each on their question's one
        graph: nothing to warn about."""
        where, args = self._facts_where(run_filter, status=status)
        with self._conn.db() as db:
            rows = db.execute(
                "SELECT DISTINCT r.question_id, g.version FROM runs r JOIN graph_versions g ON g.id = r.graph_version_id"
                f"{where} ORDER BY r.question_id, g.version", args).fetchall()
        out: dict[str, list[int]] = {}
        for qid, version in rows:
            out.setdefault(qid, []).append(version)
        return {q: v for q, v in out.items() if len(v) > 1}

    def token_totals(self, agent_ids: list[str], *, limit: int = 500) -> list[tuple[str, str, str, int, int, int]]:
        """(assistant, user, extractor, turns, tokens in, tokens out) of recent runs that used any of
        ``agent_ids`` and spent tokens — what a batch estimate averages over."""
        if not agent_ids:
            return []
        marks = ", ".join("?" * len(agent_ids))
        with self._conn.db() as db:
            return db.execute(
                f"SELECT assistant, user, extractor, n_turns, tokens_in, tokens_out FROM runs "
                f"WHERE n_turns > 0 AND tokens_in > 0 AND (assistant IN ({marks}) OR user IN ({marks}) "
                f"OR extractor IN ({marks})) ORDER BY created DESC LIMIT ?",
                [*agent_ids, *agent_ids, *agent_ids, int(limit)],
            ).fetchall()

    # ------------------------------------------------------------------ tags
    def tags_of(self, run_ids: list[str]) -> dict[str, list[str]]:
        """``{run id: its tags, sorted}`` for the given runs (runs without tags left out)."""
        out: dict[str, list[str]] = {}
        ids = list(dict.fromkeys(run_ids))
        with self._conn.db() as db:
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                for rid, tag in db.execute(
                        f"SELECT run_id, tag FROM run_tags WHERE run_id IN ({', '.join('?' * len(chunk))}) "
                        "ORDER BY tag", chunk):
                    out.setdefault(rid, []).append(tag)
        return out

    def all_tags(self) -> list[str]:
        with self._conn.db() as db:
            return [t for (t,) in db.execute("SELECT DISTINCT tag FROM run_tags ORDER BY tag")]

    # ------------------------------------------------------------------ batches
    def save_batch(self, tag: str, spec: dict[str, Any]) -> None:
        """Record a batch's matrix under its tag (what ``batch --resume TAG`` replays).

        Raises:
            StorageError: the tag is taken.
        """
        with self._conn.write() as db:
            if exists(db, "batches", "tag = ?", [tag]):
                raise StorageError(f"batch tag {tag!r} exists; continue it with --resume {tag} or choose another --tag")
            insert_row(db, "batches", {"tag": tag, "created": now(),
                                       "spec_json": json.dumps(spec, ensure_ascii=False, sort_keys=True)})

    def list_batches(self) -> list[tuple[str, str]]:
        """(tag, created) of every stored batch, newest first."""
        with self._conn.db() as db:
            return [(t, c) for t, c in db.execute("SELECT tag, created FROM batches ORDER BY created DESC, tag")]

    def get_batch(self, tag: str) -> dict[str, Any] | None:
        """The matrix stored for a batch tag, or None."""
        with self._conn.db() as db:
            row = db.execute("SELECT spec_json FROM batches WHERE tag = ?", [tag]).fetchone()
        return json.loads(row[0]) if row else None


def _where(run_filter: RunFilter) -> tuple[str, list[Any]]:
    """The filter's ``WHERE``; anything but a :class:`RunFilter` (a dict of keywords, the old
    ``**filters``) is refused here rather than read as "no filter"."""
    if not isinstance(run_filter, RunFilter):
        raise TypeError(f"expected a RunFilter, got {type(run_filter).__name__}")
    return run_filter.where()
