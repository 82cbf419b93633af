"""How far a reading of real conversations is trusted (issue 48): the reader's validation by domain
and graph size, and the notes every reading of real conversations carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowsim_core.services import reader_trust as trust

LOGS = Path(__file__).resolve().parent.parent / "benchmarks" / "logs"


def test_the_validation_table_is_the_reader_sizes_log():
    cells = json.loads((LOGS / "reader_sizes.json").read_text(encoding="utf-8"))["figures"]["cells"]["lexical"]
    assert trust.VALIDATION == {d: {k: (c["mentioned"], c["llm_mentioned"], c["macro_f1"]) for k, c in row.items()}
                                for d, row in cells.items()}


@pytest.mark.parametrize("n, key", [(2, "3"), (3, "3"), (4, "4"), (6, "6"), (7, ""), (13, ""), (14, "whole"),
                                    (19, "whole"), (40, "whole")])
def test_a_graph_size_is_checked_at_its_own_size_or_not_at_all(n, key):
    assert trust.size_key(n) == key
    v = trust.validation("math", n)
    assert v.checked == bool(key) and v.size == key


def test_no_check_for_another_reader_or_domain():
    assert "was not checked" in trust.validation("math", 4, "llm/gpt-4.1").why_not
    assert "no recording of the chemistry domain" in trust.validation("chemistry", 4).why_not
    note = trust.reading_note("offline/lexical", "chemistry", [4, 5], 0.4)
    assert "not validated there" in note["text"] and note["inside_range"] is None


def test_the_note_sets_the_reading_beside_the_validated_range():
    v = trust.validation("math", 4)
    lo, hi = v.range
    assert lo == pytest.approx(v.llm_share - 0.10) and hi == pytest.approx(v.llm_share + 0.10)
    inside = trust.reading_note("offline/lexical", "math", [3, 4, 4, 5, 6], (lo + hi) / 2)
    outside = trust.reading_note("offline/lexical", "math", [3, 4, 4, 5, 6], hi + 0.05)
    assert inside["inside_range"] is True and "inside it" in inside["text"]
    assert outside["inside_range"] is False and "outside it" in outside["text"]
    assert "4-IU sub-graphs" in inside["text"] and "3–6 IUs" in inside["text"]
    basis = trust.verdict_basis(["offline/lexical"], "math", [3, 4, 5])
    assert "offline/lexical" in basis and ("not validated" in basis or "validated on" in basis)


def test_every_reading_of_real_conversations_says_how_far_to_trust_it(tmp_path, arena_annotations):
    """The import summary, `agreement --json` and the realism report carry the reader's mentioned
    share beside its validated range (old code: none of them did)."""
    from knowsim_core.agents.registry import resolve
    from knowsim_core.evaluation.agreement import collect, to_json
    from knowsim_core.evaluation.realism import score
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store

    store = Store(tmp_path / "t.db")
    report = import_path(store, arena_annotations)
    assert "Reader offline/lexical:" in report.summary() and "validated range" in report.summary()
    out = to_json(collect(store, resamples=50))
    note = out["reader"]["math"]
    assert note["readers"] == ["offline/lexical"] and note["validation"]["size"] in ("3", "4", "5", "6")
    assert "These verdicts rest on the reader offline/lexical" in note["verdicts_rest_on"]
    assert 0.0 < note["mentioned_share"] < 1.0
    runs = [store.runs.load(r.id) for r in store.search.list(limit=1000)][:3]
    rep = score(runs, {"offline/person": resolve("user", "offline/person")})
    assert "Reader offline/lexical" in rep["reader"]["math"]["text"]
