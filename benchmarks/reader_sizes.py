"""The offline reader by graph size and domain, against the paper's LLM labels (and the validated ranges).

Protocol (written into the log before any figure; :data:`knowsim_core.evaluation.reader_eval.PROTOCOL`):
sizes 3, 4, 5, 6 IUs and the whole graph; 10 random sub-graphs per recorded turn and size, each
seeded by ``"0:<record>:<turn>:<size>:<draw>"``; the reader's weights fitted on whole MathQA graphs
only — MathQA scored leave one recording out, ExpertQA (expertqa_001, the out-of-domain headline)
with the weights fitted on both MathQA recordings. Beside the reader: the keyword rule and the
training majority class (baselines), and on ExpertQA the hand labels of the two baseline-simulator
conversations (labelled as such). The per-(domain, size) cells are what
:func:`knowsim_core.services.reader_trust.validation` reads to say how far a reading is trusted.

Usage: ``python benchmarks/reader_sizes.py [--reference ../shared/reference]``; writes
``benchmarks/logs/reader_sizes.json`` (deterministic).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.evaluation import extractor_eval as ev  # noqa: E402
from knowsim_core.evaluation import reader_eval as rd  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    args = ap.parse_args()
    ref = args.reference
    print("protocol (fixed before measuring):")
    for k, v in rd.PROTOCOL.items():
        print(f"  {k}: {v}")
    math = ev.load_turns(str(ref / "examples" / "mathqa_structured_adaptive_novice.json"), str(ref / "iu_cache" / "math.json"))
    expert = ev.load_turns(str(ref / "examples" / "expertqa_structured_adaptive_novice_001.json"),
                           str(ref / "iu_cache" / "expertqa.json"))
    methods = {"lexical": ev.lexical(), "keyword": ev.keyword, "majority": ev.majority}
    cells = {name: rd.by_size(math, expert, m) for name, m in methods.items()}
    print("\nteaching quality vs the LLM's labels, per domain and graph size "
          "(MathQA leave one recording out; ExpertQA fitted on MathQA):")
    print(f"{'reader':<9} {'domain':<7} {'size':<6} {'pairs':>6} {'macro-F1':>9} {'mentioned':>10} {'LLM':>6} {'gap':>6}")
    for name, res in cells.items():
        for domain, row in res.items():
            for size, c in row.items():
                print(f"{name:<9} {domain:<7} {size:<6} {c['pairs']:>6} {c['macro_f1']:>9.3f} {c['mentioned']:>10.3f} "
                      f"{c['llm_mentioned']:>6.3f} {c['gap']:>+6.3f}")
    hand = ev.load_hand_labelled(str(ROOT / "tests" / "data" / "expert_tq_labels.json"),
                                 str(ref / "examples" / "expertqa_baseline_zero-shot-cot_novice.json"),
                                 str(ref / "iu_cache" / "expertqa.json"))
    hand_cell = rd.cell(hand, ev.lexical()(math))
    print(f"\nExpertQA hand labels (tests/data/expert_tq_labels.json, one annotator; not the LLM's): macro-F1 "
          f"{hand_cell['macro_f1']:.3f}, mentioned {hand_cell['mentioned']:.3f} vs {hand_cell['llm_mentioned']:.3f} "
          "in the hand labels")
    lex = cells["lexical"]
    targets = {
        "mentioned_within_10_points": {d: {s: abs(lex[d][s]["gap"]) <= 0.10 for s in ("whole", "4")} for d in lex},
        "macro_f1_at_least_0.50": {"math_loro_whole": lex["math"]["whole"]["macro_f1"] >= 0.50,
                                   "expert_whole": lex["expert"]["whole"]["macro_f1"] >= 0.50},
    }
    print("\ntargets:", targets)
    write_log("reader_sizes", {"protocol": rd.PROTOCOL, "cells": cells, "hand_labels_expert": hand_cell,
                               "targets": targets},
              seeds=[rd.SEED], split="MathQA: leave one recording out (math_003 / math_004); ExpertQA: "
                                     "expertqa_001 out of domain, weights fitted on both MathQA recordings",
              extra={"reference": "../shared/reference", "draws": rd.DRAWS})


if __name__ == "__main__":
    main()
