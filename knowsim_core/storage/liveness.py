"""Who is writing a run, and whether they are gone.

A run records its writer's pid (+ the kernel's start time of that pid, and the host); a run left
``running`` by a process that no longer exists is ``interrupted`` the next time the store opens.
The Streamlit server outlives every browser session, so its pid says nothing about an abandoned
run: a run the app plays carries a lease (``lease_until``) that each stored turn and the open
session renew; once it lapses the run is released and stays ``open`` (a conversation someone may
come back to, not a failure: :meth:`~knowsim_core.storage.runs.Runs.mark_dead`).
Command-line runs hold no lease and keep the pid check.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

STALE_REMOTE_SECONDS = 3600  # a run written from another host with no heartbeat for this long is dead
LEASE_SECONDS = 300.0  # an app-held run nobody renewed for this long was abandoned (> one slow LLM turn)
PROCESS_DIED = "the process writing this run stopped before it finished"
LEASE_LAPSED = "the browser session playing this run went away before it finished; resume it from Saved runs"


def process_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (guards against pid reuse); "" where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def pid_alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):  # killed but not yet reaped by its parent
            return False
    except OSError:
        pass
    return not start or process_start(pid) in ("", start)


def writer_gone(pid: Any, start: Any, rhost: Any, beat: Any, lease_until: Any, *, clock: float) -> str:
    """Why the writer of a ``running`` run is gone ("" while it may still be writing)."""
    if lease_until is not None and lease_until < clock:
        return LEASE_LAPSED
    if rhost == socket.gethostname():
        return "" if pid and pid_alive(int(pid), start or "") else PROCESS_DIED
    now = datetime.now(timezone.utc)
    age = (now - datetime.fromisoformat(beat)).total_seconds() if beat else STALE_REMOTE_SECONDS + 1
    return "" if age < STALE_REMOTE_SECONDS else PROCESS_DIED


_OWN: dict[int, str] = {}  # this process's pid -> its start time (a forked worker has a pid of its own)


def writer() -> dict[str, Any]:
    """The columns that name this process as a run's writer.

    This process's start time is read from /proc once per pid, not once per run and claim (a
    batch worker wrote both for every conversation); other pids are always read afresh, since a
    pid can be reused."""
    pid = os.getpid()
    start = _OWN.get(pid)
    if start is None:
        start = _OWN[pid] = process_start(pid)
    return {"pid": pid, "pid_start": start, "host": socket.gethostname()}
