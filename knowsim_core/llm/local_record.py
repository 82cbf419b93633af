"""The record of the running local model (``~/.knowsim/local-model.json``) and what it takes to trust it.

``make local-model`` (:mod:`knowsim_core.llm.local_server`) writes the record while its server runs, so
the app offers the model in its selectors and the LLM layer gives that URL the local model's
treatment (per-role reply caps, the context check, one request at a time per server, the long
deadline). The record is trusted only when it checks out (:func:`check`): its URL is on this
machine's loopback under ``/v1``, its context within :data:`N_CTX_BOUNDS`, and (Linux, from
``/proc``) its pid is the process listening on that URL's port, started as the launcher starts a
server — with that model alias, port and context (or nginx, with each server behind it checked the
same way). A record that does not (a forged ``pid: 1``, a URL of another server, a context of 100
or −5, a server since replaced) is ignored, with the reason in one line. No network call: a busy
llama-cpp-python server answers nothing, not even ``/v1/models``, until its generation ends.

One launcher per record: :func:`hold` takes a lock that the kernel keeps while the launcher lives.

Only the standard library.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from knowsim_core.engine.agent_id import AgentId
from knowsim_core.errors import ConfigError
from knowsim_core.llm.children import alive, can_inspect, command_line, listeners, serves, started
from knowsim_core.llm.proxy import is_loopback

LABEL = "small local model (Gemma 3 270M, llama.cpp on this machine)"
# The contexts a record may state: below 512 no Studio prompt fits; Gemma 3 was trained with 32k
# (the 270M model) to 128k, and llama.cpp refuses more than a model's own.
N_CTX_BOUNDS = (512, 131072)
MAX_SERVERS = 16


class LocalModelError(ConfigError):
    """The local model cannot start: the build or the model file is missing, the server died, or
    another launcher holds the record."""


@dataclass(frozen=True)
class LocalServer:
    """A running local server, as recorded for the app and the LLM layer.

    ``pid`` is the process serving ``url``: the model server itself, or nginx when ``servers`` (the
    ``(pid, url)`` of each model server behind it) are listed."""

    url: str  # http://127.0.0.1:PORT/v1
    model: str  # the alias the server answers to
    n_ctx: int
    pid: int
    threads: int = 1  # per model server
    label: str = LABEL
    servers: tuple[tuple[int, str], ...] = ()
    launcher: int = 0  # the launcher's pid, named when a second launcher is refused

    @property
    def slots(self) -> int:
        """How many requests the Studio sends at once: one per model server (none has parallel slots)."""
        return max(1, len(self.servers))

    @property
    def agent_id(self) -> AgentId:
        """``compat/<alias>@<url>``: the id that calls this server's model, its address inside."""
        return AgentId("compat", self.model, url=self.url)

    def agent_ids(self) -> dict[str, str]:
        """The ids to paste, one per conversation role."""
        base = self.agent_id
        return {"assistant": base.as_assistant().id, "user": base.id, "extractor": base.id}

    def to_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: Any) -> "LocalServer | None":
        try:
            servers = tuple((int(pid), str(url).rstrip("/")) for pid, url in data.get("servers") or ())
            return cls(url=str(data["url"]).rstrip("/"), model=str(data["model"]), n_ctx=int(data["n_ctx"]),
                       pid=int(data["pid"]), threads=int(data.get("threads", 1)),
                       label=str(data.get("label") or LABEL), servers=servers, launcher=int(data.get("launcher", 0)))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


# ---------------------------------------------------------------------- the record file
def record_path(path: str | os.PathLike[str] | None = None) -> Path:
    """Where the running server is recorded: ``path``, else ``$KNOWSIM_LOCAL_MODEL_FILE``, else
    ``~/.knowsim/local-model.json``."""
    chosen = path or os.environ.get("KNOWSIM_LOCAL_MODEL_FILE")
    return Path(chosen) if chosen else Path.home() / ".knowsim" / "local-model.json"


