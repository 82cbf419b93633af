"""HTTP proxies from the environment: the rule (:func:`proxy_for`) and real calls through a proxy.

The clients are built with our own transport, and an HTTP client given a transport reads no proxy
variables: behind a corporate proxy every provider was unreachable. The end-to-end tests put a
real forward proxy (:class:`ForwardProxy`, on 127.0.0.1) in front of the fake provider
(tests/fakes/llm_server.py); nothing is patched. Loopback is never proxied, so the clients are
given the provider under a name only the proxy resolves (``provider.test``, the proxy's own host
table), as a proxy resolves the hosts it is asked for: a request that did not go through the proxy
cannot reach the provider at all. Only the NO_PROXY test needs the provider reachable directly, on
a non-loopback address of this machine (:func:`own_address`). The environment is passed to
``ChatModel(env=...)``: the process's own proxy variables play no part.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from knowsim_core.errors import ConfigError
from knowsim_core.llm import ChatModel, LLMSettings, ModelRef, ProviderCallError, as_messages
from knowsim_core.llm.proxy import Proxy, bypassed, is_loopback, proxy_for
from knowsim_core.llm.settings import provider_status
from tests.fakes.llm_server import FakeLLMServer
from tests.test_llm_core import settings_for

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-Pa55word"
PROVIDER_NAME = "provider.test"  # RFC 6761: never a real host; only ForwardProxy.hosts resolves it
TRICKLE_FOR_S = 10.0  # how long a trickling proxy keeps its answer going (far past the tests' 1 s deadline)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade", "content-length"})


# ---------------------------------------------------------------------- the rule
HTTPS_TARGET = "https://api.example.com/v1"
HTTP_TARGET = "http://models.example.com:8000/v1"


@pytest.mark.parametrize("target, env, expected", [
    # scheme-specific variables
    (HTTPS_TARGET, {"HTTPS_PROXY": "http://p.corp:3128"}, ("http://p.corp:3128", "HTTPS_PROXY")),
    (HTTP_TARGET, {"HTTP_PROXY": "http://p.corp:3128"}, ("http://p.corp:3128", "HTTP_PROXY")),
    (HTTP_TARGET, {"HTTPS_PROXY": "http://p.corp:3128"}, None),
    (HTTPS_TARGET, {"HTTP_PROXY": "http://p.corp:3128"}, None),
    (HTTPS_TARGET, {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"},
     ("http://lower:1", "https_proxy")),
    (HTTPS_TARGET, {"https_proxy": "", "HTTPS_PROXY": "http://upper:2"}, ("http://upper:2", "HTTPS_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "  "}, None),
    # ALL_PROXY only when no scheme-specific one is set
    (HTTPS_TARGET, {"ALL_PROXY": "http://all:1"}, ("http://all:1", "ALL_PROXY")),
    (HTTP_TARGET, {"all_proxy": "http://all:1", "ALL_PROXY": "http://ALL:2"}, ("http://all:1", "all_proxy")),
    (HTTPS_TARGET, {"ALL_PROXY": "http://all:1", "HTTPS_PROXY": "http://https:2"}, ("http://https:2", "HTTPS_PROXY")),
    # a scheme-less proxy is http://; an https:// proxy is kept
    (HTTPS_TARGET, {"HTTPS_PROXY": "proxy.corp:3128"}, ("http://proxy.corp:3128", "HTTPS_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "https://proxy.corp"}, ("https://proxy.corp", "HTTPS_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "HTTP://Proxy.Corp:3128/"}, ("http://proxy.corp:3128", "HTTPS_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "http://[fd00::9]:3128"}, ("http://[fd00::9]:3128", "HTTPS_PROXY")),
    # NO_PROXY
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "*"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "other.org, api.example.com"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "example.com"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": ".example.com"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "*.example.com"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "API.Example.COM."}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "le.com,pi.example.com"}, ("http://p:1", "HTTPS_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "no_proxy": "other.org", "NO_PROXY": "example.com"},
     ("http://p:1", "HTTPS_PROXY")),  # the lower-case NO_PROXY wins too
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "example.com:443"}, None),  # the default port
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "example.com:8443"}, ("http://p:1", "HTTPS_PROXY")),
    (HTTP_TARGET, {"HTTP_PROXY": "p:1", "NO_PROXY": "models.example.com:8000"}, None),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "example.com:x,[oops, ,"}, ("http://p:1", "HTTPS_PROXY")),
    ("http://10.1.2.3:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "10.0.0.0/8"}, None),
    ("http://10.1.2.3:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "10.1.2.3"}, None),
    ("http://10.1.2.3:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "10.0.0.0/8:8000"}, None),
    ("http://10.1.2.3:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "10.0.0.0/8:9000"}, ("http://p:1", "HTTP_PROXY")),
    ("http://11.1.2.3:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "10.0.0.0/8"}, ("http://p:1", "HTTP_PROXY")),
    (HTTPS_TARGET, {"HTTPS_PROXY": "p:1", "NO_PROXY": "0.0.0.0/0"},
     ("http://p:1", "HTTPS_PROXY")),  # a CIDR block names addresses: host names are not resolved
    ("http://[fd00::2]:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "fd00::/8"}, None),
    ("http://[fd00::2]:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "fd00::2"}, None),
    ("http://[fd00::2]:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "[fd00::2]:8000"}, None),
    ("http://[fd00::2]:8000/v1", {"HTTP_PROXY": "p:1", "NO_PROXY": "[fd00::2]:9000"}, ("http://p:1", "HTTP_PROXY")),
    # loopback is never proxied, with no NO_PROXY at all
    ("http://127.0.0.1:8080/v1", {"HTTP_PROXY": "p:1", "ALL_PROXY": "p:1"}, None),
    ("http://127.9.9.9:8080/v1", {"HTTP_PROXY": "p:1"}, None),
    ("http://localhost:11434/v1", {"HTTP_PROXY": "p:1"}, None),
    ("https://LOCALHOST./v1", {"HTTPS_PROXY": "p:1"}, None),
    ("http://llm.localhost:8080/v1", {"HTTP_PROXY": "p:1"}, None),
    ("http://[::1]:8080/v1", {"HTTP_PROXY": "p:1"}, None),
    ("http://[::ffff:127.0.0.1]:8080/v1", {"HTTP_PROXY": "p:1"}, None),
    ("http://0.0.0.0:8080/v1", {"HTTP_PROXY": "p:1"}, None),
    ("http://localhost.example.com/v1", {"HTTP_PROXY": "p:1"}, ("http://p:1", "HTTP_PROXY")),
    ("http://128.0.0.1/v1", {"HTTP_PROXY": "p:1"}, ("http://p:1", "HTTP_PROXY")),
])
def test_proxy_for_picks_the_proxy_by_the_usual_conventions(target, env, expected):
    found = proxy_for(target, env)
    assert (found and (found.url, found.variable)) == expected


def test_credentials_leave_the_url_for_auth_and_never_show():
    found = proxy_for(HTTPS_TARGET, {"HTTPS_PROXY": f"http://ali%20ce:{PASSWORD}%40x%3A@proxy.corp:3128"})
    assert found == Proxy("http://proxy.corp:3128", "HTTPS_PROXY", auth=("ali ce", f"{PASSWORD}@x:"))
    basic = base64.b64encode(f"ali ce:{PASSWORD}@x:".encode()).decode()
    assert set(found.secrets) == {f"{PASSWORD}@x:", basic}
    assert PASSWORD not in repr(found) and PASSWORD not in found.label
    assert proxy_for(HTTPS_TARGET, {"HTTPS_PROXY": "user:@p:1"}).auth == ("user", "")  # scheme-less, with a user


@pytest.mark.parametrize("value", [f"socks5://bob:{PASSWORD}@socks.corp:1080", f"socks5h://bob:{PASSWORD}@s:1"])
def test_a_socks_proxy_is_refused_naming_the_variable_and_the_fix(value):
    with pytest.raises(ConfigError) as err:
        proxy_for(HTTPS_TARGET, {"ALL_PROXY": value})
    msg = str(err.value)
    assert msg.startswith("ALL_PROXY=") and "http:// proxy" in msg and "add api.example.com to NO_PROXY" in msg
    assert PASSWORD not in msg and "\n" not in msg
    # refused only when it would be used: a host it does not apply to is fine
    assert proxy_for(HTTPS_TARGET, {"ALL_PROXY": value, "NO_PROXY": "example.com"}) is None
    assert proxy_for("http://127.0.0.1:8080/v1", {"ALL_PROXY": value}) is None


@pytest.mark.parametrize("value, why", [
    ("http://", "no host"), ("://p:1", "no scheme"), ("http://[fd00::1", "cannot be read"),
    (f"http://u:{PASSWORD}@p:port", "cannot be read"),
    (f"http://u:{PASSWORD[:6]}/{PASSWORD[6:]}@p:1", "cannot be read"),  # an unencoded "/": misread, still masked
    # a bare "@" before the "/": the parser finds a host, a piece of the password (issue 49, item 1)
    (f"http://u:{PASSWORD[:3]}@{PASSWORD[3:]}/1@p:1", "ends the host early"),
    (f"u:{PASSWORD[:3]}@{PASSWORD[3:]}#x@p:1", "ends the host early"),  # scheme-less, a bare "#"
    ("http://u:8080/x@p:1", "ends the host early"),  # read as the host "u" on port 8080
])
def test_an_unreadable_proxy_url_is_one_line(value, why):
    with pytest.raises(ConfigError, match="HTTPS_PROXY=") as err:
        proxy_for(HTTPS_TARGET, {"HTTPS_PROXY": value})
    assert why in str(err.value) and PASSWORD not in str(err.value)


def test_loopback_and_no_proxy_helpers():
    assert all(is_loopback(h) for h in ("localhost", "a.b.localhost", "127.0.0.1", "::1", "0.0.0.0", "::"))
    assert not any(is_loopback(h) for h in ("localhost.example.com", "10.0.0.1", "fd00::1", "mylocalhost"))
    assert bypassed("api.example.com", 443, " , example.com ") and not bypassed("api.example.com", 443, "")


def test_a_model_behind_a_socks_proxy_fails_when_it_is_set_up():
    """As a malformed base URL: one line when the model is built, not an error at its first call."""
    settings = LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": "http://models.example.com:8000/v1"})
    with pytest.raises(ConfigError, match="HTTP_PROXY="):
        ChatModel(ModelRef.parse("compat", "m"), settings=settings, env={"HTTP_PROXY": "socks5://s:1080"})


# ---------------------------------------------------------------------- a real forward proxy
@dataclass
class Seen:
    method: str
    target: str  # the request target as sent to the proxy: absolute-form, or host:port for CONNECT
    headers: dict[str, str]


@dataclass
class ForwardProxy:
    """A forward HTTP proxy on 127.0.0.1: records each request and forwards it with ``http.client``.

    ``require``: the ``Proxy-Authorization`` it wants (else it answers 407). ``connect_status``: how
    it answers a CONNECT (it opens no tunnel); ``trickle``: seconds between the bytes of a CONNECT
    answer that never ends (each read beats any per-read timeout: only a whole-request deadline ends it)."""

    require: str | None = None
    connect_status: int = 403
    trickle: float = 0.0
    hosts: dict[str, str] = field(default_factory=lambda: {PROVIDER_NAME: "127.0.0.1"})  # its own host table
    seen: list[Seen] = field(default_factory=list)

    def __enter__(self) -> "ForwardProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                proxy._forward(self)

            def do_CONNECT(self) -> None:  # noqa: N802
                proxy._connect(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _record(self, h: BaseHTTPRequestHandler) -> None:
        self.seen.append(Seen(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))

    def _forward(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("content-length") or 0))
        self._record(h)
        if self.require is not None and h.headers.get("proxy-authorization") != self.require:
            return self._answer(h, 407, b"proxy authentication required", {"Proxy-Authenticate": 'Basic realm="t"'})
        target = urlsplit(h.path)
        assert target.scheme == "http", f"not an absolute-form target: {h.path}"
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP_BY_HOP}
        conn = http.client.HTTPConnection(self.hosts.get(target.hostname, target.hostname), target.port, timeout=10)
        try:
            conn.request(h.command, target.path + (f"?{target.query}" if target.query else ""), body, headers)
            reply = conn.getresponse()
            self._answer(h, reply.status, reply.read(),
                         {k: v for k, v in reply.getheaders() if k.lower() not in HOP_BY_HOP})
        finally:
            conn.close()

    def _connect(self, h: BaseHTTPRequestHandler) -> None:
        self._record(h)
        h.close_connection = True
        if self.trickle:
            head = b"HTTP/1.1 200 Connection established\r\nX-Pad: "
            try:
                for i in range(int(TRICKLE_FOR_S / self.trickle)):  # then it closes: a test fails, it does not hang
                    h.wfile.write(head[i:i + 1] if i < len(head) else b"a")
                    h.wfile.flush()
                    if self._stop.wait(self.trickle):
                        return
            except (BrokenPipeError, ConnectionResetError):  # the client gave up: what the test wants
                return
        self._answer(h, self.connect_status, b"", {})

    @staticmethod
    def _answer(h: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str]) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)


def own_address() -> str | None:
    """An IPv4 address of this machine that is not loopback: the source address the kernel picks for
    a route out (connecting a UDP socket sends nothing), or None when it has no such route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only looked up in the routing table
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if is_loopback(address) else address


