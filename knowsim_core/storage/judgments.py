"""Judgments of turns: a person's or a researcher's 👍/👎 (and note) on one tutor turn of a run.

One row per (run, turn, source, who): judging a turn again replaces that judge's verdict, so a
researcher who changes their mind leaves one judgment, and the person's imported thumbs are never
overwritten by a researcher's (different ``source``). Rows go with their run (``ON DELETE
CASCADE``). See :mod:`knowsim_core.formats.judgments` for what the fields mean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowsim_core import formats
from knowsim_core.errors import StorageError
from knowsim_core.storage.caches import unknown_run
from knowsim_core.storage.connection import Connection, Database, now

if TYPE_CHECKING:
    from knowsim_core.formats.judgments import Judgment

COLUMNS = "turn, liked, source, who, note, created, match"


class Judgments:
    """Storing, listing and removing turn judgments."""

    def __init__(self, conn: Connection):
        self._conn = conn

    def add(self, run_id: str, judgment: Judgment) -> Judgment:
        """Store (or replace) one judgment; ``created`` is set now when empty. Returns what was stored.

        Raises:
            StorageError: an unknown run, a turn the run does not have, or a bad field.
        """
        with self._conn.write() as db:
            return self._add(db, run_id, judgment)

    def add_many(self, run_id: str, judgments: list[Judgment] | tuple[Judgment, ...]) -> int:
        """Store several judgments of one run in one transaction (imports); returns how many rows the
        run holds from them (two votes of one author on one turn are one judgment: the later wins)."""
        with self._conn.write() as db:
            for j in judgments:
                self._add(db, run_id, j)
        return len({(j.turn, j.source, j.who) for j in judgments})

    def _add(self, db: Database, run_id: str, j: Judgment) -> Judgment:
        row = db.execute("SELECT n_turns FROM runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise StorageError(unknown_run(run_id))
        if not 1 <= j.turn <= row[0]:
            raise StorageError(f"run {run_id} has turns 1–{row[0]}; cannot judge turn {j.turn}")
        schema = formats.judgments  # the file schema (pydantic models): loaded with the first judgment
        if j.source not in schema.SOURCES or j.match not in schema.MATCHES:
            raise StorageError(f"a judgment's source is one of {schema.SOURCES} and its match one of "
                               f"{schema.MATCHES}")
        if len(j.note) > schema.MAX_NOTE or len(j.who) > schema.MAX_WHO:
            raise StorageError(f"a judgment's note is at most {schema.MAX_NOTE} characters and its author "
                               f"{schema.MAX_WHO}")
        stored = schema.Judgment(turn=j.turn, liked=bool(j.liked), source=j.source, who=j.who, note=j.note,
                                 created=j.created or now(), match=j.match)
        db.execute(
            "INSERT INTO judgments (run_id, turn, liked, source, who, note, created, match) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, turn, source, who) DO UPDATE SET "
            "liked = excluded.liked, note = excluded.note, created = excluded.created, match = excluded.match",
            [run_id, stored.turn, int(stored.liked), stored.source, stored.who, stored.note, stored.created,
             stored.match],
        )
        return stored

    def list(self, run_id: str) -> list[Judgment]:
        """The run's judgments by turn (the person's before a researcher's on the same turn)."""
        with self._conn.db() as db:
            rows = db.execute(f"SELECT {COLUMNS} FROM judgments WHERE run_id = ? ORDER BY turn, source, who",
                              [run_id]).fetchall()
        return [_judgment(r) for r in rows]

    def all(self) -> dict[str, list[Judgment]]:
        """Every stored judgment, by run id (one query, for agreement over a whole database)."""
        out: dict[str, list[Judgment]] = {}
        with self._conn.db() as db:
            for r in db.execute(f"SELECT run_id, {COLUMNS} FROM judgments ORDER BY run_id, turn, source, who"):
                out.setdefault(r[0], []).append(_judgment(r[1:]))
        return out

    def remove(self, run_id: str, turn: int, *, source: str, who: str) -> bool:
        """Withdraw one judge's judgment of a turn; False when there was none."""
        with self._conn.write() as db:
            cur = db.execute("DELETE FROM judgments WHERE run_id = ? AND turn = ? AND source = ? AND who = ?",
                             [run_id, turn, source, who])
            return cur.rowcount > 0


def _judgment(r) -> Judgment:
    turn, liked, source, who, note, created, match = r
    return formats.judgments.Judgment(turn=int(turn), liked=bool(liked), source=source, who=who, note=note,
                                      created=created, match=match)
