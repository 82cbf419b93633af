"""The paper check: the offline world's per-level figures beside the paper's, and the distance.

Runs the offline matrix on the paper's own 60 questions (30 MathQA + 30 ExpertQA from a reference
folder such as ``../shared/reference``, each started from the paper's cached initial state) × 3
levels × the 4 strategies × 1 seed = 720 conversations in this process (all 15 turns, the stop
recorded virtually, as the paper ran them), and prints:

* per level, pooled over the strategies as Fig. 6 pools them: failure-mode shares, KG / DC / CO,
  early stops and the mean stop turn, beside the paper's figures (:mod:`knowsim_core.evaluation.paper`)
  with the distance and whether it is within the issue's tolerances (shares ±8 points, CO ±0.10,
  KG ±40 %); for all 60 questions, and for the two stated halves separately
  (:func:`~knowsim_core.evaluation.paper_matrix.split_halves`: even positions within each task =
  the half anything may be tuned on, odd positions = held out);
* each strategy's own row per level;
* the adaptive × novice cell beside the paper's four recorded conversations of that cell.

``--shapes`` also prints the reply-shape tables measured from the shared data (they must equal
:mod:`knowsim_core.agents.tutor_shapes`) and how the offline labeller reads the adaptive tutor's
novice replies on the tuning half — the one figure :data:`~knowsim_core.agents.tutor_shapes.MENTION_SCALE`
was set against (the recorded turns' mean coverage), not the paper's results.

Usage: ``python benchmarks/paper_check.py [--reference ../shared/reference] [--seed 1] [--shapes] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from knowsim_core.evaluation.paper import (  # noqa: E402
    FAILURE_ORDER, TABLE12_STOP_TURN, check_rows, level_checks, recording_rows, strategy_rows,
)
from knowsim_core.evaluation.paper_matrix import (  # noqa: E402
    load_paper_questions, run_matrix, split_halves,
)


def table(rows: list[dict], cols: list[str] | None = None) -> str:
    if not rows:
        return "(no rows)"
    cols = cols or list(rows[0])
    width = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(width[c]) for c in cols), "  ".join("-" * width[c] for c in cols)]
    lines += ["  ".join(str(r.get(c, "")).ljust(width[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def compact(outcomes, label: str) -> list[dict]:
    out = []
    for c in level_checks(outcomes):
        w = c.within()
        out.append({"questions": label, "level": c.level, "runs": c.runs,
                    **{m.title: f"{s:.0f}" for m, s in zip(FAILURE_ORDER, c.shares)},
                    "worst share gap": "—" if c.worst_share_gap is None else f"{c.worst_share_gap:.1f}",
                    "KG": f"{c.kg:.2f}", "DC": f"{c.dc:.3f}", "CO": f"{c.co:.3f}",
                    "stops": f"{c.stops}/{c.runs}", "mean stop": "—" if c.mean_stop_turn is None else f"{c.mean_stop_turn:.1f}",
                    "within (shares/CO/KG)": "/".join("—" if v is None else ("yes" if v else "no")
                                                      for v in (w["shares"], w["CO"], w["KG"]))})
    return out


def shapes(reference: Path, realworld: Path, questions) -> None:
    from knowsim_core.agents import tutor_shapes
    from knowsim_core.evaluation.paper_matrix import labelled_shape, measure_reply_shapes, play

    m = measure_reply_shapes(reference, realworld)
    same = m["turns"] == tutor_shapes.RECORDED_TURNS and m["sentences"] == tutor_shapes.REPLY_SENTENCES
    covs = [c for c, _ in m["turns"]]
    wells = [w for _, w in m["turns"]]
    print(f"measured reply shapes ({len(m['turns'])} recorded tutor turns, {m['replies'][0]} replies for lengths): "
          f"coverage mean {sum(covs) / len(covs):.3f}, well-explained share mean {sum(wells) / len(wells):.3f}; "
          f"sentences per reply 5/50/95 %: {m['sentences'][0]:g} / {m['sentences'][9]:g} / {m['sentences'][-1]:g}; "
          f"equal to agents/tutor_shapes.py: {'yes' if same else 'NO — update the constants'}")
    tune, _ = split_halves(questions)
    cov, well = labelled_shape(lambda: (play(q, "novice", "offline/adaptive") for q in tune))
    print(f"offline adaptive × novice on the tuning half, as the offline labeller reads it: coverage {cov:.3f}, "
          f"well-explained share {well:.3f} (MENTION_SCALE = {tutor_shapes.MENTION_SCALE})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared" / "reference"),
                    help="the paper's data folder (paper_subset/, iu_cache/, init_ks_cache.json)")
    ap.add_argument("--realworld", default=str(ROOT.parent / "shared" / "realworld"), help="for --shapes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", action="store_true", help="also print the measured reply shapes")
    ap.add_argument("--json", action="store_true", help="print the per-level checks as JSON instead of tables")
    args = ap.parse_args()
    ref = Path(args.reference)
    if not (ref / "paper_subset").is_dir():
        sys.exit(f"paper_check: {ref} is not the paper's data folder (no paper_subset/); pass --reference")
    questions = load_paper_questions(ref)
    tune, held = split_halves(questions)
    tune_ids = {q.material.question_id for q in tune}
    start = time.perf_counter()
    outcomes = run_matrix(questions, seed=args.seed)
    wall = time.perf_counter() - start
    if args.json:
        print(json.dumps({"wall_s": wall, "runs": len(outcomes), "levels": [
            {"level": c.level, "runs": c.runs, "shares": c.shares, "paper_shares": c.paper_shares, "kg": c.kg,
             "dc": c.dc, "co": c.co, "stops": c.stops, "mean_stop_turn": c.mean_stop_turn, "within": c.within()}
            for c in level_checks(outcomes)]}, indent=1))
        return
    print(f"offline matrix on the paper's questions: {len(questions)} questions x 3 levels x 4 strategies x seed "
          f"{args.seed} = {len(outcomes)} conversations in {wall:.1f} s ({len(outcomes) / wall:.1f} per second, "
          "one process)\n")
    print("Per level, all questions, beside the paper (Fig. 6 shares, Table 4 KG/CO, Table 12 stop turn):")
    print(table(check_rows(level_checks(outcomes))))
    print("\nPer level, by half (tuning half = even positions within each task; held out = odd):")
    print(table(compact(outcomes, "all 60")
                + compact([o for o in outcomes if o.question_id in tune_ids], "tuning half")
                + compact([o for o in outcomes if o.question_id not in tune_ids], "held-out half")))
    print("\nEarly stops by task (Table 12 gives the mean stop turn per task: 9.1 MathQA, 7.3 ExpertQA):")
    stop_rows = []
    for task in ("math", "expertqa"):
        for c in level_checks([o for o in outcomes if o.task == task]):
            stop_rows.append({"task": task, "level": c.level, "stops": f"{c.stops}/{c.runs}",
                              "overload": c.overload_stops, "mastery": c.stops - c.overload_stops,
                              "mean stop turn": "—" if c.mean_stop_turn is None else f"{c.mean_stop_turn:.1f}",
                              "paper": TABLE12_STOP_TURN[task]})
    print(table(stop_rows))
    print("\nEach strategy (all questions):")
    print(table(strategy_rows(outcomes)))
    print("\nAdaptive x novice beside the paper's four recorded conversations of that cell:")
    print(table(recording_rows(outcomes)))
    if args.shapes:
        print()
        shapes(ref, Path(args.realworld), questions)


if __name__ == "__main__":
    main()
