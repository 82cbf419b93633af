"""Realism pass speed and table: import the shared real conversations into a temporary database,
then time a full turn-level realism pass (offline/knowsim and both floor baselines).

Usage: ``python benchmarks/realism.py [ANNOTATIONS.json]`` (default: ../shared/realworld/...).
Prints the import time, the realism time (goal: under 30 s offline for all 25 conversations) and
the summary table overall and by level.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.commands.realism import table  # noqa: E402
from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.evaluation.realism import DEFAULT_USERS, METRICS, score  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "realism.db")
        start = time.perf_counter()
        report = import_path(store, path)
        imported = time.perf_counter() - start
        runs = [store.load_run(rid) for rid in report.runs]
    users = {uid: registry.resolve("user", uid) for uid in DEFAULT_USERS}
    start = time.perf_counter()
    result = score(runs, users)
    elapsed = time.perf_counter() - start
    print(f"import (reading {len(runs)} conversations): {imported:.2f} s")
    print(f"realism pass: {len(result['turns'])} real user turns x {len(users)} users in {elapsed:.2f} s (goal < 30 s)")
    print(table(result["summary"], METRICS))
    for level, by_user in result["by_level"].items():
        print(f"\n{level}\n{table(by_user, METRICS)}")
    print("\nanswer attempts (agreement / recall of the person's attempts):")
    for uid, a in result["attempts"].items():
        print(f"  {uid}: {a['agreement']} / {a['recall']} (n attempts {a['n_real_attempts']})")


if __name__ == "__main__":
    main()
