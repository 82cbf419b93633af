"""The lexical extractor against the recorded labels: in-sample and leave-one-recording-out.

Usage:
  python benchmarks/extractor_eval.py              # the main table (lexical beside the baselines)
  python benchmarks/extractor_eval.py --ablation   # drop one feature / text rule at a time (LORO)
  python benchmarks/extractor_eval.py --fit        # re-derive agents/lexical.py's COEFFICIENTS
Paths default to ../shared/reference (the paper's two recorded MathQA conversations).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowsim_core import extractor_eval as ev  # noqa: E402

REF = Path(__file__).resolve().parent.parent.parent / "shared" / "reference"


def line(name: str, res: dict) -> str:
    def f(stats, kind):
        return f"{stats[kind]['macro_f1']:.3f}"
    folds = " ".join(f"{r}:{f(s, 'teaching_quality')}/{f(s, 'user_attempt_type')}" for r, s in res["folds"].items())
    return (f"{name:<28} in-sample TQ {f(res['in_sample'], 'teaching_quality')} AT {f(res['in_sample'], 'user_attempt_type')}"
            f" | LORO TQ {f(res['loro'], 'teaching_quality')} AT {f(res['loro'], 'user_attempt_type')} | folds {folds}")


def per_class(name: str, stats: dict) -> str:
    return f"{name:<28} " + "  ".join(
        f"{k}: " + ", ".join(f"{c} {v:.3f}" for c, v in stats[k]["f1"].items())
        for k in ("teaching_quality", "user_attempt_type"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default=str(REF / "examples" / "mathqa_structured_adaptive_novice.json"))
    ap.add_argument("--graphs", default=str(REF / "iu_cache" / "math.json"))
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--fit", action="store_true")
    args = ap.parse_args()
    turns = ev.load_turns(args.runs, args.graphs)
    if args.fit:
        m = ev.fit_model(turns)
        print("COEFFICIENTS = LexicalModel(")
        for k in ("mentioned", "well"):
            print(f"    {k}={getattr(m, k)!r},")
        print(")")
        return
    if args.ablation:
        from knowsim_core.agents.lexical import TQ_FEATURES
        print(line("all features", ev.protocol(turns, ev.lexical())))
        for f in TQ_FEATURES[1:]:
            print(line(f"- {f}", ev.protocol(turns, ev.lexical(drop=[f]))))
        from knowsim_core.agents import lexical
        lexical.RUBRIC_FLOOR = False
        print(line("- rubric floor (spec §9)", ev.protocol(turns, ev.lexical())))
        lexical.RUBRIC_FLOOR = True
        for name in ev.TEXT_RULES:
            with ev.text_rule_flipped(name):
                print(line(f"text rule {name}", ev.protocol(turns, ev.lexical())))
        return
    results = {name: ev.protocol(turns, m) for name, m in ev.METHODS.items()}
    results["lexical (shipped weights)"] = ev.protocol(turns, ev.shipped)
    for name, res in results.items():
        print(line(name, res))
    print("\nper-class F1, leave-one-recording-out (pooled):")
    for name, res in results.items():
        print(per_class(name, res["loro"]))


if __name__ == "__main__":
    main()
