"""A stand-in model server in a process of its own, to be killed: ``python -m tests.fakes.stand_in``.

:class:`~tests.fakes.llm_server.FakeLLMServer` playing every KnowSim role (``KnowSimReplies``) with a
fixed ``--latency`` per call, on a free port of 127.0.0.1. It prints its URL, then appends
one line per reply it is about to send to ``--log`` — the role and ``time.monotonic()`` (one clock for
every process of the machine), written through at once, so the count survives a SIGKILL. Used by the router tests and ``benchmarks/router.py``: several of them behind one router,
one killed mid-batch.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_server import FakeLLMServer, KnowSimReplies, Request  # noqa: E402


class Logged:
    """``KnowSimReplies``, noting each reply in a file (one line: the role and the time) as it is made."""

    def __init__(self, log: Path):
        self.inner, self.lock = KnowSimReplies(stateless=True), threading.Lock()
        self.fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, req: Request) -> str:
        with self.lock:
            out = self.inner(req)
            os.write(self.fd, f"{self.inner.role_of(req)} {time.monotonic():.6f}\n".encode())
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ttl", type=float, default=900.0, help="end by itself after this many seconds")
    args = ap.parse_args()
    srv = FakeLLMServer(reply=Logged(Path(args.log)), latency=args.latency).start()
    print(srv.url, flush=True)
    time.sleep(args.ttl)  # bounded: a stand-in a test forgot ends by itself
    srv.stop()


if __name__ == "__main__":
    main()
