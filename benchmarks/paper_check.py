"""The paper check: the offline world's per-level figures beside the paper's, like with like.

Runs the offline matrix on the paper's own 60 questions (30 MathQA + 30 ExpertQA from a reference
folder such as ``../shared/reference``, each started from the paper's cached initial state) × 3
levels × the 4 strategies × 1 seed = 720 conversations in this process (all 15 turns, early stop
recorded virtually, metrics over all turns, as the paper's benchmark ran them), with the learner
``offline/knowsim`` (the stand-in for the paper's LLM-simulated learner), and prints:

* per level, **``offline/simple`` alone** — the offline counterpart of the population Fig. 6 and
  Table 4 describe (nine LLM tutors, each with the one simple strategy prompt, 15 turns, early stop
  disabled) — beside the paper's figures (:mod:`knowsim_core.evaluation.paper`), every row
  labelled with its source (Fig. 6 / Table 4 / Table 12) and the population that source describes,
  with the distance and whether it is within the stated tolerances (shares ±8 points, CO ±0.10,
  KG ±40 % or ±1.0, DC ±0.03); for all 60 questions and for the two stated halves separately
  (:func:`~knowsim_core.evaluation.paper_matrix.split_halves`: even positions within each task =
  the half anything may be tuned on, odd positions = held out);
* beside each figure, whether it moves with CO's load (OVERLOAD-WASTED, EFFECTIVE, UNDER-ABSORBED, KG,
  DC, stops) or is roughly independent of it (REDUNDANT, PREREQ-BLOCKED) — only the latter could
  confirm a fit of the load, and the offline world is not fitted to Table 4 at all;
* DC against CO between levels in Table 4 and offline (:func:`~knowsim_core.evaluation.paper.mechanism_rows`)
  and the finding it supports (:data:`~knowsim_core.evaluation.paper.MECHANISM_FINDING`);
* each strategy's own rows per level, beside (never pooled into the comparison);
* the adaptive × novice cell beside the paper's four recorded conversations of that cell, per run
  and per turn (reasoning / articulated IUs, attempt and comprehension load / τ, IUs mentioned).

It writes ``benchmarks/logs/paper_check.json`` (revision, package versions, seed, split, figures)
with :func:`benchmarks._log.write_log`.

``--shapes`` also prints the reply-shape tables measured from the shared data (they must equal
:mod:`knowsim_core.agents.tutor_shapes`) and how the offline labeller reads the adaptive tutor's
novice replies on the tuning half per domain — the figure each mention scale was set against (the
recorded mean coverage), not the paper's results.

Usage: ``python benchmarks/paper_check.py [--reference ../shared/reference] [--seed 1] [--workers N] [--shapes] [--json]``
(``--workers`` defaults to the machine's cores; the log's ``timing`` holds the 720 runs' wall and CPU time with
that many, and the machine's load average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.engine.agent_id import parse_id  # noqa: E402
from knowsim_core.evaluation.paper import (  # noqa: E402
    FAILURE_ORDER, MECHANISM_FINDING, PAPER_POPULATION, TABLE12_STOP_TURN, check_rows, level_checks, mechanism_rows,
    population, recording_rows, strategy_rows,
)
from knowsim_core.evaluation.paper_matrix import (  # noqa: E402
    load_paper_questions, run_matrix, split_halves,
)

SPLIT = ("questions split by position within each task (paper_subset file order): even 0-based positions "
         "(math_001, math_003, ...) = tuning half, odd = held-out half; 15 MathQA + 15 ExpertQA each")


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
                    "KG": f"{c.kg:.2f}", "DC (proxy)": "—" if c.dc_proxy is None else f"{c.dc_proxy:.3f}",
                    "DC (strict)": f"{c.dc:.3f}", "CO": f"{c.co:.3f}",
                    "stops": f"{c.stops}/{c.runs}", "mean stop (1-based)": "—" if c.mean_stop_turn is None else f"{c.mean_stop_turn:.1f}",
                    "within (shares/CO/KG/DC)": "/".join("—" if v is None else ("yes" if v else "no")
                                                         for v in (w["shares"], w["CO"], w["KG"], w["DC"]))})
    return out


def shapes(reference: Path, realworld: Path, questions) -> None:
    from knowsim_core.agents import tutor_shapes
    from knowsim_core.evaluation.paper_matrix import labelled_shape, measure_reply_shapes, play

    m = measure_reply_shapes(reference, realworld)
    same = (m["turns"] == tutor_shapes.RECORDED_TURNS and m["expert_turns"] == tutor_shapes.EXPERT_TURNS
            and m["sentences"] == tutor_shapes.REPLY_SENTENCES
            and m["expert_sentences"] == tutor_shapes.EXPERT_REPLY_SENTENCES)
    for name, turns in (("MathQA", m["turns"]), ("ExpertQA", m["expert_turns"])):
        covs = [c for c, _ in turns]
        wells = [w for _, w in turns]
        print(f"measured {name} reply shapes ({len(turns)} labelled tutor turns): coverage mean "
              f"{sum(covs) / len(covs):.3f}, well-explained share mean {sum(wells) / len(wells):.3f}")
    print(f"sentences per reply ({m['replies'][0]} replies) 5/50/95 %: {m['sentences'][0]:g} / {m['sentences'][9]:g} / "
          f"{m['sentences'][-1]:g}; equal to agents/tutor_shapes.py: {'yes' if same else 'NO — update the constants'}")
    tune, _ = split_halves(questions)
    for domain in ("math", "expert"):
        sel = [q for q in tune if q.material.domain == domain]
        cov, well = labelled_shape(lambda: (play(q, "novice", "offline/adaptive") for q in sel))
        print(f"offline adaptive x novice, {domain} questions of the tuning half, as the offline labeller reads it: "
              f"coverage {cov:.3f}, well-explained share {well:.3f} (mention scale {tutor_shapes.SCALES[domain]})")


def header(questions: int, seed: int, runs: int, timing: dict) -> str:
    """The first line: how many conversations, in how much wall and CPU time, in how many processes."""
    workers = timing["workers"]
    procs = "one process" if workers <= 1 else f"{workers} worker processes"
    return (f"offline matrix on the paper's questions: {questions} questions x 3 levels x 4 strategies x seed {seed} = "
            f"{runs} conversations in {timing['wall_s']:.1f} s wall, {timing['cpu_s']:.1f} s CPU "
            f"({runs / max(timing['wall_s'], 1e-9):.1f} per second, {procs}; load average "
            f"{timing['load_average_before'][0]:.2f} before); learner offline/knowsim")


def level_figures(checks) -> list[dict]:
    return [{"level": c.level, "runs": c.runs, "shares": dict(zip((m.title for m in FAILURE_ORDER), c.shares)),
             "paper_shares": dict(zip((m.title for m in FAILURE_ORDER), c.paper_shares)), "kg": c.kg,
             "paper_kg": c.paper_kg, "dc_proxy": c.dc_proxy, "dc_strict": c.dc, "paper_dc": c.paper_dc, "co": c.co,
             "paper_co": c.paper_co, "stops": c.stops, "mean_stop_turn_1based": c.mean_stop_turn,
             "within": c.within()} for c in checks]


def slug(text: str) -> str:
    """A figure name as a log key a README marker can address (``"DC (proxy)"`` -> ``dc_proxy``)."""
    return "_".join(re.findall(r"[a-z0-9]+", text.lower()))


def number(text: object) -> float | int | None:
    """A printed figure as a number (``"10.6"`` -> 10.6, ``"35/60"`` -> 35); None for "—"."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    m = re.match(r"[+-]?\d+(?:\.\d+)?", str(text).strip())
    if not m:
        return None
    return float(m[0]) if "." in m[0] else int(m[0])


