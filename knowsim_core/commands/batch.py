"""``batch``: run a matrix of questions × levels × assistants × seeds, storing every run.

Before anything starts it prints the batch's tag, the matrix size, the model calls it implies and
an estimated cost (``--dry-run`` prints only that). Then it runs up to ``--concurrency N``
conversations at once in this process (threads: LLM batches wait on model latency), or with
``--workers K`` one conversation per worker process (CPU-bound offline matrices). The two are
exclusive: threads would only share one core under the GIL inside a worker, and a worker per
conversation gives a model-bound batch K calls in flight at most. Given neither, a matrix of
offline agents only runs in one worker process per core (threads would share one core: 16 of them
ran the sample matrix at 15 conversations/s where 2 processes run it at 40+), and a matrix with a
model in it runs ``DEFAULT_CONCURRENCY`` conversations at once. With ``--cluster tcp://HOST:PORT`` the
conversations play as tasks on a Dask cluster's workers (the optional ``requirements-cluster.txt``),
each worker with its own keys, and this process stores every turn; the progress line is followed by
the conversations per worker, in flight and ended.

Every run carries the batch's tag (``--tag``, else a generated one), and the batch's matrix is
stored under it, so ``--resume TAG`` continues what is missing: finished cells are skipped,
interrupted / failed runs continue from their last completed turn (with the per-turn seeds an
offline continuation is the run an uninterrupted batch would have stored), cells never started
start. Ctrl-C (or SIGTERM) stops starting conversations and lets each one in flight finish its
turn; a second Ctrl-C stops at once. Either way every unfinished run is ``interrupted``, a
one-line summary says how to continue, and the exit code is 130. ``--max-cost`` stops starting
conversations when the spending so far plus the estimate of those in flight would pass it (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, TextIO

from knowsim_core.batch.cluster import workers_line
from knowsim_core.batch.plan import BatchSpec, Cell
from knowsim_core.batch.schedule import Control, Outcome, Tally
from knowsim_core.batch.service import BatchJob, BatchRequest, prepare
from knowsim_core.storage import Store, default_path
from knowsim_core.commands.runs import add_db_argument
from knowsim_core.vocab import CellOutcome

BAR_WIDTH = 30
EXIT_INTERRUPTED = 130
FAILED_SHOWN = 10  # failed runs named in the summary; the rest are counted


def add_arguments(p: argparse.ArgumentParser) -> None:
    BatchRequest.add_arguments(p)  # the request's options, from its one field table
    p.add_argument("--dry-run", action="store_true", help="print the matrix, calls and estimated cost; run nothing")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the list of {run id, status, …} as JSON at the end")


def request(args: argparse.Namespace) -> BatchRequest:
    """The batch service's request from the parsed command line."""
    return BatchRequest.from_args(args)


def _mix(store: Store, spec: BatchSpec) -> str:
    """What the matrix holds, so ``all`` / ``offline`` can be read before anything runs:
    "questions: 10 (10 sample) × levels: 3 (novice, …) × assistants: 4 (offline/simple, …) × seeds 1..3"."""
    kinds: dict[str, int] = {}
    known = {q.id: q.kind for q in store.questions.list()}
    for q in spec.questions:
        kinds[known.get(q, "?")] = kinds.get(known.get(q, "?"), 0) + 1
    numbers = store.questions.graph_version_numbers(list(spec.graph_version_ids))
    counts: dict[int, int] = {}
    for vid in spec.graph_version_ids:
        counts[numbers.get(vid, 0)] = counts.get(numbers.get(vid, 0), 0) + 1
    graphs = ", ".join(f"v{v} ×{n}" for v, n in sorted(counts.items())) or "each question's newest when it starts"
    return (f"questions: {len(spec.questions)} ({', '.join(f'{n} {k}' for k, n in kinds.items())}) × "
            f"levels: {len(spec.levels)} ({', '.join(spec.levels)}) × assistants: {len(spec.assistants)} "
            f"({', '.join(spec.assistants)}) × seeds 1..{spec.seeds} · user {spec.user} · extractor {spec.extractor}"
            f" · graph versions: {graphs}")


def _resume_command(req: BatchRequest, tag: str, db: str) -> str:
    batch, flag, tag_, *mode = req.resume_argv(tag)
    return shlex.join([Path(sys.executable).name, "-m", "knowsim_core", batch, flag, tag_, "--db", db, *mode])


