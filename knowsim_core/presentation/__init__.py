"""What a view of an IU graph computes without drawing it: node positions (:mod:`.layout`) and the
readable difference between two graph versions (:mod:`.graph_diff`).

Presentation, not simulation: it sits just above the engine (it reads :class:`~knowsim_core.engine.graph.IUGraph`)
and below everything that draws — the single-file replay (``evaluation/replay.py``) and the app
(``ui/``). Its words and colours come from :mod:`knowsim_core.vocab`.
"""
