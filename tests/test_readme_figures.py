"""Every figure the README and the docs pages quote from a benchmark comes from its log
(``benchmarks/logs/*.json``, ``benchmarks/_log.py``) and is checked against it here.

* Marked figures: ``<!--fig:LOG:KEY-->0.63`` before a number in README.md or a page of ``docs/`` is
  figure KEY of ``benchmarks/logs/LOG.json``, at the page's precision (``benchmarks/readme_figures.py
  --write-readme`` rewrites them from the logs). Every marker is checked; a marker whose log or key
  is missing fails (it is not passed silently).
* The extractor, act-tagger and realism tables are marked from ``benchmarks/logs/readme_figures.json``,
  and that log is checked against what ``benchmarks/readme_figures.py`` computes now (they are
  deterministic): a change that moves a figure fails until the log and the pages are regenerated.
* A number without a marker is not checked: the development page says which prose figures have none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ARENA_ANNOTATIONS, REFERENCE_DIR, load_script, require_shared

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
LOGS = ROOT / "benchmarks" / "logs"


def _script():
    return load_script("benchmarks/readme_figures.py")


SCRIPT = _script()

# ---------------------------------------------------------------------- marked figures
@pytest.mark.parametrize("page", SCRIPT.documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marked_figure_equals_its_log(page):
    """Planted drift: one marked number changed in a page (or a log re-measured without rewriting
    the pages) is listed here; see test_a_planted_drift_is_caught."""
    assert SCRIPT.drifts(page.read_text(encoding="utf-8")) == []


def test_the_readme_and_the_science_pages_quote_their_figures_from_logs():
    """The README's figures and the tables of the reader, realism and agreement pages are marked
    (a table pasted as plain numbers would no longer be checked)."""
    assert SCRIPT.MARKER.search(README), "README.md has no marked figure"
    for name, log in (("reader", "readme_figures"), ("realism", "readme_figures"), ("agreement", "agreement"),
                      ("paper-check", "paper_check"), ("speed", "offline")):
        text = (ROOT / "docs" / "explanation" / f"{name}.md").read_text(encoding="utf-8")
        assert f"<!--fig:{log}:" in text, f"docs/explanation/{name}.md quotes no figure of {log}.json"


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
    bench = load_script("benchmarks/learner_rates.py", "learner_rates_bench")
    from knowsim_core.evaluation.paper_matrix import load_paper_questions

    questions = {q.material.question_id: q for q in load_paper_questions(reference)}
    logged = json.loads((LOGS / "learner_rates.json").read_text(encoding="utf-8"))["figures"]
    assert bench.column(questions, bench.LABELLED, "offline/knowsim") == logged["knowsim_labelled"]
    assert bench.column(questions, ("expertqa_001", "math_004"), "offline/person") != logged["person_all_four"]
    assert bench.column(questions, bench.RECORDED_QUESTIONS, "offline/person") == logged["person_all_four"]
    assert json.loads(json.dumps(bench.leave_one_out(reference, questions))) == logged["leave_one_out"]


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


ABSOLUTE_PATH = re.compile(r"(?:^|[\s'\"=(])/(?!/)[\w.$-]")  # '/x' at a word's start, not '//' or 'a/b'


def test_no_committed_log_names_a_machine_path():
    """Logs are committed: the checkout, its folder and the temporary folder are written as ``.``,
    ``..`` and ``$TMPDIR`` (benchmarks/_log.portable), never as this machine's absolute paths."""
    for log in sorted((ROOT / "benchmarks" / "logs").glob("*.json")):
        found = [s for s in _strings(json.loads(log.read_text(encoding="utf-8"))) if ABSOLUTE_PATH.search(s)]
        assert not found, f"{log.name} names machine paths: {found[:3]}"


def test_portable_writes_the_checkout_its_folder_and_the_temporary_folder_relatively(tmp_path):
    import tempfile

    _log = load_script("benchmarks/_log.py", "benchmark_log")
    tmp = tempfile.gettempdir()
    got = _log.portable({"a": [str(ROOT / "x.py"), str(ROOT.parent / "shared" / "r.json")], "b": (f"{tmp}/base",),
                         "c": ROOT / "benchmarks", "d": f"ran in {ROOT}", "e": 3})
    base = "../base" if Path(tmp) == ROOT.parent else "$TMPDIR/base"  # a clone made in the temporary folder
    assert got == {"a": ["./x.py", "../shared/r.json"], "b": [base], "c": "./benchmarks",
                   "d": "ran in .", "e": 3}
    assert not ABSOLUTE_PATH.search(json.dumps(got))
