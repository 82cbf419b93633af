"""fit_logistic: a one-class training fold and a non-positive penalty (both raised from sklearn)."""

from __future__ import annotations

import math

import pytest

from knowsim_core.errors import ConfigError
from knowsim_core.evaluation.extractor_eval import fit_logistic

ROWS = [[1.0, 0.1, 0.0], [1.0, 0.4, 1.0], [1.0, 0.7, 0.0], [1.0, 0.9, 1.0]]


@pytest.mark.parametrize("label,n1", [(1, 4), (0, 0)])
def test_a_one_class_fold_gets_bias_only_weights(label, n1):
    """sklearn refuses one class (a leave-one-out fold without a positive example); the weights
    are the smoothed log-odds of the class rate and zero for every feature."""
    w = fit_logistic(ROWS, [label] * len(ROWS))
    assert w[1:] == (0.0, 0.0)
    assert w[0] == round(math.log((n1 + 0.5) / (len(ROWS) - n1 + 0.5)), 4)
    assert (w[0] > 0) == bool(label)  # predicts the one class it saw, with finite confidence


def test_two_classes_still_fit_a_slope():
    w = fit_logistic(ROWS, [0, 0, 1, 1])
    assert len(w) == 3 and w[1] > 0  # the first feature separates the classes


@pytest.mark.parametrize("l2", [0.0, -1.0, math.nan, math.inf])
def test_a_penalty_that_is_not_positive_is_refused_in_one_line(l2):
    with pytest.raises(ConfigError, match=r"^l2 must be a positive number \(the penalty of C = 1/l2\), got "):
        fit_logistic(ROWS, [0, 0, 1, 1], l2=l2)
