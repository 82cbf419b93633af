"""Agreement speed: import the shared real conversations into a temporary database, then time
``python -m knowsim_core agreement --json`` end to end as a user runs it (a fresh process: imports,
opening the database, reading every run, the bootstrap intervals).

Usage: ``python benchmarks/agreement.py [ANNOTATIONS.json] [--repeat N]`` (default: ../shared/realworld/...).
Prints the wall time of each of N runs (goal: under 10 s offline for the 25 conversations) and
the CPU time the command used, since the wall time depends on what else the machine is doing.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"
GOAL_S = 10.0


def main() -> None:
    args = sys.argv[1:]
    repeat = 3
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i:i + 2]
    path = Path(args[0]) if args else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agreement.db"
        start = time.perf_counter()
        report = import_path(Store(db), path)
        print(f"import: {len(report.runs)} conversations, {report.judgments} judged turns in "
              f"{time.perf_counter() - start:.2f} s")
        walls = []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "knowsim_core", "agreement", "--db", str(db), "--json"],
                                 cwd=ROOT, capture_output=True, text=True, check=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            print(f"agreement --json: {walls[-1]:.2f} s wall, {cpu:.2f} s CPU")
        data = json.loads(out.stdout)
        v = data["votes"]
        print(f"{v['n']} judged turns, {data['conversations']['n']} conversations; "
              f"best of {repeat}: {min(walls):.2f} s (goal < {GOAL_S:.0f} s) — {'met' if min(walls) < GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    main()