class Progress:
    """done / in flight / failed, tokens, cost and an ETA on one line of stderr: redrawn on a
    terminal; otherwise (a log file, CI) a plain line at the first conversation's end, at every
    tenth of the batch, at least every :data:`LOG_EVERY_S` seconds, whenever a conversation ends
    other than finished, and at the end — a line per conversation buried a 7,200-run batch's log."""

    LOG_EVERY_S = 10.0

    def __init__(self, tally: Tally, total: int, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 workers: Callable[[], dict[str, tuple[int, int]]] = dict):
        self.tally, self.total, self.stream = tally, total, stream or sys.stderr
        self.workers = workers  # a cluster batch's: per worker, (in flight, ended)
        self.tty = self.stream.isatty()
        self.last = 0.0
        self.clock = clock
        self._logged = (-1, 0.0)  # (the tenth of the batch, the time) of the last plain line

    def line(self) -> str:
        t = self.tally
        with t.lock:
            done, flying, failed, cut = t.done, len(t.in_flight), t.failed, t.interrupted
            tokens, cost = t.tokens, t.cost_usd
        elapsed = time.monotonic() - t.started_at
        filled = BAR_WIDTH * done // max(1, self.total)
        eta = f"ETA {elapsed / done * (self.total - done):.0f}s" if done else "ETA ?"
        # "ended", and how: a bare "2/360 runs" beside a summary of "0 done, 2 interrupted" reads as
        # two finished runs
        return (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.total} runs ended · {flying} in flight"
                f"{f' · {failed} failed' if failed else ''}{f' · {cut} interrupted' if cut else ''} · "
                f"{tokens:,} tokens · ${cost:.4f} · "
                f"{elapsed:.0f}s · {eta}")

    def tick(self) -> None:
        if self.tty and time.monotonic() - self.last > 0.5:
            self.last = time.monotonic()
            print("\r" + self.line(), end="", file=self.stream, flush=True)

    def finished_one(self, out: Outcome) -> None:
        if self.tty:
            self.last = 0.0
            self.tick()
            return
        with self.tally.lock:
            done = self.tally.done
        tenth, now_s = 10 * done // max(1, self.total), self.clock()
        last_tenth, last_s = self._logged
        if (out.status != CellOutcome.FINISHED or last_tenth < 0 or tenth > last_tenth
                or now_s - last_s >= self.LOG_EVERY_S):
            self._log(tenth, now_s)

    def _log(self, tenth: int, at: float) -> None:
        self._logged = (tenth, at)
        print(self.line(), file=self.stream, flush=True)
        self._workers_line()

    def _workers_line(self) -> None:
        line = workers_line(self.workers())
        if line:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            print("\r" + self.line(), file=self.stream, flush=True)
            self._workers_line()
            return
        with self.tally.lock:
            done = self.tally.done
        if done and self._logged[0] < 10 * done // max(1, self.total):  # the last state, unless just printed
            self._log(10 * done // max(1, self.total), self.clock())


def run(args: argparse.Namespace) -> int:
    req = request(args)
    req.check()
    try:
        if args.dry_run and not (Path(args.db).expanduser() if args.db else default_path()).exists():
            with tempfile.TemporaryDirectory() as tmp:  # a dry run never creates the database
                return _run(args, req, str(Path(tmp) / "dry-run.db"))
        return _run(args, req, args.db)
    except KeyboardInterrupt:  # before the batch's own handler is installed: nothing has started
        print("stopped before the batch started; nothing was run", file=sys.stderr)
        return EXIT_INTERRUPTED


def _set_up(args: argparse.Namespace, req: BatchRequest, store: Store, info: TextIO) -> BatchJob | None:
    """Prepare the batch and print what it will run; the job started (None for a dry run)."""
    prep = prepare(store, req)
    todo, skipped, busy, est = prep.todo, prep.skipped, prep.busy, prep.estimate
    out = sys.stdout if args.dry_run else info
    print(f"batch {prep.tag}: {len(todo)} to run ({prep.mode()})" + (f", {skipped} already finished" if skipped else "")
          + (f", {busy} still being played by another process (left alone)" if busy else ""), file=out)
    for line in [_mix(store, prep.spec), *est.lines()]:
        print(line, file=out)
    if req.max_cost is not None and est.unpriced:
        print(f"note: --max-cost cannot limit {', '.join(est.unpriced)} (not in the price table; add it with "
              "KNOWSIM_LLM_PRICES)", file=out)
    if args.dry_run:
        return None
    return BatchJob.start(store, prep)


def _run(args: argparse.Namespace, req: BatchRequest, db: str | None) -> int:
    store = Store(db)
    info = sys.stderr if args.json else sys.stdout
    # the set-up's few dozen reads and writes share one connection (each opened and closed its own,
    # a WAL checkpoint at every close); it is closed before the worker processes start
    with store.pinned():
        job = _set_up(args, req, store, info)
    if job is None:
        return 0
    prep, todo = job.prepared, job.prepared.todo
    info.flush()
    control, tally = job.control, job.tally
    progress = Progress(tally, len(todo), workers=job.workers)
    noted = []

    def tick() -> None:
        if control.signalled and not noted:  # said once, from the loop (never from the handler)
            noted.append(True)
            print(f"\nstopping: nothing new starts; {len(tally.in_flight)} in flight finish their turn "
                  "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)
        progress.tick()

    outcomes = job.play(tick=tick, on_outcome=progress.finished_one)
    progress.close()
    code = _report(args, req, store, prep.tag, todo, outcomes, control, tally)
    if job.threads_left_behind():  # threads stuck in a model call: do not wait for them
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _report(args: argparse.Namespace, req: BatchRequest, store: Store, tag: str, todo: list[tuple[Cell, str]], outcomes: list[Outcome],
            control: Control, tally: Tally) -> int:
    cells = {c.index: c for c, _ in todo}
    by_status: dict[str, int] = {}
    for o in outcomes:
        by_status[o.status] = by_status.get(o.status, 0) + 1
    finished, failed = by_status.get(CellOutcome.FINISHED, 0), by_status.get(CellOutcome.FAILED, 0)
    interrupted, elsewhere = by_status.get(CellOutcome.INTERRUPTED, 0), by_status.get(CellOutcome.SKIPPED, 0)
    not_started = len(todo) - finished - failed - interrupted - elsewhere
    left = f"; {elsewhere} left to another process that claimed them first" if elsewhere else ""
    db = str(store.path)
    if args.json:
        rows = []
        for o in sorted(outcomes, key=lambda o: o.index):
            c = cells[o.index]
            rows.append({"question_id": c.question_id, "level": c.level, "assistant_id": c.assistant_id,
                         "seed": c.seed, "run_id": o.run_id, "status": o.status, "turns": o.turns,
                         **({"error": o.error} if o.error else {})})
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    if control.cluster_lost:  # one line: what was in flight there was interrupted, nothing more could start
        print(f"stopped: {control.cluster_lost}; {finished} finished, {failed} failed, {interrupted} interrupted, "
              f"{not_started} not started. Continue with: {_resume_command(req, tag, db)}", file=sys.stderr)
        return 1
    if control.disk_full:  # one line, not one per cell: every further cell would fail the same way
        print(f"stopped: the disk is full ({control.disk_full}); {finished} finished, {failed} failed, "
              f"{interrupted} interrupted, {not_started} not started. Free some space, then continue with: "
              f"{_resume_command(req, tag, db)}", file=sys.stderr)
        return 1
    stopped = (control.stop.is_set() or control.budget_hit) and (interrupted or not_started)
    if not stopped:
        if not args.json:
            print(f"{finished} of {len(todo)} runs finished, stored in {db} (batch {tag}; "
                  f"{tally.tokens:,} tokens, ${tally.cost_usd:.4f}{_unknown(tally)}){left}")
        failures = [o for o in outcomes if o.status == CellOutcome.FAILED]
        for o in failures[:FAILED_SHOWN]:
            c = cells[o.index]
            print(f"  failed: {c.question_id} {c.level} {c.assistant_id} seed {c.seed}: {o.error}", file=sys.stderr)
        if len(failures) > FAILED_SHOWN:
            print(f"  … {len(failures) - FAILED_SHOWN} more failed (every run: runs --batch {tag} --status failed"
                  f"{'' if db == str(default_path()) else ' --db ' + shlex.quote(db)})", file=sys.stderr)
        return 1 if failed else 0
    why = f"the budget of ${req.max_cost:.2f} was reached" if control.budget_hit else "stopped"
    print(f"{why}: {finished} finished, {interrupted} interrupted, {not_started} not started"
          f"{f', {failed} failed' if failed else ''}{left} (${tally.cost_usd:.4f} spent{_unknown(tally)}); "
          f"continue with: {_resume_command(req, tag, db)}", file=sys.stderr)
    return EXIT_INTERRUPTED if control.signalled else 1


def _unknown(tally: Tally) -> str:
    """The billed calls the cost above cannot include (unusable 200s: their tokens are unknown)."""
    n = tally.unknown_calls
    return f" + {n} billed call{'' if n == 1 else 's'} with tokens unknown" if n else ""


__all__ = ["request", "run"]
