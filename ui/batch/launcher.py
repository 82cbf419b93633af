"""The Batch page's logic: the command a form describes, its estimate, and a batch as a background process.

The page never runs conversations itself: it launches ``python -m knowsim_core batch … --tag T``
in a new session (``start_new_session=True``), so the batch outlives the browser tab and even the
Streamlit server, and stopping it is the command line's own clean stop (SIGINT to its process
group). What the page knows about a launch — pid (+ the kernel's start time of that pid, which
guards against pid reuse), the command, the log file — is a small JSON file per tag in a folder
beside the database, so a reload or another tab finds the batch again. Progress is read from the
database (the runs of the tag by status; the matrix stored under the tag gives the total), never
from the process.

**Tags are names, not paths.** The tag names the launch record and the log file, so it is checked
(:func:`~knowsim_core.text.tags.check_batch_tag`: letters, digits, ``-_.``, at most 64) before any path
is built from it, and a record read back is believed only if its tag is valid and its log lies in
the launches folder. A launch that fails (the folder cannot be written, the process cannot start)
is one :class:`~knowsim_core.errors.StorageError` line for the page; if the process started but its
record could not be written, the process is stopped — the page never leaves a batch it cannot see.

The form becomes a :class:`~knowsim_core.batch.service.BatchRequest`, the batch service's request
the command line builds too: the preview is the service's (:func:`~knowsim_core.batch.service.preview`)
and the process launched runs the request's own command line (:meth:`BatchRequest.argv`), so what
the page shows is what the command will run, and the page never spells or parses CLI arguments.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import streamlit as st

from knowsim_core.batch import service as batch_service
from knowsim_core.batch.cluster import check_reachable, cluster_address, is_workers_line
from knowsim_core.batch.plan import BatchSpec, Estimate
from knowsim_core.batch.service import BatchRequest
from knowsim_core.errors import ConfigError, StorageError
from knowsim_core.storage.liveness import pid_alive, process_start
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.text.tags import check_batch_tag, new_batch_tag
from knowsim_core.vocab import CellOutcome, RunStatus

ROOT = Path(__file__).resolve().parents[2]
STATUSES = (RunStatus.FINISHED, RunStatus.RUNNING, RunStatus.INTERRUPTED, RunStatus.FAILED)
LOG_TAIL_LINES = 6
SECOND_SIGNAL_AFTER_S = 0.3


@dataclass(frozen=True)
class Launch:
    """A batch started from the page: enough to find, watch and stop it after a reload."""

    tag: str
    pid: int
    start: str  # /proc start time of pid ("" where /proc is absent)
    argv: tuple[str, ...]
    log: str
    started_at: float


def launches_dir(db: Path) -> Path:
    """Where launches of batches into ``db`` are recorded: ``<db stem>.batches/`` beside it."""
    return db.parent / f"{db.stem}.batches"


def request(*, questions: list[str], levels: list[str], assistants: list[str], user: str, extractor: str,
            seeds: int, max_turns: int | None, concurrency: int, tag: str,
            graph_version: int | None = None, cluster: str | None = None) -> BatchRequest:
    """The batch service's request the form describes (``max_turns`` / ``concurrency`` 0 or None:
    the preset's / the command's own default — a process per core for offline-only matrices;
    ``cluster``: a Dask scheduler's address to play on, None to play here).

    Raises:
        ConfigError: an empty matrix, a bad tag or scheduler address, or the cluster extra missing.
    """
    if not questions or not levels or not assistants:
        raise ConfigError("choose at least one question, one level and one assistant")
    if cluster is not None:
        if not cluster.strip():
            raise ConfigError("Scheduler address: write the Dask scheduler's address, e.g. tcp://HOST:8786")
        try:
            cluster = cluster_address(cluster)
        except ValueError as exc:
            raise ConfigError(f"Scheduler address: {exc}") from None
    req = BatchRequest(questions=tuple(questions), levels=tuple(levels), assistants=tuple(assistants),
                       user=user, extractor=extractor, seeds=int(seeds), max_turns=int(max_turns or 0) or None,
                       concurrency=int(concurrency or 0) or None, graph_version=graph_version or None,
                       tag=check_batch_tag(tag.strip(), what="Tag") if tag.strip() else None, cluster=cluster)
    req.check()
    return req


def cluster_form() -> str | None:
    """"Run on a cluster" and its scheduler's address; the address when ticked, else None."""
    c1, c2 = st.columns([1, 3])
    on = c1.toggle("Run on a cluster", key="batch_on_cluster",
                   help="play the conversations as tasks on a Dask cluster's workers (each worker uses the keys "
                        "and endpoints of its own environment); this Studio stores every turn")
    address = c2.text_input("Scheduler address", key="batch_cluster", placeholder="tcp://HOST:8786", disabled=not on)
    return address if on else None


def check_cluster(req: BatchRequest) -> None:
    """Before a cluster batch is launched: is its scheduler listening? (ConfigError, one line.)"""
    if req.cluster is not None:
        check_reachable(req.cluster)


