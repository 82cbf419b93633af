"""AppTest: judgments in Simulate (the person's thumbs shown, a researcher's given) and the Agreement page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

TIMEOUT = 60
APP = str(Path(__file__).resolve().parent.parent / "app.py")
SIMULATE, AGREEMENT = "pages/simulate.py", "pages/agreement.py"


def conversations(tmp_path: Path, n: int = 6) -> Path:
    """A small synthetic JSONL of judged conversations (ratings, correctness, thumbs)."""
    lines = []
    for i in range(n):
        msgs, votes = [], []
        for t in range(3):
            msgs += [{"role": "user", "content": f"Step {t} of solving {i + 2}x + 1 = {2 * i + 5}?"},
                     {"role": "assistant", "content": ("Subtract 1 from both sides, then divide by the coefficient "
                                                       "of x: that is solving a linear equation. " * (1 + (i + t) % 3))}]
            votes.append({"turn": t + 1, "liked": (i + t) % 2 == 0})
        lines.append({"id": f"c{i}", "level": ["9-12", "undergrad"][i % 2], "model": ["tutor-a", "tutor-b"][i % 2],
                      "rating": 3 + i, "correctness": "correct" if i % 2 else "incorrect", "messages": msgs,
                      "votes": votes, "concepts": [{"name": "Linear equations", "description": "solving ax + b = c"},
                                                   {"name": "Inverse operations", "description": "undo + and ×"}]})
    p = tmp_path / "judged.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def offline_people(tmp_path: Path) -> Path:
    """Four rated people whose tutors are offline assistants (so an offline batch can play their
    questions, levels and tutors): novice and advanced × offline/adaptive and offline/socratic."""
    lines = []
    for k, (level, tutor, rating) in enumerate([("novice", "offline/adaptive", 8), ("novice", "offline/socratic", 3),
                                                ("advanced", "offline/adaptive", 7), ("advanced", "offline/socratic", 5)]):
        lines.append({"id": f"p{k}", "level": level, "model": tutor, "rating": rating, "correctness": "correct",
                      "messages": [{"role": "user", "content": f"Solve {k + 2}x + 1 = {2 * k + 5}"},
                                   {"role": "assistant", "content": "Subtract 1, then divide by the coefficient."}],
                      "concepts": [{"name": "Linear equations", "description": "solving ax + b = c"},
                                   {"name": "Inverse operations", "description": "undo + and ×"}]})
    p = tmp_path / "people.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


@pytest.fixture()
def judged_db(tmp_path, monkeypatch):
    path = tmp_path / "studio.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    store = Store(path)
    report = import_path(store, conversations(tmp_path))
    return path, store, report.runs


def app(page: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)


def test_simulate_shows_the_persons_thumb_and_keeps_a_researchers_through_export(judged_db, tmp_path):
    path, store, runs = judged_db
    rid = runs[0]
    at = app(SIMULATE, run=rid, turn="2")
    assert ":material/thumb_down: down · the person in the conversation" in _texts(at)  # c0 turn 2: (0 + 1) % 2 → 👎
    # issue 34 item 11 on Simulate too: the thumbs and the judge buttons are icons that ship with the
    # app, not emoji (old: "👎 down ·", "👍 Good reply" — empty boxes in Debian's chromium)
    shown = _texts(at) + " ".join(b.label for b in at.button)
    assert not EMOJI.findall(shown), sorted(set(EMOJI.findall(shown)))
    at.text_input(key=f"sim_judge_0_who_{rid}_2").set_value("ana")
    at.text_input(key=f"sim_judge_0_note_{rid}_2").set_value("explains, but too long")
    at.button(key="sim_judge_0_up").click().run()
    assert not at.exception, at.exception
    mine = [j for j in store.judgments.list(rid) if j.source == "researcher"]
    assert [(j.turn, j.liked, j.who, j.note) for j in mine] == [(2, True, "ana", "explains, but too long")]
    assert mine[0].created  # when
    assert "researcher **ana**" in _texts(at)
    # changing one's mind replaces the judgment, it does not add a second
    at.button(key="sim_judge_0_down").click().run()
    assert [(j.turn, j.liked) for j in store.judgments.list(rid) if j.source == "researcher"] == [(2, False)]

    # exported as Studio JSON and re-imported elsewhere: both the person's and the researcher's come back
    out = tmp_path / "run.json"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["export", rid, "--format", "studio-json", "--db", str(path)]) == 0
    out.write_text(buf.getvalue())
    other = Store(tmp_path / "other.db")
    again = import_path(other, out)
    back = other.judgments.list(again.runs[0])
    assert {(j.turn, j.liked, j.source, j.who, j.note) for j in back} == {
        (j.turn, j.liked, j.source, j.who, j.note) for j in store.judgments.list(rid)}


def test_the_agreement_page_shows_the_figures_and_a_click_opens_the_turn(judged_db):
    path, store, runs = judged_db
    at = app(AGREEMENT)
    labels = [m.label for m in at.metric]
    assert labels[:3] == ["AUC · knowsim", "AUC · upward", "AUC · reply length"]  # then the disagreement view's
    assert any("18 judged turns (9 :material/thumb_up: up, 9 :material/thumb_down: down) in 6 runs" in c.value
               for c in at.caption)
    charts = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert len(charts) == 4  # ROC, modes, turns, rating scatter
    roc = charts[0]["data"]
    assert [d["name"].split(" (")[0] for d in roc] == ["chance", "knowsim", "upward", "reply_length"]
    assert charts[1]["data"][0]["name"] == "thumb up turns" and len(charts[1]["data"][0]["x"]) == 6
    assert sum(len(d["x"]) for d in charts[2]["data"]) == 18 and len(charts[3]["data"][0]["x"]) == 6
    replication, per_conversation = at.dataframe[0].value, at.dataframe[1].value
    # every score beside its stated direction, on the whole and on both parts, with the verdict in words
    assert replication["score (direction stated before scoring)"].tolist()[:3] == [
        "knowsim · a higher score is liked", "upward · more IUs moved up is liked",
        "reply length · a shorter reply is liked"]
    assert set(replication["pairs"]) == {"pooled", "within a conversation"}
    assert {"whole", "part A", "part B", "both parts"} <= set(replication.columns)
    assert per_conversation["metric"].tolist() == ["KG", "DC", "CO"]
    readings = [m.value for m in at.markdown if m.value.startswith("- **KG vs rating**")]
    assert readings and "(0 = no relation)" in readings[0] and "(0.5 = no better than a coin)" in readings[0]
    # a click on a judged turn opens that run at that turn in Simulate
    point = charts[2]["data"][0]["customdata"][0]
    at.session_state["agr_turns"] = {"selection": {"points": [{"customdata": point}], "point_indices": [0],
                                                   "box": [], "lasso": []}}
    at.run()
    shown = at.session_state["_ks_player"]  # Simulate, at that run and turn
    assert (shown.run_ids, shown.turn) == ((point[0],), point[1])
    assert (at.query_params["run"], at.query_params["turn"]) == (point[0], str(point[1]))


def test_the_agreement_page_on_an_empty_database_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KNOWSIM_DB", str(tmp_path / "empty.db"))
    at = app(AGREEMENT)
    assert any("Nothing to compare yet" in i.value for i in at.info)


def test_a_conversation_without_a_reading_opens_in_simulate_with_its_thumb_and_reason(tmp_path, monkeypatch):
    path = tmp_path / "nc.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    line = {"id": "no-concepts", "messages": [{"role": "user", "content": "Solve 2x + 3 = 7"},
                                              {"role": "assistant", "content": "Subtract 3 from both sides."}],
            "votes": [{"turn": 1, "liked": False}]}
    src = tmp_path / "nc.jsonl"
    src.write_text(json.dumps(line) + "\n")
    rid = import_path(Store(path), src).runs[0]
    at = app(SIMULATE, run=rid, turn="1")
    text = _texts(at)
    assert ":material/thumb_down: down · the person in the conversation" in text and "no KnowSim reading: the conversation names no concepts" in text


EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]")  # 👍 👎 ⛔ ⚠ ✅ …


def _all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [m.label for m in at.metric]
    parts += [str(x.value) for kind in ("success", "warning", "error", "info") for x in at.get(kind)]
    parts += [d.value.to_csv() for d in at.dataframe] + [el.proto.spec for el in at.get("plotly_chart")]
    return "\n".join(parts)


def test_the_agreement_page_draws_no_emoji(judged_db, tmp_path):
    """Issue 34 item 11: chromium without an emoji font drew the page's 👍/👎 as empty boxes (the old
    page's captions, chart legends and ticks carried them); words and material icons instead."""
    path, store, runs = judged_db
    at = app(AGREEMENT)
    text = _all_text(at)
    assert ":material/thumb_up:" in text and not EMOJI.findall(text), sorted(set(EMOJI.findall(text)))


