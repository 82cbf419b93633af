"""AppTest: the Realism page — empty state, scoring the offline users, confusion, a turn side by side."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.agents import registry
from knowsim_core.agents.baselines import GENERIC_MESSAGE
from knowsim_core.services.importing import import_path

PAGE = "../pages/realism.py"
CONVS = [
    {"id": "c1", "level": "9-12", "model": "tutor-x",
     "messages": [{"role": "user", "content": "How many ways can 3 books stand in a row?"},
                  {"role": "assistant", "content": "Multiply the choices for each place: 3 x 2 x 1."},
                  {"role": "user", "content": "is it 6?"},
                  {"role": "assistant", "content": "Yes, 3! = 6."},
                  {"role": "user", "content": "thanks, that makes sense"}],
     "concepts": [{"name": "Factorial", "description": "n! is the product of 1 to n: the number of orders."}],
     "initial_states": {"Factorial": "Struggling"}},
    {"id": "c2", "level": "grad", "model": "tutor-y",
     "messages": [{"role": "user", "content": "What is the derivative of x^2?"},
                  {"role": "assistant", "content": "Use the power rule: bring the 2 down."},
                  {"role": "user", "content": "I have no idea what the power rule is"}],
     "concepts": [{"name": "Power rule", "description": "The derivative of x^n is n x^(n-1)."}]},
]


def _open() -> AppTest:
    return AppTest.from_file(PAGE, default_timeout=60).run()


def test_without_human_conversations_the_page_says_how_to_import(seeded_store):
    at = _open()
    assert not at.exception
    assert any("No human conversations yet" in i.value for i in at.info)


@pytest.fixture()
def with_conversations(seeded_store, tmp_path):
    path = tmp_path / "convs.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in CONVS) + "\n")
    import_path(seeded_store, path)
    return seeded_store


def test_scoring_shows_the_table_levels_confusion_and_a_turn_side_by_side(with_conversations):
    at = _open()
    assert not at.exception
    assert at.multiselect(key="realism_users").value == ["offline/person", "offline/knowsim", "baseline/copy-last",
                                                          "baseline/generic"]
    at.button(key="realism_score").click().run()
    assert not at.exception
    # static tables, drawn within the page (issue 47): summary, hindsight beside it, the two halves of
    # the split, per level, confusion; the turns a grid to select in
    tables = [d.value for d in at.table]
    assert len(tables) == 6 and len(at.dataframe) == 1
    summary, confusion, turns = tables[0], tables[-1], at.dataframe[0].value
    assert list(summary["Simulator"]) == ["offline/person", "offline/knowsim", "baseline/copy-last",
                                          "baseline/generic", "floor/most-common-act"]
    assert list(summary["Turns (n)"]) == ["3"] * 5  # c1 turns 2 and 3, c2 turn 2
    assert len(turns) == 3
    assert confusion.drop(columns="real act").astype(int).to_numpy().sum() == 3
    at.selectbox(key="realism_user").set_value("baseline/generic").run()
    row = [i for i, (c, t) in enumerate(zip(turns["conversation"], turns["turn"])) if (c, t) == ("c1", 2)]
    at.session_state["realism_turns"] = {"selection": {"rows": row, "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert "is it 6?" in texts and GENERIC_MESSAGE in texts
    assert any(t.startswith("Person: How many ways") for t in texts)  # the history before the turn


def test_with_a_provider_the_llm_baselines_are_offered(with_conversations, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("KNOWSIM_OPENAI_MODELS", "m1")
    at = _open()
    assert not at.exception
    options = at.multiselect(key="realism_users").options
    assert {"openai/m1", "openai/m1:zs", "openai/m1:zs-cot", "openai/m1:zs-cot-prof"} <= set(options)
    assert "baseline/generic:zs" not in options
    assert len(options) == len(set(options)) and not any(o.count(":") > 1 for o in options)  # each baseline once
    assert not any("no LLM provider" in i.value for i in at.info)


def test_a_human_reading_is_labelled_in_simulate(with_conversations):
    run_id = next(r.id for r in with_conversations.search.list() if r.assistant.startswith("recorded/"))
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    at.switch_page("pages/simulate.py").run()
    assert not at.exception
    assert any("Reading of a human conversation" in c.value for c in at.caption)


def test_the_page_explains_every_metric_and_floor_in_readable_columns(with_conversations):
    from knowsim_core.evaluation import realism

    at = _open()
    at.button(key="realism_score").click().run()
    assert not at.exception
    summary = at.table[0].value
    assert {"Act agreement", "ROUGE-L", "Length ratio (simulated / real)", "IU Jaccard", "Turns (n)"} <= set(summary.columns)
    assert not {"act_agreement", "rouge_l", "length_ratio", "user"} & set(summary.columns)
    text = " ".join(m.value for m in at.markdown)
    for metric, line in realism.METRIC_HELP.items():
        assert line in text, metric
    for floor in ("baseline/copy-last", "baseline/generic", "floor/most-common-act"):
        assert f"**{floor}** — floor:" in text
    assert any("hindsight" in c.value for c in at.caption)  # which start the table used


def test_per_level_bars_carry_n_and_flag_levels_with_few_turns(with_conversations):
    from knowsim_core.evaluation import realism

    at = _open()
    at.button(key="realism_score").click().run()
    assert not at.exception
    assert any("Too few turns to compare: advanced (1 turn(s)), novice (2 turn(s))" in c.value for c in at.caption)
    report, _ = at.session_state["realism_report"]
    labels = [r["level"] for r in realism.level_rows(report, "act_agreement")]
    assert labels == ["advanced (n=1)", "novice (n=2)"]


def test_without_a_provider_the_page_says_how_to_add_the_llm_baselines(with_conversations, monkeypatch):
    import knowsim_core.agents.human  # noqa: F401  (registers the typing "human" agents, as the app does)

    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KNOWSIM_COMPAT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    at = _open()
    assert not at.exception
    info = " ".join(i.value for i in at.info)
    assert "no LLM provider is configured" in info and "OPENAI_API_KEY" in info and "KNOWSIM_COMPAT_BASE_URL" in info
    options = at.multiselect(key="realism_users").options
    assert "human" not in options and {"offline/person", "offline/knowsim", "baseline/copy-last", "baseline/generic"} <= set(options)
    assert not any(registry.spec_of(o).needs_model for o in options)  # no model offered without a provider


def test_the_headline_is_the_sampled_start_with_hindsight_beside_it(with_conversations):
    """Issue 29: the page used to score one start chosen by a radio, the hindsight file by default."""
    at = _open()
    at.button(key="realism_score").click().run()
    assert not at.exception
    report, _ = at.session_state["realism_report"]
    assert report["start"] == "sampled" and report["hindsight"]["start"] == "file"
    assert any(c.value.startswith("Headline: initial states drawn") for c in at.caption)
    hindsight = at.table[1].value  # summary, then hindsight beside it
    assert list(hindsight["Simulator"])[:2] == ["offline/person", "offline/knowsim"]
    assert any("with hindsight" in e.label for e in at.expander)


def test_cells_say_which_floor_they_beat_and_the_level_legend_has_every_series(with_conversations):
    """Issue 34, item 14: the table did not mark which cells beat which floor, and the per-level
    chart's one-row legend lost a series (st.bar_chart, bottom legend, half-width column)."""
    from knowsim_core.evaluation import realism
    from ui.people.realism_view import level_figure

    at = _open()
    at.button(key="realism_score").click().run()
    assert not at.exception
    summary = at.table[0].value
    cell = summary.loc[summary["Simulator"] == "offline/person", "Act agreement"].iloc[0]
    assert "most-common-act" in cell and "copy-last" in cell  # a mark for every floor with that metric
    floor = summary.loc[summary["Simulator"] == realism.MOST_COMMON, "Act agreement"].iloc[0]
    assert "(" not in floor  # a floor is not marked against floors
    report, _ = at.session_state["realism_report"]
    fig = level_figure(report, "act_agreement", "Act agreement")
    names = [t.name for t in fig.data]
    assert names == [*realism.DEFAULT_USERS, realism.MOST_COMMON] and all(t.showlegend for t in fig.data)
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.entrywidth == 0.5  # wraps: two a row
    levels = at.table[4].value  # summary, hindsight, two halves, levels
    assert realism.MOST_COMMON in levels.columns and "turns (n)" in levels.columns


def test_a_conversation_without_concepts_is_skipped_and_said(with_conversations, tmp_path):
    """The headline's sampled start used to stop the whole pass on a conversation without concepts."""
    bare = {"id": "c3", "level": "grad", "messages": [{"role": "user", "content": "hello?"},
                                                     {"role": "assistant", "content": "Hi."},
                                                     {"role": "user", "content": "bye"}]}
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps(bare) + "\n")
    import_path(with_conversations, path)
    at = _open()
    at.button(key="realism_score").click().run()
    assert not at.exception and not at.error
    assert any(c.value.startswith("Skipped 1 conversation(s) without a reading: c3") for c in at.caption)
    assert list(at.table[0].value["Turns (n)"]) == ["3"] * 5  # c1 and c2 only