def workers_line(rec: Launch) -> str:
    """The last per-worker line a cluster batch printed ("" for a local batch or before its first)."""
    if "--cluster" not in rec.argv:
        return ""
    return next((line for line in reversed(log_tail(rec, lines=LOG_TAIL_LINES * 4)) if is_workers_line(line)), "")


def preview(store: Any, req: BatchRequest) -> tuple[BatchSpec, Estimate]:
    """The matrix and estimate of ``req`` — the batch service's, which the command prints too."""
    return batch_service.preview(store, req)


new_tag = new_batch_tag


def launch(db: Path, argv: list[str], tag: str) -> Launch:
    """Start ``python -m knowsim_core <argv> --db db`` as its own process group and record it.

    Raises:
        ConfigError: ``tag`` is not a valid tag (nothing is started).
        StorageError: the launches folder, the log or the record cannot be written, or the process
            cannot start — one line; a process that started without its record is stopped again.
    """
    check_batch_tag(tag, what="Tag")
    folder = launches_dir(db)
    log = folder / f"{tag}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "knowsim_core", *argv, "--db", str(db)], cwd=ROOT,
                                    env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    except OSError as exc:
        raise StorageError(f"cannot launch the batch: {exc.strerror or exc} ({exc.filename or folder})") from None
    rec = Launch(tag, proc.pid, process_start(proc.pid), tuple(argv), str(log), time.time())
    tmp = folder / f".{tag}.json.tmp"
    try:
        tmp.write_text(json.dumps(asdict(rec)))
        tmp.replace(folder / f"{tag}.json")
    except OSError as exc:
        try:  # a batch this page could not find again must not run on unseen
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        raise StorageError(f"cannot record the launched batch, so it was stopped: {exc.strerror or exc}") from None
    return rec


def launches(db: Path) -> list[Launch]:
    """Every recorded launch into ``db``, newest first (records with an invalid tag, or a log
    outside the launches folder, are not believed)."""
    out = []
    folder = launches_dir(db)
    for f in folder.glob("*.json"):
        try:
            d = json.loads(f.read_text())
            rec = Launch(check_batch_tag(d["tag"]), int(d["pid"]), d["start"], tuple(d["argv"]), d["log"],
                         float(d["started_at"]))
            if Path(rec.log).parent.resolve() != folder.resolve():
                continue
            out.append(rec)
        except (OSError, ValueError, KeyError, TypeError, ConfigError):
            continue  # a half-written or foreign file is not a launch
    return sorted(out, key=lambda rec: rec.started_at, reverse=True)


def elsewhere(store: Any, launched: list[Launch]) -> list[Launch]:
    """Batches in the database that this page did not launch (the command line's, another
    server's), newest first, as launches without a process or a log (``pid`` 0): they can be
    watched and resumed here, not stopped."""
    mine = {rec.tag for rec in launched}
    out = []
    for tag, created in store.search.list_batches():
        if tag not in mine:
            try:
                when = datetime.fromisoformat(created).timestamp()
            except ValueError:
                when = 0.0
            out.append(Launch(tag, 0, "", ("batch", "--resume", tag), "", when))
    return out


def playing_elsewhere(store: Any, tag: str) -> bool:
    """Whether some process is still writing runs of batch ``tag`` or holds one of its cells (dead
    writers' runs are marked interrupted first; dead holders' claims do not count)."""
    store.runs.mark_dead()
    return store.search.count(RunFilter(batch_tag=tag, status=RunStatus.RUNNING)) > 0 or bool(store.cells.holders(tag))


def alive(rec: Launch) -> bool:
    """Whether the launch's process still runs (a finished child of this server is reaped here);
    always False for a batch this page did not launch (``pid`` 0)."""
    if rec.pid <= 0:
        return False
    if process_start(rec.pid) == rec.start:  # still that process (a reused pid is someone else's child)
        try:
            os.waitpid(rec.pid, os.WNOHANG)  # our own child: collect it, or it stays a zombie
        except ChildProcessError:
            pass  # launched by an earlier server, or already collected
    return pid_alive(rec.pid, rec.start)


def stop(rec: Launch, *, now: bool = False) -> bool:
    """Ctrl-C to the batch's process group: the first stops starting conversations and lets those in
    flight finish their turn; ``now`` sends a second one after a pause (two signals sent back to back
    can reach Python's handler as one), which stops at once."""
    for i in range(2 if now else 1):
        if not alive(rec):
            return i > 0
        if i:
            time.sleep(SECOND_SIGNAL_AFTER_S)
        try:
            os.killpg(rec.pid, signal.SIGINT)
        except ProcessLookupError:
            return i > 0
    return True


def progress(store: Any, tag: str) -> dict[str, int]:
    """Cells of batch ``tag`` by the status of their best run, plus ``cells`` (the matrix size)
    and ``not started``."""
    counts = store.cells.status_counts(tag)  # one per cell, by its best run: never a cell counted twice
    data = store.search.get_batch(tag)
    cells = len(BatchSpec.from_data(data).cells()) if data else 0
    counts["cells"] = cells
    counts[CellOutcome.NOT_STARTED] = max(0, cells - sum(counts[s] for s in STATUSES))
    return counts