def test_a_researchers_vote_is_its_own_series_and_leaves_the_headline(judged_db):
    """Issue 34 item 13: a researcher's vote used to join the people's (18 → 19 turns in the headline)."""
    from knowsim_core.formats.judgments import Judgment

    path, store, runs = judged_db
    store.judgments.add(runs[0], Judgment(turn=1, liked=False, source="researcher", who="ana"))
    at = app(AGREEMENT)
    captions = "\n".join(c.value for c in at.caption)
    assert "18 judged turns (9 :material/thumb_up: up, 9 :material/thumb_down: down) in 6 runs" in captions
    assert "Researchers' own thumbs (their own series, not in the figures above): 1 (0 up, 1 down)" in captions


def test_a_conversation_without_concepts_is_counted_on_the_agreement_page(judged_db, tmp_path):
    path, store, runs = judged_db
    line = {"id": "no-concepts", "rating": 2, "messages": [
        {"role": "user", "content": "Solve 2x + 3 = 7"}, {"role": "assistant", "content": "Subtract 3 from both sides."}],
        "votes": [{"turn": 1, "liked": False}]}
    src = tmp_path / "nc.jsonl"
    src.write_text(json.dumps(line) + "\n")
    import_path(store, src)
    at = app(AGREEMENT)
    assert any("Without a reading: 1 conversation(s) with 0 thumbs up and 1 down, 1 rated" in c.value
               for c in at.caption)
    unread = at.dataframe[2].value  # replication, per conversation, then the conversations without a reading
    assert unread["thumbs down"].tolist() == [1] and "concepts" in unread["why no reading"][0]


