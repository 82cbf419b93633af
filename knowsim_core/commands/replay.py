"""``replay RUNS.json --graphs IU_CACHE.json``: re-run recorded labels through the engine.

DC is Studio's strict value; the recordings' own DC is the reference code's legacy proxy, so the
output puts that proxy (recomputed, equal to the recording's ``absorbed_ic_f1``) beside it with
the reason, instead of leaving 0.0116 next to the recording's 0.093 unexplained (spec §6.2).
"""

from __future__ import annotations

import argparse
import json

from knowsim_core import engine, formats
from knowsim_core.engine.config import PRESETS, preset
from knowsim_core.errors import FormatError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", metavar="RUNS.json", help="reference run file (a JSON list of records)")
    p.add_argument("--graphs", required=True, metavar="IU_CACHE.json", help="the IU cache the runs used")
    p.add_argument("--preset", default="paper-final", choices=sorted(PRESETS), help="rule preset")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def replay_records(runs_path: str, graphs_path: str, preset_name: str) -> list[dict]:
    reference, state_names = formats.reference, engine.state.STATE_NAMES
    graphs = reference.load_iu_cache(graphs_path)
    params = preset(preset_name)
    out = []
    for rec in reference.iter_structured(reference.load_run_file(runs_path)):
        pid = rec["problem_id"]
        if pid not in graphs:
            raise FormatError(f"{graphs_path} has no graph for {pid}; pass the IU cache of this run file")
        run = reference.run_from_reference(rec, graphs[pid], params)
        history = rec.get("knowledge_state_history") or []
        turns = []
        for t in run.turns:
            after = t.state_after
            turns.append(
                {
                    "turn": t.turn,
                    "states": {lab: state_names[e.state] for lab, e in after.items()},
                    "fractional_progress": {lab: e.carry if e.carry is not None else 0.0 for lab, e in after.items()},
                    "effective_load": t.quantities.effective_load,
                    "overload": t.quantities.overload,
                    "matches_recording": t.turn < len(history) and after.to_data() == history[t.turn],
                }
            )
        m = run.metrics()
        stop, reason = run.virtual_stop
        out.append(
            {
                "problem_id": pid,
                "turns": turns,
                "virtual_early_stop_turn": stop,
                "virtual_early_stop_reason": reason,
                "recorded_virtual_early_stop_turn": rec.get("virtual_early_stop_turn"),
                "metrics": {
                    "knowledge_gain": m.knowledge_gain,
                    "delivery_calibration": m.delivery_calibration,
                    "delivery_calibration_proxy": engine.records.recorded_proxy_dc(run),
                    "delivery_calibration_proxy_note": engine.metrics.PROXY_DC_REASON,
                    "cognitive_overload": m.cognitive_overload,
                },
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    records = replay_records(args.runs, args.graphs, args.preset)
    if args.json:
        slim = [
            {
                "problem_id": r["problem_id"],
                "turns": [{k: t[k] for k in ("turn", "states", "fractional_progress", "effective_load", "overload")} for t in r["turns"]],
                "virtual_early_stop_turn": r["virtual_early_stop_turn"],
                "metrics": r["metrics"],
            }
            for r in records
        ]
        print(json.dumps({"records": slim}, ensure_ascii=False))
        return 0
    if not records:
        print("no structured records in this file (baseline records carry no knowledge state)")
    for r in records:
        n_match = sum(t["matches_recording"] for t in r["turns"])
        print(f"\n{r['problem_id']}: {len(r['turns'])} turns, {n_match} match the recording exactly")
        print(f"{'turn':>4}  {'load':>7}  {'over':>4}  {'U/S/P/K':>11}  recorded")
        for t in r["turns"]:
            counts = [sum(1 for s in t["states"].values() if s == name) for name in engine.state.STATE_NAMES]
            print(
                f"{t['turn']:>4}  {t['effective_load']:>7.2f}  {'yes' if t['overload'] else 'no':>4}  "
                f"{'/'.join(map(str, counts)):>11}  {'=' if t['matches_recording'] else 'differs'}"
            )
        m = r["metrics"]
        stop, reason = r["virtual_early_stop_turn"], r["virtual_early_stop_reason"]
        where = "none" if stop is None else f"turn index {stop} ({reason})"
        print(f"early stop: {where} (recorded: {r['recorded_virtual_early_stop_turn']})")
        print(
            f"KG {m['knowledge_gain']}  DC {m['delivery_calibration']:.4f} (strict; recorded proxy DC "
            f"{m['delivery_calibration_proxy']:.4f})  CO {m['cognitive_overload']:.4f}"
        )
        print(f"proxy DC: {m['delivery_calibration_proxy_note']}")
    return 0
