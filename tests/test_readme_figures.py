"""README.md quotes what benchmarks/readme_figures.py computes (every deterministic figure of the
extractor, act tagger and realism tables), rounded as the README prints it.

Each check finds a README row or sentence by its label, reads the numbers in it and compares them
with the script's output at the README's own precision: a change that moves a figure fails here
until the README is updated from ``python benchmarks/readme_figures.py``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests.conftest import ARENA_ANNOTATIONS, REFERENCE_DIR, require_shared

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _script():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "benchmarks" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figures():
    require_shared(REFERENCE_DIR)
    require_shared(ARENA_ANNOTATIONS)
    return _script().figures()


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
    r = figures["realism"]
    floor = "floor/most-common-act"
    for user, s in r["summary"].items():
        if user == floor:
            same(row(user), [s["act_agreement"]])
            continue
        same(row(user), [s["act_agreement"], s["rouge_l"], s["cosine"], s["length_ratio"], s["iu_jaccard"],
                         r["attempts"][user]["agreement"]])
    for label, part in (("development (rules written on)", "development"), ("held out", "held-out")):
        t = r["by_split"][part]
        k, c = t["offline/knowsim"], t["baseline/copy-last"]
        same(row(label), [k["n"], k["act_agreement"], k["rouge_l"], k["length_ratio"],
                          c["act_agreement"], c["rouge_l"], c["length_ratio"], t[floor]["act_agreement"]])
    by_level = after("By level (act agreement / ROUGE-L):", "; advanced has one turn")
    expected = []
    for level in ("novice", "intermediate"):
        rows = {u: v for u, v in r["by_level"][level].items() if u != floor}
        expected.append(next(iter(rows.values()))["n"])
        for s in rows.values():
            expected += [s["act_agreement"], s["rouge_l"]]
    same(by_level, expected)
