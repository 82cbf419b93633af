"""Runs and their turns: storing, appending, closing, reopening, loading, deleting.

* **One transaction per turn.** A completed turn is on disk before the next model call starts,
  so a crash, a closed laptop or a rate limit never loses it.
* **Reopening is a check-and-set.** :meth:`Runs.reopen` reads the status and turn count inside the
  same ``BEGIN IMMEDIATE`` transaction that claims the run, so of two concurrent resumes exactly
  one wins and a finished run is never reopened (or demoted).
* **Compressed records.** A run's setup and each turn's record are zlib-compressed JSON (schema 2);
  the columns the Runs page filters and sorts on stay plain.
* **Search indexed per run.** An appended turn enters the full-text index when its run closes
  (finished, failed, interrupted — also when a dead writer's run is marked interrupted), in one
  statement for all its turns; until then search finds it by substring (:mod:`.run_search`).

Listing and search are in :mod:`.run_search`; liveness (pids, leases) in :mod:`.liveness`.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from knowsim_core import engine
from knowsim_core.errors import FormatError, StorageError
from knowsim_core.storage.caches import unknown_run
from knowsim_core.storage.connection import Connection, Database, exists, insert_row, now, pack, unpack, update_row
from knowsim_core.storage.liveness import writer, writer_gone
from knowsim_core.storage.migrations import forked_column, judged_columns, legacy_kind
from knowsim_core.storage.questions import graph_json, insert_graph, insert_question
from knowsim_core.text.tags import check_run_tag
from knowsim_core.vocab import FAILURE_ORDER, FINAL_STATUSES, LIVE_STATUSES, RUN_STATUSES, RunStatus

if TYPE_CHECKING:  # the records (pydantic graphs, ~0.1 s) are imported where a run is read back: listing needs none
    from knowsim_core.engine.metrics import Metrics
    from knowsim_core.engine.records import RunRecord, TurnRecord, Usage

STATUSES = RUN_STATUSES  # the runs.status column's values (its CHECK constraint, migration 0001)
MODE_COLUMNS = tuple(m.value for m in FAILURE_ORDER)  # a turn's count per mode: one column named by its key


@dataclass(frozen=True, slots=True)
class Closing:
    """How a run closes (:meth:`Runs.finish`, or :meth:`Runs.append_turns` with its last turns):
    ``record`` is the caller's copy of the run, used for the metrics when it holds every stored turn;
    ``spent`` is added to the run's tokens and cost."""

    status: str
    stop_reason: str | None = None
    error: str = ""
    record: RunRecord | None = None
    spent: tuple[Usage, ...] = ()  # model calls billed in a turn that did not complete (no turn holds them)
    metrics: Metrics | None = None  # the run's metrics, computed where it was played (used when over every turn)


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """A turn as the ``turns`` table holds it: the columns the Runs page filters on and the packed
    record. Made from a :class:`TurnRecord` (:meth:`of`) where the turn is played — on a cluster's
    worker — the process storing it needs neither the record's objects nor their packing."""

    turn: int
    user_message: str
    assistant_message: str
    effective_load: float
    overload_threshold: float
    overload: bool
    efficiency: float
    n_upward: int
    modes: tuple[tuple[str, int], ...]  # (failure mode column, count)
    extractor_failed: bool
    usage: tuple[Usage, ...]
    record: bytes

    @classmethod
    def of(cls, turn: TurnRecord) -> "StoredTurn":
        q, modes = turn.quantities, turn.mode_counts()
        return cls(turn.turn, turn.user_message, turn.assistant_message, q.effective_load, q.overload_threshold,
                   q.overload, q.efficiency, q.n_upward_transitions,
                   tuple((m.value, modes.get(m, 0)) for m in FAILURE_ORDER), turn.extractor_failed, turn.usage,
                   pack(turn.to_data()))


