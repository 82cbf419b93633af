"""Several OpenAI-compatible servers behind one URL: nginx in front of them on 127.0.0.1.

The Studio takes one base URL per model (``KNOWSIM_COMPAT_BASE_URL``, or ``compat/<model>@<url>`` in
an id). Spreading calls over several servers is a router's job, and nginx does it with what the
Studio's workload needs (``python -m knowsim_core.llm.router URL URL …`` writes the configuration,
starts it and prints the one URL to use; ``--print-config`` only prints the configuration):

* **the least busy server first** (``least_conn``): a call takes seconds to minutes and servers
  differ in speed, so the count of open requests is the load;
* **a dead server is skipped** (``max_fails=1 fail_timeout=…``, nginx's passive health check): one
  failed connection takes it out for ``fail_timeout`` seconds, after which one request tries it
  again; a request whose connection is refused goes on to another server at once
  (``proxy_next_upstream``);
* **no request sent twice by the router**: nginx re-sends a POST only when the first server never
  received it. A server that dies with requests in progress answers them with a 502, which the
  Studio's client retries (counting what it retries, as for any 5xx), and the retry reaches a live
  server. Re-sending a received POST behind the client's back could bill one call twice at a
  provider, unseen;
* **any path is passed on**: llama-cpp-python's ``/extras/tokenize/count`` (the prompt-size check)
  as well as ``/v1/chat/completions`` and ``/v1/models``;
* **the local model's deadline**: replies may take up to ``read_timeout_s`` (1,800 s by default,
  :data:`~knowsim_core.llm.settings.LOCAL_TIMEOUT_S`); request bodies stay in memory up to 4 MiB.

Why not vLLM's router (``vllm-router`` on PyPI): at start it waits for every server to answer
``GET /health``, which llama-cpp-python's server and Ollama do not have (it never starts in front of
them), and it re-sends 5xx answers itself (llama-cpp-python refuses a JSON-schema request with a
500, which the Studio reads to fall back to JSON mode). ``benchmarks/router.py`` measures both on
the Studio's own batches.

Only the standard library is imported here; nginx is Debian's ``nginx`` package
(``scripts/bootstrap.sh`` installs it for the tests and ``make local-model``).
"""

from __future__ import annotations

import argparse
import getpass
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlsplit

from knowsim_core.errors import ConfigError
from knowsim_core.llm.children import HOST, die_with_parent, free_port, interrupt_on_sigterm
from knowsim_core.llm.proxy import opener

DEFAULT_READ_TIMEOUT_S = 1800.0  # the local model's deadline (settings.LOCAL_TIMEOUT_S)
DEFAULT_FAIL_TIMEOUT_S = 10  # how long a server that failed is left out before one request tries it again
START_TIMEOUT_S = 20.0
INSTALL_HINT = "install Debian's nginx (apt-get install nginx; scripts/bootstrap.sh test and make local-model do it)"


class RouterError(ConfigError):
    """The router cannot start: nginx is missing, an upstream URL cannot be used, or nginx exited."""


@dataclass(frozen=True)
class Upstream:
    """One server behind the router: ``host:port`` and the path its API lives under (``/v1``)."""

    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> "Upstream":
        """Raises RouterError for what nginx cannot pass to as written (https, no port, a query)."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise RouterError(f"{url!r} is not a server URL ({exc}); write e.g. http://10.0.0.5:8000/v1") from None
        if parts.scheme != "http" or not parts.hostname or port is None or parts.query or parts.username:
            raise RouterError(f"{url!r}: the router passes to http://HOST:PORT/PATH servers (no https, user or "
                              "query); write e.g. http://10.0.0.5:8000/v1")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return cls(host, port, parts.path.rstrip("/"))


def nginx_config(upstreams: Sequence[str], *, port: int, workdir: Path,
                 read_timeout_s: float = DEFAULT_READ_TIMEOUT_S, fail_timeout_s: int = DEFAULT_FAIL_TIMEOUT_S) -> str:
    """nginx's configuration for ``upstreams`` behind ``http://127.0.0.1:port`` (files under ``workdir``).

    Raises:
        RouterError: fewer than one upstream, one that cannot be used, or servers under different paths.
    """
    servers = [Upstream.parse(u) for u in upstreams]
    if not servers:
        raise RouterError("give the URLs of the servers to put behind the router")
    if len({s.path for s in servers}) > 1:
        raise RouterError("the servers' URLs end in different paths "
                          f"({', '.join(sorted({s.path or '/' for s in servers}))}): the router keeps one")
    tmp = workdir / "tmp"
    # as root, nginx runs its workers as nobody, who could not write the temporary files here
    user = f"user {getpass.getuser()};\n" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    lines = "\n".join(f"        server {s.host}:{s.port} max_fails=1 fail_timeout={fail_timeout_s}s;" for s in servers)
    timeout = f"{int(read_timeout_s)}s"
    return f"""# Written by knowsim_core.llm.router: {len(servers)} OpenAI-compatible server(s) behind
