"""``batch --questions … --levels … --assistants … --seeds N [--workers K]``: the run matrix.

Every run is stored as it goes (one transaction per turn). With ``--workers K`` the runs are
spread over K processes that all write to the same database — WAL and ``BEGIN IMMEDIATE`` make
that safe. A run that fails (e.g. a provider error) is recorded as failed and the batch goes on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from .. import registry
from ..config import DEFAULT_PRESET, LEVELS, PRESETS
from ..errors import ConfigError, KnowSimError
from ..runner import DEFAULT_EXTRACTOR, DEFAULT_USER, start_run
from ..storage import Store
from .run import ensure_question
from .runs import add_db_argument, open_store

NAME = "batch"
HELP = "run a matrix of questions × levels × assistants × seeds, storing every run (optionally in parallel)"
BAR_WIDTH = 30


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", required=True, metavar="all|ID,…", help="question ids, or all stored questions")
    p.add_argument("--levels", default="all", metavar="all|L,…", help=f"levels ({', '.join(LEVELS)}) or all")
    p.add_argument("--assistants", default="offline", metavar="offline|ID,…",
                   help="assistant ids, or every offline assistant")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="seeds 1..N per cell (default 1)")
    p.add_argument("--user", default=DEFAULT_USER, metavar="ID", help=f"user simulator (default {DEFAULT_USER})")
    p.add_argument("--extractor", default=DEFAULT_EXTRACTOR, metavar="ID", help=f"extractor (default {DEFAULT_EXTRACTOR})")
    p.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS), help="rule preset")
    p.add_argument("--max-turns", type=int, default=None, metavar="N", help="override the preset's max turns")
    p.add_argument("--workers", type=int, default=1, metavar="K", help="parallel worker processes (default 1)")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the list of {run id, status, …} as JSON at the end")


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def plan(store: Store, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (question, level, assistant, seed) job; checks every id before anything runs."""
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {args.seeds}")
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    if args.questions == "all":
        if not store.list_questions():
            store.seed_samples()
        questions = [q.id for q in store.list_questions() if q.n_graph_versions]
    else:
        questions = _split(args.questions)
        for q in questions:
            ensure_question(store, q)
    levels = list(LEVELS) if args.levels == "all" else _split(args.levels)
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ConfigError(f"unknown level {bad[0]!r}; expected all or some of {', '.join(LEVELS)}")
    if args.assistants == "offline":
        assistants = [e.id for e in registry.available("assistant") if e.id.startswith("offline/")]
    else:
        assistants = _split(args.assistants)
    for kind, ids in (("assistant", assistants), ("user", [args.user]), ("extractor", [args.extractor])):
        for agent_id in ids:
            if agent_id.startswith("offline/") or "/" not in agent_id:
                registry.resolve(kind, agent_id)  # fail fast on a typo, with a "did you mean"
    if not questions or not assistants:
        raise ConfigError("the batch is empty: no questions with an IU graph, or no assistants")
    return [
        {"question_id": q, "level": lv, "assistant_id": a, "seed": s, "user_id": args.user,
         "extractor_id": args.extractor, "preset": args.preset, "max_turns": args.max_turns}
        for q, lv, a, s in itertools.product(questions, levels, assistants, range(1, args.seeds + 1))
    ]


def run_job(db: str, job: dict[str, Any]) -> dict[str, Any]:
    """One run, start to end (in a worker process or in-process)."""
    store = Store(db)
    out = {k: job[k] for k in ("question_id", "level", "assistant_id", "seed")}
    try:
        live = start_run(store, **job)
        out["run_id"] = live.run_id
        run = live.run_to_end()
        out.update(status="finished", turns=len(run.turns))
    except KnowSimError as exc:
        out.update(status="failed", error=str(exc))
    return out


class Progress:
    """A one-line progress bar on stderr (a plain line per run when stderr is not a terminal)."""

    def __init__(self, total: int):
        self.total, self.done, self.failed, self.start = total, 0, 0, time.monotonic()
        self.tty = sys.stderr.isatty()

    def update(self, result: dict[str, Any]) -> None:
        self.done += 1
        self.failed += result["status"] != "finished"
        filled = BAR_WIDTH * self.done // self.total
        line = (
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} runs"
            f"{f', {self.failed} failed' if self.failed else ''} · {time.monotonic() - self.start:.0f}s"
        )
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    jobs = plan(store, args)
    db = str(store.path)
    progress = Progress(len(jobs))
    results = []
    if args.workers == 1:
        for job in jobs:
            results.append(run_job(db, job))
            progress.update(results[-1])
    else:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for fut in as_completed([pool.submit(run_job, db, job) for job in jobs]):
                results.append(fut.result())
                progress.update(results[-1])
    progress.close()
    failed = [r for r in results if r["status"] != "finished"]
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
    else:
        print(f"{len(results) - len(failed)} of {len(results)} runs finished, stored in {db}")
        for r in failed[:10]:
            print(f"  failed: {r['question_id']} {r['level']} {r['assistant_id']} seed {r['seed']}: {r['error']}")
    return 1 if failed else 0