@pytest.fixture()
def provider():
    """The fake provider, named ``provider.test`` in its URLs: reachable through the proxy only."""
    srv = FakeLLMServer(name=PROVIDER_NAME).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def direct_provider():
    """The fake provider on a non-loopback address of this machine: reachable without the proxy."""
    address = own_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address: nothing to reach directly but loopback, "
                    "which is never proxied (the NO_PROXY rules are covered by the table above)")
    srv = FakeLLMServer(host=address).start()
    try:
        yield srv
    finally:
        srv.stop()


def chat(srv: FakeLLMServer, provider_name: str, env: dict[str, str], **settings_env: str) -> str:
    """One call through the public path (``ChatModel.complete``), the model's env as given."""
    m = ChatModel(ModelRef.parse(provider_name, "m1"), settings=settings_for(srv, **settings_env), env=env)
    return m.complete(as_messages("be brief", user="hello through the proxy")).text


def failed_call(base_url: str, env: dict[str, str], **settings_env: str) -> ProviderCallError:
    """The one-line error of one compat call to ``base_url`` (not retried unless ``settings_env`` says)."""
    settings = LLMSettings.from_sources(env={"KNOWSIM_LLM_MAX_RETRIES": "0", **settings_env})
    m = ChatModel(ModelRef.parse("compat", f"m@{base_url}"), settings=settings, env=env)
    with pytest.raises(ProviderCallError) as err:
        m.complete(as_messages("s", user="q"))
    assert "\n" not in str(err.value)
    return err.value


