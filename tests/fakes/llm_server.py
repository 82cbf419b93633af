"""A local LLM server speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Both SDKs ship their own HTTP stack, so request-mocking libraries do not see their traffic; a
real socket on 127.0.0.1 does. The server records every request and answers with:

* a queue of scripted actions (``server.push(Fault(status=500), Fault(delay=2.0), ...)``), each
  consumed by one request — HTTP errors in each provider's error format, delays (timeouts),
  or a fixed reply text (e.g. malformed JSON);
* otherwise ``reply(request) -> str | Reply``, a function of the parsed request (default: echo).

Hostile modes (a :class:`Fault` with status 200): ``body=b"..."`` answers those raw bytes (a
non-JSON 200); ``huge=N`` pads the reply to N bytes and streams it in 64 KB chunks, with
``chunked=True`` without declaring its length; ``trickle=s`` sends the body one byte every ``s``
seconds (with ``trickle_head=True`` the status line and headers too); ``cut=N`` declares the whole body but sends N bytes and closes (a truncated 200);
``echo_auth=True`` puts the ``Authorization`` header it received into the reply text.

``tokenizer=True`` adds llama-cpp-python's ``POST /extras/tokenize/count`` (a word count of its
``input``; each call is appended to ``token_counts``), which the LLM layer uses to measure prompts.

``latency`` (seconds) delays every answer, like a model's generation time; ``in_flight`` and
``peak_in_flight`` count the requests being answered at once (what concurrency tests and
``benchmarks/llm_batch.py`` assert on and report).

Usage: ``with FakeLLMServer(reply=fn) as srv: ... srv.openai_url / srv.anthropic_url``.

:func:`server_process` runs one in a child process, scripted with faults (``clear()`` drops those
left): a test that counts this process's threads and sockets then counts the client's alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class Request:
    """One received request, parsed: enough to route a reply and to assert on prompts."""

    wire: str  # "openai" | "anthropic"
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def system(self) -> str:
        if self.wire == "anthropic":
            sys = self.body.get("system") or ""
            return sys if isinstance(sys, str) else "\n".join(b.get("text", "") for b in sys)
        return "\n".join(m["content"] for m in self.body.get("messages", []) if m.get("role") == "system")

    @property
    def turns(self) -> list[dict[str, str]]:
        """Non-system messages as {role, content} with text content."""
        out = []
        for m in self.body.get("messages", []):
            if m.get("role") == "system":
                continue
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(b.get("text", "") for b in c if isinstance(b, dict))
            out.append({"role": m["role"], "content": c or ""})
        return out

    @property
    def text(self) -> str:
        """Everything the model was shown, for 'the prompt contains …' assertions."""
        return self.system + "\n" + "\n".join(t["content"] for t in self.turns)

    @property
    def last_user(self) -> str:
        users = [t["content"] for t in self.turns if t["role"] == "user"]
        return users[-1] if users else ""

    @property
    def schema(self) -> dict[str, Any] | None:
        """The structured-output JSON schema sent, if any (either wire format)."""
        rf = self.body.get("response_format")
        if isinstance(rf, dict) and rf.get("type") == "json_schema":
            return rf["json_schema"]["schema"]
        fmt = (self.body.get("output_config") or {}).get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return fmt["schema"]
        return None

    @property
    def json_mode(self) -> bool:
        rf = self.body.get("response_format")
        return isinstance(rf, dict) and rf.get("type") == "json_object"

    @property
    def api_key(self) -> str:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ").strip() or self.headers.get("x-api-key", "")


@dataclass
class Reply:
    text: str
    input_tokens: Any = None  # None: a word count of the prompt; any JSON value to test what a server may send
    output_tokens: Any = None
    finish: str = ""  # "" → "stop" / "end_turn"


@dataclass
class Fault:
    """One scripted answer. ``status`` ≠ 200 returns an error; ``delay`` sleeps first; ``text``
    replaces the reply text (status 200)."""

    status: int = 200
    delay: float = 0.0
    text: str | None = None
    message: str = ""
    retry_after_ms: int | None = 5  # keeps SDK retries fast in tests
    retry_after_s: str | None = None  # a Retry-After header (seconds), e.g. "86400"
    body: bytes | None = None  # answer these raw bytes with the status (e.g. a non-JSON 200)
    huge: int = 0  # pad the reply text (or, with an error status, the error message) to about this many bytes
    chunked: bool = False  # send the body with Transfer-Encoding: chunked (no length declared)
    trickle: float = 0.0  # seconds between single bytes of the body
    trickle_head: bool = False  # trickle the status line and headers as well
    cut: int | None = None  # declare the whole body, send only this many bytes, close
    echo_auth: bool = False  # the reply text is the Authorization header the server received
    sent: list[int] = field(default_factory=list)  # body bytes written, appended when sending ends


def _total(tin: Any, tout: Any) -> Any:
    """``total_tokens`` as a server would write it; None when a test gives counts that do not add up."""
    try:
        return tin + tout
    except TypeError:
        return None


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog (5) drops connections when 64 clients arrive at once
    daemon_threads = True


@dataclass
class FakeLLMServer:
    reply: Callable[[Request], "str | Reply"] | None = None
    requests: list[Request] = field(default_factory=list)
    latency: float = 0.0  # seconds before every answer (on top of a Fault's delay)
    tokenizer: bool = False  # answer POST /extras/tokenize/count like llama-cpp-python's server
    token_counts: list[int] = field(default_factory=list)
    host: str = "127.0.0.1"  # the address it listens on
    port: int = 0  # the port it listens on (0: a free one)
    name: str = ""  # the host its URLs name, if not ``host`` (behind a proxy: a name only the proxy resolves)

    def __post_init__(self) -> None:
        self._script: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "FakeLLMServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out as two writes: with Nagle on, the body waits for the client's
            # delayed ACK (~40 ms a call on Linux), which real model servers (uvicorn, vLLM) avoid
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802  (GET /v1/models, /health: what readiness probes ask)
                path = self.path.rstrip("/")
                found = path in ("/v1/models", "/health")
                data = json.dumps({"object": "list", "data": [{"id": "m1", "object": "model"}]} if path == "/v1/models"
                                  else {"status": "ok"} if found
                                  else {"error": {"message": f"no route {self.path}"}}).encode()
                self.send_response(200 if found else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = _Server((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://{self.name or self.host}:{self._httpd.server_address[1]}"

    @property
    def openai_url(self) -> str:  # what OpenAI(base_url=...) and compat ids take
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:  # Anthropic(base_url=...) appends /v1/messages itself
        return self.url

    # ------------------------------------------------------------------ knobs
    def push(self, *actions: Fault) -> None:
        with self._lock:
            self._script.extend(actions)

    def clear(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.peak_in_flight = self.in_flight

    # ------------------------------------------------------------------ handling
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            self._answer(h)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(n)
        if self.tokenizer and h.path.rstrip("/") == "/extras/tokenize/count":
            count = len(str(json.loads(raw or b"{}").get("input", "")).split())
            with self._lock:
                self.token_counts.append(count)
            return self._send(h, 200, {"count": count})
        wire = "openai" if h.path.rstrip("/").endswith("/chat/completions") else (
            "anthropic" if h.path.rstrip("/").endswith("/messages") else "")
        if not wire:
            return self._send(h, 404, {"error": {"message": f"no route {h.path}", "type": "not_found"}})
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._error(h, wire, Fault(status=400, message="body is not JSON"), "")
        req = Request(wire, h.path, {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(req)
            action = self._script.popleft() if self._script else None
        if action is not None and action.delay:
            time.sleep(action.delay)
        if self.latency:
            time.sleep(self.latency)
        if action is not None and action.status != 200 and action.huge:  # a huge error body
            return self._send_bytes(h, action.status, json.dumps({"error": {"message": "e" * action.huge}}).encode(),
                                    action)
        if action is not None and action.status != 200:
            return self._error(h, wire, action, req.api_key)
        if action is not None and action.body is not None:
            return self._send_bytes(h, 200, action.body, action)
        if action is not None and action.echo_auth:
            rep = Reply(f"you sent {req.headers.get('authorization', '')}")
        elif action is not None and action.huge:
            rep = Reply("a" * action.huge)
        elif action is not None and action.text is not None:
            rep = Reply(action.text)
        else:
            out = self.reply(req) if self.reply else Reply(req.last_user)
            rep = out if isinstance(out, Reply) else Reply(str(out))
        tin = rep.input_tokens if rep.input_tokens is not None else len(req.text.split())
        tout = rep.output_tokens if rep.output_tokens is not None else len(rep.text.split())
        if wire == "openai":
            payload = {
                "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 1700000000,
                "model": req.model,
                "choices": [{"index": 0, "finish_reason": rep.finish or "stop",
                             "message": {"role": "assistant", "content": rep.text, "refusal": None}}],
                "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": _total(tin, tout)},
            }
        else:
            payload = {
                "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": req.model,
                "content": [{"type": "text", "text": rep.text}],
                "stop_reason": rep.finish or "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": tin, "output_tokens": tout},
            }
        if action is not None and (action.huge or action.trickle or action.cut is not None or action.chunked):
            return self._send_bytes(h, 200, json.dumps(payload).encode(), action)
        self._send(h, 200, payload)

    @staticmethod
    def _send_bytes(h: BaseHTTPRequestHandler, status: int, data: bytes, f: Fault) -> None:
        """A body sent the hostile way ``f`` asks (see the module docstring)."""
        if f.trickle_head:
            head = (f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(data)}\r\n\r\n").encode()
            written = 0
            try:
                for i in range(len(head + data)):
                    h.wfile.write((head + data)[i:i + 1])
                    h.wfile.flush()
                    written += 1
                    time.sleep(f.trickle)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                f.sent.append(written)  # head and body bytes here
            h.close_connection = True
            return
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            if f.chunked:
                h.send_header("transfer-encoding", "chunked")
            else:
                h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.flush()
            if f.cut is not None:
                h.wfile.write(data[:f.cut])
                h.wfile.flush()
                h.close_connection = True
                return
            step = 1 if f.trickle else 65536
            written = 0
            for i in range(0, len(data), step):
                piece = data[i:i + step]
                h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if f.chunked else piece)
                h.wfile.flush()
                written += len(piece)
                if f.trickle:
                    time.sleep(f.trickle)
            if f.chunked:
                h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (what the tests want)
            h.close_connection = True
        finally:
            f.sent.append(locals().get("written", 0))

    def _error(self, h: BaseHTTPRequestHandler, wire: str, f: Fault, key: str) -> None:
        kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                 429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}
        msg = f.message or {
            401: f"Incorrect API key provided: {key}. You can find your API key in your account settings.",
            404: "The model does not exist or you do not have access to it.",
            429: "Rate limit reached for requests.",
        }.get(f.status, "The server had an error while processing your request.")
        kind = kinds.get(f.status, "api_error")
        if wire == "openai":
            payload = {"error": {"message": msg, "type": kind, "param": None, "code": None}}
        else:
            payload = {"type": "error", "error": {"type": kind, "message": msg}}
        extra = {"retry-after-ms": str(f.retry_after_ms)} if f.retry_after_ms is not None else {}
        if f.retry_after_s is not None:
            extra = {"retry-after": f.retry_after_s}
        self._send(h, f.status, payload, extra)

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            for k, v in (extra or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


_CHILD = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import Fault, FakeLLMServer
srv = FakeLLMServer().start()
srv.push(*[Fault(**f) for f in {faults!r}])
print(srv.url, flush=True)
for line in sys.stdin:  # until the parent closes it (or dies)
    if line.strip() == "clear":
        srv.clear()
        print("cleared", flush=True)
"""


