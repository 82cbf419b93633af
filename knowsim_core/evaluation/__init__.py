"""What is read from runs: scores, failure-mode analysis, explanations, comparisons, replays and
figures, realism and agreement with people.

Loaded on first use (:mod:`knowsim_core.lazy`): ``evaluation.explain`` (or any module) is imported
when first read — each pulls in the engine's models and some the statistics stack (numpy, scipy,
scikit-learn, through :mod:`.scoring`) — so a command's ``--help`` and the pages that do not show
them load none of it.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
