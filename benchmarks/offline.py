"""Offline matrix speed: conversations per second and milliseconds per turn by component.

Runs every sample question × 3 levels × 5 offline assistants (15 turns each, virtual stop) and
times the user, assistant, extractor and the rules (everything else in ``Simulation.step``).
Usage: ``python benchmarks/offline.py [--seeds 1,2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from knowsim_core import registry
from knowsim_core.samples import load_samples
from knowsim_core.session import Simulation

ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")
LEVELS = ("novice", "intermediate", "advanced")


class Timed:
    """Wraps an agent's one method and adds its wall time to a shared counter."""

    def __init__(self, agent, method: str, bucket: str, totals: dict[str, float]):
        self._agent, self._method, self._bucket, self._totals = agent, method, bucket, totals
        self.id = agent.id
        self.reads_state = getattr(agent, "reads_state", False)
        setattr(self, method, self._call)

    def _call(self, ctx):
        start = time.perf_counter()
        try:
            return getattr(self._agent, self._method)(ctx)
        finally:
            self._totals[self._bucket] += time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    seeds = [int(s) for s in ap.parse_args().seeds.split(",")]
    totals: dict[str, float] = defaultdict(float)
    runs = turns = 0
    start = time.perf_counter()
    for sample in load_samples():
        for level in LEVELS:
            for a in ASSISTANTS:
                for seed in seeds:
                    sim = Simulation(
                        material=sample.material,
                        assistant=Timed(registry.resolve("assistant", a), "reply", "assistant", totals),
                        user=Timed(registry.resolve("user", "offline/knowsim"), "respond", "user", totals),
                        extractor=Timed(registry.resolve("extractor", "offline/lexical"), "extract", "extractor", totals),
                        level=level,
                    )
                    sim.reset(seed=seed)
                    run = sim.run_to_end()
                    runs += 1
                    turns += len(run.turns)
    wall = time.perf_counter() - start
    agents = totals["user"] + totals["assistant"] + totals["extractor"]
    rules = wall - agents
    print(f"offline matrix: {len(load_samples())} samples x {len(LEVELS)} levels x {len(ASSISTANTS)} assistants "
          f"x {len(seeds)} seed(s) = {runs} conversations, {turns} turns in {wall:.2f} s")
    print(f"conversations per second: {runs / wall:.1f}")
    print("ms per turn: " + ", ".join(
        f"{k} {1000 * v / turns:.3f}" for k, v in
        (("user", totals["user"]), ("assistant", totals["assistant"]), ("extractor", totals["extractor"]),
         ("rules+records", rules), ("total", wall))))


if __name__ == "__main__":
    main()
