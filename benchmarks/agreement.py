"""Agreement: its speed and its figures on the shared conversations, and an offline demonstration of
``agreement --simulated``. Writes ``benchmarks/logs/agreement.json``.

1. **Speed and figures.** Import the shared real conversations into a temporary database, then time
   ``python -m knowsim_core agreement --json`` end to end as a user runs it (a fresh process: imports,
   opening the database, reading every run, the bootstrap intervals: whole, part A, part B). The
   figures logged are the command's own: each score's AUC in its stated direction with its interval,
   on the whole and both parts of the stated hash split, the within-conversation AUCs, the verdicts
   ("replicates" / "does not replicate" / "not distinguishable from the baseline"), where the 👎 come
   from, and the sign agreement.
2. **The paper's validation, demonstrated offline** (``--no-demo`` skips it). People are *invented*
   from the sample questions (``assets/samples``): two per (level, tutor) cell, the tutors being the
   offline assistants (an offline assistant's model id is its agent id, so a batch can match them),
   with ratings and correctness written down below (:data:`RATINGS`) — not measured from anyone. A
   batch plays their questions, levels and tutors once with KnowSim's user simulator and once with the
   copy-last baseline simulator, and ``agreement --simulated`` compares each with the people cell by
   cell. **This demonstrates the computation, not KnowSim's validity**: the people are made up.

Usage: ``python benchmarks/agreement.py [ANNOTATIONS.json] [--repeat N] [--no-demo]``
(default: ../shared/realworld/...). Goal: the command under 10 s offline for the 25 conversations;
the CPU time is logged too, since the wall time depends on what else the machine is doing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.cli import main as cli  # noqa: E402
from knowsim_core.services.importing import import_path  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.storage.run_filter import RunFilter  # noqa: E402

DEFAULT = ROOT.parent / "shared/realworld/simulatorarena_math/math_tutoring_annotations_redacted_for_benchmarking.json"
GOAL_S = 10.0
SAMPLES = ("sample_power_remainder_mod13", "sample_triangle_coordinates", "sample_dice_reroll_game",
           "sample_theatre_seats_series")
LEVELS = ("novice", "intermediate", "advanced")
TUTORS = ("offline/adaptive", "offline/comprehensive", "offline/socratic")
# Invented ratings (1–10) of the two people of each (level, tutor) cell: made up for the demonstration,
# chosen so that some pairs of tutors differ clearly (|Cliff's δ| ≥ 0.33) and some do not.
RATINGS = {
    ("novice", "offline/adaptive"): (8, 9), ("novice", "offline/comprehensive"): (6, 7),
    ("novice", "offline/socratic"): (3, 4),
    ("intermediate", "offline/adaptive"): (7, 8), ("intermediate", "offline/comprehensive"): (4, 5),
    ("intermediate", "offline/socratic"): (7, 6),
    ("advanced", "offline/adaptive"): (6, 7), ("advanced", "offline/comprehensive"): (3, 3),
    ("advanced", "offline/socratic"): (8, 9),
}
SIMULATORS = (("offline/knowsim", "demo-knowsim"), ("baseline/copy-last", "demo-copy-last"))


def _run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(args)
    return code, out.getvalue(), err.getvalue()


def speed_and_figures(path: Path, repeat: int) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agreement.db"
        start = time.perf_counter()
        report = import_path(Store(db), path)
        print(f"import: {len(report.runs)} conversations, {report.judgments} judged turns in "
              f"{time.perf_counter() - start:.2f} s")
        walls, cpus = [], []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "knowsim_core", "agreement", "--db", str(db), "--json"],
                                 cwd=ROOT, capture_output=True, text=True, check=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            print(f"agreement --json: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU")
    data = json.loads(out.stdout)
    v = data["votes"]
    print(f"{v['n']} judged turns, {data['conversations']['n']} conversations; best of {repeat}: {min(walls):.2f} s "
          f"(goal < {GOAL_S:.0f} s) — {'met' if min(walls) < GOAL_S else 'NOT met'}")

    def auc(e: dict) -> dict:
        return {"auc": e["auc"], "ci": e["ci"]}
    rep = data["replication"]
    figures = {
        "n": {"turns": v["n"], "up": v["up"], "down": v["down"], "conversations": data["conversations"]["n"],
              "thumbs_conversations": v["conversations"],  # conversations holding at least one thumb
              "part_A": {"turns": data["parts"]["A"]["votes"]["n"], "conversations": data["parts"]["A"]["conversations"]["n"]},
              "part_B": {"turns": data["parts"]["B"]["votes"]["n"], "conversations": data["parts"]["B"]["conversations"]["n"]}},
        "scores": {s: {"direction": e["direction"], "whole": auc(e), "A": auc(data["parts"]["A"]["votes"]["scores"][s]),
                       "B": auc(data["parts"]["B"]["votes"]["scores"][s]), "verdict": rep["scores"][s]["verdict"]}
                   for s, e in v["scores"].items()},
        "within_conversation": {s: {**auc(e), "pairs": e["pairs"], "conversations": e["conversations"],
                                    "verdict": rep["within_conversation"][s]["verdict"]}
                                for s, e in data["within_conversation"].items()},
        "versus_baselines": rep["versus_baselines"], "replicates": data["replicates"],
        # the reader these verdicts rest on and how far it is validated on graphs of this size
        "reader": {d: {k: e[k] for k in ("text", "verdicts_rest_on", "mentioned_share", "inside_range", "validation")}
                   for d, e in data.get("reader", {}).items()},
        "down_from": v["down_from"],
        "rating": {m: {"spearman": e["spearman"], "ci": e["ci"], "verdict": rep["rating"][m]["verdict"]}
                   for m, e in data["conversations"]["rating"].items()},
        "correctness": {m: {**auc(e), "verdict": rep["correctness"][m]["verdict"]}
                        for m, e in data["conversations"]["correctness"].items()},
        "pairs": {k: data["pairs"][k] for k in ("n", "agree", "p", "conclusive")},
        "unread": {k: data["unread"][k] for k in ("n", "up", "down")},
        "seconds": {"best_wall": min(walls), "walls": walls, "cpu": cpus, "cpu_min": min(cpus), "cpu_max": max(cpus),
                    "goal": GOAL_S},
        # the table's "KnowSim, within a conversation" row per part (README: part A / part B cells)
        "within_conversation_parts": {p: {s: {**auc(e), "pairs": e["pairs"], "conversations": e["conversations"]}
                                          for s, e in data["parts"][p]["within_conversation"].items()}
                                      for p in ("A", "B")},
    }
    return figures, {"split": data["split"]["note"]}


def _people_jsonl(folder: Path) -> Path:
    lines = []
    samples = [json.loads((ROOT / "assets/samples" / f"{s}.json").read_text(encoding="utf-8")) for s in SAMPLES]
    k = 0
    for (level, tutor), ratings in RATINGS.items():
        for rating in ratings:
            sample = samples[k % len(samples)]
            k += 1
            lines.append({"id": f"demo-{k}", "level": level, "model": tutor, "rating": rating,
                          "correctness": "correct" if rating >= 6 else "incorrect",
                          "messages": [{"role": "user", "content": sample["question"]},
                                       {"role": "assistant", "content": "Let us start from what the question gives."}],
                          "concepts": [{"name": n["concept"], "description": n["description"]}
                                       for n in sample["graph"]["nodes"]]})
    path = folder / "invented_people.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def demonstration() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "demo.db")
        assert _run_cli(["import", str(_people_jsonl(Path(tmp))), "--db", db])[0] == 0
        questions = ",".join(sorted(r.question_id for r in Store(db).search.list(RunFilter(user="human"), limit=1000)))
        timings = {}
        for user, tag in SIMULATORS:
            start = time.perf_counter()
            code, _, err = _run_cli(["batch", "--questions", questions, "--levels", ",".join(LEVELS), "--assistants",
                                     ",".join(TUTORS), "--user", user, "--max-turns", "4", "--tag", tag, "--db", db])
            assert code == 0, err
            timings[tag] = time.perf_counter() - start
        start = time.perf_counter()
        code, out, err = _run_cli(["agreement", "--db", db, "--simulated", ",".join(t for _, t in SIMULATORS),
                                   "--json"])
        assert code == 0, err
        timings["agreement_simulated"] = time.perf_counter() - start
        sim = json.loads(out)["simulated"]
        code, text, _ = _run_cli(["agreement", "--db", db, "--simulated", ",".join(t for _, t in SIMULATORS)])
        print("\n".join(line for line in text.splitlines() if line.startswith(("Simulated", "  user", "    "))))
        # the refusal: a batch that plays one tutor only
        _run_cli(["batch", "--questions", questions, "--levels", "novice", "--assistants", TUTORS[0],
                  "--max-turns", "1", "--tag", "demo-partial", "--db", db])
        code, _, refusal = _run_cli(["agreement", "--db", db, "--simulated", "demo-partial"])
        print(f"refusal (exit {code}): {refusal.strip()[:300]}…")
    per_sim = {}
    for user, e in sim["simulators"].items():
        per_sim[user] = {"matched_runs": e["matched_runs"], "runs": e["runs"], "cells": len(e["cells"]),
                         "sign": {m: {k: s[k] for k in ("n", "agree", "p", "conclusive")} for m, s in e["sign"].items()},
                         "spearman": {m: {ms: r["rho"] for ms, r in x.items()} for m, x in e["spearman"].items()}}
    return {"note": "invented people from the sample questions: demonstrates the computation, not KnowSim's validity",
            "people": sum(len(r) for r in RATINGS.values()), "simulators": per_sim,
            "refusal_exit_code": code, "seconds": timings}


def main() -> None:
    args = sys.argv[1:]
    repeat, demo = 3, "--no-demo" not in args
    args = [a for a in args if a != "--no-demo"]
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i:i + 2]
    path = Path(args[0]) if args else DEFAULT
    figures, extra = speed_and_figures(path, repeat)
    if demo:
        figures["simulated_demo"] = demonstration()
    write_log("agreement", figures, seeds=[0], split=f"{path.name}: whole and the stated hash split ({extra['split']})",
              extra={"repeat": repeat, "bootstrap": "2000 resamples over conversations, seed 0"})


if __name__ == "__main__":
    main()
