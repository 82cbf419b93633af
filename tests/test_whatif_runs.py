"""What-ifs that become runs (issue 47, item 2): label edits, a saved what-if linked to its source,
a batch what-if whose before/after shares equal separate runs' shares, and the two commands.

The runs are real offline runs (the ``run`` command on the lava-lamps sample, 14 IUs, τ 8).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from knowsim_core import cli
from knowsim_core.engine.facts import run_facts
from knowsim_core.engine.signals import AttemptType
from knowsim_core.engine.whatif import LabelEdit, apply_edits, edits_spec, parse_edit, parse_edits
from knowsim_core.errors import ConfigError
from knowsim_core.evaluation.analysis import shares_by_level
from knowsim_core.services import whatif
from knowsim_core.services.fork import fork_link
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

QID = "sample_lava_lamps"
EDIT = "turn=2,iu=IU2,quality=well_explained"  # IU2 shallow at turn 2 of the novice run: partial → knows well


@pytest.fixture(scope="module")
def db_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("whatif") / "studio.db"
    for level, seed in (("novice", 1), ("novice", 2), ("advanced", 1)):
        assert cli.main(["run", "--question", QID, "--level", level, "--assistant", "offline/adaptive",
                         "--seed", str(seed), "--max-turns", "8", "--tag", "src", "--db", str(path)]) == 0
    return path


@pytest.fixture()
def store(db_file, tmp_path):
    """A copy of the module's database per test (what-ifs stored by one test stay out of the next)."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(db_file.read_bytes())
    return Store(copy)


def _ids(store, **f):
    return [r.id for r in store.search.list(RunFilter(tag="src", **f), order="created_asc")]


# ---------------------------------------------------------------------- the --set syntax
def test_an_edit_reads_and_writes_the_same_syntax():
    e = parse_edit(" turn=1, iu=IU10 ,quality=well_explained,attempt=reasoning")
    assert e == LabelEdit(1, "IU10", "well_explained", "reasoning")
    assert parse_edit(e.spec()) == e
    assert parse_edit("turn=all,iu=IU3,attempt=none").turn is None
    assert parse_edits(edits_spec([e, parse_edit("turn=all,iu=IU3,attempt=none")]))[1].iu == "IU3"


