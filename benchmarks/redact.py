"""Redaction time on long model replies: the Studio's ``redact`` against the URL regex it replaced.

A reply of N letters with one credentialed URL in the middle, redacted with one configured key.
That pattern (``[A-Za-z][A-Za-z0-9+.\\-]*://…``, kept here only as the baseline) tries every
letter as the start of a scheme, so it is quadratic on a long run of letters; ``redact``
finds URLs from their ``://`` and is linear. The baseline is skipped above ``--old-max`` letters.

Usage: ``python benchmarks/redact.py [--sizes 10000,40000,1000000,8000000] [--old-max 80000]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.text.redact import redact  # noqa: E402

OLD_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")


def timed(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def cpu(fn, text: str) -> float:
    """CPU seconds of this process (not wall time: on a shared 2-core machine the wall time of a
    single-threaded pass mostly measures the other processes)."""
    start = time.process_time()
    fn(text)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,20000,40000,1000000,8000000")
    ap.add_argument("--old-max", type=int, default=80_000)
    args = ap.parse_args()
    seconds: dict[str, dict[str, float | None]] = {}
    for n in (int(s) for s in args.sizes.split(",")):
        half = "a" * (n // 2)
        text = f"{half} http://ana:pw1234@host/v1 {half}"
        new = timed(lambda t: redact(t, ["sk-abcdefghijklmnopqrstuv"]), text)
        old = timed(lambda t: OLD_URL.sub("", t), text) if n <= args.old_max else None
        print(f"{n:>10,} letters: redact {new:8.3f} s" + (f" · old URL regex alone {old:8.3f} s" if old is not None else ""))
        seconds[str(n)] = {"redact_s": new, "redact_cpu_s": cpu(lambda t: redact(t, ["sk-abcdefghijklmnopqrstuv"]), text),
                           "old_regex_s": old}
    write_log("redact", {"letters": seconds}, split="one synthetic reply per size (letters + one credentialed URL)",
              extra={"old_max": args.old_max})


if __name__ == "__main__":
    main()