@pytest.mark.parametrize("provider_name, path", [
    ("compat", "/v1/chat/completions"), ("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages")])
def test_a_chat_call_goes_through_the_proxy(provider, provider_name, path):
    with ForwardProxy() as proxy:
        text = chat(provider, provider_name, {"HTTP_PROXY": proxy.url})
    assert text == "hello through the proxy"
    assert [(s.method, s.target) for s in proxy.seen] == [("POST", f"{provider.url}{path}")]
    assert len(provider.requests) == 1 and provider.requests[0].last_user == "hello through the proxy"


def test_a_host_in_no_proxy_is_reached_directly(direct_provider):
    address = urlsplit(direct_provider.url).hostname
    with ForwardProxy() as proxy:
        assert chat(direct_provider, "compat", {"HTTP_PROXY": proxy.url, "NO_PROXY": f"example.org,{address}"})
    assert proxy.seen == [] and len(direct_provider.requests) == 1


def test_a_host_named_in_no_proxy_is_not_sent_to_the_proxy(provider):
    """Without a direct route to it (``provider.test`` resolves nowhere but in the proxy) the call
    fails — as a direct call, with the direct call's advice, and the proxy never asked."""
    with ForwardProxy() as proxy:
        with pytest.raises(ProviderCallError) as err:
            chat(provider, "compat", {"HTTP_PROXY": proxy.url, "NO_PROXY": PROVIDER_NAME},
                 KNOWSIM_LLM_MAX_RETRIES="0")
    assert proxy.seen == [] and provider.requests == []
    assert "through the proxy" not in str(err.value) and "check that the server is running" in str(err.value)


