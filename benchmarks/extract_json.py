"""``extract_json`` on a hostile reply: ``"[" * 900 + "1," * N + "]"``.

Trying ``raw_decode`` at every ``{`` / ``[``, each try reading to the end of the text, is quadratic
(37 s at 401 KB, ~6 min at the 4 MiB reply cap). :func:`extract_json` tries at most ``MAX_STARTS``
brackets that have a closing bracket after them. The baseline (every bracket) is written here only
for comparison and skipped above ``--old-max`` characters.

Usage: ``python benchmarks/extract_json.py [--sizes 100000,400000,4000000] [--old-max 100000]``;
writes ``benchmarks/logs/extract_json.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.llm.jsontext import MAX_STARTS, extract_json  # noqa: E402


def every_bracket(text: str) -> None:
    """The quadratic search, as a baseline: ``raw_decode`` at every bracket."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                decoder.raw_decode(text, i)
                return
            except json.JSONDecodeError:
                continue


def timed(fn, text: str) -> float:
    start = time.perf_counter()
    try:
        fn(text)
    except ValueError:
        pass
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,400000,4000000")
    ap.add_argument("--old-max", type=int, default=100_000)
    args = ap.parse_args()
    figures = {}
    for n in (int(s) for s in args.sizes.split(",")):
        text = "[" * 900 + "1," * ((n - 901) // 2) + "]"
        new = timed(extract_json, text)
        old = timed(every_bracket, text) if n <= args.old_max else None
        figures[str(n)] = {"current_s": round(new, 3), "every_bracket_s": None if old is None else round(old, 3)}
        print(f"{len(text):>9,} chars: current {new:.3f} s" + ("" if old is None else f", every bracket {old:.3f} s"))
    write_log("extract_json", figures, split="synthetic hostile replies '[' * 900 + '1,' * N + ']'",
              extra={"max_starts": MAX_STARTS})


if __name__ == "__main__":
    main()