@dataclass
class ServerProcess:
    """A :class:`FakeLLMServer` in a child process: ``url`` (add ``/v1`` for the OpenAI wire)."""

    proc: subprocess.Popen
    url: str

    def clear(self) -> None:
        """Drop the faults not used yet: the server answers normally from now on (it "recovers")."""
        self.proc.stdin.write("clear\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "cleared"


@contextmanager
def server_process(*faults: dict[str, Any]):
    """A :class:`ServerProcess` (echo replies) scripted with ``Fault(**f)`` for each of ``faults`` in
    order. Its handler threads and sockets are not this process's. Killed when the block ends."""
    root = str(Path(__file__).resolve().parent.parent.parent)
    proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=root, faults=list(faults))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), "the fake server process did not start"
        yield ServerProcess(proc, url)
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


# ---------------------------------------------------------------------- pytest fixture
try:
    import pytest
except ImportError:  # pragma: no cover — the server itself needs only the stdlib
    pytest = None

if pytest is not None:

    @pytest.fixture()
    def llm_server():
        """A started :class:`FakeLLMServer` (echo replies until a test sets ``.reply``)."""
        srv = FakeLLMServer().start()
        try:
            yield srv
        finally:
            srv.stop()


# ---------------------------------------------------------------------- rule-based KnowSim replies
class KnowSimReplies:
    """A reply function playing every KnowSim role, recognised by the system prompt it was sent.

    Extractor: the first ``explain`` IUs of the prompt's graph ``well_explained``, the rest not
    mentioned. User: a fixed confused question (``attempt_verify`` from turn 2 on). Graph
    extractor: ``graph`` (a dict in the LLM output format). Judge: ``score``. Anything else is the
    assistant: a numbered explanation. Counters record how often each role was asked.
    """

    def __init__(self, *, explain: int = 3, graph: dict | None = None, score: int = 7, stateless: bool = False):
        """``stateless``: number each reply by a digest of its request instead of a call counter, so
        a reply is a function of the request alone (the same whatever order conversations run in)."""
        from knowsim_core.prompts import extractor, graph as graph_prompt, judge, user

        self._systems = {
            "extractor": extractor.SYSTEM, "user": user.SYSTEM,
            "graph_extractor": graph_prompt.SYSTEM, "judge": judge.SYSTEM,
        }
        self.explain = explain
        self.graph = graph
        self.score = score
        self.stateless = stateless
        self.calls: dict[str, int] = {}

    def role_of(self, req: Request) -> str:
        for role, system in self._systems.items():
            if req.system.startswith(system):
                return role
        return "assistant"

    def __call__(self, req: Request) -> str:
        import re

        role = self.role_of(req)
        n = self.calls[role] = self.calls.get(role, 0) + 1
        if self.stateless:
            import hashlib

            n = 1 + int(hashlib.sha1(json.dumps(req.body, sort_keys=True).encode()).hexdigest()[:6], 16) % 97
        if role == "extractor":
            ids = list(dict.fromkeys(re.findall(r'"id": "([^"]+)"', req.last_user)))
            return json.dumps({"iu_analysis": [
                {"id": i, "concept": "", "teaching_quality_reasoning": f"turn {n}",
                 "teaching_quality": "well_explained" if k < self.explain else "not_mentioned",
                 "user_attempt_reasoning": "", "user_attempt_type": "reasoning" if k == 0 else "none",
                 "assistant_response_role": "not_applicable"} for k, i in enumerate(ids)]})
        if role == "user":
            return json.dumps({"thought": "I am lost", "message": f"I don't really get step {n}, can you explain?",
                               "attempt_verify": n > 1, "terminate": False})
        if role == "graph_extractor":
            return json.dumps(self.graph or chain_graph(10))
        if role == "judge":
            return json.dumps({"rationale": "Clear, well paced explanations.", "score": self.score})
        return f"Explanation number {n}: one idea at a time."


