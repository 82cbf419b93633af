"""One sha256 over every turn of the whole offline matrix: the check that a speed-up changed nothing.

Plays every sample question × 3 levels × the 5 offline assistants × seeds 1 and 2 with the learner
``offline/knowsim`` (as
``benchmarks/offline.py`` does) and hashes the JSON of every :class:`TurnRecord` — messages,
signals with their reasons, states, quantities, failure modes and stop votes — in play order.
Run it before and after a change to the offline agents: the two hashes must be equal.

tests/test_offline_fingerprint.py pins the hash (one constant, updated with an intended change of
behaviour and its reason). ``--fresh-graphs`` rebuilds every question's graph from plain data for
each conversation (as a batch that reads questions from storage does), so that per-graph caches
cannot share anything between conversations; the hash must not change either.

Usage: ``python benchmarks/offline_fingerprint.py [--seeds 1,2] [--fresh-graphs]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from knowsim_core.agents import registry
from knowsim_core.engine.graph import IUGraph
from knowsim_core.formats.samples import load_samples
from knowsim_core.engine.session import Simulation

ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")
LEVELS = ("novice", "intermediate", "advanced")


def fingerprint(seeds: tuple[int, ...] = (1, 2), *, fresh_graphs: bool = False) -> tuple[str, int, int]:
    """``(sha256 hex, conversations, turns)`` of the whole offline matrix."""
    digest = hashlib.sha256()
    runs = turns = 0
    for sample in load_samples():
        for level in LEVELS:
            for a in ASSISTANTS:
                for seed in seeds:
                    material = sample.material
                    if fresh_graphs:
                        material = dataclasses.replace(material, graph=IUGraph.from_data(material.graph.to_data()))
                    sim = Simulation(
                        material=material,
                        assistant=registry.resolve("assistant", a),
                        user=registry.resolve("user", "offline/knowsim"),
                        extractor=registry.resolve("extractor", "offline/lexical"),
                        level=level,
                    )
                    sim.reset(seed=seed)
                    run = sim.run_to_end()
                    digest.update(f"{sample.id}|{level}|{a}|{seed}|{run.stop_reason}\n".encode())
                    for rec in run.turns:
                        digest.update(json.dumps(rec.to_data(), sort_keys=True).encode())
                        digest.update(b"\n")
                    runs += 1
                    turns += len(run.turns)
    return digest.hexdigest(), runs, turns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="1,2", help="comma-separated seeds (default 1,2)")
    ap.add_argument("--fresh-graphs", action="store_true", help="a freshly built graph for every conversation")
    args = ap.parse_args()
    start = time.perf_counter()
    digest, runs, turns = fingerprint(tuple(int(s) for s in args.seeds.split(",")), fresh_graphs=args.fresh_graphs)
    print(f"{digest}  ({runs} conversations, {turns} turns, {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
