"""One scoring module for every agreement the Studio reports (extractor labels, dialogue acts, …).

The arithmetic is scikit-learn's (the field's reference implementation); this module only fixes the
conventions the Studio's tables use and returns plain dicts that print and serialise as they are:
per-class F1 is 0 where a class is never predicted nor true (``zero_division=0``), and macro-F1 is
the unweighted mean over the classes asked for, whether or not they occur.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from knowsim_core.evaluation import statlibs


def classification(gold: Sequence[str], pred: Sequence[str], labels: Iterable[str]) -> dict[str, Any]:
    """Accuracy, macro-F1, per-class F1 and the confusion matrix (rows gold, columns predicted).

    Every pair counts toward accuracy and F1 (a prediction outside ``labels`` is a miss for its gold
    class); the matrix shows only the ``labels`` rows and columns.
    """
    labels = list(labels)
    gold, pred = list(gold), list(pred)
    if len(gold) != len(pred):
        raise ValueError(f"gold and predicted labels differ in length: {len(gold)} vs {len(pred)}")
    if not gold:
        return {"n": 0, "accuracy": 0.0, "macro_f1": 0.0, "f1": {c: 0.0 for c in labels},
                "matrix": {g: {p: 0 for p in labels} for g in labels}}
    if not labels:
        raise ValueError("at least one label is needed to score against")
    metrics = statlibs.sklearn_metrics
    f1 = metrics.f1_score(gold, pred, labels=labels, average=None, zero_division=0)
    cm = metrics.confusion_matrix(gold, pred, labels=labels)
    return {
        "n": len(gold),
        "accuracy": float(metrics.accuracy_score(gold, pred)),
        "macro_f1": float(sum(f1) / len(labels)),
        "f1": {c: float(v) for c, v in zip(labels, f1)},
        "matrix": {g: {p: int(cm[i][j]) for j, p in enumerate(labels)} for i, g in enumerate(labels)},
    }


def agreement(pairs: Iterable[tuple[str, str]], classes: Sequence[str]) -> dict[str, Any]:
    """:func:`classification` of (recorded, predicted) pairs, over the pairs whose two labels are
    both among ``classes`` (recordings may hold values outside the rubric, spec §3.1: not scored)."""
    kept = [(g, p) for g, p in pairs if g in classes and p in classes]
    return classification([g for g, _ in kept], [p for _, p in kept], classes)


# ---------------------------------------------------------------------- agreement with people
# Rank statistics for "does KnowSim's reading agree with what people said". scipy does
# the rank correlations and the binomial test; AUC and Cliff's δ are written out here because
# they are one line each and must handle ties the stated way (a tie counts one half).

def average_ranks(values: Sequence[float]):
    """1-based ranks, ties sharing their average rank (scipy's ``rankdata`` method "average"), in
    numpy alone: the bootstrap calls this tens of thousands of times, where scipy's wrapper costs
    ~0.5 ms a call (tests check both agree)."""
    _, inverse, counts = np.unique(np.asarray(values, dtype=float), return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    return (upper - (counts - 1) / 2.0)[inverse]


def auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """ROC AUC of a score separating ``positive`` from ``negative`` cases: P(score of a random
    positive > a random negative) + ½ P(tie) (Mann–Whitney U / (n₊n₋)); None when a side is empty."""
    if len(positive) == 0 or len(negative) == 0:
        return None
    ranks = average_ranks([*positive, *negative])
    n1, n0 = len(positive), len(negative)
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    return u / (n1 * n0)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ (Pearson's r of average ranks) in numpy alone, for bootstraps; None where undefined."""
    if len(x) < 3:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return None if den == 0 else float((rx * ry).sum()) / den


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Cliff's δ = P(a > b) − P(a < b) over all pairs (−1…1); None when a side is empty."""
    if not a or not b:
        return None
    gt = sum(1 for x in a for y in b if x > y)
    lt = sum(1 for x in a for y in b if x < y)
    return (gt - lt) / (len(a) * len(b))


def rank_correlations(x: Sequence[float], y: Sequence[float]) -> dict[str, float | None]:
    """Spearman's ρ and Kendall's τ-b (scipy); None where undefined (n < 3 or a constant side)."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return {"spearman": None, "kendall": None}
    stats = statlibs.scipy_stats
    return {"spearman": float(stats.spearmanr(x, y).statistic), "kendall": float(stats.kendalltau(x, y).statistic)}


def bootstrap_ci(groups: Sequence[Any], statistic, *, resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> list[float] | None:
    """Percentile bootstrap interval of ``statistic(groups)`` resampling ``groups`` with replacement.

    ``groups`` are the independent units (a conversation with its judged turns, not the turns: turns
    of one conversation are not independent). Resamples where the statistic is undefined (None,
    e.g. one class only) are dropped; None when fewer than half are defined."""
    groups = list(groups)
    if len(groups) < 2:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        pick = rng.integers(0, len(groups), len(groups))
        v = statistic([groups[i] for i in pick])
        if v is not None and v == v:
            values.append(v)
    if len(values) < resamples / 2:
        return None
    lo, hi = np.percentile(values, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return [float(lo), float(hi)]


def binomial_p(successes: int, trials: int) -> float | None:
    """One-sided exact binomial test against chance (p = ½, alternative: more successes)."""
    if trials <= 0:
        return None
    return float(statlibs.scipy_stats.binomtest(successes, trials, 0.5, alternative="greater").pvalue)


def roc_points(positive: Sequence[float], negative: Sequence[float]) -> tuple[list[float], list[float]]:
    """(false-positive rates, true-positive rates) of the ROC curve, thresholds from high to low."""
    if not positive or not negative:
        return [0.0, 1.0], [0.0, 1.0]
    fpr, tpr, _ = statlibs.sklearn_metrics.roc_curve([1] * len(positive) + [0] * len(negative), [*positive, *negative])
    return [float(v) for v in fpr], [float(v) for v in tpr]
