"""Runs as a researcher files them (issue 24): tags, filters by graph version, source, origin and
rating, "Find in ids" over run ids, batch groups with the runs of no batch, deep links, and the
command line's ``run --tag --graph-version`` and ``failures --batch --graph-version``."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.errors import ConfigError
from knowsim_core.evaluation.analysis import level_summary
from knowsim_core.storage.run_filter import RunFilter

from tests.part2_support import make_run

QID = "sample_lava_lamps"


@pytest.fixture()
def db(seeded_store):
    store = seeded_store
    v1 = store.questions.latest_graph_version(QID)
    first = v1.graph.nodes[0]
    edited = v1.graph.with_node(first.model_copy(update={"description": first.description + " Fixed."}))
    v2 = store.questions.add_graph_version(QID, edited, note="fixed", parent_id=v1.id)
    store.on_v1 = [store.runs.save(make_run(v1.graph, question_id=QID, level="novice", seed=s, max_turns=3),
                                  batch_tag="sweep") for s in (1, 2)]
    store.on_v2 = store.runs.save(make_run(edited, question_id=QID, level="novice", seed=3, max_turns=3),
                                 graph_version_id=v2)
    forked = make_run(v1.graph, question_id=QID, level="advanced", seed=4, max_turns=3)
    from dataclasses import replace

    store.fork = store.runs.save(replace(forked, meta=(("forked_from", store.on_v1[0]), ("forked_at_turn", 2))))
    rated = make_run(v1.graph, question_id=QID, level="advanced", seed=5, max_turns=3)
    store.rated = store.runs.save(replace(rated, meta=(("rating", 8),)))
    return store


def test_tags_are_added_once_removed_and_filtered_on(db):
    assert db.runs.add_tags(db.on_v2, ["baseline", "baseline", " ablation "]) == ["baseline", "ablation"]
    assert db.runs.add_tags(db.on_v2, ["baseline"]) == []
    assert db.search.tags_of([db.on_v2]) == {db.on_v2: ["ablation", "baseline"]}
    assert [r.id for r in db.search.list(RunFilter(tag="baseline"))] == [db.on_v2]
    assert db.search.count(RunFilter(tag="sweep")) == 2  # a batch's tag is a tag too
    assert db.runs.remove_tag(db.on_v2, "baseline") and not db.runs.remove_tag(db.on_v2, "baseline")
    assert db.search.all_tags() == ["ablation"]
    db.runs.delete([db.on_v2])
    assert db.search.all_tags() == []


@pytest.mark.parametrize("tag,msg", [("", "cannot be empty"), ("a,b", "comma"), ("x" * 41, "at most 40")])
def test_a_bad_tag_is_refused_in_one_line_and_nothing_is_saved(db, tag, msg):
    """The caller's input, so a ConfigError as a bad batch tag is (it was a StorageError from a second
    check_tag in storage, issue 32; the rule is text.tags.check_run_tag now)."""
    with pytest.raises(ConfigError, match=msg):
        db.runs.add_tags(db.on_v2, ["good", tag])
    assert db.search.tags_of([db.on_v2]) == {}


def test_filters_by_graph_version_source_origin_and_rating(db):
    ids = lambda **f: sorted(r.id for r in db.search.list(RunFilter(**f)))  # noqa: E731
    assert ids(graph_version=2) == [db.on_v2]
    assert db.on_v2 not in ids(graph_version=1) and len(ids(graph_version=1)) == 4
    assert ids(origin="forked") == [db.fork]
    assert db.fork not in ids(origin="agents")
    assert ids(rated="rated") == [db.rated] and db.rated not in ids(rated="unrated")
    assert len(ids(kind="sample")) == 5 and ids(kind="real") == []
    assert db.search.graph_version_numbers() == [1, 2]


def test_a_recorded_conversation_is_not_counted_as_typed(db):
    """A real conversation's user is a person (``human``) but nobody typed it in the Studio: it is
    its own origin, and neither "typed" nor "agents" (nor the typed count a view warns about)."""
    from dataclasses import replace

    from knowsim_core.engine.records import HUMAN_ID

    graph = db.questions.latest_graph_version(QID).graph
    base = make_run(graph, question_id=QID, level="novice", seed=6, max_turns=3)
    typed = db.runs.save(replace(base, adapters=tuple({**base.adapter, "user": HUMAN_ID}.items())))
    recorded = db.runs.save(replace(base, adapters=tuple({**base.adapter, "user": HUMAN_ID, "assistant": "recorded/gpt-4o"}.items())))
    ids = lambda **f: sorted(r.id for r in db.search.list(RunFilter(**f)))  # noqa: E731
    assert ids(origin="typed") == [typed]
    assert ids(origin="recorded") == [recorded]
    assert typed not in ids(origin="agents") and recorded not in ids(origin="agents")
    assert db.search.population_mix(RunFilter(question_id=QID), status="all")[2] == 1


def test_find_in_ids_finds_a_run_by_part_of_its_id(db):
    part = db.on_v2[2:6]
    assert db.on_v2 in [r.id for r in db.search.list(RunFilter(find=part))]


def test_batch_groups_include_the_runs_of_no_batch(db):
    groups = {g.tag: g.runs for g in db.search.batch_groups(unbatched=True)}
    assert groups == {"sweep": 2, "": 3}
    assert db.search.count(RunFilter(no_batch=True)) == 3


def test_run_files_a_run_under_tags_on_the_chosen_graph_version(db, capsys):
    assert main(["run", "--db", str(db.path), "--question", QID, "--level", "novice", "--assistant",
                 "offline/simple", "--max-turns", "2", "--graph-version", "1", "--tag", "pilot", "--tag", "v1"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    rid = head.split()[1].rstrip(":")
    assert "graph v1" in head and "tags pilot, v1" in head
    row = db.search.get_row(rid)
    assert db.questions.graph_version_numbers([row.graph_version_id]) == {row.graph_version_id: 1}
    assert db.search.tags_of([rid]) == {rid: ["pilot", "v1"]}


def test_run_refuses_a_bad_tag_before_it_stores_a_run(db, capsys):
    before = db.search.count()
    assert main(["run", "--db", str(db.path), "--question", QID, "--level", "novice", "--assistant",
                 "offline/simple", "--max-turns", "2", "--tag", "a,b"]) != 0
    assert "comma" in capsys.readouterr().err
    assert db.search.count() == before, "no run is left behind by a refused tag"


def test_run_refuses_a_graph_version_the_question_does_not_have(db, capsys):
    assert main(["run", "--db", str(db.path), "--question", QID, "--level", "novice", "--assistant",
                 "offline/simple", "--graph-version", "7"]) != 0
    assert "has no graph version 7 (it has v1, v2)" in capsys.readouterr().err


def test_failures_by_batch_and_graph_version_is_the_same_population_as_the_store(db, capsys):
    assert main(["failures", "--db", str(db.path), "--batch", "sweep", "--graph-version", "1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == level_summary(db.search.facts(RunFilter(batch_tag="sweep", graph_version=1)))
    assert got["runs"] == 2
    assert main(["failures", "--db", str(db.path), "--graph-version", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1


# ---------------------------------------------------------------------- pages (AppTest)
def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(f"../pages/{page}.py", default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_failures_batch_link_survives_a_reload(db):
    at = _open("failures", batch="sweep")
    assert at.session_state["fm_batch"] == "sweep"
    assert any(c.value.startswith("2 runs · finished runs") for c in at.caption)
    at.run()  # a reload keeps the filter (it lives in the URL, not only in session state)
    assert at.query_params["batch"] == ["sweep"] or at.query_params["batch"] == "sweep"
    fresh = _open("failures", batch="sweep", gv="1")  # a new session from the same link
    assert fresh.session_state["fm_batch"] == "sweep" and fresh.session_state["fm_gv"] == 1


def test_saved_runs_filters_are_deep_links_and_tags_are_edited_there(db):
    from tests.part2_support import runs_table_key

    at = _open("runs", origin="forked")
    table = next(d for d in at.dataframe if d.key and d.key.startswith("runs_table")).value
    assert list(table["run"]) == [db.fork[:12]]
    assert list(table.columns[:6]) == ["run", "status", "turns", "KG", "DC", "CO"]
    at.selectbox(key="runs_origin").set_value(None).run()
    at.selectbox(key="runs_gv").set_value(2).run()
    assert at.query_params["gv"] in ("2", ["2"])
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    at.text_input(key=f"runs_new_tag_{db.on_v2}").input("baseline, hand-checked")
    next(b for b in at.button if b.label == "Add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert db.search.tags_of([db.on_v2]) == {db.on_v2: ["baseline", "hand-checked"]}
    tagged = _open("runs", tag="baseline")
    assert list(next(d for d in tagged.dataframe if d.key.startswith("runs_table")).value["tags"]) == [
        "baseline, hand-checked"]


def test_across_runs_says_when_it_pools_graph_versions_and_forks(db):
    at = _open("failures", status="all")
    warning = " ".join(w.value for w in at.warning)
    assert "graph versions v1, v2" in warning and "1 fork of other runs" in warning, warning
    assert db.search.population_mix(status="all") == ([1, 2], 1, 0)
    narrowed = _open("failures", status="all", gv="1", origin="agents")
    assert not [w for w in narrowed.warning if "pool" in w.value]


def test_runs_columns_stay_aligned_with_a_long_assistant_id(db, capsys):
    g = db.questions.latest_graph_version(QID).graph
    long_id = "compat/some-very-long-local-model-name@localhost"
    db.runs.save(make_run(g, question_id=QID, level="novice", seed=9, max_turns=2, assistant_id=long_id))
    assert main(["runs", "--db", str(db.path)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("…")]
    header, rows = lines[0], lines[1:]
    assert any(long_id in ln for ln in rows)
    for name in ("KG", "question"):  # every column starts where its header does
        at = header.index(name)
        assert all(ln[at - 2:at] == "  " and ln[at] != " " for ln in rows if name == "question"), (header, rows)
    kg_end = header.index("KG") + 2  # right-aligned numbers end under their header
    assert all(ln[kg_end - 1] != " " and ln[kg_end] == " " for ln in rows), (header, rows)