# http://{HOST}:{port}{servers[0].path} (least busy first; a server that fails is left out {fail_timeout_s} s).
{user}worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    # which server answered each request, with what, in how long: the place to look when one misbehaves
    log_format routed '$time_iso8601 $request_method $uri $status upstream=$upstream_addr '
                      'upstream_status=$upstream_status seconds=$request_time';
    access_log {workdir}/access.log routed;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    upstream models {{
        least_conn;
{lines}
        keepalive 64;
    }}
    server {{
        listen {HOST}:{port};
        client_max_body_size 4m;
        client_body_buffer_size 4m;
        location / {{
            proxy_pass http://models;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_connect_timeout 5s;
            proxy_send_timeout {timeout};
            proxy_read_timeout {timeout};
            proxy_next_upstream error timeout http_502 http_503 http_504;
        }}
    }}
}}
"""


def find_nginx(which: Callable[[str], str | None] = shutil.which, also: Sequence[str] = ("/usr/sbin/nginx",)) -> str:
    """nginx's path: on ``PATH`` (``which``), else one of ``also`` (Debian puts it in ``/usr/sbin``,
    outside a user's ``PATH``). Raises RouterError if absent."""
    found = which("nginx") or next((p for p in also if os.access(p, os.X_OK)), None)
    if not found:
        raise RouterError(f"nginx is not installed: {INSTALL_HINT}")
    return found


def _answers(url: str) -> bool:
    try:
        with opener(None).open(url, timeout=2) as r:  # loopback: never through a proxy
            return r.status < 500 or r.status == 502  # 502: nginx is up, its servers are not (yet)
    except urllib.error.HTTPError as exc:
        return exc.code < 500 or exc.code == 502
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass
class Router:
    """nginx started by :func:`start`: its process, the URL to use, its files."""

    process: subprocess.Popen
    url: str
    workdir: Path
    upstreams: tuple[str, ...]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> int:
        """SIGTERM (nginx's fast stop: its master ends the worker processes, then itself); after 5 s,
        SIGKILL to its process group (its own session, workers included: SIGKILL to the master alone
        would leave the workers running)."""
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
                self.process.wait(5.0)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # what is left of the group, if anything
        except (ProcessLookupError, PermissionError):
            pass
        return self.process.wait()


def start(upstreams: Sequence[str], *, workdir: Path, port: int = 0, read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
          fail_timeout_s: int = DEFAULT_FAIL_TIMEOUT_S, wait_s: float = START_TIMEOUT_S) -> Router:
    """nginx in front of ``upstreams`` on ``127.0.0.1:port`` (a free one by default), waiting until it
    answers. It stops when this process ends, however it ends (SIGTERM from the kernel: see
    :func:`~knowsim_core.llm.children.die_with_parent`); start it from the main thread.

    Raises:
        RouterError: nginx is missing, the URLs cannot be used, or nginx did not start (with its log).
    """
    nginx = find_nginx()
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (workdir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    conf = workdir / "nginx.conf"
    conf.write_text(nginx_config(upstreams, port=port, workdir=workdir, read_timeout_s=read_timeout_s,
                                 fail_timeout_s=fail_timeout_s), encoding="utf-8")
    log = workdir / "error.log"
    path = Upstream.parse(upstreams[0]).path
    with open(workdir / "nginx.out", "wb") as out:
        proc = subprocess.Popen([nginx, "-e", str(log), "-p", str(workdir), "-c", str(conf)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=die_with_parent(signal.SIGTERM))
    router = Router(proc, f"http://{HOST}:{port}{path}", workdir, tuple(upstreams))
    deadline = time.monotonic() + wait_s
    while not _answers(f"http://{HOST}:{port}/"):
        if proc.poll() is not None or time.monotonic() > deadline:
            router.stop()
            tail = " / ".join((workdir / "nginx.out").read_text(errors="replace").splitlines()[-3:]
                              + (log.read_text(errors="replace").splitlines()[-3:] if log.exists() else []))
            raise RouterError(f"nginx did not start on {HOST}:{port}: {tail or 'no message'}")
        time.sleep(0.1)
    return router


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m knowsim_core.llm.router",
                                description="Put several OpenAI-compatible servers behind one URL (nginx on 127.0.0.1).")
    p.add_argument("urls", nargs="+", help="the servers, e.g. http://10.0.0.5:8000/v1 http://10.0.0.6:8000/v1")
    p.add_argument("--port", type=int, default=0, help="the router's port (default: a free one)")
    p.add_argument("--workdir", help="where nginx's configuration and logs go (default: a new temporary folder)")
    p.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, help="seconds a reply may take")
    p.add_argument("--print-config", action="store_true", help="print the configuration and exit")
    args = p.parse_args(argv)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="knowsim-router-"))
    try:
        if args.print_config:
            print(nginx_config(args.urls, port=args.port or 8100, workdir=workdir, read_timeout_s=args.read_timeout),
                  end="")
            return 0
        interrupt_on_sigterm()  # SIGTERM stops nginx as Ctrl-C does
        router = start(args.urls, workdir=workdir, port=args.port, read_timeout_s=args.read_timeout)
    except KeyboardInterrupt:
        return 130
    except RouterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:  # the lines are printed inside: a Ctrl-C right after them still stops nginx
        print(f"router (nginx, least busy first) at {router.url} in front of {len(router.upstreams)} server(s); "
              f"configuration and logs in {workdir}\n  KNOWSIM_COMPAT_BASE_URL={router.url}\nCtrl-C stops it.",
              flush=True)
        return router.process.wait()
    except KeyboardInterrupt:
        return 0 if router.stop() in (0, -signal.SIGTERM) else 1


if __name__ == "__main__":
    sys.exit(main())
