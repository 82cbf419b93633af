"""Every deterministic figure the README quotes, regenerated as JSON: the extractor table (in-sample
and leave-one-recording-out), the dialogue-act tagger table and the turn-level realism table.

tests/test_readme_figures.py checks that README.md quotes these numbers (rounded as the README
prints them), so a change that moves a figure fails until the README says so. Speed figures are
not here: they depend on the machine (``benchmarks/engine.py``, ``offline.py``, ``realism.py``).

Usage: ``python benchmarks/readme_figures.py [--only extractor,acts,realism]`` (needs ../shared).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

SHARED = ROOT.parent / "shared"
REFERENCE = SHARED / "reference"
ANNOTATIONS = SHARED / "realworld" / "simulatorarena_math" / "math_tutoring_annotations_redacted_for_benchmarking.json"
ACT_LABELS = ROOT / "tests" / "data" / "act_labels.json"
KINDS = ("teaching_quality", "user_attempt_type")


def _f1s(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: {"macro_f1": round(stats[k]["macro_f1"], 3),
                "per_class": {c: round(v, 3) for c, v in stats[k]["f1"].items()}} for k in KINDS}


def extractor() -> dict[str, Any]:
    """Macro-F1 of teaching quality and attempt type, in-sample and leave-one-recording-out (pooled
    and per held-out recording), for the lexical extractor refitted per fold and its baselines."""
    from knowsim_core.evaluation import extractor_eval as ev

    turns = ev.load_turns(str(REFERENCE / "examples" / "mathqa_structured_adaptive_novice.json"),
                          str(REFERENCE / "iu_cache" / "math.json"))
    out = {}
    for name, method in ev.METHODS.items():
        res = ev.protocol(turns, method)
        out[name] = {"in_sample": _f1s(res["in_sample"]), "loro": _f1s(res["loro"]),
                     "folds": {r: _f1s(s) for r, s in res["folds"].items()}}
    return out


def acts() -> dict[str, Any]:
    """The offline act tagger on our hand labels: macro-F1, accuracy and the majority baseline."""
    from knowsim_core.evaluation import acts as a

    parts = a.labelled_parts(json.loads(ACT_LABELS.read_text()), json.loads(ANNOTATIONS.read_text()))
    return {part: {"turns": len(gold), "macro_f1": round(a.macro_f1(gold, pred), 3),
                   "accuracy": round(a.accuracy(gold, pred), 3),
                   "majority_macro_f1": round(a.macro_f1(gold, [a.MATH_ANSWER] * len(gold)), 3)}
            for part, (gold, pred) in parts.items()}


def realism() -> dict[str, Any]:
    """The realism headline (sampled start: summary, by level and by half) of the default users on
    the 25 shared conversations, and the hindsight (file start) summary and halves beside it."""
    from knowsim_core.agents import registry
    from knowsim_core.evaluation.realism import DEFAULT_USERS, headline
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "figures.db")
        report = import_path(store, ANNOTATIONS)
        runs = [store.load_run(rid) for rid in report.runs]
    result = headline(runs, {uid: registry.resolve("user", uid) for uid in DEFAULT_USERS})
    return {"summary": result["summary"], "by_level": result["by_level"], "by_split": result["by_split"],
            "attempts": {u: {"agreement": a["agreement"], "recall": a["recall"]} for u, a in result["attempts"].items()},
            "hindsight": {k: result["hindsight"][k] for k in ("summary", "by_split")}}


SECTIONS = {"extractor": extractor, "acts": acts, "realism": realism}


def figures(only: tuple[str, ...] = tuple(SECTIONS)) -> dict[str, Any]:
    return {name: SECTIONS[name]() for name in only}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = ap.parse_args()
    print(json.dumps(figures(tuple(s for s in args.only.split(",") if s)), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