class Runs:
    """The write side of runs and turns, and reading one run back whole."""

    def __init__(self, conn: Connection, *, clock: Callable[[], float] = time.time):
        self._conn = conn
        self._clock = clock  # Unix seconds; leases are judged by it (tests pass a fake one)

    # ------------------------------------------------------------------ storing
    def create(
        self, run: RunRecord, *, graph_version_id: int | None = None, lease_seconds: float | None = None,
        batch_tag: str | None = None,
    ) -> str:
        """Store a run's setup (and any turns it already has): ``running``, or ``open`` when it is
        held under a lease.

        ``lease_seconds``: the app's runs hold a lease (see :meth:`renew_lease`) and are ``open``;
        CLI runs none.
        """
        packed = _packed(run)  # before the lock: another writer would wait for the JSON + zlib
        status = RunStatus.RUNNING if lease_seconds is None else RunStatus.OPEN
        with self._conn.write() as db:
            rid = self._insert(db, run, packed, status=status, graph_version_id=graph_version_id,
                               batch_tag=batch_tag)
            if lease_seconds is not None:
                update_row(db, "runs", rid, {"lease_seconds": float(lease_seconds),
                                             "lease_until": self._clock() + float(lease_seconds)})
            return rid

    def save(
        self, run: RunRecord, *, status: str = RunStatus.FINISHED, graph_version_id: int | None = None,
        batch_tag: str | None = None,
    ) -> str:
        """Store a whole run in one transaction (imports, replays)."""
        if status not in STATUSES:
            raise StorageError(f"unknown run status {status!r}; expected one of {', '.join(STATUSES)}")
        packed = _packed(run)
        with self._conn.write() as db:
            return self._insert(db, run, packed, status=status, graph_version_id=graph_version_id,
                                batch_tag=batch_tag)

    def _insert(self, db: Database, run: RunRecord, packed: tuple[bytes, list[bytes]], *, status: str,
                graph_version_id: int | None, batch_tag: str | None = None) -> str:
        rid = run.run_id
        if not rid or exists(db, "runs", "id = ?", [rid]):
            rid = uuid.uuid4().hex[:12]
        qid = run.question_id
        if not exists(db, "questions", "id = ?", [qid]):
            source = str(dict(run.meta).get("source", "run"))
            insert_question(db, id=qid, text=run.question or qid, reference_answer=run.reference_answer,
                            domain=run.domain, source=source, kind=legacy_kind(qid, source))
        if graph_version_id is None:
            gjson = graph_json(run.graph)
            versions = db.execute("SELECT id, graph_json FROM graph_versions WHERE question_id = ? "
                                  "ORDER BY version DESC", [qid]).fetchall()
            graph_version_id = next((v for v, g in versions if g == gjson), None)
            if graph_version_id is None and not versions and run.graph.nodes:  # no IUs: a transcript, no graph
                graph_version_id = insert_graph(db, qid, run.graph, note="graph of an imported run", author="import",
                                                parent_id=None)
        elif not exists(db, "graph_versions", "id = ? AND question_id = ?", [graph_version_id, qid]):
            raise StorageError(f"graph version {graph_version_id} is not a version of question {qid!r}")
        adapters = run.adapter
        rating, correctness = judged_columns(dict(run.meta))  # a human run's judgments, for Saved runs
        stamp = now()
        insert_row(db, "runs", {
            "id": rid, "question_id": qid, "graph_version_id": graph_version_id, "level": run.level,
            "assistant": adapters.get("assistant", ""), "user": adapters.get("user", ""),
            "extractor": adapters.get("extractor", ""), "preset": run.params.preset, "seed": run.seed,
            "status": status, "stop_reason": run.stop_reason, "n_turns": 0, "created": stamp, "updated": stamp,
            **writer(), "heartbeat": stamp, "record_schema": run.schema_version, "setup_json": packed[0],
            "batch_tag": batch_tag or None, "rating": rating, "correctness": correctness,
            "forked_from": forked_column(dict(run.meta))})
        for i, turn in enumerate(packed[1], 1):
            if turn.turn != i:
                raise StorageError(f"run {rid}: turn numbers must be 1, 2, 3, …; found {turn.turn} at position {i}")
            self._insert_turn(db, rid, turn)
        if run.turns and status not in LIVE_STATUSES:
            _set_metrics(db, rid, run.metrics())
        return rid

    def _insert_turn(self, db: Database, rid: str, turn: StoredTurn, *, defer_search: bool = False) -> None:
        """Store one turn and update the run's counters; a stored turn also renews the run's lease.

        ``defer_search``: list the turn in ``turns_unindexed`` for :func:`index_run_turns` to add
        to the full-text index when the run closes (a running run's appended turns), instead of
        indexing it in this transaction (see migration 0005)."""
        stamp = now()
        row = {"run_id": rid, "turn": turn.turn, "user_message": turn.user_message,
               "assistant_message": turn.assistant_message, "effective_load": turn.effective_load,
               "overload_threshold": turn.overload_threshold, "overload": int(turn.overload),
               "efficiency": turn.efficiency, "n_upward": turn.n_upward, **dict(turn.modes),
               "extractor_failed": int(turn.extractor_failed), "created": stamp, "record_json": turn.record}
        rowid = insert_row(db, "turns", row)
        if defer_search:
            db.execute("INSERT INTO turns_unindexed (turn_rowid) VALUES (?)", [rowid])
        else:
            db.execute("INSERT INTO turns_fts (rowid, user_message, assistant_message) VALUES (?, ?, ?)",
                       [rowid, turn.user_message, turn.assistant_message])
        # counters add to what is stored (SQL arithmetic), so this stays one statement
        db.execute(
            "UPDATE runs SET n_turns = ?, updated = ?, heartbeat = ?, lease_until = ? + lease_seconds, "
            "tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, cost_usd = cost_usd + ? WHERE id = ?",
            [turn.turn, stamp, stamp, self._clock(), sum(u.input_tokens for u in turn.usage),
             sum(u.output_tokens for u in turn.usage), sum(u.cost_usd for u in turn.usage), rid],
        )

    def append_turn(self, run_id: str, turn: TurnRecord) -> None:
        """Add the next completed turn of a running run, in its own transaction."""
        self.append_turns(run_id, (turn,))

    def append_turns(self, run_id: str, turns: Sequence[TurnRecord | StoredTurn], *, close: Closing | None = None,
                     then: Callable[[], None] | None = None, record: RunRecord | None = None) -> None:
        """Add the next completed turns of a running (or open) run in one transaction — and, with
        ``close``, close the run in the same transaction (:meth:`finish`'s checks and metrics);
        ``then`` (the caller's own bookkeeping, e.g. a batch releasing its cell) is called last
        inside it, so both are stored or neither. ``record``: the caller's copy of the run with
        these turns; an open run's metrics so far are set from it (the list shows them while the
        conversation is still going, and after its tab closed).

        The runner writes an offline conversation's turns a few at a time (see
        ``services/runner.py``): a transaction per turn was a quarter of an offline batch's time.
        The records are packed before the write lock is taken: JSON + zlib are ~0.2 ms of CPU per
        turn that other writers (a batch's worker processes) would otherwise wait for; closing the
        run here, in the same transaction, keeps its last turns' packing outside the lock too (held
        ~2 ms per conversation, against ~4.9 ms with the packing inside). A turn given as a :class:`StoredTurn` was packed where it was played (a cluster's worker)."""
        stored = [t if isinstance(t, StoredTurn) else StoredTurn.of(t) for t in turns]
        with self._conn.transaction(), self._conn.write() as db:  # write() inside transaction(): the same one
            row = db.execute("SELECT status, n_turns FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise StorageError(unknown_run(run_id))
            status, n = row
            if turns and status not in LIVE_STATUSES:
                raise StorageError(f"run {run_id} is {status}; resume it before adding turns")
            for turn in stored:
                if turn.turn != n + 1:
                    raise StorageError(
                        f"run {run_id} has {n} turns; the next turn must be number {n + 1}, got {turn.turn}")
                self._insert_turn(db, run_id, turn, defer_search=True)
                n += 1
            if close is None and status == RunStatus.OPEN and record is not None and len(record.turns) == n and n:
                _set_metrics(db, run_id, record.metrics())
            if close is not None:
                self._close(db, run_id, close, stored=(status, n))
            if then is not None:
                then()

    # ------------------------------------------------------------------ closing and reopening
    def finish(self, run_id: str, *, status: str, stop_reason: str | None = None, error: str = "",
               record: RunRecord | None = None, spent: Sequence[Usage] = ()) -> None:
        """Close a run: ``finished``, ``failed`` (with the error) or ``interrupted``.

        The run's metrics are computed from its turns: ``record`` (the caller's copy, e.g. the
        runner's) saves reading them all back, and is used only when it holds exactly the stored
        number of turns; otherwise the stored turns are loaded. ``spent``: model calls billed in a
        turn that did not complete (no turn holds them), added to the run's tokens and cost.
        """
        closing = Closing(status, stop_reason, error, record, tuple(spent))
        with self._conn.write() as db:
            row = db.execute("SELECT status, n_turns FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise StorageError(unknown_run(run_id))
            self._close(db, run_id, closing, stored=tuple(row))

    def add_spent(self, run_id: str, spent: Sequence[Usage]) -> None:
        """Add calls billed in a turn that no record holds to the run's tokens and cost, whatever its
        status (a run closed elsewhere, e.g. marked interrupted when its lease lapsed)."""
        with self._conn.write() as db:
            db.execute("UPDATE runs SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, cost_usd = cost_usd + ? "
                       "WHERE id = ?", [sum(u.input_tokens for u in spent), sum(u.output_tokens for u in spent),
                                        sum(u.cost_usd for u in spent), run_id])

    def _close(self, db: Database, run_id: str, closing: Closing, *, stored: tuple[str, int]) -> None:
        status = closing.status
        if status not in FINAL_STATUSES:
            raise StorageError(f"a run can finish as {', '.join(FINAL_STATUSES)}, not {status!r}")
        if stored[0] == RunStatus.FINISHED and status != RunStatus.FINISHED:
            raise StorageError(f"run {run_id} is already finished; it cannot become {status}")
        record, metrics = closing.record, closing.metrics
        if metrics is None or metrics.turns != stored[1]:  # else computed where the run was played, over every turn
            run = record if record is not None and len(record.turns) == stored[1] else self.load(run_id)
            metrics = run.metrics() if run.turns else None
        spent = closing.spent
        db.execute(
            "UPDATE runs SET status = ?, stop_reason = ?, error = ?, updated = ?, lease_until = NULL, "
            "tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, cost_usd = cost_usd + ? WHERE id = ?",
            [status, closing.stop_reason, closing.error, now(), sum(u.input_tokens for u in spent),
             sum(u.output_tokens for u in spent), sum(u.cost_usd for u in spent), run_id],
        )
        index_run_turns(db, run_id)
        if metrics is not None:
            _set_metrics(db, run_id, metrics)

    def reopen(self, run_id: str, *, turns: int | None = None, lease_seconds: float | None = None) -> None:
        """Claim a run for resuming: ``running`` again (``open`` under a lease), owned by this process.

        Everything is checked inside the one ``BEGIN IMMEDIATE`` transaction that claims the run, so
        two resumes racing for it cannot both pass the checks. ``turns`` is the number of turns the
        caller loaded: if the run has moved on since, the caller's copy is stale and is refused.
        ``lease_seconds``: the app holds resumed runs under a lease; the command line does not.

        Raises:
            StorageError: unknown run, a finished run, a run another live writer holds, or a run
                that changed since the caller loaded it.
        """
        with self._conn.write() as db:
            row = db.execute(
                "SELECT status, stop_reason, n_turns, pid, pid_start, host, heartbeat, lease_until FROM runs WHERE id = ?",
                [run_id],
            ).fetchone()
            if row is None:
                raise StorageError(unknown_run(run_id))
            status, stop, n, pid, start, rhost, beat, lease_until = row
            if status == RunStatus.FINISHED:
                raise StorageError(f"run {run_id} is already finished ({stop}); nothing to resume")
            if status == RunStatus.OPEN and pid and pid != os.getpid() and lease_until is not None \
                    and lease_until >= self._clock():
                raise StorageError(f"run {run_id} is open in another Studio (process {pid} on {rhost}); "
                                   "close it there, or wait until that session has been gone a few minutes")
            if (status == RunStatus.RUNNING and pid and pid != os.getpid()
                    and not writer_gone(pid, start, rhost, beat, lease_until, clock=self._clock())):
                raise StorageError(f"run {run_id} is still being written by process {pid} on {rhost}; "
                                   "wait for it to finish or stop that process")
            if turns is not None and n != turns:
                raise StorageError(f"run {run_id} changed while it was being resumed (it has {n} turns now, "
                                   f"{turns} were loaded); resume it again")
            stamp = now()
            lease = None if lease_seconds is None else float(lease_seconds)
            update_row(db, "runs", run_id, {
                "status": RunStatus.RUNNING if lease is None else RunStatus.OPEN, "stop_reason": None, "error": "",
                **writer(), "heartbeat": stamp,
                "updated": stamp, "lease_seconds": lease, "lease_until": None if lease is None else self._clock() + lease,
            })

    # ------------------------------------------------------------------ liveness
    def mark_dead(self) -> list[str]:
        """Settle runs nobody writes any more; returns their ids (interrupted, left open or deleted).

        * A ``running`` run whose writer is gone — the process no longer exists (same host) or sent
          no heartbeat for :data:`~.liveness.STALE_REMOTE_SECONDS` (another host) — is ``interrupted``.
        * An ``open`` run (the app's) whose lease lapsed — its tab closed or sat idle — stays ``open``:
          its lease is released and its metrics are those of its turns so far; Simulate plays on
          from its last turn. One that lapsed before its first turn is deleted instead: Start pressed
          and the page left (or a typed run never sent) is no conversation.
        * An ``open`` run with turns and no metrics (one stored before runs could be open) gets its
          metrics so far.

        Cheap: pages call it before listing runs. A read-only database is left as it is (its runs
        are listed as stored).
        """
        if self._conn.read_only:
            return []
        with self._conn.db() as db:
            rows = db.execute(
                "SELECT id, status, pid, pid_start, host, heartbeat, lease_until, n_turns, kg FROM runs "
                "WHERE status = ? OR (status = ? AND (lease_until IS NOT NULL OR (kg IS NULL AND n_turns > 0)))",
                [RunStatus.RUNNING, RunStatus.OPEN]).fetchall()
        clock = self._clock()
        dead, lapsed, empty, unmeasured = {}, [], [], []
        for rid, status, pid, start, rhost, beat, lease_until, n, kg in rows:
            if status == RunStatus.RUNNING and lease_until is None:
                if why := writer_gone(pid, start, rhost, beat, lease_until, clock=clock):
                    dead[rid] = why
            elif lease_until is not None and lease_until < clock:  # an app's run: its session went away
                (lapsed if n else empty).append(rid)
            elif lease_until is None and n and kg is None:
                unmeasured.append(rid)
        so_far = {}  # read before the write lock
        for rid in [*lapsed, *unmeasured]:
            try:
                so_far[rid] = self.load(rid)
            except StorageError:  # a record this Studio cannot read: listed as stored, never a failed page
                pass
        lapsed = [rid for rid in lapsed if rid in so_far]
        unmeasured = [rid for rid in unmeasured if rid in so_far]
        if dead or lapsed or empty or unmeasured:
            with self._conn.write() as db:
                for rid in empty:  # nothing played: nothing to come back to
                    db.execute("DELETE FROM run_tags WHERE run_id = ?", [rid])
                    db.execute("DELETE FROM runs WHERE id = ? AND status IN (?, ?) AND n_turns = 0 AND lease_until < ?",
                               [rid, *LIVE_STATUSES, clock])
                for rid in lapsed:
                    cur = db.execute("UPDATE runs SET status = ?, lease_until = NULL WHERE id = ? AND status IN (?, ?) "
                                     "AND lease_until < ? AND n_turns = ?",
                                     [RunStatus.OPEN, rid, *LIVE_STATUSES, clock, len(so_far[rid].turns)])
                    if cur.rowcount:
                        index_run_turns(db, rid)
                        _set_metrics(db, rid, so_far[rid].metrics())
                for rid in unmeasured:
                    if db.execute("SELECT 1 FROM runs WHERE id = ? AND n_turns = ? AND kg IS NULL",
                                  [rid, len(so_far[rid].turns)]).fetchone():
                        _set_metrics(db, rid, so_far[rid].metrics())
                for rid, why in dead.items():
                    cur = db.execute(
                        "UPDATE runs SET status = ?, updated = ?, error = ?, lease_until = NULL "
                        "WHERE id = ? AND status = ?",
                        [RunStatus.INTERRUPTED, now(), why, rid, RunStatus.RUNNING],
                    )
                    if cur.rowcount:
                        index_run_turns(db, rid)
        return [*dead, *lapsed, *empty]

    def renew_lease(self, run_id: str, *, seconds: float | None = None) -> bool:
        """Extend the lease of a run this process writes; ``seconds`` (re)sets its length, and a
        run held under a lease is ``open``.

        The app takes a lease when it starts, resumes or forks a run and renews it while the run is
        open; without ``seconds`` a run that holds no lease keeps none. Returns False when the run
        is no longer this process's to play — its lease lapsed and was released (:meth:`mark_dead`),
        or it ended or was claimed elsewhere: the caller must resume it before playing on.
        """
        with self._conn.write() as db:
            cur = db.execute(
                "UPDATE runs SET lease_seconds = COALESCE(?, lease_seconds), "
                "lease_until = ? + COALESCE(?, lease_seconds), "
                "status = CASE WHEN ? IS NULL THEN status ELSE ? END "
                "WHERE id = ? AND pid = ? AND host = ? AND (status = ? OR (status = ? AND lease_until IS NOT NULL))",
                [seconds, self._clock(), seconds, seconds, RunStatus.OPEN, run_id, os.getpid(), socket.gethostname(),
                 RunStatus.RUNNING, RunStatus.OPEN],
            )
            return cur.rowcount == 1

    # ------------------------------------------------------------------ reading one, deleting
    def load(self, run_id: str) -> RunRecord:
        with self._conn.db() as db:
            row = db.execute("SELECT setup_json, stop_reason FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                raise StorageError(unknown_run(run_id))
            records = [r for (r,) in db.execute("SELECT record_json FROM turns WHERE run_id = ? ORDER BY turn",
                                                 [run_id])]
        try:
            data = {**unpack(row[0]), "turns": [unpack(r) for r in records], "run_id": run_id, "stop_reason": row[1]}
            return engine.records.RunRecord.from_data(data)
        except FormatError as exc:
            raise StorageError(f"run {run_id} cannot be read back: {exc}") from None

    def delete(self, run_ids: list[str]) -> None:
        """Delete runs and their turns, all or none (an unknown id deletes nothing).

        A deleted run that kept runs were forked from is remembered (its id, question and when, in
        ``deleted_runs``), so its forks name it as a deleted run (:meth:`deleted_on`) rather than
        pointing at a run that is not there. Ask :meth:`forks_of` first to warn about them."""
        gone = set(run_ids)
        with self._conn.write() as db:
            forks = _forks(db, run_ids)
            stamp = now()
            for rid in run_ids:
                row = db.execute("SELECT question_id FROM runs WHERE id = ?", [rid]).fetchone()
                if row is None:
                    raise StorageError(unknown_run(rid))
                if set(forks.get(rid, ())) - gone:
                    db.execute("INSERT OR REPLACE INTO deleted_runs (id, question_id, deleted) VALUES (?, ?, ?)",
                               [rid, row[0], stamp])
                db.execute("DELETE FROM run_tags WHERE run_id = ?", [rid])
                db.execute("DELETE FROM runs WHERE id = ?", [rid])

    def forks_of(self, run_ids: Sequence[str]) -> dict[str, list[str]]:
        """``{run id: the ids of the runs forked from it}`` for those of ``run_ids`` that have forks
        (oldest fork first)."""
        with self._conn.db() as db:
            return _forks(db, run_ids)

    def deleted_on(self, run_id: str) -> str | None:
        """When run ``run_id`` was deleted, for a deleted run that others had been forked from
        (:meth:`delete`); None for any other id."""
        with self._conn.db() as db:
            row = db.execute("SELECT deleted FROM deleted_runs WHERE id = ?", [run_id]).fetchone()
        return row[0] if row else None

    def exists(self, run_id: str) -> bool:
        with self._conn.db() as db:
            return exists(db, "runs", "id = ?", [run_id])

    # ------------------------------------------------------------------ tags
    def add_tags(self, run_id: str, tags: list[str]) -> list[str]:
        """File the run under ``tags`` (a tag it has already is kept once); returns the tags added.

        Raises:
            StorageError: an unknown run.
            ConfigError: a tag that is empty, too long or holds a comma or control characters
                (:func:`~knowsim_core.text.tags.check_run_tag`).
        """
        clean = [check_run_tag(t) for t in tags]
        with self._conn.write() as db:
            if not exists(db, "runs", "id = ?", [run_id]):
                raise StorageError(unknown_run(run_id))
            added = []
            for tag in dict.fromkeys(clean):
                if db.execute("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)", [run_id, tag]).rowcount:
                    added.append(tag)
        return added

    def remove_tag(self, run_id: str, tag: str) -> bool:
        """Take ``tag`` off the run; False when it did not have it."""
        with self._conn.write() as db:
            return bool(db.execute("DELETE FROM run_tags WHERE run_id = ? AND tag = ?", [run_id, tag]).rowcount)


def _forks(db: Database, run_ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    ids = list(dict.fromkeys(run_ids))
    for i in range(0, len(ids), 500):  # SQLite's bound-parameter limit
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for parent, child in db.execute(f"SELECT forked_from, id FROM runs WHERE forked_from IN ({marks}) "
                                        "ORDER BY created, rowid", chunk):
            out.setdefault(parent, []).append(child)
    return out


def _packed(run: RunRecord) -> tuple[bytes, list[StoredTurn]]:
    """A run's setup record (without its turns, metrics, id and stop) and each turn's record, packed."""
    setup = run.with_turns(()).to_data()
    for key in ("turns", "metrics", "run_id", "stop_reason"):
        setup.pop(key, None)
    return pack(setup), [StoredTurn.of(t) for t in run.turns]


def _set_metrics(db: Database, rid: str, m: Metrics) -> None:
    db.execute("UPDATE runs SET kg = ?, dc = ?, co = ? WHERE id = ?",
               [m.knowledge_gain, m.delivery_calibration, m.cognitive_overload, rid])


def index_run_turns(db: Database, run_id: str) -> None:
    """Add the run's turns that are not yet in the full-text index to it (one segment for them
    all) — when the run closes, whatever its status. Idempotent."""
    db.execute(
        "INSERT INTO turns_fts (rowid, user_message, assistant_message) "
        "SELECT t.rowid, t.user_message, t.assistant_message FROM turns t "
        "JOIN turns_unindexed u ON u.turn_rowid = t.rowid WHERE t.run_id = ?", [run_id])
    db.execute("DELETE FROM turns_unindexed WHERE turn_rowid IN (SELECT rowid FROM turns WHERE run_id = ?)", [run_id])
