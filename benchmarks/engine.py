"""Engine speed: microseconds per turn.

* chained replay of the shared recordings (../shared/reference; skipped when absent);
* a synthetic 100-IU graph with random labels.

Run: .venv/bin/python benchmarks/engine.py
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from knowsim_core.engine.config import preset  # noqa: E402
from knowsim_core.engine.graph import IUGraph  # noqa: E402
from knowsim_core.engine.rules import apply_turn  # noqa: E402
from knowsim_core.engine.session import play_turn  # noqa: E402
from knowsim_core.engine.signals import IUSignal, normalize_entries  # noqa: E402
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState  # noqa: E402

REF = ROOT.parent / "shared" / "reference"
PARAMS = preset()
REFERENCE_MS_PER_TURN = 3.7  # the paper's reference implementation on the same labels (issue 2)


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        n = fn()
        best = min(best, (time.process_time() - t0) / n)
    return best * 1e6


def chained(graph, s0, turns, tau, *, full_record: bool):
    def go():
        state = s0
        history = []
        for i, signals in enumerate(turns):
            if full_record:
                rec = play_turn(graph, state, signals, turn=i + 1, tau=tau, params=PARAMS, history=history)
                history.append(rec.quantities)
                state = rec.state_after
            else:
                state = apply_turn(graph, state, signals, tau=tau, params=PARAMS).state
        return len(turns)

    return go


def recordings():
    from knowsim_core.formats.reference import iter_structured, load_iu_cache, load_run_file

    graphs = load_iu_cache(REF / "iu_cache" / "math.json")
    for rec in iter_structured(load_run_file(REF / "examples" / "mathqa_structured_adaptive_novice.json")):
        g = graphs[rec["problem_id"]]
        g.index  # build the derived structure once, as a session does
        yield (
            rec["problem_id"], g, KnowledgeState.from_data(rec["initial_knowledge_state"]),
            [normalize_entries(t) for t in rec["iu_analysis_history"]], rec["initial_overload_threshold"],
        )


def synthetic(n: int = 100, n_turns: int = 15, seed: int = 0):
    rng = random.Random(seed)
    nodes = [
        {"id": f"IU{i + 1}", "concept": f"concept {i}", "abstraction_level": round(1 - i / n, 2), "description": "d"}
        for i in range(n)
    ]
    edges = []
    for i in range(1, n):
        for j in rng.sample(range(max(0, i - 10), i), k=min(i, rng.randint(1, 3))):
            edges.append({"from": f"IU{j + 1}", "to": f"IU{i + 1}", "delta_l": 0.1, "reason": ""})
    g = IUGraph.from_data({"knowledge_areas": ["a"], "nodes": nodes, "edges": edges})
    g.index
    s0 = KnowledgeState({lab: LabelState(IUState(rng.randint(0, 3))) for lab in g.index.labels})
    qualities = ["well_explained", "shallow", "not_mentioned", "not_mentioned"]
    turns = [
        tuple(IUSignal.make(i, rng.choice(qualities), rng.choice(["reasoning", "articulation", "none", "none"])) for i in g.index.ids)
        for _ in range(n_turns)
    ]
    return g, s0, turns, PARAMS.capacity(n)


def main() -> None:
    print("KnowSim engine benchmark (CPU µs per turn, the best of many short batches, so other load on the machine does not inflate it)")
    if REF.is_dir():
        for pid, g, s0, turns, tau in recordings():
            rules_us = best_of(lambda: sum(chained(g, s0, turns, tau, full_record=False)() for _ in range(25)), 40)
            rec_us = best_of(lambda: sum(chained(g, s0, turns, tau, full_record=True)() for _ in range(25)), 40)
            print(
                f"  recording {pid} ({len(g.nodes)} IUs, {len(turns)} turns, chained x25, best of 40): "
                f"rules {rules_us:7.1f} µs/turn, full TurnRecord {rec_us:7.1f} µs/turn "
                f"-> {REFERENCE_MS_PER_TURN * 1000 / rules_us:5.0f}x / {REFERENCE_MS_PER_TURN * 1000 / rec_us:4.0f}x "
                f"faster than the reference's {REFERENCE_MS_PER_TURN} ms"
            )
    else:
        print(f"  (reference recordings not found at {REF}; skipped)")
    g, s0, turns, tau = synthetic()
    rules_us = best_of(lambda: sum(chained(g, s0, turns, tau, full_record=False)() for _ in range(4)), 25)
    rec_us = best_of(lambda: sum(chained(g, s0, turns, tau, full_record=True)() for _ in range(4)), 25)
    print(f"  synthetic 100-IU graph ({len(g.edges)} edges, 15 turns, chained x4, best of 25): rules {rules_us:7.1f} µs/turn, "
          f"full TurnRecord {rec_us:7.1f} µs/turn")


if __name__ == "__main__":
    main()