def test_proxy_credentials_go_as_proxy_authorization(provider):
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}@x".encode()).decode()
    with ForwardProxy(require=basic) as proxy:
        env = {"HTTP_PROXY": proxy.url.replace("http://", f"http://alice:{PASSWORD}%40x@")}
        assert chat(provider, "compat", env) == "hello through the proxy"
    assert [s.headers.get("proxy-authorization") for s in proxy.seen] == [basic]


def test_a_proxy_asking_for_credentials_says_so_once(provider):
    with ForwardProxy(require="Basic nothing-we-send") as proxy:
        with pytest.raises(ProviderCallError) as err:
            chat(provider, "compat", {"HTTP_PROXY": proxy.url})
    msg = str(err.value)
    assert f"the proxy {proxy.url} (HTTP_PROXY) asks for credentials" in msg and "407" in msg and "\n" not in msg
    assert len(proxy.seen) == 1 and provider.requests == []  # a 407 is not retried


def test_a_proxy_not_listening_is_named_with_its_variable_and_no_password(provider):
    """The provider itself is up: only a client that really goes through the proxy fails."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    err = failed_call(provider.openai_url, {"HTTP_PROXY": f"http://bob:{PASSWORD}@127.0.0.1:{port}"})
    assert err.reason == "connection" and provider.requests == []
    assert (f"cannot connect to {provider.openai_url} through the proxy http://127.0.0.1:{port} (HTTP_PROXY)"
            in str(err)) and "add the host to NO_PROXY" in str(err)
    assert PASSWORD not in str(err) and "bob" not in str(err)


def test_a_refused_tunnel_is_one_line_and_not_retried():
    """An https target goes through a CONNECT; the proxy's 407 to it is the HTTP stack's ProxyError,
    which the SDK calls a connection error."""
    with ForwardProxy(connect_status=407) as proxy:
        err = failed_call("https://api.example.com/v1", {"HTTPS_PROXY": proxy.url}, KNOWSIM_LLM_MAX_RETRIES="2")
    assert f"the proxy {proxy.url} (HTTPS_PROXY) refused a tunnel to https://api.example.com/v1" in str(err)
    assert "407" in str(err) and "not retried: the proxy would refuse it again" in str(err)
    assert [(s.method, s.target) for s in proxy.seen] == [("CONNECT", "api.example.com:443")]


def test_the_deadline_bounds_a_proxy_that_trickles_its_answer():
    """The proxy connection and its CONNECT run on the deadline-enforcing network backend too: a
    byte every 0.2 s beats the 1 s read timeout forever, the whole-request deadline ends it."""
    with ForwardProxy(trickle=0.2) as proxy:
        started = time.monotonic()
        err = failed_call("https://api.example.com/v1", {"HTTPS_PROXY": proxy.url}, KNOWSIM_LLM_TIMEOUT="1")
        elapsed = time.monotonic() - started
    assert err.reason == "timeout" and elapsed < 5
    assert f"through the proxy {proxy.url} (HTTPS_PROXY)" in str(err)


# ---------------------------------------------------------------------- urllib's own requests
def test_the_tokenizer_count_goes_as_the_clients_go(provider):
    """``count_tokens`` asks llama-cpp-python's tokenizer with urllib, which reads the proxy
    variables itself: routed by the same rule as the model's calls — through the proxy for
    ``provider.test`` (the only way to reach it), never for loopback."""
    provider.tokenizer = True
    with ForwardProxy() as proxy:
        m = ChatModel(ModelRef.parse("compat", f"m@{provider.openai_url}"), settings=settings_for(provider),
                      env={"HTTP_PROXY": proxy.url})
        assert m.count_tokens([{"role": "user", "content": "a few words"}])[1] is True
    assert [(s.method, s.target) for s in proxy.seen] == [("POST", f"{provider.url}/extras/tokenize/count")]
    local = FakeLLMServer(tokenizer=True).start()
    try:
        with ForwardProxy() as proxy:
            m = ChatModel(ModelRef.parse("compat", f"m@{local.openai_url}"), settings=settings_for(local),
                          env={"HTTP_PROXY": proxy.url, "ALL_PROXY": proxy.url})
            assert m.count_tokens([{"role": "user", "content": "a few words"}])[1] is True
        assert proxy.seen == [] and local.token_counts
    finally:
        local.stop()


def test_the_local_servers_readiness_probe_never_goes_to_a_proxy():
    """``make local-model`` waits for its server on 127.0.0.1 to answer; in a shell exporting a
    proxy and no NO_PROXY, urllib's default opener sent that probe to the proxy, and the launcher
    gave up on a server that was up. A fresh process: urllib builds its default opener once, from
    the environment of its first request."""
    local = FakeLLMServer().start()
    try:
        with ForwardProxy() as proxy:
            env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "all_proxy")}
            env.update(HTTP_PROXY=proxy.url, http_proxy=proxy.url, ALL_PROXY=proxy.url)
            code = ("import sys; from knowsim_core.llm import local_server; "
                    f"sys.exit(0 if local_server._answers({local.openai_url!r}) else 3)")
            done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=60)
        assert done.returncode == 0, done.stderr
        assert proxy.seen == []
    finally:
        local.stop()


# ---------------------------------------------------------------------- the sidebar's status lines
def test_the_provider_status_says_which_proxy_a_provider_is_reached_through():
    settings = LLMSettings.from_sources(env={"OPENAI_API_KEY": "sk-" + "k" * 20, "ANTHROPIC_API_KEY": "a" * 24,
                                             "KNOWSIM_COMPAT_BASE_URL": "http://localhost:11434/v1"})
    env = {"HTTPS_PROXY": f"http://carol:{PASSWORD}@proxy.corp:3128", "NO_PROXY": "api.anthropic.com"}
    status = {p.name: p for p in provider_status(settings, env=env)}
    assert status["openai"].available and status["openai"].detail.endswith(
        "; through the proxy http://proxy.corp:3128 (HTTPS_PROXY)")
    assert status["anthropic"].available and "proxy" not in status["anthropic"].detail  # in NO_PROXY
    assert status["compat"].available and "proxy" not in status["compat"].detail  # loopback
    assert not any(PASSWORD in p.detail or "carol" in p.detail for p in status.values())
    socks = {p.name: p for p in provider_status(settings, env={"ALL_PROXY": "socks5://proxy.corp:1080"})}
    assert not socks["openai"].available and "ALL_PROXY" in socks["openai"].detail
    assert socks["compat"].available  # loopback: the socks proxy is never asked


def test_the_test_session_keeps_loopback_off_a_proxy():
    from tests.conftest import _loopback_not_proxied

    env = {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "corp.example"}
    _loopback_not_proxied(env)
    assert env["NO_PROXY"] == "corp.example,127.0.0.1,localhost,::1" and env["no_proxy"] == "127.0.0.1,localhost,::1"
    untouched = {"NO_PROXY": "x"}
    _loopback_not_proxied(untouched)
    assert untouched == {"NO_PROXY": "x"}  # no proxy set: nothing to keep loopback off


# ---------------------------------------------------------------------- issue 49: URLs that cannot be read cleanly
class Lookups:
    """Every host name this process asks the resolver for, while it is on: ``socket.getaddrinfo``
    wrapped to note its host and answer as before (the SDKs' HTTP stack connects through it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.hosts: list[str] = []
        real = socket.getaddrinfo

        def noted(host: Any, *args: Any, **kwargs: Any) -> Any:
            self.hosts.append(host.decode() if isinstance(host, bytes) else str(host))
            return real(host, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", noted)


def cli(*argv: str) -> tuple[int, str, str]:
    """The command line in this process (its output captured): (exit code, stdout, stderr)."""
    import contextlib
    import io

    from knowsim_core.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("password, fragments", [
    ("p@ssw0rdLongSecret/1", ("ssw0rd", "longsecret", "p@ss")),  # the parser took "ssw0rdLongSecret" as the host
    ("Pa@ss/w#rd", ("w#rd", "pa@", "http://ss")),  # ... and here "ss"
])
def test_a_proxy_password_the_parser_misreads_is_never_shown_stored_or_looked_up(
        provider, db_path, monkeypatch, password, fragments):
    """Issue 49, item 1: the run command behind ``HTTP_PROXY=http://bob:<password>@127.0.0.1:PORT``
    (a real forward proxy) with a bare ``@`` and ``/`` in the password. Old code read a piece of the
    password as the proxy's host: the error said "through the proxy http://ssw0rdlongsecret", the
    failed run stored it, and the resolver was asked for it. Now the value is refused in one line,
    masked up to its last ``@``, before anything connects; percent-encoded, the same password works."""
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    run = ["run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant",
           f"compat/m1@{provider.openai_url}", "--max-turns", "1", "--db", str(db_path)]
    with ForwardProxy() as proxy:
        port = proxy.url.rsplit(":", 1)[1]
        monkeypatch.setenv("HTTP_PROXY", f"http://bob:{password}@127.0.0.1:{port}")
        lookups = Lookups(monkeypatch)
        code, out, err = cli(*run)
        monkeypatch.undo()  # the resolver as it was, before the database is read back
        assert code == 2 and err.count("\n") == 1, err
        assert f"HTTP_PROXY='http://***@127.0.0.1:{port}' is not a proxy URL" in err
        assert "percent-encoded" in err or "%40" in err
        listed = cli("runs", "--json", "--db", str(db_path))[1]
        stored = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*")).lower()
        for fragment in fragments:
            assert fragment not in err.lower() and fragment not in listed.lower()
            assert fragment.encode() not in stored
        assert not [h for h in lookups.hosts if h.lower() in password.lower() and h != "127.0.0.1"], lookups.hosts
        assert proxy.seen == [] and provider.requests == []

        # the fix the message gives: the same password percent-encoded goes through this proxy
        encoded = password.replace("%", "%25").replace("@", "%40").replace("/", "%2F").replace("#", "%23")
        monkeypatch.setenv("HTTP_PROXY", f"http://bob:{encoded}@127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        code, out, err = cli(*run)
    assert code == 0, err
    basic = "Basic " + base64.b64encode(f"bob:{password}".encode()).decode()
    assert proxy.seen and {s.headers.get("proxy-authorization") for s in proxy.seen} == {basic}


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.0.1"])
def test_shorthand_loopback_is_never_proxied(host):
    """Issue 49, item 6: ``http://127.1:PORT`` connects to 127.0.0.1 (the resolver reads the
    shorthand forms inet_aton takes), so it is loopback; old code sent it to the proxy."""
    assert proxy_for(f"http://{host}:8080/v1", {"HTTP_PROXY": "p:1", "ALL_PROXY": "p:1"}) is None
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["128.1", "12345678901", "0x80.1", "127.0.0.1.5", "1o.1"])
def test_numbers_that_are_not_loopback_still_go_to_the_proxy(host):
    assert proxy_for(f"http://{host}:8080/v1", {"HTTP_PROXY": "p:1"}) == Proxy("http://p:1", "HTTP_PROXY")


@pytest.mark.parametrize("shorthand", ["127.1", "2130706433"])
def test_a_call_to_shorthand_loopback_goes_direct_with_a_proxy_exported(shorthand):
    """End to end: a proxy exported and no NO_PROXY, the provider on 127.0.0.1 named in shorthand."""
    local = FakeLLMServer().start()
    try:
        url = local.openai_url.replace("127.0.0.1", shorthand)
        with ForwardProxy() as proxy:
            m = ChatModel(ModelRef.parse("compat", f"m1@{url}"), settings=settings_for(local),
                          env={"HTTP_PROXY": proxy.url, "ALL_PROXY": proxy.url})
            assert m.complete(as_messages("s", user="straight to loopback")).text == "straight to loopback"
        assert proxy.seen == [] and len(local.requests) == 1
    finally:
        local.stop()


@pytest.mark.parametrize("where", ["env", "id"])
def test_a_base_url_password_the_parser_misreads_is_never_shown_stored_or_looked_up(db_path, monkeypatch, where):
    """The same misreading in a compatible server's base URL (``KNOWSIM_COMPAT_BASE_URL`` or the id's
    ``@URL``): old code connected to the host ``ssw0rdlongsecret`` and the error, stored with the
    failed run, quoted ``http://***@ssw0rdLongSecret/1@127.0.0.1:…``. Now one line, before a run."""
    local = FakeLLMServer().start()
    try:
        url = local.openai_url.replace("http://", "http://bob:p@ssw0rdLongSecret/1@")
        assistant = "compat/m1" if where == "env" else f"compat/m1@{url}"
        if where == "env":
            monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", url)
        lookups = Lookups(monkeypatch)
        code, _, err = cli("run", "--question", "sample_lava_lamps", "--level", "novice", "--assistant", assistant,
                           "--max-turns", "1", "--db", str(db_path))
        monkeypatch.undo()
        assert code == 2 and err.count("\n") == 1 and "is not a usable base URL" in err, err
        assert "ssw0rd" not in err.lower() and "http://***@127.0.0.1:" in err
        assert "ssw0rdlongsecret" not in {h.lower() for h in lookups.hosts} and local.requests == []
        listed = cli("runs", "--json", "--db", str(db_path))[1]
        stored = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*")).lower()
        assert "ssw0rd" not in listed.lower() and b"ssw0rd" not in stored
    finally:
        local.stop()


def test_the_status_line_masks_a_misread_base_url_up_to_its_last_at():
    """The sidebar's provider line quoted ``http://***@ssw0rdLongSecret/1@…`` (masked only to the first @)."""
    settings = LLMSettings.from_sources(env={
        "KNOWSIM_COMPAT_BASE_URL": "http://bob:p@ssw0rdLongSecret/1@127.0.0.1:18801/v1",
        "OPENAI_API_KEY": "sk-" + "k" * 20, "OPENAI_BASE_URL": "http://bob:p@ssw0rdLongSecret/1@10.0.0.1/v1"})
    status = {p.name: p.detail for p in provider_status(settings, env={})}
    assert "http://***@127.0.0.1:18801/v1" in status["compat"] and "http://***@10.0.0.1/v1" in status["openai"]
    assert not any("ssw0rd" in d.lower() for d in status.values())