def test_the_page_validates_a_chosen_batch_and_refuses_one_that_does_not_match(judged_db, capsys):
    path, store, runs = judged_db
    qs = sorted({store.search.list(RunFilter(user="human"))[i].question_id for i in range(6)})
    # the people's tutors are tutor-a / tutor-b: no batch assistant has those model ids, so an offline
    # batch on their questions covers none of their cells, and the page says so instead of comparing
    assert main(["batch", "--questions", ",".join(qs[:2]), "--levels", "novice", "--assistants", "offline/adaptive",
                 "--max-turns", "2", "--tag", "mismatch", "--db", str(path)]) == 0
    capsys.readouterr()
    at = app(AGREEMENT)
    at.multiselect(key="agr_simulated").set_value(["mismatch"]).run()
    assert not at.exception, at.exception
    (err,) = at.error
    assert "does not match the people's cells" in err.value and "tutor-a" in err.value


def test_the_page_compares_a_matching_batch_cell_by_cell(tmp_path, monkeypatch, capsys):
    path = tmp_path / "sim.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    store = Store(path)
    import_path(store, offline_people(tmp_path))
    qs = ",".join(sorted(r.question_id for r in store.search.list(RunFilter(user="human"))))
    assert main(["batch", "--questions", qs, "--levels", "novice,advanced", "--assistants",
                 "offline/adaptive,offline/socratic", "--max-turns", "2", "--tag", "sim", "--db", str(path)]) == 0
    capsys.readouterr()
    at = app(AGREEMENT)
    at.multiselect(key="agr_simulated").set_value(["sim"]).run()
    assert not at.exception, at.exception
    assert not at.error
    cells = next(d.value for d in at.dataframe if "simulated runs" in d.value.columns)
    assert cells["tutor"].tolist() == ["offline/adaptive", "offline/socratic"] * 2
    assert cells["people"].tolist() == [1, 1, 1, 1] and cells["simulated runs"].tolist() == [1, 1, 1, 1]
    assert any("User simulator offline/knowsim**: 4 of 16 runs match a person" in m.value for m in at.markdown)