def progress_line(counts: dict[str, int], *, live: bool) -> tuple[float, str]:
    """The progress bar's share and text; a batch that has not stored its matrix yet is "starting"
    (not "0 / 0 conversations done" for the first seconds after Launch)."""
    done = (counts[RunStatus.FINISHED] + counts[RunStatus.FAILED]
            + (0 if live else counts[RunStatus.INTERRUPTED]))
    if not counts["cells"]:
        return 0.0, "Starting the batch: planning its conversations…" if live else "No conversation was planned."
    # "done" counts what has ended; say how, or "2 / 360 done" reads as two finished runs beside a
    # summary saying "0 done, 2 interrupted"
    ended = [f"{counts[s]} {s}" for s in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.INTERRUPTED)
             if counts[s] and not (s == RunStatus.INTERRUPTED and live)]
    how = f" ({', '.join(ended)})" if ended and ended != [f"{done} {RunStatus.FINISHED}"] else ""
    return done / counts["cells"], f"{done} / {counts['cells']} conversations done{how}"


FAILED_SHOWN = 5  # failed conversations named in the summary; the rest are counted


def summary(store: Any, rec: Launch, counts: dict[str, int]) -> list[str]:
    """The page's own account of a batch that is not playing, from the database: how its
    conversations ended, what they spent, which failed and why, and what Resume would do.

    Not the command's printout: that is written for a terminal (progress bars redrawn in place,
    "Ctrl-C again to stop at once", a resume command to type), and the page has its own progress
    bar, Stop buttons and Resume. The printout is shown only for a batch that stored no plan — the
    process ended before it could, and its last lines are all there is to say why.
    """
    cells = counts["cells"]
    if not cells:
        tail = log_tail(rec)
        return ["The batch stored no plan: its process ended before it started a conversation."
                + (" It printed: " + " / ".join(tail) if tail else "")]
    finished, failed = counts[RunStatus.FINISHED], counts[RunStatus.FAILED]
    left = counts[RunStatus.INTERRUPTED] + counts[CellOutcome.NOT_STARTED]
    if finished == cells:
        lines = [f"All {cells} conversations finished." if cells > 1 else "Its one conversation finished."]
    else:
        parts = [f"{counts[s]} {s}" for s in (RunStatus.FAILED, RunStatus.INTERRUPTED, CellOutcome.NOT_STARTED)
                 if counts[s]]
        lines = [f"{finished} of {cells} conversations finished" + (f"; {', '.join(parts)}" if parts else "") + "."]
    runs = store.search.list(RunFilter(batch_tag=rec.tag), limit=max(cells, 1) * 2)
    tokens_in, tokens_out = sum(r.tokens_in for r in runs), sum(r.tokens_out for r in runs)
    cost = sum(r.cost_usd or 0.0 for r in runs)
    if tokens_in or tokens_out or cost:
        lines.append(f"Model use: {tokens_in + tokens_out:,} tokens ({tokens_in:,} in, {tokens_out:,} out), "
                     f"${cost:.4f}.")
    else:
        lines.append("No model calls (offline agents only).")
    budget = BatchRequest.from_argv(rec.argv).max_cost if rec.argv and rec.argv[0] == "batch" else None
    if budget is not None and left:
        lines.append(f"It had a budget of ${budget:.2f}: no conversation starts past it. Resume plays the rest "
                     "without one.")
    failures = [r for r in runs if r.status == RunStatus.FAILED]
    for r in failures[:FAILED_SHOWN]:
        lines.append(f"Failed: {r.question_id} · {r.level} · {r.assistant} · seed {r.seed} — "
                     f"{r.error or 'no error stored'}")
    if len(failures) > FAILED_SHOWN:
        lines.append(f"… and {len(failures) - FAILED_SHOWN} more failed (Saved runs, Failed / interrupted only).")
    if left or failed:
        lines.append("Resume plays the interrupted, failed and not-started conversations; finished ones are kept.")
    return lines


def log_tail(rec: Launch, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last lines the batch printed (its summary once it has ended), progress redraws folded."""
    try:
        text = Path(rec.log).read_bytes().decode(errors="replace")  # text mode would turn \r into \n
    except OSError:
        return []
    rows = [r.rsplit("\r", 1)[-1].strip() for r in text.split("\n")]  # splitlines() would split at \r too
    return [r for r in rows if r][-lines:]


def resume_argv(rec: Launch) -> list[str]:
    """``batch --resume TAG`` with the launch's way of running (its workers or concurrency)."""
    return BatchRequest.from_argv(rec.argv).resume_argv(rec.tag)


__all__ = ["Launch", "alive", "check_cluster", "cluster_form", "elsewhere", "launch", "launches", "launches_dir",
           "log_tail", "new_tag", "playing_elsewhere", "preview", "progress", "request", "resume_argv", "stop",
           "summary", "workers_line"]
