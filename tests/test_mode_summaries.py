"""The stored per-turn mode columns give the same cross-run facts as the full records.

``store.search.facts`` reads mode totals and first turns from the per-turn scalar columns (no turn
record is parsed) — the only path that does since ``Store.mode_summaries`` (used by no view) was
removed; this checks it against :func:`run_facts` over the records themselves.
"""

from __future__ import annotations

from knowsim_core.agents import registry
from knowsim_core.evaluation.analysis import run_facts
from knowsim_core.engine.config import preset
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.session import Simulation
from knowsim_core.storage import Store


def test_stored_mode_columns_give_the_facts_computed_from_records(db_path):
    store = Store(db_path)
    store.questions.seed_samples()
    runs = {}
    for level, assistant in (("novice", "offline/comprehensive"), ("advanced", "offline/socratic")):
        sim = Simulation(
            material=get_sample("sample_lava_lamps").material, level=level, params=preset(max_turns=5),
            assistant=registry.resolve("assistant", assistant), user=registry.resolve("user", "offline/knowsim"),
            extractor=registry.resolve("extractor", "offline/lexical"),
        )
        sim.reset(seed=3)
        run = sim.run_to_end()
        runs[store.runs.save(run)] = run
    facts = store.search.facts(status="all")
    assert sorted(f.run_id for f in facts) == sorted(runs)
    for got in facts:
        assert got == run_facts(runs[got.run_id], run_id=got.run_id, status="finished")
    assert sum(sum(f.mode_counts) for f in facts) > 0
