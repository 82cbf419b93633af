"""Batch cells claimed once: a cell is taken in the database before anyone plays it.

Two ``batch --resume TAG`` started together read the same list of missing cells; without a claim
each plays all of them (751 runs for 450 cells were seen). So the decision "this cell is mine" is
one ``BEGIN IMMEDIATE`` transaction (:meth:`BatchCells.claim`) that looks at

* the cell's runs (a ``finished`` one: nothing to do; a ``running`` one whose writer lives:
  someone else plays it, even a Studio without claims), and
* the cell's claim row (held by a live process other than this one: taken),

and only then writes this process as the holder — so of any number of processes racing for a
cell exactly one gets it. The holder is named like a run's writer (pid, kernel start time of that
pid, host) and judged by the same rule (:func:`~.liveness.writer_gone`): a claim whose process
died (SIGKILL, a lost laptop) is simply claimed again; nothing has to clean it up. A cell's claim
is released when its conversation ends, whatever the outcome.

The claim also returns which stored run to continue (the newest interrupted or failed one), read
inside the same transaction — the list a resume computed at its start may be stale by then.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from knowsim_core.storage.connection import Connection, now
from knowsim_core.storage.liveness import writer, writer_gone
from knowsim_core.vocab import ClaimOutcome, RunStatus

CELL_COLUMNS = ("question_id", "level", "assistant", "user", "extractor", "preset", "seed")
# a cell's runs, oldest first: read through the index runs_batch_cell (migration 0009)
CELL_RUNS_SQL = ("SELECT id, status, pid, pid_start, host, heartbeat, lease_until FROM runs WHERE batch_tag = ? AND "
                 + " AND ".join(f"{c} = ?" for c in CELL_COLUMNS) + " ORDER BY created, rowid")


@dataclass(frozen=True, slots=True)
class Claim:
    """What :meth:`BatchCells.claim` decided. ``outcome``: ``mine`` (play it; continue
    ``resume_id`` when set), ``done`` (a finished run exists) or ``taken`` (``holder`` plays it)."""

    outcome: ClaimOutcome
    resume_id: str = ""
    holder: int = 0


class BatchCells:
    """The ``batch_cells`` table: who plays which cell of which batch."""

    def __init__(self, conn: Connection, *, clock: Callable[[], float] = time.time):
        self._conn = conn
        self._clock = clock

    def claim(self, tag: str, index: int, key: Sequence[object]) -> Claim:
        """Claim cell ``index`` (identity ``key``: question, level, assistant, user, extractor,
        preset, seed) of batch ``tag`` for this process, atomically (see the module docstring)."""
        me = os.getpid()
        with self._conn.write() as db:
            runs = db.execute(CELL_RUNS_SQL, [tag, *key]).fetchall()
            if any(r[1] == RunStatus.FINISHED for r in runs):
                return Claim(ClaimOutcome.DONE)
            clock = self._clock()
            for _rid, status, pid, start, host, beat, lease in runs:
                if status == RunStatus.RUNNING and pid and pid != me and not writer_gone(pid, start, host, beat,
                                                                                          lease, clock=clock):
                    return Claim(ClaimOutcome.TAKEN, holder=int(pid))
            held = db.execute("SELECT pid, pid_start, host, claimed FROM batch_cells WHERE tag = ? AND cell = ?",
                              [tag, index]).fetchone()
            if held is not None:
                pid, start, host, claimed = held
                if pid != me and not writer_gone(pid, start, host, claimed, None, clock=clock):
                    return Claim(ClaimOutcome.TAKEN, holder=int(pid))
            w = writer()
            db.execute("INSERT OR REPLACE INTO batch_cells (tag, cell, pid, pid_start, host, claimed) "
                       "VALUES (?, ?, ?, ?, ?, ?)", [tag, index, w["pid"], w["pid_start"], w["host"], now()])
            resumable = [r[0] for r in runs if r[1] != RunStatus.FINISHED]
            return Claim(ClaimOutcome.MINE, resume_id=resumable[-1] if resumable else "")

    def release(self, tag: str, index: int) -> None:
        """Give the cell up (its conversation ended); only this process's own claim is removed."""
        with self._conn.write() as db:
            db.execute("DELETE FROM batch_cells WHERE tag = ? AND cell = ? AND pid = ?", [tag, index, os.getpid()])

    def status_counts(self, tag: str) -> dict[str, int]:
        """Cells of batch ``tag`` by the best status among their runs (finished > running >
        interrupted > failed): totals over a batch count one run per cell, even in a database
        where an older Studio played some cell twice."""
        cols = ", ".join(CELL_COLUMNS)
        names = (RunStatus.FINISHED, RunStatus.RUNNING, RunStatus.INTERRUPTED, RunStatus.FAILED)  # best first
        with self._conn.db() as db:
            rows = db.execute(
                "SELECT best, COUNT(*) FROM (SELECT MIN(CASE status WHEN ? THEN 0 WHEN ? THEN 1 WHEN ? THEN 2 "
                f"ELSE 3 END) AS best FROM runs WHERE batch_tag = ? GROUP BY {cols}) GROUP BY best",
                [*names[:3], tag]).fetchall()
        out = dict.fromkeys(names, 0)
        for best, n in rows:
            out[names[best]] = n
        return out

    def holders(self, tag: str) -> dict[int, int]:
        """{cell index: pid} of the cells of ``tag`` that a live process other than this one holds."""
        with self._conn.db() as db:
            rows = db.execute("SELECT cell, pid, pid_start, host, claimed FROM batch_cells WHERE tag = ?",
                              [tag]).fetchall()
        clock, me = self._clock(), os.getpid()
        return {cell: pid for cell, pid, start, host, claimed in rows
                if pid != me and not writer_gone(pid, start, host, claimed, None, clock=clock)}
