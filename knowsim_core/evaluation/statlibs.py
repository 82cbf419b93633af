"""scipy's statistics and scikit-learn, imported on first use (PEP 562): evaluation's only imports of them.

Importing ``scipy.stats`` costs ~1 s and scikit-learn's metrics or linear models ~0.5–1.7 s on this
kind of machine. The modules of this layer are imported by pages and commands that may compute
none of these statistics (the Simulate page's judgments, the Agreement page before its tables are
drawn), so each library is loaded by the first figure that needs it:
``statlibs.sklearn_metrics.f1_score(...)``, ``statlibs.scipy_stats.binomtest(...)``.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "scipy_stats":
        import scipy.stats

        return scipy.stats
    if name == "sklearn_metrics":
        import sklearn.metrics

        return sklearn.metrics
    if name == "sklearn_linear_model":
        import sklearn.linear_model

        return sklearn.linear_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
