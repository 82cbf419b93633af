"""Command start-up: wall time of ``python -m knowsim_core runs`` on an existing database, and what
importing the storage layer costs (with ``-X importtime``, the interpreter's documented import timer).

Why it exists: sqlite-utils imports pandas whenever it is installed (Streamlit brings it) to
recognise DataFrame values, which the Studio never stores; the repositories read and write with
their own SQL on sqlite3, so only creating or migrating a file imports sqlite-utils
(knowsim_core/storage/connection.py), and the command line imports only the chosen command
(knowsim_core/cli.py). ``--against DIR`` times another checkout's ``runs`` alternately with
this one's (e.g. the commit before: ``git archive REV | tar -x -C DIR``) and prints the ratio, which
a busy machine distorts far less than either time; the load average is printed beside them.

Usage: ``python benchmarks/startup.py [--repeat 7] [--against DIR]``; writes ``benchmarks/logs/startup.json``
(the printed figures; the README's "~2x faster than before" is ``ratio_against_over_this`` of a run with
``--against`` a checkout of the commit before).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import compile_bytecode, write_log  # noqa: E402


def _wall(argv: list[str], repeat: int, cwd: Path = ROOT) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _import_ms(module: str, *, hide_pandas: bool = False) -> float:
    """Cumulative import time (ms) of ``module``; ``hide_pandas`` measures it with pandas hidden (here
    only, to state what pandas costs; the product never hides it)."""
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
    ap.add_argument("--against", type=Path, help="another checkout whose `runs` is timed alternately with this one's")
    args = ap.parse_args()
    bytecode = compile_bytecode(ROOT, *([args.against.resolve()] if args.against else []))  # as set-up leaves them
    load = os.getloadavg()
    other: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        # each checkout reads a file it created and seeded itself: an older one refuses a newer schema
        cmd = [sys.executable, "-m", "knowsim_core", "runs", "--db", str(Path(tmp) / "studio.db")]
        cmd_against = [*cmd[:-1], str(Path(tmp) / "against.db")]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)  # create and seed the file once
        if args.against:
            subprocess.run(cmd_against, cwd=args.against.resolve(), capture_output=True, check=True)
        ours: list[float] = []
        for _ in range(args.repeat):  # alternately, so both see the same machine
            ours.append(_wall(cmd, 1))
            if args.against:
                other.append(_wall(cmd_against, 1, cwd=args.against.resolve()))
        wall = statistics.median(ours)
    bare = _wall([sys.executable, "-c", "pass"], args.repeat)
    with_pandas = statistics.median(_import_ms("knowsim_core.storage") for _ in range(args.repeat))
    without = statistics.median(_import_ms("knowsim_core.storage", hide_pandas=True) for _ in range(args.repeat))
    figures = {"runs_command_s": round(wall, 3), "python_alone_s": round(bare, 3),
               "import_storage_ms": round(with_pandas, 1),
               "import_storage_ms_if_pandas_were_absent": round(without, 1),
               **({"runs_command_s_against": round(statistics.median(other), 3),
                   "ratio_against_over_this": round(statistics.median(other) / wall, 2),
                   "ratios": sorted(round(o / w, 2) for o, w in zip(other, ours))} if other else {}),
               "load_average_before": [round(x, 2) for x in load],
               "repeat": args.repeat}
    print(json.dumps(figures, indent=1))
    write_log("startup", figures, seeds=None, split=f"median of {args.repeat} alternate runs",
              extra={"against": str(args.against) if args.against else None, "bytecode": bytecode})


if __name__ == "__main__":
    main()
