"""Batches: a matrix of conversations planned (``plan``), claimed cell by cell and played in threads,
worker processes (``workers``) or on a Dask cluster (``cluster``, ``remote``), and the command's and
page's entry point (``service``).

Loaded on first use (:mod:`knowsim_core.lazy`): ``batch.workers`` (the worker processes'
multiprocessing) loads when first read, so a dry run or a thread batch does without it; Dask loads
with a cluster batch's first connect (:mod:`.cluster` is its one seam).
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__)
