"""Agreement's verdicts in words (issue 47): no "but" after a verdict that is not good news, and a
figure whose interval lies on the far side of its null from the stated direction is named as running
against it — in the words every table, the page and the ``agreement`` command print."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.evaluation.agreement_words import (AGAINST, read_auc, read_interval, read_rho, replication,
                                                     with_baselines)
from tests.conftest import ARENA_ANNOTATIONS, require_shared

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_a_baseline_is_a_but_only_after_good_news():
    assert with_baselines("replicates", ["reply length"]) == (
        "replicates, but is not distinguishable from the baseline (reply length)")
    neither = with_baselines("above 0.5 on neither part", ["upward", "reply length"])
    assert "but" not in neither.split()
    assert neither == ("above 0.5 on neither part; and it is not distinguishable from the baseline "
                       "(upward, reply length) either")
    assert with_baselines("does not replicate", []) == "does not replicate"


def test_an_interval_on_the_far_side_of_the_null_runs_against_the_stated_direction():
    assert replication([0.1, 0.4], [0.2, 0.45]) == f"below 0.5 on both parts: {AGAINST}"
    assert replication([0.1, 0.4], [0.45, 0.7]) == f"above 0.5 on neither part; below it on part A: {AGAINST}"
    assert replication([0.4, 0.6], [0.45, 0.7]) == "above 0.5 on neither part"  # nothing to flag
    # an AUC of DC for a correct answer (higher is better) wholly below 0.5
    dc = read_auc(0.24, [0.05, 0.45], "DC is higher for correct answers", "DC is higher for wrong answers")
    assert dc.endswith(f"its interval lies below 0.5: {AGAINST}"), dc
    # CO (lower is better): an interval below 0.5 is the stated direction, one above runs against it
    in_direction = read_auc(0.3, [0.1, 0.45], "a", "b", stated=-1)
    assert in_direction.endswith("its interval lies below 0.5: in the stated direction")
    assert read_auc(0.7, [0.55, 0.9], "a", "b", stated=-1).endswith(f"its interval lies above 0.5: {AGAINST}")
    assert read_rho(-0.5, [-0.8, -0.1], "kg").endswith(f"its interval lies below 0: {AGAINST}")
    assert read_interval([0.4, 0.6], 0.5, 1) == "its interval includes 0.5: cannot be told from no relation"


def test_the_shared_conversations_read_on_the_agreement_page(tmp_path, monkeypatch, capsys):
    """The 25 shared conversations: KnowSim's turn score is above 0.5 on neither part and cannot be
    told from the baselines — said without a "but" — and DC's AUC for a correct answer (interval
    below 0.5) is flagged as running against its stated direction, on the page and by the command."""
    require_shared(ARENA_ANNOTATIONS)
    db = tmp_path / "a.db"
    assert main(["import", str(ARENA_ANNOTATIONS), "--db", str(db)]) == 0
    assert main(["agreement", "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    assert f"DC is higher for wrong answers in 79% of pairs (0.5 = no better than a coin); its interval lies below " \
           f"0.5: {AGAINST}" in printed
    monkeypatch.setenv("KNOWSIM_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, at.exception
    headline = next(w.value for w in at.warning if w.value.startswith("KnowSim's turn score on the two parts"))
    assert "; but" not in headline and "above 0.5 on neither part; and it is not distinguishable" in headline, headline
    dc = next(m.value for m in at.markdown if m.value.startswith("- **KG vs rating**"))
    line = next(x for x in dc.split("\n") if x.startswith("- **DC vs a correct answer**"))
    assert line.startswith("- **DC vs a correct answer** — :material/south_west:") and AGAINST in line, line
