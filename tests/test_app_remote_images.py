"""Stored text that could load a remote image, in six more fields (issue 35): an IU's concept and
description in Simulate's IU panel, IU ids there and in the graph editor, a question's id and field
on Questions (a SimulatorArena ``type`` becomes the field), a ``recorded/<model>`` assistant id in
Simulate's header and on Home, and run tags on Saved runs' tag buttons. Old code rendered each as
markdown, so ``![](http://tracker…)`` made the browser fetch it; each test renders what the page
sent with a CommonMark parser and finds no ``<img``, while the text itself is still shown."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store
from tests.test_app_agreement import app as _open

PIXEL = "![](http://tracker.example/p.png)"
MD = MarkdownIt("commonmark")


def _html(at: AppTest) -> str:
    parts = [MD.render(m.value) for m in list(at.markdown) + list(at.caption)]
    parts += [MD.render(m.proto.help) for m in list(at.markdown) + list(at.caption) if m.proto.help]
    parts += [MD.render(b.label) for b in at.button]
    parts += [MD.render(b.help or "") for b in at.button]
    parts += [MD.render(h.value) for h in at.subheader]
    return "\n".join(parts)


def _imported(tmp_path, monkeypatch) -> tuple[Store, str]:
    path = tmp_path / "studio.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    store = Store(path)
    msgs = [{"role": "user", "content": "Solve 2x = 4"}, {"role": "assistant", "content": "x = 2."}] * 2
    line = {"id": "c1", "model": "tutor " + PIXEL, "messages": msgs,
            "concepts": [{"name": "Division " + PIXEL, "description": "split " + PIXEL}]}
    jl = tmp_path / "c.jsonl"
    jl.write_text(json.dumps(line) + "\n")
    (rid,) = import_path(store, jl).runs
    return store, rid


def test_questions_shows_a_question_id_and_field_without_loading_them(seeded_store):
    seeded_store.questions.add(question_id="q" + PIXEL, text="What is 2 + 2?", field="Algebra " + PIXEL, source="test")
    at = _open("pages/questions.py")
    html = _html(at)
    assert "tracker.example/p.png" in html and "<img" not in html


def test_the_simulate_header_and_home_show_a_recorded_model_without_loading_it(tmp_path, monkeypatch):
    store, rid = _imported(tmp_path, monkeypatch)
    assert "tracker.example" in store.search.get_row(rid).assistant
    at = _open("pages/simulate.py", run=rid, turn="1")
    html = _html(at)
    assert "tracker.example/p.png" in html and "<img" not in html
    home = _open("pages/home.py")
    labels = [el.proto.label for el in home.get("page_link")]
    assert any("tracker.example" in lab for lab in labels)
    assert not any("<img" in MD.render(lab) for lab in labels)


def _iu_panel():
    import streamlit as st

    from knowsim_core.storage import Store
    from ui.simulate.turn_card import render_iu_panel

    store = Store(st.session_state["db"])
    run = store.runs.load(st.session_state["rid"])
    render_iu_panel(run, run.graph.nodes[0].id, turn=1, key="t")


def test_the_iu_panel_shows_concept_and_description_without_loading_them(tmp_path, monkeypatch):
    store, rid = _imported(tmp_path, monkeypatch)
    at = AppTest.from_function(_iu_panel, default_timeout=30)
    at.session_state["db"], at.session_state["rid"] = str(store.path), rid
    at.run()
    assert not at.exception, at.exception
    html = _html(at)
    assert "Division" in html and "split" in html and "tracker.example/p.png" in html and "<img" not in html


def _tags():
    import streamlit as st

    from knowsim_core.storage import Store
    from ui.runs.run_list import tag_editor

    tag_editor(Store(st.session_state["db"]), st.session_state["rid"])


def test_run_tags_on_their_buttons_load_nothing(tmp_path, monkeypatch):
    store, rid = _imported(tmp_path, monkeypatch)
    store.runs.add_tags(rid, ["seen " + PIXEL])
    at = AppTest.from_function(_tags, default_timeout=30)
    at.session_state["db"], at.session_state["rid"] = str(store.path), rid
    at.run()
    assert not at.exception, at.exception
    labels = [b.label for b in at.button]
    assert any("tracker.example" in lab for lab in labels)
    assert "<img" not in _html(at)
