"""AppTest checks for the UI review's defects: stored text that could load a remote image, the
judgment box carrying a note across turns, deep links that did nothing the second time, run
tables whose selection jumped, and captions shown twice or wrongly."""

from __future__ import annotations

import json
from pathlib import Path

from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from knowsim_core.formats.judgments import Judgment
from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store

from tests.test_app_agreement import app as _open  # app.py at a query, switched to a page

SIMULATE = "pages/simulate.py"
PIXEL = "![](http://tracker.example/p.png)"


def _conversations(tmp_path: Path, question: str = "Solve 2x + 1 = 5.") -> Path:
    lines = []
    for i in range(2):
        msgs = []
        for t in range(4):
            msgs += [{"role": "user", "content": question if t == 0 else f"Step {t}: what next for x?"},
                     {"role": "assistant", "content": "Subtract 1 from both sides, then divide both sides by 2."}]
        lines.append({"id": f"c{i}", "level": "9-12", "model": "tutor-a", "rating": 5, "correctness": "correct",
                      "messages": msgs, "votes": [{"turn": 1, "liked": True}],
                      "concepts": [{"name": "Linear equations", "description": "solving ax + b = c"}]})
    p = tmp_path / "judged.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def _db(tmp_path, monkeypatch, **kw) -> tuple[Store, list[str]]:
    path = tmp_path / "studio.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    store = Store(path)
    return store, list(import_path(store, _conversations(tmp_path, **kw)).runs)


def _rendered(at: AppTest) -> str:
    """Every markdown body and help text on the page, as a CommonMark parser renders it."""
    md = MarkdownIt("commonmark")
    parts = []
    for m in list(at.markdown) + list(at.caption):
        parts.append(md.render(m.value))
        if m.proto.help:
            parts.append(md.render(m.proto.help))
    return "\n".join(parts)


# ------------------------------------------------------------------ item 2: judgments and the question's help
def test_judgment_notes_names_and_the_question_tooltip_load_no_image(tmp_path, monkeypatch):
    long_question = "Solve 2x + 1 = 5 " + PIXEL + " and explain every step " * 12
    store, runs = _db(tmp_path, monkeypatch, question=long_question)
    rid = runs[0]
    store.judgments.add(rid, Judgment(turn=1, liked=False, source="researcher", who="eve " + PIXEL,
                                     note="see " + PIXEL.replace("p.png", "n.png")))
    at = _open(SIMULATE, run=rid, turn="1")
    html = _rendered(at)
    assert "http://tracker.example/n.png" in html and "researcher <strong>eve" in html  # the judgment is shown
    assert any(m.proto.help and "tracker.example" in m.proto.help for m in at.markdown)  # the full question on hover
    assert "<img" not in html


# ------------------------------------------------------------------ item 3: the note box belongs to one turn
def _note_box(at: AppTest):
    boxes = [t for t in at.text_input if t.label == "Note (optional)"]
    assert len(boxes) == 1, [t.label for t in at.text_input]
    return boxes[0]


def _vote_up(at: AppTest) -> None:
    [up] = [b for b in at.button if b.label == "Good reply"]
    up.click().run()
    assert not at.exception, at.exception


def test_a_note_typed_on_one_turn_is_not_saved_with_the_next_and_each_turn_shows_its_own(tmp_path, monkeypatch):
    store, runs = _db(tmp_path, monkeypatch)
    rid = runs[0]
    at = _open(SIMULATE, run=rid, turn="2")
    _note_box(at).set_value("about turn 2")
    _vote_up(at)
    at.button(key="sim_step").click().run()
    assert not at.exception, at.exception
    assert _note_box(at).value == ""  # turn 3 has no note of its own
    _vote_up(at)
    notes = {j.turn: j.note for j in store.judgments.list(rid) if j.source == "researcher"}
    assert notes == {2: "about turn 2", 3: ""}
    _note_box(at).set_value("turn 3's")
    _vote_up(at)
    at.button(key="sim_back").click().run()
    assert _note_box(at).value == "about turn 2"  # turn 2's stored note, not the last one typed
    notes = {j.turn: j.note for j in store.judgments.list(rid) if j.source == "researcher"}
    assert notes == {2: "about turn 2", 3: "turn 3's"}


