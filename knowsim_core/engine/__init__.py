"""The pure simulation core: agent ids, the IU graph, knowledge states, signals, rule parameters,
the rules, termination, metrics, failure modes, records, the session and what-if.

Loaded on first use (:mod:`knowsim_core.lazy`): ``engine.records`` (or any module) is imported
when first read. Its models are pydantic classes (~0.2 s to import), which the storage layer's
row readers and a command's options reach only this way: listing runs builds none of them.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
