"""What is computed once and kept: canonical initial states, LLM responses, the IQ judge's scores.

Judgements live in three columns of ``runs`` (the schema predates this split and a migration
only to move them would buy nothing), but they are read and written here, beside the other
derived values, so the run repository stays about the run's own record.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from knowsim_core import engine
from knowsim_core.errors import StorageError
from knowsim_core.storage.connection import Connection, now

if TYPE_CHECKING:
    from knowsim_core.engine.state import KnowledgeState


def unknown_run(run_id: str) -> str:
    return f"unknown run id {run_id!r}; `python -m knowsim_core runs` lists the stored runs"


class Caches:
    """Initial states per question and level, the LLM response cache, run judgements."""

    def __init__(self, conn: Connection):
        self._conn = conn

    # ------------------------------------------------------------------ initial states
    def set_initial_state(self, question_id: str, level: str, state: KnowledgeState) -> None:
        with self._conn.write() as db:
            db.execute(
                "INSERT INTO initial_states (question_id, level, state_json) VALUES (?, ?, ?) "
                "ON CONFLICT (question_id, level) DO UPDATE SET state_json = excluded.state_json",
                [question_id, level, json.dumps(state.to_data(), ensure_ascii=False)],
            )

    def get_initial_state(self, question_id: str, level: str) -> KnowledgeState | None:
        with self._conn.db() as db:
            row = db.execute("SELECT state_json FROM initial_states WHERE question_id = ? AND level = ?",
                             [question_id, level]).fetchone()
        return engine.state.KnowledgeState.from_data(json.loads(row[0])) if row else None

    # ------------------------------------------------------------------ LLM response cache
    def cache_get(self, key: str) -> str | None:
        with self._conn.db() as db:
            row = db.execute("SELECT value FROM llm_cache WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def cache_put(self, key: str, value: str) -> None:
        """Store a response; overwriting keeps the key's first ``created`` time (SQL: upsert would not)."""
        with self._conn.write() as db:
            db.execute(
                "INSERT INTO llm_cache (key, value, created) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, value, now()],
            )

    # ------------------------------------------------------------------ judgements
    def set_judgement(self, run_id: str, *, score: float, rationale: str, model: str) -> None:
        """Store the IQ judge's score (1–10) for a run."""
        with self._conn.write() as db:
            cur = db.execute(
                "UPDATE runs SET iq_score = ?, iq_rationale = ?, iq_model = ?, updated = ? WHERE id = ?",
                [float(score), rationale, model, now(), run_id],
            )
            if cur.rowcount == 0:
                raise StorageError(unknown_run(run_id))

    def get_judgement(self, run_id: str) -> tuple[float, str, str] | None:
        """(score, rationale, model) or None when the run was not judged."""
        with self._conn.db() as db:
            row = db.execute("SELECT iq_score, iq_rationale, iq_model FROM runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise StorageError(unknown_run(run_id))
        return None if row[0] is None else (row[0], row[1], row[2])
