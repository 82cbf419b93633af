"""Realism table and speed: import the shared real conversations into a temporary database, then
time a full turn-level realism pass of offline/knowsim beside its floors.

Usage: ``python benchmarks/realism.py [--start file|sampled] [--profile] [ANNOTATIONS.json]``
(default file: ../shared/realworld/...). Prints the import time, the realism time (goal: under
30 s offline for all 25 conversations), and act agreement / ROUGE-L / length ratio overall, per
level and for both halves of the stated split (development = crc32 of ``problem_id:workerId``
even, where the offline learner's rules were written; held-out = odd), each with the floors
(baseline/copy-last, baseline/generic, floor/most-common-act). ``--profile`` also prints the
development half's word-count profile and whether it equals ``learner_voice.LENGTHS``, and per
half how many of the people's answers name a concept (``learner_voice.SHOWS_STEP``: development).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.agents.learner_voice import LENGTHS, SHOWS_STEP  # noqa: E402
from knowsim_core.commands.realism import START_NOTE, table  # noqa: E402
from knowsim_core.evaluation.realism import DEFAULT_USERS, SPLITS, length_profile, score, step_rates  # noqa: E402
from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"
SHOWN = ("act_agreement", "rouge_l", "length_ratio", "cosine", "iu_jaccard")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    ap.add_argument("--start", choices=("file", "sampled"), default="file")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "realism.db")
        start = time.perf_counter()
        report = import_path(store, args.path)
        imported = time.perf_counter() - start
        runs = [store.load_run(rid) for rid in report.runs]
    users = {uid: registry.resolve("user", uid) for uid in DEFAULT_USERS}
    start = time.perf_counter()
    result = score(runs, users, start=args.start)
    elapsed = time.perf_counter() - start
    print(f"import (reading {len(runs)} conversations): {imported:.2f} s")
    print(f"realism pass: {len(result['turns'])} real user turns x {len(users)} users in {elapsed:.2f} s (goal < 30 s)")
    print(START_NOTE[result["start"]])
    print(f"\nall {len(result['turns'])} turns\n{table(result['summary'], SHOWN)}")
    for level, by_user in result["by_level"].items():
        print(f"\n{level}\n{table(by_user, SHOWN)}")
    for part in SPLITS:
        note = "rules written here" if part == "development" else "never used to write rules"
        print(f"\n{part} half ({note})\n{table(result['by_split'][part], SHOWN)}")
        for level in sorted({t["level"] for t in result["turns"] if t["split"] == part}):
            sub = [t for t in result["turns"] if t["split"] == part and t["level"] == level]
            agree = sum(t["simulated"]["offline/knowsim"]["act"] == t["real_act"] for t in sub) / len(sub)
            print(f"  {level}: offline/knowsim act agreement {agree:.3f} (n {len(sub)})")
    print("\nanswer attempts (agreement / recall of the person's attempts):")
    for uid, a in result["attempts"].items():
        print(f"  {uid}: {a['agreement']} / {a['recall']} (n attempts {a['n_real_attempts']})")
    if args.profile:
        prof = length_profile(runs)
        print("\ndevelopment half's word-count profile (10/30/50/70/90th percentiles):")
        for key, q in prof.items():
            print(f"  {key}: {q}")
        print(f"equals learner_voice.LENGTHS: {'yes' if prof == LENGTHS else 'no'}")
        for part in SPLITS:
            rates = step_rates(runs, part=part)
            print(f"\n{part} half: answer turns the lexical attempt rule labels (they name a concept):")
            for key, (k, n) in rates.items():
                print(f"  {key}: {k} of {n} ({k / n:.3f})")
        dev = {key: k / n for key, (k, n) in step_rates(runs).items()}
        print(f"development rates equal learner_voice.SHOWS_STEP: {'yes' if dev == SHOWS_STEP else 'no'}")


if __name__ == "__main__":
    main()
