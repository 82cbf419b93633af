"""What is read from runs: scores, failure-mode analysis, explanations, comparisons, replays and
figures, realism and agreement with people.

Loaded on first use (:mod:`knowsim_core.lazy`): ``evaluation.explain`` (or any module) is imported
when first read — each pulls in the engine's models, some numpy — so a command's ``--help`` and the
pages that do not show them load none of it. scipy and scikit-learn load later still, with the first
statistic that needs them (:mod:`.statlibs`).
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
