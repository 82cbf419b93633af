"""Command start-up: wall time of ``python -m knowsim_core runs`` on an existing database, and what
importing the storage layer costs (with ``-X importtime``, the interpreter's documented import timer).

Why it exists: sqlite-utils imports pandas whenever it is installed (Streamlit brings it) to
recognise DataFrame values, which the Studio never stores. The storage layer used to hide pandas
from that import with a ``sys.modules`` entry; it now imports sqlite-utils plainly, and this script
says what that costs every command (run it on the commit before and after to compare).

Usage: ``python benchmarks/startup.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wall(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _import_ms(module: str, *, hide_pandas: bool = False) -> float:
    """Cumulative import time (ms) of ``module``; ``hide_pandas`` measures the counterfactual the
    storage layer used to produce (here only, to state the cost; the product no longer does it)."""
    code = ("import sys; sys.modules['pandas'] = None; " if hide_pandas else "") + f"import {module}"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)$", line)
        if m and m.group(2) == module:
            return int(m.group(1)) / 1000
    raise RuntimeError(f"no import time for {module}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "studio.db")
        cmd = [sys.executable, "-m", "knowsim_core", "runs", "--db", db]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)  # create and seed the file once
        wall = _wall(cmd, args.repeat)
    bare = _wall([sys.executable, "-c", "pass"], args.repeat)
    with_pandas = statistics.median(_import_ms("knowsim_core.storage") for _ in range(args.repeat))
    without = statistics.median(_import_ms("knowsim_core.storage", hide_pandas=True) for _ in range(args.repeat))
    print(json.dumps({"runs_command_s": round(wall, 3), "python_alone_s": round(bare, 3),
                      "import_storage_ms": round(with_pandas, 1),
                      "import_storage_ms_if_pandas_were_absent": round(without, 1),
                      "repeat": args.repeat}, indent=1))


if __name__ == "__main__":
    main()
