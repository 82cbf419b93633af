"""The floors of the quality tests, from a protocol fixed before any figure is looked at.

Protocol: a floor is the 2.5th percentile of the figure's bootstrap distribution —
2,000 resamples with replacement of the scored items (turns for the act tagger; (turn, IU) labels,
resampled by turn, for the extractor's pooled leave-one-recording-out figures), numpy seed 0 —
rounded down to 3 decimals. It is the lowest value that resampling noise alone makes plausible
for the code as it was when the floor was set: a change that scores below it moved the figure by
more than the sample explains. The margin is the interval's, never picked by hand; the test
docstrings quote this file, and the constants in the tests equal ``benchmarks/logs/floors.json``
(tests check it). Re-run when the labels or the data change, not when a change fails a floor.

Usage: ``python benchmarks/floors.py`` (needs ../shared).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402

SHARED = ROOT.parent / "shared"
ANNOTATIONS = SHARED / "realworld" / "simulatorarena_math" / "math_tutoring_annotations_redacted_for_benchmarking.json"
REFERENCE = SHARED / "reference"
RESAMPLES = 2000
SEED = 0
QUANTILE = 2.5


def bootstrap_floor(gold: Sequence[str], pred: Sequence[str], metric: Callable[[list, list], float], *,
                    groups: Sequence[object] | None = None, resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """The 2.5th percentile of ``metric`` over bootstrap resamples of the items (or of whole
    ``groups`` of items when given), rounded down to 3 decimals."""
    rng = np.random.default_rng(seed)
    if groups is None:
        groups = list(range(len(gold)))
    members: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    units = list(members.values())
    values = []
    for _ in range(resamples):
        picked = [i for u in rng.integers(0, len(units), len(units)) for i in units[u]]
        values.append(metric([gold[i] for i in picked], [pred[i] for i in picked]))
    return math.floor(float(np.percentile(values, QUANTILE)) * 1000) / 1000


def acts_floors() -> dict[str, dict[str, float]]:
    from knowsim_core.evaluation import acts

    labels = json.loads((ROOT / "tests" / "data" / "act_labels.json").read_text())
    parts = acts.labelled_parts(labels, json.loads(ANNOTATIONS.read_text()))
    out = {}
    for part in ("odd", "second-problem"):
        gold, pred = parts[part]
        out[part] = {"turns": len(gold), "macro_f1": acts.macro_f1(gold, pred),
                     "floor": bootstrap_floor(gold, pred, acts.macro_f1)}
    return out


def loro_floors() -> dict[str, dict[str, float]]:
    """The lexical extractor's pooled leave-one-recording-out macro-F1s (and each held-out
    recording's teaching quality) with their bootstrap floors."""
    from knowsim_core.evaluation import extractor_eval as ev

    turns = ev.load_turns(str(REFERENCE / "examples" / "mathqa_structured_adaptive_novice.json"),
                          str(REFERENCE / "iu_cache" / "math.json"))
    method = ev.METHODS["lexical"]
    items: dict[str, list] = {"teaching_quality": [], "user_attempt_type": []}
    for r in ev.records(turns):
        train = [t for t in turns if t.record != r]
        labeller = method(train)
        for k, t in enumerate(tt for tt in turns if tt.record == r):
            got = labeller(t)
            for iu, q, a in t.recorded:
                pq, pa = got.get(iu, ("not_mentioned", "none"))
                items["teaching_quality"].append((q, pq, (r, k), r))
                items["user_attempt_type"].append((a, pa, (r, k), r))
    classes = {"teaching_quality": ev.QUALITIES, "user_attempt_type": ev.ATTEMPTS}
    out = {}
    for kind, rows in items.items():
        def metric(gold, pred, kind=kind):
            return ev.agreement(list(zip(gold, pred)), classes[kind])["macro_f1"]
        gold, pred, turn = [x[0] for x in rows], [x[1] for x in rows], [x[2] for x in rows]
        out[kind] = {"labels": len(rows), "macro_f1": metric(gold, pred),
                     "floor": bootstrap_floor(gold, pred, metric, groups=turn)}
        if kind == "teaching_quality":
            for r in ev.records(turns):
                sub = [x for x in rows if x[3] == r]
                g, p = [x[0] for x in sub], [x[1] for x in sub]
                out[f"{kind}:{r}"] = {"labels": len(sub), "macro_f1": metric(g, p),
                                      "floor": bootstrap_floor(g, p, metric, groups=[x[2] for x in sub])}
    return out


def expert_floor() -> dict[str, float]:
    """The shipped lexical weights (fitted on MathQA only) on the hand-labelled ExpertQA turns
    (tests/data/expert_tq_labels.json): teaching-quality macro-F1 and its floor, resampled by turn."""
    from knowsim_core.evaluation import extractor_eval as ev

    expert = ev.load_hand_labelled(str(ROOT / "tests" / "data" / "expert_tq_labels.json"),
                                   str(REFERENCE / "examples" / "expertqa_baseline_zero-shot-cot_novice.json"),
                                   str(REFERENCE / "iu_cache" / "expertqa.json"))
    math = ev.load_turns(str(REFERENCE / "examples" / "mathqa_structured_adaptive_novice.json"),
                         str(REFERENCE / "iu_cache" / "math.json"))
    labeller = ev.shipped(math)
    gold, pred, turn = [], [], []
    for t in expert:
        got = labeller(t)
        for iu, q, _ in t.recorded:
            gold.append(q)
            pred.append(got.get(iu, ("not_mentioned", "none"))[0])
            turn.append((t.record, t.turn))

    def metric(g, p):
        return ev.agreement(list(zip(g, p)), ev.QUALITIES)["macro_f1"]
    return {"labels": len(gold), "macro_f1": metric(gold, pred), "floor": bootstrap_floor(gold, pred, metric, groups=turn)}


def expert_llm_floor() -> dict[str, float]:
    """The shipped lexical weights (fitted on MathQA only) against the paper's LLM labels of the
    ExpertQA recording (expertqa_001, whole graphs): the out-of-domain headline and its floor,
    resampled by turn."""
    from knowsim_core.evaluation import extractor_eval as ev

    turns = ev.load_turns(str(REFERENCE / "examples" / "expertqa_structured_adaptive_novice_001.json"),
                          str(REFERENCE / "iu_cache" / "expertqa.json"))
    labeller = ev.shipped([])
    gold, pred, turn = [], [], []
    for t in turns:
        got = labeller(t)
        for iu, q, _ in t.recorded:
            gold.append(q)
            pred.append(got.get(iu, ("not_mentioned", "none"))[0])
            turn.append(t.turn)

    def metric(g, p):
        return ev.agreement(list(zip(g, p)), ev.QUALITIES)["macro_f1"]
    return {"labels": len(gold), "macro_f1": metric(gold, pred), "floor": bootstrap_floor(gold, pred, metric, groups=turn)}


def main() -> None:
    result = {"acts": acts_floors(), "lexical_loro": loro_floors(), "lexical_expert": expert_floor(),
              "lexical_expert_llm": expert_llm_floor()}
    print(json.dumps(result, indent=1))
    write_log("floors", result, seeds=[SEED],
              split="acts: held-out odd conversations and second-problem turns; extractor: pooled "
                    "leave-one-recording-out over the shared MathQA recordings (and each held-out recording); "
                    "out of domain: weights fitted on MathQA, scored on the ExpertQA hand labels and on "
                    "expertqa_001's LLM labels",
              extra={"resamples": RESAMPLES, "quantile": QUANTILE, "unit": "turn"})


if __name__ == "__main__":
    main()
