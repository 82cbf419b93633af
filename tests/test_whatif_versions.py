"""What-if against another version of the run's graph: states by IU id, τ per §4.2, no leftovers.

Runs are played with small scripted adapters on the lava-lamps sample (14 IUs, τ 8); the graph
versions are built from its data the way a hand correction would change it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from knowsim_core.engine.config import preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import AssistantTurn, Extraction, UserTurn
from knowsim_core.formats.samples import get_sample
from knowsim_core.engine.session import Simulation
from knowsim_core.engine.whatif import what_if
from knowsim_core.engine.signals import IUSignal
from knowsim_core.engine.state import IUState, KnowledgeState, initial_state
from knowsim_core.engine.whatif import RemapReport, remap_state, what_if_version
from tests.part2_support import runs_table_key

SAMPLE = get_sample("sample_lava_lamps")
GRAPH = SAMPLE.graph
LEAF = "IU14"  # no IU depends on it
PARAMS = preset("paper-final", max_turns=15)


@dataclass
class AskingUser:
    id: str = "test/user"

    def respond(self, ctx):
        return UserTurn(message=f"turn {ctx.turn}: and then?")


@dataclass
class Teacher:
    """Names two IUs a turn, cycling over ``order``."""

    order: tuple[str, ...]
    id: str = "test/teacher"
    reads_state: bool = False

    def reply(self, ctx):
        i = (ctx.turn - 1) * 2 % len(self.order)
        return AssistantTurn(message="Now: " + ", ".join(self.order[i : i + 2]))


@dataclass
class Labeller:
    """Labels every IU of the graph: the named ones well explained, the others not mentioned."""

    id: str = "test/labeller"

    def extract(self, ctx):
        named = ctx.assistant_message.removeprefix("Now: ").split(", ")
        return Extraction(entries=tuple(
            IUSignal.make(v, "well_explained" if v in named else "not_mentioned") for v in ctx.material.graph.index.ids
        ))


def play(*, teach: tuple[str, ...], start: dict[str, IUState]) -> Simulation:
    sim = Simulation(material=SAMPLE.material, assistant=Teacher(teach), user=AskingUser(), extractor=Labeller(),
                     params=PARAMS)
    sim.reset(seed=11, initial=KnowledgeState.from_ids(GRAPH, start))
    sim.run_to_end()
    return sim


def version(data_edit) -> IUGraph:
    data = GRAPH.to_data()
    data_edit(data)
    return IUGraph.from_data(data)


def by_id(graph: IUGraph, state: KnowledgeState) -> dict[str, tuple]:
    return {v: tuple(state[graph.index.label_of[v]]) for v in graph.index.ids}


@pytest.fixture(scope="module")
def run():
    """Everything partial except the leaf (struggling); the leaf is never taught, so it never rises."""
    teach = tuple(v for v in GRAPH.index.ids if v != LEAF)
    start = {v: IUState.PARTIAL for v in teach} | {LEAF: IUState.STRUGGLING}
    r = play(teach=teach, start=start).run
    assert r.virtual_stop[1] != "mastery" and r.final_state.state_of(GRAPH.index.label_of[LEAF]) == IUState.STRUGGLING
    return r


def reword(data, node_id="IU5", concept="Colours on a shelf as arrangements"):
    for n in data["nodes"]:
        if n["id"] == node_id:
            n["concept"] = concept


def drop_leaf(data):
    data["nodes"] = [n for n in data["nodes"] if n["id"] != LEAF]
    data["edges"] = [e for e in data["edges"] if LEAF not in (e["from"], e["to"])]


# ---------------------------------------------------------------------- a reworded concept
def test_rewording_a_concept_keeps_every_state(run):
    new = version(reword)
    alt = what_if(run, 1, graph=new)
    res = what_if_version(run, new)
    assert res.run == alt
    old_label = GRAPH.index.label_of["IU5"]
    assert run.initial_state.state_of(old_label) == IUState.PARTIAL  # nothing to lose if it were unaware
    assert by_id(new, alt.initial_state) == by_id(GRAPH, run.initial_state)
    for a, b in zip(run.turns, alt.turns):
        assert by_id(new, b.state_after) == by_id(GRAPH, a.state_after), f"turn {a.turn}"
        assert set(b.state_after) == set(new.index.labels)  # no leftover old label
        assert b.quantities.effective_load == a.quantities.effective_load
    assert alt.metrics() == run.metrics()
    assert res.remap == RemapReport(
        kept=tuple(v for v in GRAPH.index.ids if v != "IU5"),
        reworded=(("IU5", old_label, new.index.label_of["IU5"]),), added=(), removed=(), tau_before=8, tau_after=8,
    )


# ---------------------------------------------------------------------- a removed IU
def test_a_shrunk_version_recomputes_tau_and_drops_the_removed_iu_everywhere(run):
    new = version(drop_leaf)
    alt = what_if(run, 1, graph=new)
    res = what_if_version(run, new)
    assert res.run == alt
    tau = PARAMS.capacity(13)
    assert (tau, run.tau) == (7, 8)  # spec §4.2: round(0.55 · 13) = 7, round(0.55 · 14) = 8
    assert alt.tau == tau and all(t.quantities.overload_threshold == tau for t in alt.turns)
    gone = GRAPH.index.label_of[LEAF]
    assert gone not in alt.initial_state
    for t in alt.turns:
        assert gone not in t.state_before and gone not in t.state_after
        assert all(s.id != LEAF for s in t.signals) and not any(LEAF in note for note in t.notes)
    assert res.remap.removed == ((LEAF, gone),) and res.remap.added == () and res.remap.reworded == ()
    assert (res.remap.tau_before, res.remap.tau_after) == (8, 7)


def test_a_removed_iu_left_behind_no_longer_blocks_mastery(run):
    """Every remaining IU is taught to knows_well; only the removed leaf stayed behind."""
    alt = what_if(run, 1, graph=version(drop_leaf))
    stop, reason = alt.virtual_stop
    assert reason == "mastery"
    assert all(e.state == IUState.KNOWS_WELL for e in alt.turns[stop].state_after.values())
    assert stop == next(i for i, t in enumerate(alt.turns) if all(e.state == 3 for e in t.state_after.values()))


# ---------------------------------------------------------------------- an added IU
def add_after_leaf(data):
    data["nodes"].append({"id": "IU15", "concept": "Checking the answer by simulation", "abstraction_level": 0.0,
                          "description": "Re-derive 7/20 by listing cases."})
    data["edges"].append({"from": LEAF, "to": "IU15", "delta_l": None, "reason": "checks the result"})


def test_an_added_iu_starts_as_the_level_sampler_gives_it_seeded_by_the_run(run):
    new = version(add_after_leaf)
    first, again = what_if_version(run, new), what_if_version(run, new)
    assert first == again  # deterministic
    sampled = initial_state(new, run.level, run.params, seed=run.seed)
    label = new.index.label_of["IU15"]
    assert first.remap.added == (("IU15", sampled.state_of(label)),)
    assert first.run.initial_state.state_of(label) == sampled.state_of(label)
    assert first.run.tau == PARAMS.capacity(15) == 8
    assert all(s.id != "IU15" for t in first.run.turns for s in t.signals)  # never labelled: not mentioned
    assert by_id(GRAPH, run.initial_state) == {v: e for v, e in by_id(new, first.run.initial_state).items() if v != "IU15"}


def test_remap_reads_absent_as_unaware_and_drops_a_foreign_leftover_label():
    new = version(reword)
    ids = GRAPH.index.ids
    old_state = KnowledgeState.from_ids(GRAPH, {v: IUState.KNOWS_WELL for v in ids})
    sparse = {lab: e for lab, e in old_state.items() if lab != GRAPH.index.label_of["IU2"]}
    sparse["IU99: a concept of an older graph"] = old_state[GRAPH.index.label_of["IU1"]]
    state, report = remap_state(KnowledgeState(sparse), GRAPH, new, tau=(8, 8))
    assert list(state) == list(new.index.labels)
    assert state.state_of(new.index.label_of["IU2"]) == IUState.UNAWARE and "IU2" in report.kept
    assert all(state.state_of(new.index.label_of[v]) == IUState.KNOWS_WELL for v in ids if v != "IU2")
    assert report.removed == (("IU99: a concept of an older graph",) * 2,) and report.added == ()


def test_report_lines_say_what_was_remapped(run):
    lines = what_if_version(run, version(lambda d: (reword(d), drop_leaf(d)))).remap.lines()
    assert lines[0] == "τ 8 → 7 (13 IUs)"
    assert any(line.startswith("reworded, state kept: IU5") for line in lines)
    assert f"removed: {LEAF}" in lines


# ---------------------------------------------------------------------- the what-if view
def test_runs_page_what_if_on_a_version_says_what_was_remapped(run, seeded_store):
    from streamlit.testing.v1 import AppTest

    from knowsim_core.engine.whatif import NEW_IU_START

    rid = seeded_store.runs.save(run)
    seeded_store.questions.add_graph_version(SAMPLE.material.question_id, version(drop_leaf), note="no check step")
    at = AppTest.from_file("../pages/runs.py", default_timeout=60).run()
    rows = [r.id for r in seeded_store.search.list()]
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [rows.index(rid)], "columns": [], "cells": []}}
    at.run()
    pick = next(o for o in at.selectbox(key="wi_graph").options if o.endswith("no check step"))
    at.selectbox(key="wi_graph").set_value(pick).run()
    assert not at.exception, [e.value for e in at.exception]
    report = "\n".join(t.value for t in at.text)
    assert report.splitlines() == what_if_version(run, version(drop_leaf)).remap.lines()
    assert "τ 8 → 7 (13 IUs)" in report and f"removed: {LEAF}" in report
    assert any(NEW_IU_START in c.value for c in at.caption)
    assert any(m.value.startswith("**Re-played on this graph version from turn 1**") for m in at.markdown)
