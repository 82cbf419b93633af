"""The reader's variant study (benchmarks/reader_variants.py, issue 48 follow-up): its "shipped"
variant is the reader that ships, and its log is what the script measures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parent.parent


def _study():
    return load_script("benchmarks/reader_variants.py")


@pytest.fixture(scope="module")
def turns(reference_dir):
    from knowsim_core.evaluation import extractor_eval as ev

    return (ev.load_turns(str(reference_dir / "examples" / "mathqa_structured_adaptive_novice.json"),
                          str(reference_dir / "iu_cache" / "math.json")),
            ev.load_turns(str(reference_dir / "examples" / "expertqa_structured_adaptive_novice_001.json"),
                          str(reference_dir / "iu_cache" / "expertqa.json")))


def test_the_shipped_variant_labels_as_the_reader_does(turns):
    from knowsim_core.evaluation import extractor_eval as ev

    study = _study()
    math, expert = turns
    ours, theirs = study.variants()["shipped"](math), ev.lexical()(math)
    for t in [*math, *expert]:
        assert {iu: q for iu, (q, _) in ours(t).items()} == {iu: q for iu, (q, _) in theirs(t).items()}


def test_the_log_holds_what_the_study_measures(turns):
    study = _study()
    math, expert = turns
    log = json.loads((ROOT / "benchmarks" / "logs" / "reader_variants.json").read_text(encoding="utf-8"))["figures"]
    assert log["protocol"] == study.PROTOCOL
    for name in ("shipped", "about=sqrt1.1"):
        held = study.held_out(math, study.variants()[name])
        assert log["variants"][name]["math_loro"] == round(study._macro([p for t in held for p in t]), 3)
    # the adoption rule: a variant is adopted only when its paired interval lies above 0
    assert log["adopted"] == [n for n, r in log["variants"].items() if n != "shipped" and r["gain_interval"][0] > 0]


def test_the_paired_interval_of_a_reader_with_itself_is_zero():
    study = _study()
    turns = [[("shallow", "shallow"), ("not_mentioned", "shallow")], [("well_explained", "not_mentioned")]] * 5
    assert study.paired_interval(turns, turns) == (0.0, 0.0)
