"""Issue 32: facts that were decided twice now have one owner each — a conversation's rating (one
parser for storage's column and the agreement statistics) and a run tag's rule (beside the batch
tag's, in ``text/tags.py``)."""

from __future__ import annotations

import math

import pytest

from knowsim_core.errors import ConfigError
from knowsim_core.formats.judgments import rating_of
from knowsim_core.storage.migrations import judged_columns
from knowsim_core.text.tags import MAX_RUN_TAG, check_batch_tag, check_run_tag


@pytest.mark.parametrize("value,expected", [
    (7, 7.0), (7.5, 7.5), (0, 0.0), (True, None), ("7", None), (None, None),
    (math.nan, None), (math.inf, None), (-math.inf, None), (10 ** 400, None),
])
def test_one_rating_parser_reads_only_finite_numbers(value, expected):
    assert rating_of(value) == expected
    assert judged_columns({"rating": value})[0] == expected  # storage's column reads it the same way


def test_agreement_reads_ratings_with_the_same_parser():
    """Old: ``evaluation/agreement.py`` had its own ``_rating_of`` without the finiteness check, so a
    NaN or infinite rating counted as a rated conversation there while storage's column held NULL."""
    from knowsim_core.evaluation import agreement

    assert not hasattr(agreement, "_rating_of")
    assert agreement.rating_of is rating_of


@pytest.mark.parametrize("tag,msg", [("", "cannot be empty"), ("a,b", "comma"), ("x\ty", "control"),
                                     ("x" * (MAX_RUN_TAG + 1), f"at most {MAX_RUN_TAG}")])
def test_a_run_tag_has_one_rule_and_error_class_beside_the_batch_tag(tag, msg):
    """Old: storage's ``check_tag`` (≤ 40, StorageError) and a batch ``check_tag`` (≤ 64, ConfigError):
    one name, two layers, two error classes. Now both rules live in text.tags and a bad tag is the
    caller's input (ConfigError) either way."""
    with pytest.raises(ConfigError, match=msg):
        check_run_tag(tag)
    assert check_run_tag("  ablation-2 ") == "ablation-2"
    with pytest.raises(ConfigError):
        check_batch_tag("a b")


def test_storage_files_a_run_under_the_text_rule():
    from knowsim_core.storage import runs

    assert not hasattr(runs, "check_tag")  # the second definition is gone
    assert runs.check_run_tag is check_run_tag