@pytest.mark.parametrize("text, says", [
    ("turn=1,iu=IU10", "say what to change"),
    ("iu=IU10,quality=shallow", "turn missing"),
    ("turn=0,iu=IU1,quality=shallow", "not a turn number"),
    ("turn=1,iu=IU1,quality=great", "not one of well_explained"),
    ("turn=1,iu=IU1,qualty=shallow", "unknown key 'qualty'"),
    ("turn=1,turn=2,iu=IU1,quality=shallow", "given twice"),
    ("turn=1 iu=IU1", "not key=value"),
])
def test_a_bad_edit_is_one_line_naming_what_is_wrong(text, says):
    with pytest.raises(ConfigError) as exc:
        parse_edit(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_edits_apply_to_every_turn_add_a_missing_entry_and_say_what_they_skip(store):
    run = store.runs.load(_ids(store, level="novice")[0])
    res = apply_edits(run, [LabelEdit(None, "IU3", attempt="reasoning"), LabelEdit(99, "IU1", "shallow"),
                            LabelEdit(1, "IU99", "shallow")])
    assert res.first_turn == 1 and len(res.skipped) == 2
    assert "has 8 turn(s)" in res.skipped[0] and "IU99 is not an IU" in res.skipped[1]
    assert all(t.node("IU3").attempt is AttemptType.REASONING for t in res.run.turns)
    assert [t.user_message for t in res.run.turns] == [t.user_message for t in run.turns]  # messages as recorded
    bare = run.turns[0]
    trimmed = run.with_turns((replace(bare, signals=tuple(s for s in bare.signals if s.id != "IU1")),))
    added = apply_edits(trimmed, [LabelEdit(1, "IU1", "well_explained")])
    assert added.run.turns[0].node("IU1").quality == "well_explained"
    assert apply_edits(run, [LabelEdit(1, "IU1", run.turns[0].node("IU1").quality)]).first_turn is None


# ---------------------------------------------------------------------- one saved what-if
def test_a_saved_what_if_is_a_run_linked_to_its_source_with_its_edits_and_tags(store):
    src = _ids(store, level="novice")[0]
    rid, w = whatif.save(store, src, [parse_edit(EDIT)], tags=["ablation", "IU2 taught"])
    saved = store.runs.load(rid)
    assert saved.turns == w.run.turns and saved.metrics().knowledge_gain > store.runs.load(src).metrics().knowledge_gain
    assert fork_link(saved) == (src, 2)
    assert whatif.whatif_edits(saved) == (parse_edit(EDIT),)
    assert whatif.describe(saved) == f"what-if of run {src} — labels edited: {EDIT}"
    assert store.search.tags_of([rid])[rid] == ["IU2 taught", "ablation"]
    row, src_row = store.search.get_row(rid), store.search.get_row(src)
    assert (row.status, row.graph_version_id) == ("finished", src_row.graph_version_id)
    assert store.search.count(RunFilter(origin="forked")) == 1
    with pytest.raises(ConfigError):  # a bad tag stores nothing
        whatif.save(store, src, [parse_edit(EDIT)], tags=["a,b"])
    assert store.search.count(RunFilter(origin="forked")) == 1


# ---------------------------------------------------------------------- a batch what-if
EDITS = [parse_edit(EDIT), parse_edit("turn=all,iu=IU1,quality=not_mentioned")]


def test_a_batch_what_ifs_after_shares_equal_the_shares_of_its_runs_made_one_by_one(store):
    report = whatif.save_batch(store, "src", EDITS)
    sources = _ids(store)
    assert sorted(report.stored) == sorted(sources) and report.tag == whatif.default_tag("src", EDITS)
    one_by_one = [run_facts(apply_edits(store.runs.load(s), EDITS).run, run_id=s) for s in sources]
    stored = store.search.facts(RunFilter(tag=report.tag))
    assert [(s.level, s.runs, s.counts) for s in shares_by_level(stored)] == \
           [(s.level, s.runs, s.counts) for s in shares_by_level(one_by_one)]
    before = store.search.facts(RunFilter(tag="src"))
    assert len(before) == 3 and {f.run_id for f in before} == set(sources)  # the what-ifs stay out of "before"
    assert shares_by_level(before) != shares_by_level(stored)  # the edits did change the figures
    for s, w in report.stored.items():
        assert fork_link(store.runs.load(w))[0] == s


def test_running_a_batch_what_if_again_stores_nothing_new_and_a_taken_tag_is_refused(store):
    first = whatif.save_batch(store, "src", EDITS, tag="ablate")
    again = whatif.save_batch(store, "src", EDITS, tag="ablate")
    assert again.stored == {} and again.already == first.stored
    with pytest.raises(ConfigError, match="not what-ifs"):
        whatif.save_batch(store, "src", EDITS[:1], tag="ablate")
    with pytest.raises(ConfigError, match="must differ"):
        whatif.save_batch(store, "src", EDITS, tag="src")
    with pytest.raises(ConfigError, match="no stored run"):
        whatif.save_batch(store, "nothing-here", EDITS)
    assert store.search.count(RunFilter(tag="ablate")) == 3


def test_a_batch_keeps_runs_the_edits_do_not_change_so_both_sides_hold_the_same_runs(store):
    report = whatif.save_batch(store, "src", [LabelEdit(50, "IU1", "shallow")], tag="too-late")
    assert len(report.stored) == 3 and len(report.unchanged) == 3 and len(report.not_applied) == 3
    assert "unchanged by the edits" in report.summary()


# ---------------------------------------------------------------------- the commands
def test_whatif_and_diff_commands_name_the_turn_and_the_rule(store, capsys):
    src = _ids(store, level="novice")[0]
    db = ["--db", str(store.path)]
    assert cli.main(["whatif", src, "--set", EDIT, "--save", "--tag", "mine", *db]) == 0
    out = capsys.readouterr().out
    assert "First divergence: turn 2, teaching quality — IU2 was labelled shallow in A, well_explained in B" in out
    rid = out.strip().splitlines()[-1].split()[3].rstrip(",")
    assert cli.main(["diff", src, rid, "--json", *db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["first_turn"], data["first_rule"]) == (2, "teaching quality")
    assert cli.main(["diff", src, rid, "--turn", "2", *db]) == 0
    out = capsys.readouterr().out
    assert "turn 2, IU by IU:" in out and "IU2   teaching quality" in out


def test_batch_whatif_prints_before_and_after_as_failures_does(store, capsys):
    db = ["--db", str(store.path)]
    assert cli.main(["whatif", "--batch", "src", "--set", EDITS[0].spec(), "--set", EDITS[1].spec(), "--as", "ab",
                     "--json", *db]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli.main(["failures", "--tag", "ab", "--json", *db]) == 0
    after = json.loads(capsys.readouterr().out)["by_level"]
    for r in data["rows"]:
        if r["kind"] == "share":
            assert r["after"] == after[r["level"]]["modes"][r["measure"]]
    assert cli.main(["whatif", "--batch", "src", "--set", EDIT, "--as", "ab2", *db]) == 0
    out = capsys.readouterr().out
    assert "3 run(s) stored under tag 'ab2'" in out and "novice        PREREQ-BLOCKED" in out


@pytest.mark.parametrize("argv, says", [
    (["whatif", "x"], "say what to change"),
    (["whatif", "--batch", "src", "--set", EDIT, "--save"], "drop RUN_ID, --save"),
    (["whatif", "--set", EDIT], "name the run"),
    (["whatif", "nope", "--set", EDIT], "nope"),
])
def test_whatif_refuses_what_it_cannot_do_in_one_line(store, capsys, argv, says):
    assert cli.main([*argv, "--db", str(store.path)]) != 0
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_a_what_if_on_another_graph_version_is_saved_on_that_version(store, capsys):
    from knowsim_core.engine.graph import IUGraph

    src = _ids(store, level="novice")[0]
    data = store.runs.load(src).graph.to_data()
    data["nodes"] = [n for n in data["nodes"] if n["id"] != "IU14"]  # a leaf: nothing depends on it
    data["edges"] = [e for e in data["edges"] if "IU14" not in (e.get("from"), e.get("to"))]
    store.questions.add_graph_version(QID, IUGraph.from_data(data), note="no IU14")
    v2 = store.questions.latest_graph_version(QID)
    assert cli.main(["whatif", src, "--graph-version", str(v2.version), "--save", "--db", str(store.path)]) == 0
    rid = capsys.readouterr().out.strip().splitlines()[-1].split()[3].rstrip(",")
    saved = store.runs.load(rid)
    assert store.search.get_row(rid).graph_version_id == v2.id and "IU14" not in saved.graph.index.ids
    assert saved.tau == 7 and whatif.whatif_edits(saved) == ()
    assert whatif.describe(saved) == f"what-if of run {src} — re-played on graph v{v2.version}"
    with pytest.raises(ConfigError, match="no graph version 99"):
        whatif.compute(store, src, [], graph_version=99)
