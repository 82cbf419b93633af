"""``--help`` start-up: wall time of ``python -m knowsim_core --help`` and of ``<command> --help``
for every command. A command that imports storage, the models' settings and evaluation just to
print its options takes 3-7 s on a busy machine; these figures show whether one does.

``--against DIR`` times another checkout (e.g. the commit before: ``git archive REV | tar -x -C DIR``)
alternately with this one, so both see the same load; the load average is logged beside them.

Usage: ``python benchmarks/help.py [--repeat 3] [--against DIR]``; writes ``benchmarks/logs/help.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.commands import COMMANDS  # noqa: E402


def _wall(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout timed alternately with this one")
    args = ap.parse_args()
    load = os.getloadavg()
    figures: dict[str, dict[str, float]] = {}
    for name in ["(top level)", *sorted(c.name for c in COMMANDS)]:
        argv = [sys.executable, "-m", "knowsim_core", *([] if name == "(top level)" else [name]), "--help"]
        ours, other = [], []
        for _ in range(args.repeat):  # alternately, so both see the same machine
            ours.append(_wall(argv, ROOT))
            if args.against:
                other.append(_wall(argv, args.against.resolve()))
        figures[name] = {"this_s": round(statistics.median(ours), 3),
                         **({"against_s": round(statistics.median(other), 3)} if other else {})}
    out = {"help_s": figures, "load_average_before": [round(x, 2) for x in load], "repeat": args.repeat}
    print(json.dumps(out, indent=1))
    write_log("help", out, seeds=None, split=f"median of {args.repeat} alternate runs per command",
              extra={"against": str(args.against) if args.against else None})


if __name__ == "__main__":
    main()
