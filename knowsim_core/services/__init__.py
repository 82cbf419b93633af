"""Use cases over the layers below: start, play, resume and fork runs, read a human conversation,
import and export, what-if.

Loaded on first use (:mod:`knowsim_core.lazy`): ``services.runner`` (or any module) is imported when
first read; each brings the engine, the agents and storage with it (~0.3 s), which a command's
``--help`` and a page that only lists runs never need.
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
