"""Every README figure comes from a benchmark log (``benchmarks/logs/*.json``, ``benchmarks/_log.py``)
and is checked against it here.

* Marked figures: ``<!--fig:LOG:KEY-->0.63`` before a number in README.md is figure KEY of
  ``benchmarks/logs/LOG.json``, at the README's precision (``benchmarks/readme_figures.py
  --write-readme`` rewrites them from the logs). Every marker is checked; a marker whose log or key
  is missing fails (it is not passed silently).
* The extractor, act-tagger and realism tables (found by their row labels) are checked against
  ``benchmarks/logs/readme_figures.json``, and that log against what ``benchmarks/readme_figures.py``
  computes now (they are deterministic): a change that moves a figure fails until the log and the
  README are regenerated.
* A number without a marker is not checked: the README says which prose figures still have none.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.conftest import ARENA_ANNOTATIONS, REFERENCE_DIR, require_shared

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
LOGS = ROOT / "benchmarks" / "logs"


def _script():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "benchmarks" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()

# ---------------------------------------------------------------------- marked figures
def test_every_marked_figure_equals_its_log():
    """Planted drift: one marked number changed in README.md (or a log re-measured without
    rewriting the README) is listed here; see test_a_planted_drift_is_caught."""
    assert SCRIPT.MARKER.search(README), "README.md has no marked figure"
    assert SCRIPT.drifts(README) == []


def test_a_planted_drift_is_caught(tmp_path):
    """The checker on a planted README and log: a changed number, a missing key and a missing log
    are each reported; the rewriter puts the logged value back at the README's precision."""
    (tmp_path / "bench.json").write_text(json.dumps({"name": "bench", "figures": {"a": {"b": 0.6251}, "n": 12345}}))
    good = "x <!--fig:bench:a.b-->0.63 and <!--fig:bench:n-->12,345 runs"
    assert SCRIPT.drifts(good, tmp_path) == []
    planted = good.replace("0.63", "0.64")
    assert SCRIPT.drifts(planted, tmp_path) == ["bench:a.b: README says 0.64, the log says 0.63"]
    assert SCRIPT.rewrite(planted, tmp_path) == good
    assert len(SCRIPT.drifts("<!--fig:bench:a.c-->1 <!--fig:gone:a-->2", tmp_path)) == 2
    # a number followed by a comma in prose ("39/60, 7.6"): the comma is not read as a thousands
    # separator (the old pattern took "60," and reported a drift against 60)
    assert SCRIPT.drifts("<!--fig:bench:n-->12,345, then", tmp_path) == []


def test_a_negative_figure_written_with_a_typographic_minus_is_checked(tmp_path):
    """Prose writes negative numbers with U+2212: such a figure is read with its sign (an older
    pattern did not match it, so the README left those figures unmarked) and rewritten with it."""
    (tmp_path / "bench.json").write_text(json.dumps({"name": "bench", "figures": {"d": -0.114, "e": -6.3}}))
    good = "CO \u22120.11 and REDUNDANT (\u22126.3), ascii <!--fig:bench:d-->-0.11"
    good = good.replace("CO ", "CO <!--fig:bench:d-->").replace("(", "(<!--fig:bench:e-->")
    assert SCRIPT.drifts(good, tmp_path) == []
    wrong_sign = good.replace("<!--fig:bench:e-->\u22126.3", "<!--fig:bench:e-->6.3")
    assert SCRIPT.drifts(wrong_sign, tmp_path) == ["bench:e: README says 6.3, the log says -6.3"]
    assert SCRIPT.rewrite(good.replace("\u22120.11", "\u22120.12"), tmp_path) == good



# ---------------------------------------------------------------------- the deterministic tables
@pytest.fixture(scope="module")
def figures():
    """The README tables' log, as written by ``benchmarks/readme_figures.py``."""
    return json.loads((LOGS / "readme_figures.json").read_text(encoding="utf-8"))["figures"]


def test_the_tables_log_is_what_the_script_computes_now(figures):
    """A stale log fails: a change that moves an extractor, act-tagger or realism figure must
    re-run ``benchmarks/readme_figures.py`` (and rewrite the README)."""
    require_shared(REFERENCE_DIR)
    require_shared(ARENA_ANNOTATIONS)
    assert json.loads(json.dumps(SCRIPT.figures())) == figures


