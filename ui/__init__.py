"""The Streamlit side of the Studio, one package per feature (the only code besides pages/ and app.py
that imports streamlit). Each page script in ``pages/`` is thin: widgets and calls into these.

- ``common`` — what every feature shares: ``nav`` (every page, its route and query parameters, and the
  moves between pages), ``frame``, ``resources`` (the store, static files, providers), ``links`` (deep-linked
  widgets), ``selection`` (what a click selected), ``theme``, ``tables``, ``safe_text``, ``graph_view`` and
  ``graph_layout`` (the IU graph component; its browser module is ``assets/graph_view.js``),
  ``questions`` (question labels), ``share`` (downloads).
- ``simulate`` — the Simulate page: ``setup`` and ``custom_start`` (the form), ``player`` (the model: a
  cursor over one run or a pair), ``state`` (the session's player and playback), ``view`` (the player
  on screen), ``gauge``, ``turn_card``, ``demo``. It shows the other features' widgets (a pair's
  Compare, a turn's judgments), so it stands above them.
- ``graph`` — the Graph editor: ``editor`` (edits and checks, no streamlit) and ``tools`` (its sections).
- ``runs`` — Saved runs and what is read from them: ``filter_bar``, ``run_list``, ``compare``, ``whatif``,
  ``failure_views``, ``paper_check``.
- ``batch`` — the Batch page: ``launcher`` (a batch as a background process).
- ``people`` — real people: ``agreement_view`` (a turn's judgments and the Agreement charts), ``realism_view``.

Each package names its session-state keys in its ``keys.py``: a key read or written apart from the
widget that draws it is spelled there and nowhere else; a key only its widget uses is written once,
at the widget. ``common`` imports no feature; ``graph``, ``runs``, ``batch`` and ``people`` import
no other feature (``.importlinter``). Modules without streamlit in their imports (``theme``,
``graph_layout``, ``player``, ``demo``, ``questions``, ``editor``, ``launcher``, ``failure_views``,
``realism_view``) are plain Python.
"""
