"""``relabel RUNS.json --graphs IU_CACHE.json --extractor ID``: an extractor against recorded labels.

Runs the extractor over every recorded turn of a reference run file (the same two messages,
pre-turn state and history the recorded extractor saw) and compares its teaching-quality and
attempt-type labels with the recorded ones: confusion matrices, accuracy, macro-F1. A research
tool as much as a test: it compares extractors on the same transcripts.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from knowsim_core import agents, engine, evaluation, formats
from knowsim_core.errors import FormatError

if TYPE_CHECKING:
    from knowsim_core.engine.ports import Message


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", metavar="RUNS.json", help="reference run file (a JSON list of records)")
    p.add_argument("--graphs", required=True, metavar="IU_CACHE.json", help="the IU cache the runs used")
    p.add_argument("--extractor", default="offline/lexical", metavar="ID", help="extractor id (default offline/lexical)")
    p.add_argument("--json", action="store_true", help="print the new labels as JSON")
    p.add_argument("--protocol", choices=("plain", "loro"), default="plain",
                   help="loro: offline/lexical refitted leave-one-recording-out, in-sample beside it, with the "
                        "majority and keyword baselines (knowsim_core.evaluation.extractor_eval)")


def relabel_records(runs_path: str, graphs_path: str, extractor_id: str) -> list[dict[str, Any]]:
    """``[{problem_id, turns: [{turn, labels: {id: {...}}, recorded: {id: {...}}}]}]``."""
    ports, reference = engine.ports, formats.reference
    graphs = reference.load_iu_cache(graphs_path)
    extractor = agents.registry.resolve("extractor", extractor_id)
    out = []
    for rec in reference.iter_structured(reference.load_run_file(runs_path)):
        pid = rec["problem_id"]
        if pid not in graphs:
            raise FormatError(f"{graphs_path} has no graph for {pid}; pass the IU cache of this run file")
        graph = graphs[pid]
        material = ports.QuestionMaterial(pid, rec.get("problem", ""), rec.get("reference_answer", ""), graph, rec.get("task", ""))
        convo = rec.get("conversation") or []
        states = rec.get("knowledge_state_history") or []
        history: list[Message] = []
        turns = []
        for i, raw in enumerate(rec["iu_analysis_history"]):
            if 2 * i + 1 >= len(convo):
                break
            user, assistant = convo[2 * i][1], convo[2 * i + 1][1]
            state = engine.state.KnowledgeState.from_data(states[i] if i < len(states) else rec["initial_knowledge_state"])
            ex = extractor.extract(ports.ExtractorContext(
                turn=i + 1, material=material, state=state, history=tuple(history),
                user_message=user, assistant_message=assistant, seed=i + 1,
            ))
            labels = {s.id: {"teaching_quality": s.teaching_quality, "user_attempt_type": s.attempt.value}
                      for s in ex.entries if s.id}
            recorded = {s.id: {"teaching_quality": s.teaching_quality, "user_attempt_type": s.attempt.value}
                        for s in engine.signals.normalize_entries(raw or []) if s.id}
            turns.append({"turn": i + 1, "labels": labels, "recorded": recorded})
            history += [ports.Message("user", user), ports.Message("assistant", assistant)]
        out.append({"problem_id": pid, "turns": turns})
    return out


def compare(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    ev, agreement = evaluation.extractor_eval, evaluation.scoring.agreement
    tq, at = [], []
    for r in records:
        for t in r["turns"]:
            for iu, rec in t["recorded"].items():
                new = t["labels"].get(iu)
                if new is None:
                    new = {"teaching_quality": "not_mentioned", "user_attempt_type": "none"}
                tq.append((rec["teaching_quality"], new["teaching_quality"]))
                at.append((rec["user_attempt_type"], new["user_attempt_type"]))
    return {"teaching_quality": agreement(tq, ev.QUALITIES), "user_attempt_type": agreement(at, ev.ATTEMPTS)}


def _print_matrix(title: str, stats: dict[str, Any], classes: tuple[str, ...]) -> None:
    print(f"\n{title}: accuracy {stats['accuracy']:.3f}, macro-F1 {stats['macro_f1']:.3f} over {stats['n']} labels")
    width = max(len(c) for c in classes) + 2
    print("recorded \\ new".ljust(width + 2) + "".join(c.rjust(width) for c in classes))
    for g in classes:
        print(f"  {g.ljust(width)}" + "".join(str(stats["matrix"][g][p]).rjust(width) for p in classes))
    print("  per-class F1: " + ", ".join(f"{c} {f:.3f}" for c, f in stats["f1"].items()))


def _run_protocol(args: argparse.Namespace) -> int:
    ev = evaluation.extractor_eval
    turns = ev.load_turns(args.runs, args.graphs)
    if not turns:
        print("no structured records in this file (baseline records carry no recorded labels)")
        return 0
    print("macro-F1 (teaching quality / attempt type); in-sample = fitted and scored on every recording, "
          "leave-one-recording-out = fitted on the others, scored on the held-out one")
    for name, method in ev.METHODS.items():
        res = ev.protocol(turns, method)
        cell = lambda s: f"{s['teaching_quality']['macro_f1']:.3f} / {s['user_attempt_type']['macro_f1']:.3f}"  # noqa: E731
        folds = ", ".join(f"{r} {cell(s)}" for r, s in res["folds"].items())
        print(f"{name:<9} in-sample {cell(res['in_sample'])}; leave-one-recording-out "
              f"{cell(res['loro']) if res['loro'] else 'n/a'} ({folds})")
        if res["loro"]:
            for k in ("teaching_quality", "user_attempt_type"):
                print(f"          held-out per-class F1 {k}: "
                      + ", ".join(f"{c} {f:.3f}" for c, f in res["loro"][k]["f1"].items()))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.protocol == "loro":
        return _run_protocol(args)
    records = relabel_records(args.runs, args.graphs, args.extractor)
    if args.json:
        slim = [{"problem_id": r["problem_id"], "turns": [{"turn": t["turn"], "labels": t["labels"]} for t in r["turns"]]}
                for r in records]
        print(json.dumps({"records": slim}, ensure_ascii=False))
        return 0
    if not records:
        print("no structured records in this file (baseline records carry no recorded labels)")
        return 0
    for r in records:
        print(f"{r['problem_id']}: {len(r['turns'])} turns relabelled with {args.extractor}")
    stats = compare(records)
    _print_matrix("teaching quality", stats["teaching_quality"], evaluation.extractor_eval.QUALITIES)
    _print_matrix("user attempt type", stats["user_attempt_type"], evaluation.extractor_eval.ATTEMPTS)
    return 0
