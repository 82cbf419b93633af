"""The whole-request deadline leaves nothing behind (issue 35: "timed-out requests leak threads and
connections, 27 -> 119 threads, 100 sockets in 35 s against slow headers, after which a recovered
server is unreachable").

The server (in a child process, so that this process's threads and sockets are the client's alone)
trickles its status line and headers a byte every 0.5 s: ~35 s for a head, against a 2 s deadline
(room for a busy machine to answer the calls that should succeed).
Old behaviour these tests catch: ``providers.call`` ran each request in a thread and abandoned it at
the deadline; the thread went on reading the trickled head with its pooled connection, so every
timed-out call left a thread and a socket (counted here: both grew by one per call), and once the
pool's 100 connections were all held so, the next call to the recovered server waited for a free
connection and timed out too. Nothing here is timed: threads and sockets are counted.
"""

from __future__ import annotations

import os
import threading

import pytest

from knowsim_core.errors import ProviderError
from knowsim_core.llm import ChatModel, LLMSettings, ModelRef, ProviderCallError, as_messages
from tests.fakes.llm_server import server_process

SLOW_HEAD = {"trickle": 0.5, "trickle_head": True}
MSG = as_messages("s", user="recovered?")


def sockets() -> int:
    """Open sockets of this process (file descriptors that are sockets)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:  # closed between the listing and the look
            pass
    return count


def chat_model(provider: str, url: str, **env: str) -> ChatModel:
    base = {"OPENAI_API_KEY": "sk-test-000000000000000000", "OPENAI_BASE_URL": url + "/v1",
            "ANTHROPIC_API_KEY": "sk-ant-test-0000000000", "ANTHROPIC_BASE_URL": url,
            "KNOWSIM_LLM_TIMEOUT": "2", "KNOWSIM_LLM_MAX_RETRIES": "0", "KNOWSIM_LLM_CACHE": "0"}
    return ChatModel(ModelRef.parse(provider, "m1"), settings=LLMSettings.from_sources(env={**base, **env}))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_timed_out_requests_leave_no_thread_and_no_socket_and_the_recovered_server_answers(provider):
    with server_process({}, *[SLOW_HEAD] * 1000) as srv:
        m = chat_model(provider, srv.url)
        assert m.complete(MSG).text == "recovered?"  # warm: client built, a kept-alive connection
        threads, socks = threading.active_count(), sockets()
        for _ in range(4):
            with pytest.raises(ProviderCallError, match="no answer from .* within 2 s") as err:
                m.complete(MSG)
            assert err.value.reason == "timeout"
        assert threading.active_count() <= threads  # was one more per timed-out call
        assert sockets() <= socks  # was one more per timed-out call (each held its connection)
        srv.clear()
        assert m.complete(MSG).text == "recovered?"
        assert sockets() <= socks and threading.active_count() <= threads


def test_a_recovered_server_is_reached_after_more_timed_out_requests_than_the_pool_has_connections():
    """110 calls at once, all timed out, then one call after the server recovered. The old code's
    abandoned threads held the pool's 100 connections (the trickle outlives the test), so that call
    waited for a connection until its own deadline."""
    calls = 110
    with server_process(*[SLOW_HEAD] * 1000) as srv:
        m = chat_model("compat", srv.url, KNOWSIM_COMPAT_BASE_URL=srv.url + "/v1",
                       KNOWSIM_LLM_MAX_CONCURRENCY=str(calls))
        threads, socks = threading.active_count(), sockets()
        failures: list[BaseException] = []

        def one() -> None:
            try:
                m.complete(MSG)
            except ProviderError as exc:
                failures.append(exc)

        workers = [threading.Thread(target=one) for _ in range(calls)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)  # only stops a hang
        assert len(failures) == calls and all(getattr(f, "reason", "") == "timeout" for f in failures)
        assert threading.active_count() <= threads and sockets() <= socks
        srv.clear()
        assert m.complete(MSG).text == "recovered?"  # was: no answer within 2 s (the pool was full)


def test_httpcore_errors_become_the_httpx_errors_of_the_same_name():
    """What the SDKs catch: httpx2's TimeoutException (their timeout error) and its other transport
    errors (their connection error); errors.broken_answer reads the class names."""
    import httpcore2
    import httpx2

    from knowsim_core.llm.providers import _as_httpx_error

    for name in ("ConnectError", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "ReadError",
                 "WriteError", "RemoteProtocolError", "LocalProtocolError", "UnsupportedProtocol", "ProxyError"):
        mapped = _as_httpx_error(getattr(httpcore2, name)("boom"))
        assert type(mapped) is getattr(httpx2, name) and str(mapped) == "boom"
    assert isinstance(_as_httpx_error(httpcore2.ReadTimeout("t")), httpx2.TimeoutException)
    assert _as_httpx_error(ValueError("not an HTTP error")) is None