class FirstWave:
    """Replies as KnowSim's roles; the first ``n`` requests wait until ``n`` are in flight together
    (a concurrency test then asserts on a count the server saw, not on a clock)."""

    def __init__(self, n: int, inner=None):
        self.n, self.inner = n, inner or KnowSimReplies()
        self.barrier = threading.Barrier(n, timeout=30)
        self.seen = 0
        self.lock = threading.Lock()

    def __call__(self, req):
        with self.lock:
            self.seen += 1
            first = self.seen <= self.n
        if first:
            self.barrier.wait()  # BrokenBarrierError (the connection drops, runs fail) if n never meet
        with self.lock:
            return self.inner(req)


def chain_graph(n: int, *, cycle: bool = False) -> dict:
    """A valid n-IU chain in the LLM output format (levels 0.9 → 0.0 in small steps)."""
    nodes = [{"id": f"IU{i}", "concept": f"Concept {i}", "abstraction_level": round(0.9 - 0.9 * (i - 1) / (n - 1), 3),
              "description": f"What concept {i} means here. It builds on the previous one."} for i in range(1, n + 1)]
    edges = [{"prerequisite": f"IU{i}", "dependent": f"IU{i + 1}", "reason": "needed"} for i in range(1, n)]
    if cycle:
        edges.append({"prerequisite": "IU3", "dependent": "IU2", "reason": "loops back"})
    return {"knowledge_areas": ["Area A", "Area B"], "nodes": nodes, "edges": edges}