def _port(url: str) -> int | None:
    """The port of a loopback ``http://…/v1`` URL, else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    ok = parts.scheme == "http" and is_loopback(parts.hostname or "") and parts.path.rstrip("/") == "/v1"
    return port if ok and not parts.username and not parts.query else None


def _flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args[:-1] else None


def _check_model_server(server: LocalServer, pid: int, url: str, table: dict[str, int] | None) -> str:
    """Why ``pid`` is not the model server this launcher starts at ``url`` ("" when it is).
    ``table``: the listening sockets (:func:`~knowsim_core.llm.children.listeners`); None without /proc."""
    port = _port(url)
    if port is None:
        return f"its server URL {url!r} is not http://<loopback>:PORT/v1 on this machine"
    if not alive(pid):
        return f"its server process {pid} is not running"
    if table is None:  # no /proc: that the process lives is all that can be seen
        return ""
    if not serves(pid, port, table):
        return f"process {pid} does not listen on {url}"
    args = command_line(pid)
    wanted = {"--model_alias": server.model, "--port": str(port), "--n_ctx": str(server.n_ctx)}
    if "llama_cpp.server" not in args or any(_flag(args, k) != v for k, v in wanted.items()):
        return (f"process {pid} at {url} is not a llama.cpp server started for {server.model} "
                f"with a context of {server.n_ctx}")
    return ""


# Verdicts already reached in this process, by record and by the start time of each process it names:
# /proc/net/tcp costs tens of ms to read on a busy machine, and the app reads the record at every rerun.
_CHECKED: dict[tuple[LocalServer, tuple[int, ...]], str] = {}


def check(server: LocalServer) -> str:
    """Why a record is not to be trusted, in a few words ("" when it checks out; see the module docstring)."""
    pids = (server.pid, *(pid for pid, _ in server.servers))
    key = (server, tuple(started(pid) for pid in pids))
    if 0 not in key[1] and key in _CHECKED:
        return _CHECKED[key]
    why = _check(server)
    if 0 not in key[1]:
        _CHECKED[key] = why
    return why


def _check(server: LocalServer) -> str:
    low, high = N_CTX_BOUNDS
    if not low <= server.n_ctx <= high:
        return f"its context of {server.n_ctx} tokens is outside {low}-{high}"
    if not server.model or any(c.isspace() for c in server.model) or not 1 <= server.threads <= 1024:
        return "its model name or thread count cannot be right"
    table = listeners() if can_inspect() else None
    if not server.servers:
        return _check_model_server(server, server.pid, server.url, table)
    port = _port(server.url)
    if port is None:
        return f"its URL {server.url!r} is not http://<loopback>:PORT/v1 on this machine"
    if len(server.servers) > MAX_SERVERS:
        return f"it lists {len(server.servers)} servers (at most {MAX_SERVERS})"
    if not alive(server.pid):
        return f"its router process {server.pid} is not running"
    if table is not None and not (serves(server.pid, port, table) and "nginx" in " ".join(command_line(server.pid)[:2])):
        return f"process {server.pid} is not the router (nginx) listening on {server.url}"
    return next((why for pid, url in server.servers if (why := _check_model_server(server, pid, url, table))), "")


def read_record(path: str | os.PathLike[str] | None = None) -> tuple[LocalServer | None, str]:
    """(the recorded server if it checks out, else None; why it was ignored — "" when there is no record)."""
    rec = record_path(path)
    try:
        data = json.loads(rec.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:
        return None, f"ignored the local-model record {rec}: it cannot be read ({type(exc).__name__})"
    server = LocalServer.from_data(data) if isinstance(data, dict) else None
    if server is None:
        return None, f"ignored the local-model record {rec}: it lacks url, model, n_ctx or pid"
    if not all(alive(pid) for pid in (server.pid, *(pid for pid, _ in server.servers))):
        return None, ""  # left by a launcher that was killed: stale, nothing to say
    why = check(server)
    return (None, f"ignored the local-model record {rec}: {why}") if why else (server, "")


def running(path: str | os.PathLike[str] | None = None) -> LocalServer | None:
    """The recorded local server if it is running and checks out (:func:`check`), else None. Reads
    the record and ``/proc``; no network call."""
    return read_record(path)[0]


def hold(rec: Path) -> IO[str]:
    """The lock on record ``rec`` (``<rec>.lock``), held until the returned file is closed — by the
    kernel too when the holder dies however it dies.

    Raises:
        LocalModelError: another launcher holds it (one line naming it and what to do).
    """
    lock = open(rec.with_name(rec.name + ".lock"), "a+", encoding="utf-8")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        try:
            other = LocalServer.from_data(json.loads(rec.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            other = None
        where = (f" (launcher pid {other.launcher}, at {other.url})" if other is not None and other.launcher
                 else " (still starting)")
        raise LocalModelError(f"another launcher already runs the local model recorded in {rec}{where}: stop it "
                              "first (Ctrl-C in its terminal), or give this one its own --record FILE") from None
    return lock
