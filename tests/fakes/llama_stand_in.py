"""A stand-in for ``python -m llama_cpp.server``, for the launcher (``knowsim_core.llm.local_server``)
without the model: run as ``<python> -m llama_cpp.server --model … --port P …`` through the shim
:func:`shim` writes (the launcher's ``python=`` argument), it listens on ``--port`` as the real server
would, so the launcher starts, checks, records and stops it like the real one.

It answers as :class:`~tests.fakes.llm_server.FakeLLMServer` playing every KnowSim role, with
``STAND_IN_LATENCY`` seconds per call; or, with ``STAND_IN_TARGET=host:port`` in its environment, it
passes every connection through to that address (a test's own in-process server, whose requests the
test then reads). It ends by itself after 10 minutes.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def shim(folder: Path) -> Path:
    """An executable that runs this module with the arguments it is given (the launcher's ``python``)."""
    path = folder / "fake-python"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} \"$@\"\n")
    path.chmod(0o755)
    return path


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(port: int, target: tuple[str, int]) -> None:
    listener = socket.create_server(("127.0.0.1", port))
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(target)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def main(args: list[str]) -> None:
    port = int(args[args.index("--port") + 1])
    timer = threading.Timer(600, lambda: os._exit(3))
    timer.daemon = True  # Ctrl-C (SIGINT) ends it at once, as the idle real server
    timer.start()
    target = os.environ.get("STAND_IN_TARGET")
    if target:
        host, _, tport = target.rpartition(":")
        relay(port, (host, int(tport)))
    sys.path.insert(0, str(ROOT))
    from tests.fakes.llm_server import FakeLLMServer, KnowSimReplies

    FakeLLMServer(reply=KnowSimReplies(stateless=True), latency=float(os.environ.get("STAND_IN_LATENCY", "0")),
                  port=port).start()
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
