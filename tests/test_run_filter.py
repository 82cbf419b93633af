"""RunFilter: one owner for the run filters of Saved runs, Failure modes, ``runs`` and ``failures``
(issue 32). Round trips URL ↔ argparse ↔ SQL, and the two bugs the four hand-written copies had:
``failures --graph-version 99999999999999999999`` was an OverflowError traceback, and
``/failures?batch=-`` counted every run (the old page had no "no batch" choice and dropped it)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.errors import StorageError
from knowsim_core.storage.run_filter import FIELDS, NO_BATCH_URL, ORIGINS, RATED, RunFilter, where_clause
from knowsim_core.storage.questions import QUESTION_KINDS
from tests.part2_support import make_run

QID = "sample_lava_lamps"
_text = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_characters="-"),
                min_size=1, max_size=12)
filters = st.builds(
    RunFilter,
    question_id=st.none() | _text, level=st.none() | _text, assistant=st.none() | _text,
    user=st.none() | _text, extractor=st.none() | _text, preset=st.none() | _text,
    seed=st.none() | st.integers(0, 2**63 - 1), tag=st.none() | _text,
    graph_version=st.none() | st.integers(1, 1_000_000), kind=st.none() | st.sampled_from(QUESTION_KINDS),
    origin=st.none() | st.sampled_from(ORIGINS), rated=st.none() | st.sampled_from(RATED),
    correctness=st.none() | _text, find=st.none() | _text, text=st.none() | _text,
    batch_tag=st.none() | _text | st.just(NO_BATCH_URL),
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    RunFilter.add_arguments(p)
    return p


def _argv(params: dict[str, str]) -> list[str]:
    option = {f.param: f.option for f in FIELDS if f.param}
    return [x for param, value in params.items() for x in (option[param], value)]


@settings(max_examples=150, deadline=None)
@given(filters)
def test_url_argparse_and_sql_agree_for_any_filter(f):
    params = f.to_params()
    from_url = RunFilter.from_params(params)
    from_args = RunFilter.from_args(_parser().parse_args(_argv(params)))
    assert from_url == f == from_args
    assert from_url.where() == from_args.where() == where_clause(**f.keywords())


def test_no_batch_is_one_value_everywhere():
    f = RunFilter(no_batch=True)
    assert f.to_params() == {"batch": "-"}
    assert RunFilter.from_params({"batch": "-"}) == f == RunFilter(batch_tag="-")
    assert RunFilter.from_args(_parser().parse_args(["--batch", "-"])) == f
    assert f.where() == (" WHERE r.batch_tag IS NULL", [])


def test_bad_values_are_refused_by_name_and_dropped_from_a_link():
    with pytest.raises(StorageError, match="--graph-version: expected a whole number from 1 to 1000000"):
        RunFilter(graph_version=99999999999999999999)
    with pytest.raises(StorageError, match="--origin"):
        RunFilter(origin="aliens")
    with pytest.raises(StorageError, match="no batch"):
        RunFilter(no_batch=True, batch_tag="b1")
    with pytest.raises(StorageError, match="graph version"):
        where_clause(graph_version=10**20)  # was an OverflowError from sqlite3
    link = RunFilter.from_params({"gv": "99999999999999999999", "origin": "aliens", "level": "novice"})
    assert link == RunFilter(level="novice")


def _store_with_batches(store):
    g = store.questions.latest_graph_version(QID).graph
    ids = {}
    for seed, tag in [(1, None), (2, None), (3, "b1"), (4, "b1"), (5, "b2")]:
        ids[seed] = store.runs.save(make_run(g, question_id=QID, level="novice", assistant_id="a1", seed=seed,
                                            max_turns=3), batch_tag=tag)
    return ids


def test_failures_refuses_a_huge_graph_version_with_a_usage_error(seeded_store, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["failures", "--db", str(seeded_store.path), "--graph-version", "99999999999999999999"])
    assert exc.value.code == 2
    assert "expected a whole number from 1 to 1000000" in capsys.readouterr().err


def test_both_commands_take_no_batch(seeded_store, capsys):
    _store_with_batches(seeded_store)
    assert main(["failures", "--db", str(seeded_store.path), "--batch", "-", "--json"]) == 0
    import json
    assert json.loads(capsys.readouterr().out)["runs"] == 2
    assert main(["runs", "--db", str(seeded_store.path), "--batch", "-", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 2


def test_failure_modes_link_with_batch_dash_counts_the_runs_of_no_batch(seeded_store):
    _store_with_batches(seeded_store)
    at = AppTest.from_file("../pages/failures.py", default_timeout=60)
    at.query_params["batch"] = "-"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    caption = next(c.value for c in at.caption if "runs ·" in c.value)
    assert caption.startswith("2 runs"), caption  # the old page: 5 runs, and the parameter dropped
    assert at.query_params["batch"] == ["-"] or at.query_params["batch"] == "-"
    for key in ("fm_rated", "fm_batch"):  # Failure modes now has the rating and no-batch filters
        assert key in at.session_state
