"""``python -m knowsim_core relabel``: agreement of an extractor with recorded LLM labels."""

from __future__ import annotations

import json

import pytest

from knowsim_core.cli import main
from knowsim_core.commands.relabel import compare, relabel_records
from knowsim_core.evaluation.extractor_eval import ATTEMPTS, QUALITIES
from knowsim_core.evaluation.scoring import agreement


def test_agreement_by_hand():
    pairs = [("shallow", "shallow"), ("shallow", "not_mentioned"), ("well_explained", "well_explained"),
             ("not_mentioned", "not_mentioned")]
    a = agreement(pairs, QUALITIES)
    assert a["n"] == 4 and a["accuracy"] == 0.75
    assert a["matrix"]["shallow"]["not_mentioned"] == 1
    # F1: well 1.0, shallow 2/3 (p 1, r .5), not_mentioned 2/3 (p .5, r 1)
    assert a["macro_f1"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)


@pytest.fixture(scope="module")
def paths(reference_dir):
    return (str(reference_dir / "examples" / "mathqa_structured_adaptive_novice.json"),
            str(reference_dir / "iu_cache" / "math.json"))


def test_json_output_format(paths, capsys):
    runs, graphs = paths
    assert main(["relabel", runs, "--graphs", graphs, "--extractor", "offline/lexical", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["problem_id"] for r in data["records"]] == ["math_003", "math_004"]
    first = data["records"][0]["turns"][0]
    assert first["turn"] == 1 and set(first) == {"turn", "labels"}
    assert set(first["labels"]["IU1"]) == {"teaching_quality", "user_attempt_type"}
    assert len(data["records"][0]["turns"]) == 15 and len(first["labels"]) == 15
    assert {lab["teaching_quality"] for t in data["records"][0]["turns"] for lab in t["labels"].values()} <= set(QUALITIES)


def test_text_report(paths, capsys):
    runs, graphs = paths
    assert main(["relabel", runs, "--graphs", graphs]) == 0
    out = capsys.readouterr().out
    assert "teaching quality" in out and "macro-F1" in out and "well_explained" in out
    stats = compare(relabel_records(runs, graphs, "offline/lexical"))
    assert stats["user_attempt_type"]["n"] == stats["teaching_quality"]["n"] == 435
    assert set(stats["user_attempt_type"]["matrix"]) == set(ATTEMPTS)


@pytest.fixture(scope="module")
def loro(paths):
    from knowsim_core.evaluation import extractor_eval as ev

    turns = ev.load_turns(*paths)
    return {name: ev.protocol(turns, method) for name, method in ev.METHODS.items()}


# Floors by the protocol of benchmarks/floors.py, fixed before the figures were read: the 2.5th
# percentile of a 2,000-resample bootstrap (by turn, seed 0) of each pooled leave-one-recording-out
# macro-F1 and of each held-out recording's, rounded down. They were "the LORO figure minus 0.05",
# though the text rules were chosen by that same LORO figure; the margin is now the interval's.
# Figures then: TQ 0.532, AT 0.369, math_003 0.475, math_004 0.594. Re-derived by the same protocol
# for the reader of issue 48, whose reading no longer depends on the graph's size (a deliberate
# trade: TQ 0.451, math_003 0.421, math_004 0.475; floors 0.473 -> 0.403, 0.4 -> 0.345,
# 0.506 -> 0.419). The values equal benchmarks/logs/floors.json (test_the_loro_floors_are_the_protocol_s).
LORO_TQ_FLOOR = 0.403
LORO_AT_FLOOR = 0.307
LORO_FOLD_FLOORS = {"math_003": 0.345, "math_004": 0.419}


def test_the_loro_floors_are_the_protocol_s():
    """The floors are benchmarks/floors.py's output as logged, not typed by hand."""
    from tests.conftest import ROOT

    logged = json.loads((ROOT / "benchmarks" / "logs" / "floors.json").read_text())["figures"]["lexical_loro"]
    assert (LORO_TQ_FLOOR, LORO_AT_FLOOR) == (logged["teaching_quality"]["floor"], logged["user_attempt_type"]["floor"])
    assert LORO_FOLD_FLOORS == {r: logged[f"teaching_quality:{r}"]["floor"] for r in LORO_FOLD_FLOORS}


def test_out_of_sample_agreement_floor_and_baselines(loro):
    """Pooled and per-recording held-out macro-F1 at or above the bootstrap floors, and above both
    baselines: the pooled floor itself (the lowest figure the sample's noise makes plausible) must
    beat each baseline's figure (the earlier margin, 0.1 above the keyword rule, was read off the
    rank-based reader of before issue 48, which scored 0.532; this reader scores 0.451, keyword 0.371)."""
    lex, kw, maj = loro["lexical"], loro["keyword"], loro["majority"]
    assert lex["loro"]["teaching_quality"]["macro_f1"] >= LORO_TQ_FLOOR
    assert lex["loro"]["user_attempt_type"]["macro_f1"] >= LORO_AT_FLOOR
    # every held-out recording on its own, and the model must beat both baselines out of sample
    assert set(lex["folds"]) == {"math_003", "math_004"}
    for r, stats in lex["folds"].items():
        assert stats["teaching_quality"]["macro_f1"] >= LORO_FOLD_FLOORS[r], r
    for base in (kw, maj):
        assert LORO_TQ_FLOOR > base["loro"]["teaching_quality"]["macro_f1"]
    assert lex["loro"]["user_attempt_type"]["macro_f1"] > maj["loro"]["user_attempt_type"]["macro_f1"]
    # the pooled held-out matrix covers every label once
    assert lex["loro"]["teaching_quality"]["n"] == 435


def test_protocol_text_output(paths, capsys):
    runs, graphs = paths
    assert main(["relabel", runs, "--graphs", graphs, "--protocol", "loro"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-recording-out" in out and "in-sample" in out and "keyword" in out and "majority" in out


def test_bad_input_is_reported(paths, capsys, tmp_path):
    runs, graphs = paths
    assert main(["relabel", runs, "--graphs", graphs, "--extractor", "offline/lexcal"]) == 2
    assert "did you mean 'offline/lexical'" in capsys.readouterr().err
    other = tmp_path / "cache.json"
    other.write_text(json.dumps({"math_004": json.loads(open(graphs).read())["math_004"]}))
    assert main(["relabel", runs, "--graphs", str(other)]) == 2
    assert "has no graph for math_003" in capsys.readouterr().err
