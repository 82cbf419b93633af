"""The Studio's database: questions, IU graph versions, initial states, runs and turns, caches.

The only package that speaks SQL — the repositories' own, on ``sqlite3``; ``sqlite-utils`` only
where tables are created or migrated — split by what it stores, over one connection helper:

* :mod:`.connection` — a fresh connection per call (Streamlit runs scripts on many threads), WAL,
  ``busy_timeout``, ``BEGIN IMMEDIATE`` writes, read-only opening; the record codec.
* :mod:`.migrations` — the versioned schema, and the check that refuses a file that is not ours
  (or is newer) before anything is written.
* :mod:`.questions` — questions and their graph versions (one door for every graph).
* :mod:`.runs` — runs and turns: one transaction per turn, close, reopen (check-and-set), load,
  delete; :mod:`.liveness` — writer pids and app leases.
* :mod:`.run_filter` — :class:`~.run_filter.RunFilter`, which runs a view reads, and its SQL.
* :mod:`.run_search` — transcript search (FTS5), pages, batch groups, cross-run facts.
* :mod:`.caches` — initial states, the LLM response cache, IQ judgements.
* :mod:`.judgments` — people's 👍/👎 on turns.
* :mod:`.batch_cells` — which process plays which cell of a batch (claimed once, atomically).

**One object, its repositories.** :class:`Store` stands for one database file: it opens, checks
and migrates it and spans transactions; callers reach the data through its repositories
(``store.questions``, ``store.runs``, ``store.search``, ``store.caches``, ``store.judgments``,
``store.cells``), e.g. ``store.runs.load(rid)`` or ``store.search.list(RunFilter(batch_tag=t))``.
One object still means "this database file" (it is what ``ui.common.resources`` caches and what a page
passes around), each operation has one name and one owner, and each repository stays small
enough to read in one sitting.

The tables the repositories share are joined in SQL where a view needs both (a run list shows
its question's text); otherwise each repository writes only its own tables. API keys never reach
this package: records do not contain them and settings are not stored.

**Loaded on first use** (:mod:`knowsim_core.lazy`): the package loads none of its modules until a
name is read (``from knowsim_core.storage import Store`` loads the store and its repositories), so
a command's ``--help`` imports no storage. The repositories in turn reach the engine's pydantic
models (graphs, states, records: ~0.2 s) through :mod:`knowsim_core.engine` only where a row is
read back as one, and sqlite-utils (with the pandas it imports where installed: ~0.5 s) only where
tables are created or migrated: listing the runs of a current file needs neither.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__, {
    "BUSY_TIMEOUT_MS": "connection", "DEFAULT_DB": "connection", "ENV_DB": "connection",
    "default_path": "connection", "writable": "connection",
    "LEASE_SECONDS": "liveness", "LEASE_LAPSED": "liveness", "PROCESS_DIED": "liveness",
    "STALE_REMOTE_SECONDS": "liveness",
    "SCHEMA_VERSION": "migrations",
    "GraphVersion": "questions", "QuestionRow": "questions",
    "ORDERS": "run_search", "BatchGroup": "run_search", "RunRow": "run_search",
    "FINAL_STATUSES": "runs", "STATUSES": "runs",
    "Store": "store",
})

__all__ = [
    "Store", "QuestionRow", "GraphVersion", "RunRow", "BatchGroup", "SCHEMA_VERSION", "STATUSES",
    "FINAL_STATUSES", "ORDERS", "LEASE_SECONDS", "LEASE_LAPSED", "PROCESS_DIED", "STALE_REMOTE_SECONDS",
    "BUSY_TIMEOUT_MS", "DEFAULT_DB", "ENV_DB", "default_path", "writable",
]
