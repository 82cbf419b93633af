"""Intervals and words for agreement figures: fast bootstrap intervals of an AUC and of
Spearman's ρ over conversations, and the plain readings every table prints — "replicates", "does not
replicate", "not distinguishable from the baseline", and what an AUC, a ρ or a binomial p says.

Kept apart from :mod:`knowsim_core.evaluation.agreement` (which collects and tabulates) so both the
people's tables and the simulated comparison word their figures the same way.
"""

from __future__ import annotations

import numpy as np

RESAMPLES = 2000
MIN_PAIRS = 5
ALPHA = 0.05  # a sign agreement is conclusive only below this one-sided binomial p


def auc_with_ci(units: list[tuple[list[float], list[float]]], *, within: bool = False, resamples: int = RESAMPLES,
                seed: int = 0, level: float = 0.95) -> tuple[float | None, list[float] | None]:
    """An AUC and its percentile bootstrap interval over ``units`` (conversations), each a (positive
    values, negative values) pair; ``within``: only pairs inside one unit (``agreement.within_auc``).

    The same draws and the same dropping of undefined resamples as :func:`scoring.bootstrap_ci` over
    the units (tests check both agree), but one G×G matrix of pair wins instead of re-ranking every
    resample: a resample's AUC is cᵀWc / cᵀPc for its unit counts c, so 2,000 resamples cost
    milliseconds (the Agreement page computes some thirty of these intervals)."""
    g = len(units)
    wins, pairs = np.zeros((g, g)), np.zeros((g, g))
    for i, (pos, _) in enumerate(units):
        if not len(pos):
            continue
        p = np.asarray(pos, dtype=float)[:, None]
        for j, (_, neg) in enumerate(units):
            if len(neg) and (not within or i == j):
                n = np.asarray(neg, dtype=float)[None, :]
                wins[i, j] = (p > n).sum() + 0.5 * (p == n).sum()
                pairs[i, j] = p.size * n.size
    value = float(wins.sum() / pairs.sum()) if pairs.sum() else None
    if g < 2:
        return value, None
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, g, g), minlength=g) for _ in range(resamples)]).astype(float)
    if within:  # a unit drawn twice brings its own pairs twice: linear in its count
        num, den = counts @ np.diag(wins), counts @ np.diag(pairs)
    else:
        num = np.einsum("rg,gh,rh->r", counts, wins, counts)
        den = np.einsum("rg,gh,rh->r", counts, pairs, counts)
    values = num[den > 0] / den[den > 0]
    if len(values) < resamples / 2:
        return value, None
    lo, hi = np.percentile(values, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return value, [float(lo), float(hi)]


def rho_with_ci(x: list[float], y: list[float], *, resamples: int = RESAMPLES, seed: int = 0,
                level: float = 0.95) -> list[float] | None:
    """The percentile bootstrap interval of Spearman's ρ over paired units, equal to
    :func:`scoring.bootstrap_ci` of :func:`scoring.spearman` (tests check) but vectorised: a unit's
    average rank in a resample is (count of drawn units below it) + (count drawn equal to it + 1) / 2,
    and ρ is the count-weighted Pearson r of those ranks."""
    g = len(x)
    if g < 2:
        return None
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, g, g), minlength=g) for _ in range(resamples)]).astype(float)
    values = []
    ranks = []
    for v in (np.asarray(x, dtype=float), np.asarray(y, dtype=float)):
        less, equal = (v[None, :] < v[:, None]).astype(float), (v[None, :] == v[:, None]).astype(float)
        ranks.append(counts @ less.T + (counts @ equal.T + 1) / 2)
    n = counts.sum(1, keepdims=True)
    rx = ranks[0] - (counts * ranks[0]).sum(1, keepdims=True) / n
    ry = ranks[1] - (counts * ranks[1]).sum(1, keepdims=True) / n
    den = np.sqrt((counts * rx * rx).sum(1) * (counts * ry * ry).sum(1))
    ok = den > 1e-12
    values = (counts * rx * ry).sum(1)[ok] / den[ok]
    if g < 3 or len(values) < resamples / 2:
        return None
    lo, hi = np.percentile(values, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return [float(lo), float(hi)]


AGAINST = "against the stated direction"


def replication(a: list[float] | None, b: list[float] | None, null: float = 0.5) -> str:
    """"replicates" when both parts' intervals lie above ``null``, "does not replicate" when one does
    and the other includes or lies below it; else what the two parts do show. Intervals are read in
    the stated direction (above ``null`` is what it expects), so an interval wholly below ``null`` is
    named as running against it."""
    if not a or not b:
        return "cannot tell (a part has no interval)"
    above = [ci[0] > null for ci in (a, b)]
    below = [ci[1] < null for ci in (a, b)]
    if all(above):
        return "replicates"
    if any(above):
        return "does not replicate"
    if all(below):
        return f"below {null:g} on both parts: {AGAINST}"
    if any(below):
        return f"above {null:g} on neither part; below it on part {'AB'[below.index(True)]}: {AGAINST}"
    return f"above {null:g} on neither part"


def with_baselines(verdict: str, beaten_by: list[str]) -> str:
    """A verdict with the baselines the score cannot be told from: "replicates, but is not
    distinguishable from the baseline (reply length)" — "but" only where the verdict was good news;
    after a verdict that is not, "and is not … either"."""
    if not beaten_by:
        return verdict
    which = f"not distinguishable from the baseline ({', '.join(beaten_by)})"
    if verdict == "replicates":
        return f"{verdict}, but is {which}"
    return f"{verdict}; and it is {which} either"


def versus(score_ci: list[float] | None, baseline_ci: list[float] | None) -> str:
    """The score against a baseline by their intervals: overlapping intervals cannot be told apart."""
    if not score_ci or not baseline_ci:
        return "cannot tell (no interval)"
    if score_ci[0] > baseline_ci[1]:
        return "above the baseline"
    if score_ci[1] < baseline_ci[0]:
        return "below the baseline"
    return "not distinguishable from the baseline"


def read_interval(ci: list[float] | None, null: float, stated: int = 0) -> str:
    """Where the interval lies against ``null``; with ``stated`` (+1: the stated direction expects
    above ``null``, -1: below) an interval wholly on one side says whether that side is the stated
    direction's or runs against it."""
    if not ci:
        return "no interval (too few conversations)"
    if ci[0] > null or ci[1] < null:
        side = 1 if ci[0] > null else -1
        where = f"its interval lies {'above' if side > 0 else 'below'} {null:g}"
        if not stated:
            return where
        return f"{where}: in the stated direction" if side == stated else f"{where}: {AGAINST}"
    return f"its interval includes {null:g}: cannot be told from no relation"


def read_auc(value: float | None, ci: list[float] | None, higher: str, lower: str, *, stated: int = 1) -> str:
    """A plain reading of an AUC: which side the score is higher for, and what 0.5 means. ``stated``:
    +1 where the stated direction expects an AUC above 0.5 (a score already turned to its direction,
    or a metric where higher is better), -1 where it expects one below."""
    if value is None:
        return "undefined: one side has no cases"
    if value == 0.5:
        return f"0.50: no better than a coin (0.5 = no relation); {read_interval(ci, 0.5, stated)}"
    side = higher if value > 0.5 else lower
    return (f"{value:.2f}: {side} in {max(value, 1 - value):.0%} of pairs (0.5 = no better than a coin); "
            f"{read_interval(ci, 0.5, stated)}")


def read_rho(value: float | None, ci: list[float] | None, metric: str, *, stated: int = 1) -> str:
    """A plain reading of Spearman's ρ against the rating; ``stated`` as in :func:`read_auc` (-1 for
    a metric where lower is better)."""
    if value is None:
        return "undefined (fewer than 3 conversations, or a constant side)"
    how = "higher ratings" if value > 0 else "lower ratings" if value < 0 else "no change in rating"
    return (f"{value:+.2f}: a higher {metric.upper()} goes with {how} (0 = no relation); "
            f"{read_interval(ci, 0.0, stated)}")


def read_p(agree: int, n: int, p: float | None, conclusive: bool) -> str:
    if not n or p is None:
        return "no pair qualifies: nothing to conclude"
    if n < MIN_PAIRS:
        return f"{n} pair(s) qualify ({agree} agree); at least {MIN_PAIRS} are needed to conclude anything"
    if conclusive:
        return f"{agree} of {n} pairs agree in sign, p {p:.3f} < {ALPHA}: more than a coin would give"
    return (f"{agree} of {n} pairs agree in sign, p {p:.2f} ≥ {ALPHA}: inconclusive — a coin would do "
            "as well this often")
