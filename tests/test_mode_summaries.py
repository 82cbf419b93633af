"""The stored per-turn mode columns give the same cross-run facts as the full records."""

from __future__ import annotations

from knowsim_core import registry
from knowsim_core.analysis import facts_from_summary, run_facts
from knowsim_core.config import preset
from knowsim_core.samples import get_sample
from knowsim_core.session import Simulation
from knowsim_core.storage import Store


def test_mode_summaries_match_facts_computed_from_records(db_path):
    store = Store(db_path)
    store.seed_samples()
    runs = {}
    for level, assistant in (("novice", "offline/comprehensive"), ("advanced", "offline/socratic")):
        sim = Simulation(
            material=get_sample("sample_lava_lamps").material, level=level, params=preset(max_turns=5),
            assistant=registry.resolve("assistant", assistant), user=registry.resolve("user", "offline/knowsim"),
            extractor=registry.resolve("extractor", "offline/lexical"),
        )
        sim.reset(seed=3)
        run = sim.run_to_end()
        runs[store.save_run(run)] = run
    summaries = store.mode_summaries(list(runs))
    for row in store.list_runs():
        counts, first = summaries[row.id]
        got = facts_from_summary(
            run_id=row.id, question_id=row.question_id, level=row.level, assistant=row.assistant,
            preset=row.preset, kg=row.kg, dc=row.dc, co=row.co, turns=row.turns, mode_counts=counts, first_turn=first,
        )
        assert got == run_facts(runs[row.id], run_id=row.id)
    assert sum(sum(c) for c, _ in summaries.values()) > 0
