"""One IU's story (issue 47 item 3): per turn its state, its part of the turn's load, carry, ceiling,
failure mode, its part in DC and the words that taught it — in the core, in Simulate (a graph click,
the IU box, ``?iu=`` and a heatmap click open it) and beside the metrics' meaning (KG / DC / CO in
the glossary with their scale and a worked line).

Every figure is checked against another source: the mode and why against ``explain --json``, the load
parts against the turn's recorded load, the DC parts against the turn's DC counters, the words
against the reply they are quoted from.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.engine.metrics import METRIC_GLOSSARY, kg_line, raw_progress
from knowsim_core.engine.rules import load_parts
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState
from knowsim_core.evaluation.iu_story import (DC_ABSORBED, DC_MISSED, DC_NOT_ABSORBED, DC_NOT_TEACHABLE,
                                              EVIDENCE_MATCH, EVIDENCE_READER, iu_story)
from knowsim_core.services.runner import start_run

QID = "sample_lava_lamps"


@pytest.fixture()
def stored(seeded_store):
    """A seeded offline run with overloaded turns (a comprehensive tutor and a novice)."""
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/comprehensive", seed=3,
                     max_turns=4)
    live.run_to_end()
    return seeded_store, live.run_id


def explain_json(store, run_id: str, capsys) -> dict[int, dict[str, dict]]:
    capsys.readouterr()
    assert main(["explain", run_id, "--db", str(store.path), "--json"]) == 0
    return {t["turn"]: {iu["id"]: iu for iu in t["ius"]} for t in json.loads(capsys.readouterr().out)["turns"]}


# ---------------------------------------------------------------------- the core
def test_every_story_row_says_what_explain_says(stored, capsys):
    store, rid = stored
    run = store.runs.load(rid)
    explained = explain_json(store, rid, capsys)
    for iu in run.graph.index.ids:
        story = iu_story(run, iu)
        assert story.start == run.initial_state.state_of(run.graph.index.label_of[iu])
        assert [t.turn for t in story.turns] == sorted(explained)
        for t in story.turns:
            want = explained[t.turn][iu]
            assert (t.mode.title if t.mode else None, t.why, t.before.key, t.after.key) == (
                want["mode"], want["why"], want["before"], want["after"]), (iu, t.turn)


def test_load_parts_add_up_to_the_turns_load_and_carry_and_ceiling_are_the_records(stored):
    store, rid = stored
    run = store.runs.load(rid)
    assert any(t.quantities.overload for t in run.turns)  # the dropoff and the carry are exercised
    for rec in run.turns:
        parts = load_parts(rec.signals, {n.id: int(n.pre) for n in rec.nodes}, run.params)
        assert sum(parts.values()) == pytest.approx(rec.quantities.effective_load, abs=1e-9)
        for node in rec.nodes:
            t = iu_story(run, node.id).turns[rec.turn - 1]
            assert t.load == parts.get(node.id, 0.0) and t.turn_load == rec.quantities.effective_load
            assert t.share == pytest.approx(parts.get(node.id, 0.0) / rec.quantities.effective_load)
            assert (t.carry, t.prior_carry, t.ceiling, t.ceiling_used, t.step_share) == (
                node.carry, node.prior_carry, node.ceiling_pre, node.ceiling, node.efficiency)


def test_the_dc_parts_count_the_turns_dc_counters(stored):
    """Summed over a turn's IUs, the story's DC parts are the counters of eq. 2 the turn recorded."""
    store, rid = stored
    run = store.runs.load(rid)
    seen = set()
    for rec in run.turns:
        rows = [iu_story(run, n.id).turns[rec.turn - 1] for n in rec.nodes]
        seen |= {t.dc for t in rows}
        q = rec.quantities
        assert sum(t.mentions for t in rows if t.dc == DC_ABSORBED) == q.absorbed_numerator
        assert sum(t.mentions for t in rows) == q.ic_denominator
        assert sum(1 for t in rows if t.teachable) == q.zpd_size
        assert all((t.dc in (DC_ABSORBED, DC_NOT_ABSORBED, DC_MISSED)) == t.teachable for t in rows if t.dc)
    assert {DC_ABSORBED, DC_MISSED} <= seen and seen & {DC_NOT_ABSORBED, DC_NOT_TEACHABLE}


def test_the_words_are_the_readers_sentences_or_a_word_match_or_none_known(stored):
    store, rid = stored
    run = store.runs.load(rid)
    taught = [(iu, t, rec) for iu in run.graph.index.ids for t, rec in zip(iu_story(run, iu).turns, run.turns)
              if t.mentions]
    assert taught
    for iu, t, rec in taught:  # offline/lexical: the sentences it read, each quoted from the reply
        assert t.evidence_kind == (EVIDENCE_READER if t.evidence else "")
        assert all(s in rec.assistant_message for s in t.evidence) and t.reason
    assert any(t.evidence for _, t, _ in taught)
    # the same turns read by a model extractor: no words of its own, so the reply's sentences that use
    # the IU's words are shown as a word match, or none are known
    other = replace(run, adapters=tuple((r, "openai/gpt-4o-mini" if r == "extractor" else a) for r, a in run.adapters))
    for iu, t, rec in taught:
        m = iu_story(other, iu).turns[t.turn - 1]
        assert m.evidence_kind == (EVIDENCE_MATCH if m.evidence else "") and set(t.evidence) <= set(m.evidence)
    assert "found by word match" in iu_story(other, taught[0][0]).evidence_note()
    with pytest.raises(KeyError):
        iu_story(run, "IU999")


def test_kg_counts_state_steps_the_worked_line():
    """The issue's misreading: "KG 14" beside 2 of 14 IUs known well. KG counts steps."""
    labels = [f"iu {i}" for i in range(14)]
    start = KnowledgeState({lab: LabelState(IUState.PARTIAL if i < 2 else IUState.UNAWARE) for i, lab in enumerate(labels)})
    end = KnowledgeState({lab: LabelState(IUState.KNOWS_WELL if i < 2 else IUState.STRUGGLING)
                          for i, lab in enumerate(labels)})
    assert raw_progress(start, end) == 14
    line = kg_line(start, end)
    assert line.startswith("KG 14 = 14 state steps over 14 IUs") and "2 of 14 known well now, 0 at the start" in line
    assert "KG 14 = 14 state steps" in METRIC_GLOSSARY["KG"] and "2 of the 14 known well" in METRIC_GLOSSARY["KG"]
    for term in ("DC", "CO"):
        assert "from 0 to 1" in METRIC_GLOSSARY[term] and f"{term} 0." in METRIC_GLOSSARY[term]