def numeric_strategies(rows: list[dict]) -> dict[str, dict]:
    """``strategy_rows`` keyed ``<strategy>.<level>.<figure slug>`` with numbers (stops: the count,
    ``stops_of``: the runs), so the README can mark e.g. ``cells.adaptive.novice.dc_strict``."""
    out: dict[str, dict] = {}
    for r in rows:
        cell = {slug(k): number(v) for k, v in r.items() if k not in ("assistant", "level")}
        cell["stops_of"] = r["n"]
        out.setdefault(parse_id(str(r["assistant"])).played_strategy, {})[str(r["level"])] = cell
    return out


def numeric_recordings(rows: list[dict]) -> dict[str, dict]:
    """``recording_rows`` (adaptive x novice beside the four recordings) keyed by figure slug with
    numbers: ``{"kg": {"offline": 10.67, "recordings": 10.75}, "early_stops": {"offline": 35, ...}}``."""
    return {slug(r["figure"]): {"offline": number(r["offline"]), "recordings": number(r["recordings"])}
            for r in rows}


def readme_table(checks, half: str = "all") -> str:
    """The README's table (section "A paper check anyone can run"), from the checks, every measured
    number marked with its key in ``benchmarks/logs/paper_check.json`` (``levels.<half>.<i>...``)."""
    def mark(i, key):
        return f"<!--fig:paper_check:levels.{half}.{i}.{key}-->"

    def share(i, c, j):
        p = c.paper_shares[j]
        return mark(i, f"shares.{FAILURE_ORDER[j].title}") + f"{c.shares[j]:.1f}" + ("" if p is None else f" ({p:.0f})")

    lines = ["| level | R % | PB % | E % | OW % | UA % | KG | DC proxy / strict | CO | stops, mean turn (1-based) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for i, c in enumerate(checks):
        kg = mark(i, "kg") + f"{c.kg:.2f}" + ("" if c.paper_kg is None else f" ({c.paper_kg:.1f})")
        co = mark(i, "co") + (f"{c.co:.3f} ({c.paper_co:.2f})" if c.paper_co is not None else f"{c.co:.3f}")
        stop = "—" if c.mean_stop_turn is None else mark(i, "mean_stop_turn_1based") + f"{c.mean_stop_turn:.1f}"
        lines.append(f"| {c.level} | " + " | ".join(share(i, c, j) for j in range(len(FAILURE_ORDER)))
                     + f" | {kg} | {mark(i, 'dc_proxy')}{c.dc_proxy:.3f} / {mark(i, 'dc_strict')}{c.dc:.3f} | {co} | "
                     + f"{mark(i, 'stops')}{c.stops}/{mark(i, 'runs')}{c.runs}, {stop} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared" / "reference"),
                    help="the paper's data folder (paper_subset/, iu_cache/, init_ks_cache.json)")
    ap.add_argument("--realworld", default=str(ROOT.parent / "shared" / "realworld"), help="for --shapes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes to play the questions in (the outcomes are the same for any number)")
    ap.add_argument("--shapes", action="store_true", help="also print the measured reply shapes")
    ap.add_argument("--json", action="store_true", help="print the per-level checks as JSON instead of tables")
    args = ap.parse_args()
    ref = Path(args.reference)
    if not (ref / "paper_subset").is_dir():
        sys.exit(f"paper_check: {ref} is not the paper's data folder (no paper_subset/); pass --reference")
    questions = load_paper_questions(ref)
    tune, held = split_halves(questions)
    tune_ids = {q.material.question_id for q in tune}
    load_before = os.getloadavg()
    t0 = os.times()
    start = time.perf_counter()
    outcomes = run_matrix(questions, seed=args.seed, workers=args.workers)
    wall = time.perf_counter() - start
    t1 = os.times()
    # this process and its finished workers: the CPU the 720 runs took whatever the machine's load
    cpu = (t1.user - t0.user) + (t1.system - t0.system) + (t1.children_user - t0.children_user) + (
        t1.children_system - t0.children_system)
    timing = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "workers": args.workers,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    simple = population(outcomes)
    halves = {"all": simple, "tuning": [o for o in simple if o.question_id in tune_ids],
              "held_out": [o for o in simple if o.question_id not in tune_ids]}
    figures = {
        "population": PAPER_POPULATION, "runs": len(outcomes), "wall_s": round(wall, 1), "workers": args.workers,
        "timing": timing, "check_rows": check_rows(level_checks(simple)),
        "mechanism": {"rows": mechanism_rows(level_checks(simple)), "finding": MECHANISM_FINDING},
        "levels": {k: level_figures(level_checks(v)) for k, v in halves.items()},
        "strategies": strategy_rows(outcomes), "recordings": recording_rows(outcomes),
        # the same two tables as numbers under keys a README marker can address
        "cells": numeric_strategies(strategy_rows(outcomes)),
        "adaptive_novice": numeric_recordings(recording_rows(outcomes)),
    }
    write_log("paper_check", figures, seeds=[args.seed], split=SPLIT,
              extra={"tuning_half": sorted(tune_ids), "held_out_half": sorted(q.material.question_id for q in held),
                     "user": "offline/knowsim", "extractor": "offline/lexical"})
    if args.json:
        print(json.dumps(figures, indent=1, default=str))
        return
    print(header(len(questions), args.seed, len(outcomes), timing) + "\n")
    print(f"Per level, {PAPER_POPULATION} on all 60 questions, beside the paper (each row: its source and the "
          "population that source describes):")
    print(table(check_rows(level_checks(simple))))
    print("\nDC against CO between levels (Table 4 nine-model means beside the offline runs):")
    print(table(mechanism_rows(level_checks(simple))))
    print("Finding: " + MECHANISM_FINDING)
    print(f"\nPer level, {PAPER_POPULATION}, by half ({SPLIT}):")
    print(table(compact(halves["all"], "all 60") + compact(halves["tuning"], "tuning half")
                + compact(halves["held_out"], "held-out half")))
    print(f"\nVirtual early stops of {PAPER_POPULATION} by task, 1-based (Table 12, validation study, prints "
          "9.1 MathQA / 7.3 ExpertQA = the reference's 0-based field; 10.1 / 8.3 1-based):")
    stop_rows = []
    for task in ("math", "expertqa"):
        for c in level_checks([o for o in simple if o.task == task]):
            stop_rows.append({"task": task, "level": c.level, "stops": f"{c.stops}/{c.runs}",
                              "overload": c.overload_stops, "mastery": c.stops - c.overload_stops,
                              "mean stop turn": "—" if c.mean_stop_turn is None else f"{c.mean_stop_turn:.1f}",
                              "Table 12 (1-based)": f"{TABLE12_STOP_TURN[task] + 1:.1f}"})
    print(table(stop_rows))
    print("\nEach strategy, all questions (beside the comparison, never pooled into it):")
    print(table(strategy_rows(outcomes)))
    print("\nAdaptive x novice beside the paper's four recorded conversations of that cell (per run: all four; "
          "per turn, each domain beside its own recordings: MathQA math_003 and math_004, ExpertQA expertqa_001):")
    print(table(recording_rows(outcomes)))
    print(f"\nREADME table ({PAPER_POPULATION}, all 60 questions; the paper's figure in brackets where at hand):")
    print(readme_table(level_checks(simple)))
    if args.shapes:
        print()
        shapes(ref, Path(args.realworld), questions)


if __name__ == "__main__":
    main()