# ------------------------------------------------------------------ item 4: the same deep link, twice in a session
RUNS, HOME = "pages/runs.py", "pages/home.py"


def _visit(at: AppTest, page: str, **query: str) -> AppTest:
    at.query_params.clear()
    at.query_params.update(query)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_following_the_same_filter_link_again_applies_it_again(seeded_store):
    at = _open(RUNS, level="intermediate")
    assert at.session_state["runs_level"] == "intermediate"
    _visit(at, HOME)
    _visit(at, RUNS, level="intermediate")  # the widget was dropped on Home; the link must set it again
    assert at.session_state["runs_level"] == "intermediate"
    assert at.query_params.get("level") in ("intermediate", ["intermediate"])  # and the URL keeps it
    # the user's own change still wins over the (now old) URL value on this page
    at.selectbox(key="runs_level").set_value("novice").run()
    assert at.session_state["runs_level"] == "novice"
    at.run()
    assert at.session_state["runs_level"] == "novice"


# ------------------------------------------------------------------ item 5: a link to another turn of the open run
def _shown_turn(at: AppTest) -> tuple[int, str]:
    return at.session_state["_ks_player"].turn, at.query_params.get("turn")


def test_a_link_to_another_turn_of_the_run_already_open_goes_to_that_turn(tmp_path, monkeypatch):
    store, runs = _db(tmp_path, monkeypatch)
    rid = runs[0]
    at = _open(SIMULATE, run=rid, turn="3")
    assert _shown_turn(at) == (3, "3")
    _visit(at, HOME)
    _visit(at, SIMULATE, run=rid, turn="1")  # e.g. a Home link, or a click on Agreement / Failure modes
    assert _shown_turn(at) == (1, "1")
    # the page's own moves still win over the address they rewrite
    at.button(key="sim_step").click().run()
    assert _shown_turn(at) == (2, "2")
    at.query_params["turn"] = "1"  # a rerun the browser sent before it had drawn the step's address
    at.run()
    assert _shown_turn(at) == (2, "2")
    # the same link again, from another page (the address says 1, the player 2): it goes back to 1
    _visit(at, HOME)
    _visit(at, SIMULATE, run=rid, turn="1")
    assert _shown_turn(at) == (1, "1")


# ------------------------------------------------------------------ item 6: rows that leave the list take the selection
QID = "sample_lava_lamps"


def _runs_db(store, n: int = 3, **status) -> list[str]:
    from tests.part2_support import make_run

    g = store.questions.latest_graph_version(QID).graph
    ids = [store.runs.save(make_run(g, question_id=QID, level="novice", seed=i, max_turns=3),
                          **({"status": status["status"]} if status else {})) for i in range(n)]
    return ids


def _select_run(at: AppTest, run_id: str) -> AppTest:
    from tests.part2_support import runs_table_key

    row = list(at.dataframe[0].value["run"]).index(run_id[:12])
    at.session_state[runs_table_key(at)] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert any(s.value.startswith(f"Run {run_id[:12]}") for s in at.subheader)
    return at


def _selected_runs(at: AppTest) -> list[str]:
    return [s.value.split()[1] for s in at.subheader if s.value.startswith("Run ")]


def test_removing_the_filtered_tag_selects_no_other_run(seeded_store):
    ids = _runs_db(seeded_store)
    for rid in ids:
        seeded_store.runs.add_tags(rid, ["x"])
    at = _open(RUNS, tag="x")
    assert len(at.dataframe[0].value) == 3
    top = next(r for r in ids if r[:12] == at.dataframe[0].value["run"].iloc[0])  # row 0: another row takes its place
    at = _select_run(at, top)
    at.button(key=f"runs_untag_{top}_x").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 2  # the row left the list ...
    assert _selected_runs(at) == []  # ... and the row now in its place is not selected in its stead


