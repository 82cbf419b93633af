"""Streamlit-side helpers shared by the pages (the only code besides pages/ and app.py that imports streamlit).

Modules: ``theme`` (state colours and cues, no streamlit), ``explain`` (plain-words reasons, no
streamlit), ``resources`` (store, static files, providers), ``state`` (typed session state),
``graph_view`` (the vis-network component), ``gauge`` (load gauge and chart), ``turn_card``.
"""
