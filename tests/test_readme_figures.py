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
