"""Streamlit-side code shared by the pages (the only code besides pages/ and app.py that imports streamlit).

Part 1 (Home, Questions, Simulate): ``theme`` (state colours + non-colour cues), ``graph_view``
(the vis-network v2 component; its browser module is ``assets/graph_view.js``), ``graph_layout``
(fixed positions), ``gauge`` (load gauge + per-turn chart), ``turn_card`` (turn card, IU panel,
running metrics; the mode and why of each IU come from ``knowsim_core.evaluation.explain``), ``player`` / ``state`` / ``sim_view`` /
``sim_setup`` / ``custom_start`` (the Simulate player and its setup), ``demo``, ``questions``,
``resources`` (store, static files, providers). Modules without streamlit in their imports
(``theme``, ``graph_layout``, ``player``, ``demo``, ``questions``) are plain Python.
"""
