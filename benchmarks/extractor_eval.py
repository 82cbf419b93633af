"""The lexical extractor against the recorded labels: in-sample and leave-one-recording-out.

Usage:
  python benchmarks/extractor_eval.py              # the main table (lexical beside the baselines)
  python benchmarks/extractor_eval.py --ablation   # drop one feature / text rule at a time (LORO)
  python benchmarks/extractor_eval.py --fit        # re-derive agents/lexical.py's COEFFICIENTS
  python benchmarks/extractor_eval.py --expert-labels tests/data/expert_tq_labels.json
        # out of domain: fitted on every MathQA recording, scored on hand-labelled ExpertQA turns
Paths default to ../shared/reference (the paper's two recorded MathQA conversations).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.evaluation import extractor_eval as ev  # noqa: E402

REF = Path(__file__).resolve().parent.parent.parent / "shared" / "reference"


def line(name: str, res: dict) -> str:
    def f(stats, kind):
        return f"{stats[kind]['macro_f1']:.3f}"
    folds = " ".join(f"{r}:{f(s, 'teaching_quality')}/{f(s, 'user_attempt_type')}" for r, s in res["folds"].items())
    return (f"{name:<28} in-sample TQ {f(res['in_sample'], 'teaching_quality')} AT {f(res['in_sample'], 'user_attempt_type')}"
            f" | LORO TQ {f(res['loro'], 'teaching_quality')} AT {f(res['loro'], 'user_attempt_type')} | folds {folds}")


def macro(res: dict) -> dict:
    """The macro-F1s of one protocol result, for the log."""
    def two(stats):
        return {k: stats[k]["macro_f1"] for k in ("teaching_quality", "user_attempt_type")}
    return {"in_sample": two(res["in_sample"]), "loro": two(res["loro"]),
            "folds": {r: two(st) for r, st in res["folds"].items()}}


def row_key(name: str) -> str:
    """The log key of an ablation row, usable in a README marker (``<!--fig:extractor_eval_ablation:KEY.loro.
    teaching_quality-->``): "text rule + fix -> constrain synonyms" -> "text_rule_plus_fix_to_constrain_synonyms"."""
    text = name.replace("->", " to ").replace("+", " plus ").replace(" - ", " minus ")
    text = "minus " + text[2:] if text.startswith("- ") else text
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


SPLIT = "in-sample and leave-one-recording-out (fitted per fold) over the shared MathQA recordings"


def per_class(name: str, stats: dict) -> str:
    return f"{name:<28} " + "  ".join(
        f"{k}: " + ", ".join(f"{c} {v:.3f}" for c, v in stats[k]["f1"].items())
        for k in ("teaching_quality", "user_attempt_type"))


def expert(train: list, test: list) -> dict:
    """Out-of-domain table: every method fitted on ``train``, scored on the hand-labelled ``test``;
    returns the figures (per method: macro-F1, accuracy, per-class F1, pairs called mentioned)."""
    from knowsim_core.evaluation.extractor_eval import QUALITIES

    res = ev.out_of_domain(train, test)
    n = res["lexical"]["n"]
    shares = {c: sum(res["lexical"]["matrix"][c].values()) / n for c in QUALITIES}
    print(f"teaching quality out of domain: {n} hand-labelled (turn, IU) pairs; gold shares "
          + ", ".join(f"{c} {v:.2f}" for c, v in shares.items()))
    for name, stats in res.items():
        pred = {c: sum(stats["matrix"][g][c] for g in QUALITIES) / n for c in QUALITIES}
        print(f"{name:<10} macro-F1 {stats['macro_f1']:.3f} accuracy {stats['accuracy']:.3f} | F1 "
              + ", ".join(f"{c} {v:.3f}" for c, v in stats["f1"].items())
              + " | predicted shares " + ", ".join(f"{v:.2f}" for v in pred.values()))
    print("confusion of lexical (rows hand label, columns predicted; order " + ", ".join(QUALITIES) + "):")
    for g in QUALITIES:
        print(f"  {g:<15}" + "".join(f"{res['lexical']['matrix'][g][p]:>6}" for p in QUALITIES))
    gold = {c: sum(res["lexical"]["matrix"][c].values()) for c in QUALITIES}
    mentioned = [c for c in QUALITIES if c != "not_mentioned"]
    return {"pairs": n, "gold": {**gold, "mentioned": sum(gold[c] for c in mentioned)},
            "methods": {name: {"macro_f1": stats["macro_f1"], "accuracy": stats["accuracy"],
                               "f1": dict(stats["f1"]),
                               "called_mentioned": sum(stats["matrix"][g][c] for g in QUALITIES for c in mentioned)}
                        for name, stats in res.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default=str(REF / "examples" / "mathqa_structured_adaptive_novice.json"))
    ap.add_argument("--graphs", default=str(REF / "iu_cache" / "math.json"))
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--expert-labels", metavar="LABELS.json",
                    help="hand labels of another domain's turns (teaching quality only)")
    ap.add_argument("--expert-runs", default=str(REF / "examples" / "expertqa_baseline_zero-shot-cot_novice.json"))
    ap.add_argument("--expert-graphs", default=str(REF / "iu_cache" / "expertqa.json"))
    args = ap.parse_args()
    turns = ev.load_turns(args.runs, args.graphs)
    if args.expert_labels:
        figures = expert(turns, ev.load_hand_labelled(args.expert_labels, args.expert_runs, args.expert_graphs))
        write_log("extractor_eval_expert", figures,
                  split=f"fitted on {Path(args.runs).name} (MathQA), scored on the hand labels {args.expert_labels} "
                        f"of {Path(args.expert_runs).name} (out of domain, teaching quality only)",
                  extra={"runs": args.runs, "expert_runs": args.expert_runs, "labels": args.expert_labels})
        return
    if args.fit:
        m = ev.fit_model(turns)
        print("COEFFICIENTS = LexicalModel(")
        for k in ("mentioned", "well"):
            print(f"    {k}={getattr(m, k)!r},")
        print(")")
        return
    if args.ablation:
        from knowsim_core.agents.lexical import TQ_FEATURES
        rows: dict[str, dict] = {}

        def show(name: str, res: dict) -> None:
            rows[row_key(name)] = {"row": name, **macro(res)}
            print(line(name, res))
        show("all features", ev.protocol(turns, ev.lexical()))
        for f in TQ_FEATURES[1:]:
            show(f"- {f}", ev.protocol(turns, ev.lexical(drop=[f])))
        from knowsim_core.agents import lexical
        lexical.RUBRIC_FLOOR = False
        show("- rubric floor (spec §9)", ev.protocol(turns, ev.lexical()))
        lexical.RUBRIC_FLOOR = True
        for name in ev.TEXT_RULES:
            with ev.text_rule_flipped(name):
                show(f"text rule {name}", ev.protocol(turns, ev.lexical()))
        write_log("extractor_eval_ablation", rows, split=SPLIT, extra={"runs": args.runs})
        return
    results = {name: ev.protocol(turns, m) for name, m in ev.METHODS.items()}
    results["lexical (shipped weights)"] = ev.protocol(turns, ev.shipped)
    for name, res in results.items():
        print(line(name, res))
    print("\nper-class F1, leave-one-recording-out (pooled):")
    for name, res in results.items():
        print(per_class(name, res["loro"]))
    write_log("extractor_eval", {name: {**macro(res), "loro_per_class": {
        k: res["loro"][k]["f1"] for k in ("teaching_quality", "user_attempt_type")}} for name, res in results.items()},
        split=SPLIT, extra={"runs": args.runs})


if __name__ == "__main__":
    main()
