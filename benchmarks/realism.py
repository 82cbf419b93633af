"""Realism table and speed: import the shared real conversations into a temporary database, then
time a full turn-level realism pass of both offline learners beside the floors.

Usage: ``python benchmarks/realism.py [--profile] [ANNOTATIONS.json]`` (default:
../shared/realworld/...). Prints the import time, the realism time (goal: under 30 s offline for
all 25 conversations, both starts), and act agreement / ROUGE-L / length ratio overall, per level
and for both halves of the stated split (development = crc32 of ``problem_id:workerId`` even,
where the offline learners' rules, lengths and offline/person's reuse were chosen; held-out = odd),
each with the floors (baseline/copy-last, baseline/generic, floor/most-common-act): the headline
with sampled initial states (no hindsight), then the file's states (hindsight) beside it. Also
times ``learner_voice.read_tutor`` on a 20,000-word reply without a question (linear time; the
old unanchored pattern took minutes). ``--profile`` also prints the development half's word-count
profile and whether it equals ``learner_voice.LENGTHS``, and per half how many of the people's
answers name a concept (``learner_voice.SHOWS_STEP``: development).

Writes ``benchmarks/logs/realism.json`` (:mod:`benchmarks._log`): revision, package versions,
split, the per-half and per-level figures of every user for both starts, and the timings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.agents.learner_voice import LENGTHS, SHOWS_STEP, read_tutor  # noqa: E402
from knowsim_core.commands.realism import START_NOTE, table  # noqa: E402
from knowsim_core.evaluation.realism import (DEFAULT_USERS, MOST_COMMON, SPLITS, headline,  # noqa: E402
                                             length_profile, step_rates)
from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"
SHOWN = ("act_agreement", "rouge_l", "length_ratio", "cosine", "iu_jaccard")
LOGGED = ("act_agreement", "rouge_l", "cosine", "length_ratio", "iu_jaccard", "n")
SPLIT = "development = zlib.crc32('problem_id:workerId') even, held-out = odd (25 shared SimulatorArena conversations)"


def _figures(part: dict) -> dict:
    return {uid: {k: s.get(k) for k in LOGGED} for uid, s in part.items()}


def _act_mix(turns: list[dict], user: str) -> float:
    """Total variation between the simulated and the real act distributions of ``turns``."""
    real = [t["real_act"] for t in turns]
    sim = [t["simulated"][user]["act"] for t in turns]
    return round(0.5 * sum(abs(real.count(a) - sim.count(a)) for a in set(real) | set(sim)) / max(1, len(turns)), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "realism.db")
        start = time.perf_counter()
        report = import_path(store, args.path)
        imported = time.perf_counter() - start
        runs = [store.runs.load(rid) for rid in report.runs]
    users = {uid: registry.resolve("user", uid) for uid in DEFAULT_USERS}
    start = time.perf_counter()
    result = headline(runs, users)
    elapsed = time.perf_counter() - start
    text = ("word " * 20000) + "."
    start = time.perf_counter()
    read_tutor(text)
    read_s = time.perf_counter() - start
    print(f"import (reading {len(runs)} conversations): {imported:.2f} s")
    print(f"realism pass, both starts: {len(result['turns'])} real user turns x {len(users)} users in "
          f"{elapsed:.2f} s (goal < 30 s); skipped (no reading): {len(result['skipped'])}")
    print(f"read_tutor on a 20,000-word reply without a question: {read_s * 1000:.1f} ms")
    sides = {"sampled": result, "file": result["hindsight"]}
    for name, side in sides.items():
        print(f"\n=== {START_NOTE[name]}")
        print(f"\nall {len(result['turns'])} turns\n{table(side['summary'], SHOWN)}")
        for level, by_user in side["by_level"].items():
            print(f"\n{level}\n{table(by_user, SHOWN)}")
        for part in SPLITS:
            note = "rules chosen here" if part == "development" else "never used to choose rules"
            print(f"\n{part} half ({note})\n{table(side['by_split'][part], SHOWN)}")
    held = [t for t in result["turns"] if t["split"] == "held-out"]
    mix = {uid: _act_mix(held, uid) for uid in users}
    print("\nheld-out act mix, total variation from the people's (sampled start; target <= 0.15): "
          + ", ".join(f"{u} {v:.3f}" for u, v in mix.items()))
    print("\nanswer attempts (agreement / recall of the person's attempts, sampled start):")
    for uid, a in result["attempts"].items():
        print(f"  {uid}: {a['agreement']} / {a['recall']} (n attempts {a['n_real_attempts']})")
    profile = {}
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
        profile = {"lengths_equal": prof == LENGTHS, "step_rates_equal": dev == SHOWS_STEP}
    figures = {
        name: {"summary": _figures(side["summary"]),
               "by_split": {part: _figures(side["by_split"][part]) for part in SPLITS},
               "by_level": {lvl: _figures(by) for lvl, by in side["by_level"].items()}}
        for name, side in sides.items()}
    figures["held_out_act_mix_tv"] = mix
    figures["most_common_act"] = {part: result["by_split"][part][MOST_COMMON]["act"] for part in SPLITS}
    figures["reader"] = result.get("reader", {})  # how far the reading under the table is validated
    figures["timing_s"] = {"import": round(imported, 3), "realism_both_starts": round(elapsed, 3),
                           "read_tutor_20000_words": round(read_s, 4)}
    write_log("realism", figures, seeds="per conversation: zlib.crc32(problem_id:workerId) (sampled start and "
              "the learners' own seeds as realism gives them)", split=SPLIT,
              extra={"turns": len(result["turns"]), "skipped": result["skipped"], "users": list(users),
                     "profile": profile})


if __name__ == "__main__":
    main()
