"""The reading-rules protocol (knowsim_core/services/reading_evidence.py): agreement of the stored
reading and of the learner-evidence reading with people, on part A (rules written on it), part B
(held out) and all shared conversations.

Usage: ``python benchmarks/reading_protocol.py [ANNOTATIONS.json]`` (default: ../shared/realworld/...).
Not a speed benchmark: it prints the before/after table the README quotes, computed from scratch.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.evaluation.agreement import collect  # noqa: E402
from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"


def _ci(e: dict) -> str:
    ci = e.get("ci")
    return "[   –,    –]" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _v(x) -> str:
    return "   –" if x is None else f"{x:+.2f}" if x < 0 else f"{x:.2f}"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "protocol.db")
        import_path(store, path)
        print("part  reading           turns  AUC turn score  95% CI        | convs  KG~rating ρ  95% CI"
              "        | KG AUC correct  95% CI")
        logged: dict[str, dict[str, dict]] = {}
        for part in ("A", "B", None):
            for reading in ("stored", "learner-evidence"):
                s = collect(store, reading=reading, part=part).summary
                v, c = s["votes"], s["conversations"]
                logged.setdefault(part or "all", {})[reading] = {
                    "thumbs": v["n"], "conversations": c["n"], "auc": v["scores"]["knowsim"]["auc"],
                    "auc_ci": v["scores"]["knowsim"].get("ci"), "kg_rating_spearman": c["rating"]["kg"]["spearman"],
                    "kg_correct_auc": c["correctness"]["kg"]["auc"]}
                k, r, kc = v["scores"]["knowsim"], c["rating"]["kg"], c["correctness"]["kg"]
                print(f"{part or 'all':<5} {reading:<17} {v['n']:>5}  {_v(k['auc']):>14}  {_ci(k)}  | {c['n']:>5}  "
                      f"{_v(r['spearman']):>11}  {_ci(r)}  | {_v(kc['auc']):>14}  {_ci(kc)}")
        print("(part A: rules written on it; part B: held out; CIs: bootstrap over conversations, 2000 resamples)")
        s = collect(store, reading="stored").summary["votes"]["scores"]["reply_length"]
        print(f"baseline, reply length vs thumbs (all): AUC {_v(s['auc'])} {_ci(s)}")
    write_log("reading_protocol", {"parts": logged, "baseline_reply_length_auc": s["auc"]},
              split="part A (rules written on it) / part B (held out): first hex digit of SHA-256(problem_id:workerId) 0-7 / 8-f",
              extra={"annotations": path.name, "bootstrap": "over conversations, 2000 resamples"})


if __name__ == "__main__":
    main()