# ---------------------------------------------------------------------- Simulate
APP_TIMEOUT = 60


def open_simulate(**query: str) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=APP_TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("pages/simulate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def story_table(at: AppTest):
    return next(d for d in at.dataframe if d.key and d.key.startswith("sim_story_table_0_"))


def test_a_link_opens_the_story_with_explains_figures(stored, capsys):
    store, rid = stored
    run = store.runs.load(rid)
    explained = explain_json(store, rid, capsys)
    at = open_simulate(run=rid, turn="2", iu="IU2")
    assert any(e.label.startswith("Story of IU2 over the run") for e in at.expander)
    table = story_table(at).value
    assert list(table["turn"]) == [0, *range(1, len(run.turns) + 1)] and list(table[""]) == ["", "", "▶", "", ""]
    for _, row in table.iloc[1:].iterrows():
        want = explained[row["turn"]]["IU2"]
        assert (row["mode"] or None, row["why"]) == (want["mode"], want["why"])
    story = iu_story(run, "IU2")
    assert list(table["DC"].iloc[1:]) == [t.dc for t in story.turns]
    assert list(table["load"].iloc[1:]) == [
        (f"{t.load:.2f} of {t.turn_load:.1f} ({t.share:.0%})" + (" · OVERLOADED" if t.overloaded else "")) if t.load
        else "" for t in story.turns]
    assert at.query_params["iu"] == ["IU2"] or at.query_params["iu"] == "IU2"


def test_a_graph_click_opens_that_ius_story_and_a_row_click_moves_the_turn(stored):
    store, rid = stored
    at = open_simulate(run=rid, turn="1")
    assert not any(d.key and d.key.startswith("sim_story_table") for d in at.dataframe)  # closed: nothing drawn
    at.session_state["sim_graph_0"] = {"selected": "IU3"}  # a click on IU3 in the graph
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert story_table(at).key == "sim_story_table_0_IU3_1"
    assert at.query_params["iu"] in ("IU3", ["IU3"])
    table = story_table(at)
    at.session_state[table.key] = {"selection": {"rows": [3], "columns": [], "cells": []}}  # turn 3's row
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["turn"] in ("3", ["3"]) and story_table(at).key == "sim_story_table_0_IU3_3"
    # the IU box picks another IU; the link follows
    at.selectbox(key="sim_story_pick").set_value("IU5").run()
    assert story_table(at).key == "sim_story_table_0_IU5_3" and at.query_params["iu"] in ("IU5", ["IU5"])


def test_the_failure_heatmap_names_the_iu_of_a_clicked_cell(stored):
    from ui.runs.failure_views import heatmap_figure, heatmap_iu

    store, rid = stored
    run = store.runs.load(rid)
    fig = heatmap_figure(run)
    iu = list(fig.data[0].y)[1]
    assert heatmap_iu({"x": 2, "y": iu}, run) == iu and heatmap_iu({"x": 2, "y": "nope"}, run) is None


def test_the_metrics_help_works_kg_out_for_the_run(stored):
    store, rid = stored
    run = store.runs.load(rid)
    at = open_simulate(run=rid, turn="3")
    kg = next(m for m in at.metric if m.label == "Knowledge gain (KG)")
    assert kg_line(run.initial_state, run.turns[2].state_after) in kg.proto.help
    assert METRIC_GLOSSARY["KG"] in kg.proto.help


def test_the_metrics_reference_page_says_what_the_glossary_says():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "metrics.md").read_text(encoding="utf-8")
    for term, text in METRIC_GLOSSARY.items():
        assert f"**{term}** — {text}" in page, term


def test_another_run_starts_with_no_story_or_the_one_its_link_names(stored, seeded_store):
    """A story belongs to the runs it was opened on: a second run opened by a link with the same
    ``?iu=`` (two clicks on Failure modes' heatmap) opens it there too; one without it opens none."""
    store, first = stored
    second = start_run(store, question_id=QID, level="advanced", assistant_id="offline/comprehensive", seed=4,
                       max_turns=3)
    second.run_to_end()
    at = open_simulate(run=first, turn="1", iu="IU2")
    assert story_table(at).key == "sim_story_table_0_IU2_1"
    at.query_params["run"], at.query_params["turn"], at.query_params["iu"] = second.run_id, "2", "IU2"
    at.switch_page("pages/home.py").run()  # as a link from another page arrives
    at.switch_page("pages/simulate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert story_table(at).key == "sim_story_table_0_IU2_2"
    at.query_params["run"], at.query_params["turn"] = first, "1"
    del at.query_params["iu"]
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/simulate.py").run()
    assert not any(d.key and d.key.startswith("sim_story_table") for d in at.dataframe)
