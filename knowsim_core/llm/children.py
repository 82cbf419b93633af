"""Servers this machine runs for the Studio (the local model, the router in front of several): how they
are started and stopped, and how to tell that a process is the one serving a port.

* :func:`free_port`: a port nothing listens on now;
* :func:`die_with_parent`: a ``preexec_fn`` that has the kernel kill the child when its parent dies
  (Linux ``PR_SET_PDEATHSIG``), so no server outlives the process that started it;
* :func:`interrupt_on_sigterm`: SIGTERM raises KeyboardInterrupt as Ctrl-C does, so the code that
  stops the servers runs;
* :func:`serves`, :func:`command_line`: from ``/proc`` (Linux), whether a process listens on a
  loopback port and with what command line it was started — what a record of a running server is
  checked against before the Studio trusts it.

Only the standard library.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable

HOST = "127.0.0.1"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
PROC = Path("/proc")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def free_port(host: str = HOST) -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel send ``sig`` to the child when its parent dies (Linux
    ``PR_SET_PDEATHSIG``) — also when the parent is killed by SIGKILL or by a SIGTERM it does not
    handle — or None where that does not exist. SIGKILL by default; nginx gets SIGTERM, its fast
    stop, which ends its worker processes too (SIGKILL to its master would leave them running). The
    signal follows the *thread* that started the child: start servers from a thread that lives as
    long as they should (the main thread)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before the line above: nobody is left to stop us
            os.kill(os.getpid(), sig)

    return preexec


def interrupt_on_sigterm() -> Any:
    """Have SIGTERM raise KeyboardInterrupt in the main thread, as Ctrl-C does, so that the ``finally``
    or ``except KeyboardInterrupt`` that stops the servers runs (Python's default for SIGTERM ends the
    process at once, and the servers would be left to ``PR_SET_PDEATHSIG`` with their record behind).
    For command-line entry points. Returns the previous handler, or None outside the main thread
    (nothing installed)."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (another user's counts; a zombie, dead but not yet reaped by
    whoever adopted it, does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: that it exists is all that can be seen
    return state not in ("Z", "X")


def can_inspect() -> bool:
    """Whether this system shows processes' sockets and command lines (``/proc``: Linux)."""
    return (PROC / "net" / "tcp").exists()


def listeners() -> dict[str, int]:
    """The sockets listening for TCP connections (IPv4 and IPv6), as {socket inode: port}. Reading
    ``/proc/net/tcp`` costs the kernel a walk of every socket (tens of ms on a busy machine): read it once
    per check and pass it to :func:`serves`."""
    found: dict[str, int] = {}
    for table in ("tcp", "tcp6"):
        try:
            rows = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) >= 10 and f[3] == _LISTEN:
                found[f[9]] = int(f[1].rpartition(":")[2], 16)
    return found


def serves(pid: int, port: int, table: dict[str, int] | None = None) -> bool:
    """Whether process ``pid`` holds a socket listening on ``port`` (it is the server at that port,
    not a process that happens to have its pid written down). False when it cannot be seen.
    ``table``: :func:`listeners`, when already read."""
    inodes = {inode for inode, p in (listeners() if table is None else table).items() if p == port}
    if not inodes:
        return False
    try:
        fds = list((PROC / str(pid) / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def started(pid: int) -> int:
    """When process ``pid`` started (clock ticks since boot; 0 when unknown): a pid used again by
    another process has another start."""
    try:
        return int((PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def command_line(pid: int) -> list[str]:
    """The arguments process ``pid`` was started with ([] when it cannot be read). nginx rewrites its
    own (``nginx: master process …``): that comes back as the words of the one string it writes."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    return args[0].split() if len(args) == 1 else args