def test_resuming_a_run_under_failed_only_selects_no_other_run(seeded_store):
    from knowsim_core.services.runner import start_run

    _runs_db(seeded_store, 2, status="interrupted")
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=3, max_turns=3)
    live.step()
    seeded_store.runs.finish(live.run_id, status="interrupted")
    at = _open(RUNS, bad="1")
    assert len(at.dataframe[0].value) == 3
    assert at.dataframe[0].value["run"].iloc[0] == live.run_id[:12]  # newest first: another row takes its place
    at = _select_run(at, live.run_id)
    at.button(key="runs_resume").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert seeded_store.search.get_row(live.run_id).status == "finished"
    assert live.run_id[:12] not in list(at.dataframe[0].value["run"])
    assert _selected_runs(at) == []


# ------------------------------------------------------------------ item 7: turn 0 of a single run
def test_turn_zero_of_one_run_shows_the_question_and_the_starting_level_once(tmp_path, monkeypatch):
    store, runs = _db(tmp_path, monkeypatch, question="Solve 2x + 1 = 5 for the unknown x.")
    at = _open(SIMULATE, run=runs[0], turn="0")
    assert at.session_state["_ks_player"].turn == 0
    assert sum("Solve 2x + 1 = 5 for the unknown x." in m.value for m in at.markdown) == 1
    assert sum(c.value.startswith("Starting level:") for c in at.caption) == 1


# ------------------------------------------------------------------ item 8: every Saved runs filter is a URL parameter
def test_no_batch_and_a_questions_graph_version_can_be_deep_linked(seeded_store):
    from tests.part2_support import make_run

    store = seeded_store
    v1 = store.questions.latest_graph_version(QID)
    g = v1.graph
    single = store.runs.save(make_run(g, question_id=QID, level="novice", seed=1, max_turns=3))
    store.runs.save(make_run(g, question_id=QID, level="novice", seed=2, max_turns=3), batch_tag="sweep")
    first = g.nodes[0]
    edited = g.with_node(first.model_copy(update={"description": first.description + " Corrected."}))
    v2 = store.questions.add_graph_version(QID, edited, note="fixed IU1", parent_id=v1.id)
    on_v2 = store.runs.save(make_run(edited, question_id=QID, level="novice", seed=3, max_turns=3),
                           batch_tag="sweep", graph_version_id=v2)

    at = _open(RUNS)
    at.selectbox(key="runs_batch").set_value("").run()  # "(no batch)"
    assert at.query_params.get("batch") in ("-", ["-"])  # written, so the address can be shared
    linked = _open(RUNS, batch="-")  # and read back in a new session
    assert linked.session_state["runs_batch"] == ""
    assert list(linked.dataframe[0].value["run"]) == [single[:12]]

    at = _open(RUNS, question=QID)
    assert at.selectbox(key="runs_graph_version").options == ["all", "v1 · sample graph", "v2 · fixed IU1"]
    at.selectbox(key="runs_graph_version").set_value(2).run()
    assert at.query_params.get("version") in ("2", ["2"])
    linked = _open(RUNS, question=QID, version="2")
    assert list(linked.dataframe[0].value["run"]) == [on_v2[:12]]
    linked.selectbox(key="runs_q").set_value(None).run()  # the per-question choice leaves with the question
    assert "version" not in linked.query_params and len(linked.dataframe[0].value) == 3


# ------------------------------------------------------------------ item 10: by_kind, simplified (same behaviour)
def test_by_kind_groups_ids_samples_first_and_is_empty_for_no_questions():
    from types import SimpleNamespace

    from knowsim_core.storage.questions import kind_rank
    from ui.common.questions import by_kind

    qs = [SimpleNamespace(kind=k, id=i) for k, i in
          (("yours", "c2"), ("sample", "s1"), ("yours", "c1"), ("paper", "p1"))]
    groups = by_kind(qs)
    assert list(groups) == sorted({q.kind for q in qs}, key=kind_rank)
    assert list(groups) == ["sample", "paper", "yours"] and groups["yours"] == ["c1", "c2"] and groups["sample"] == ["s1"]
    assert by_kind([]) == {}