def test_the_learner_rates_log_is_what_its_script_computes_now():
    """The README's learner-rates table is marked from ``benchmarks/logs/learner_rates.json``; the
    figures are deterministic, so a change to the offline learner, tutor or labeller that moves
    them fails here until ``benchmarks/learner_rates.py`` is re-run (and the README rewritten)."""
    reference = require_shared(REFERENCE_DIR)
    spec = importlib.util.spec_from_file_location("learner_rates_bench", ROOT / "benchmarks" / "learner_rates.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from knowsim_core.evaluation.paper_matrix import load_paper_questions

    questions = {q.material.question_id: q for q in load_paper_questions(reference)}
    logged = json.loads((LOGS / "learner_rates.json").read_text(encoding="utf-8"))["figures"]
    assert bench.column(questions, bench.LABELLED, "offline/knowsim") == logged["knowsim_labelled"]
    assert bench.column(questions, ("expertqa_001", "math_004"), "offline/person") != logged["person_all_four"]
    assert bench.column(questions, bench.RECORDED_QUESTIONS, "offline/person") == logged["person_all_four"]
    assert json.loads(json.dumps(bench.leave_one_out(reference, questions))) == logged["leave_one_out"]


def row(label: str) -> list[str]:
    """The numbers of the README table row whose first cell is ``label`` (markup ignored)."""
    for line in README.splitlines():
        cells = [c.strip().strip("*`").strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == label:
            return NUMBER.findall(" ".join(cells[1:]))
    raise AssertionError(f"README has no table row {label!r}")


def after(prefix: str, stop: str) -> list[str]:
    """The numbers of the README text from ``prefix`` up to ``stop``."""
    start = README.index(prefix)
    return NUMBER.findall(README[start + len(prefix):README.index(stop, start)])


def same(quoted: list[str], values: list[float]) -> None:
    """Each quoted number equals its value rounded to the quoted number's decimals."""
    assert len(quoted) == len(values), (quoted, values)
    for q, v in zip(quoted, values):
        decimals = len(q.partition(".")[2])
        assert q == f"{v:.{decimals}f}", f"README says {q}, the script gives {v} ({quoted} vs {values})"


def _tq_at(stats):
    return [stats["teaching_quality"]["macro_f1"], stats["user_attempt_type"]["macro_f1"]]


def test_the_extractor_table(figures):
    ex = figures["extractor"]
    lex = ex["lexical"]
    folds = [lex["folds"][r] for r in sorted(lex["folds"])]
    same(row("offline/lexical"), _tq_at(lex["in_sample"]) + _tq_at(lex["loro"])
         + [f["teaching_quality"]["macro_f1"] for f in folds] + [f["user_attempt_type"]["macro_f1"] for f in folds])
    for label, name in (("keyword overlap (fixed shares)", "keyword"), ("majority class", "majority")):
        same(row(label), _tq_at(ex[name]["in_sample"]) + _tq_at(ex[name]["loro"]))
    per_class = after("Held-out per-class F1, teaching quality:", " — the")
    same(per_class, [*lex["loro"]["teaching_quality"]["per_class"].values(),
                     *ex["keyword"]["loro"]["teaching_quality"]["per_class"].values(),
                     *lex["loro"]["user_attempt_type"]["per_class"].values()])


def test_the_act_tagger_table(figures):
    a = figures["acts"]
    for label, part in (("rules written on (even)", "even"), ("held out (odd)", "odd"),
                        ("held out (second-problem turns, labelled after the rules were frozen)", "second-problem")):
        p = a[part]
        same(row(label), [p["turns"], p["macro_f1"], p["accuracy"], p["majority_macro_f1"]])


def test_the_realism_table(figures):
    """The headline (sampled start) tables, the per-level sentence with its most-common-act floor, and
    the hindsight (file start) tables beside them."""
    r = figures["realism"]
    floor = "floor/most-common-act"
    for user, s in r["summary"].items():
        if user == floor:
            same(row(user), [s["act_agreement"]])
            continue
        same(row(user), [s["act_agreement"], s["rouge_l"], s["cosine"], s["length_ratio"], s["iu_jaccard"],
                         r["attempts"][user]["agreement"]])
    learners = ("offline/person", "offline/knowsim", "baseline/copy-last")
    for side, suffix in ((r, ""), (r["hindsight"], ", hindsight")):
        for label, part in (("development (rules chosen on)" if not suffix else "development" + suffix, "development"),
                            ("held out" + suffix, "held-out")):
            t = side["by_split"][part]
            same(row(label), [t["offline/person"]["n"]]
                 + [t[u][k] for u in learners for k in ("act_agreement", "rouge_l", "length_ratio")]
                 + [t[floor]["act_agreement"]])
    for user in ("offline/person", "offline/knowsim"):
        s = r["hindsight"]["summary"][user]
        same(row(f"{user}, hindsight"), [s["act_agreement"], s["rouge_l"], s["cosine"], s["length_ratio"],
                                         s["iu_jaccard"]])
    by_level = after("By level (act agreement / ROUGE-L, sampled start):", "; advanced has one turn")
    expected = []
    for level in ("novice", "intermediate"):
        rows = r["by_level"][level]
        expected.append(rows[floor]["n"])
        for u, s in rows.items():
            expected += [s["act_agreement"]] if u == floor else [s["act_agreement"], s["rouge_l"]]
    same(by_level, expected)
