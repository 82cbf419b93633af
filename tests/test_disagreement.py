"""Where the simulator and people disagree, per turn, per IU and per answer (issue 47 item 5).

The Agreement page counted *that* the reading runs against people (DC against correct answers: an
interval below 0.5) but showed no turn, IU or conversation where it does. The view's counts are the
``agreement`` command's (one function builds both); the pairs against a metric's stated direction are
the AUC the summary reports, counted pair by pair; every call is checked against its definition.
"""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.evaluation.agreement import Agreement, Conversation, JudgedTurn, collect, to_json
from knowsim_core.evaluation.disagreement import (GOOD, GOOD_DOWN, NEUTRAL, POOR, POOR_UP, disagreement, iu_call,
                                                  kind, turn_call)
from knowsim_core.engine.failures import FailureMode
from knowsim_core.services.importing import import_path
from knowsim_core.storage import Store
from tests.test_app_agreement import conversations

DIRECTIONS = {"kg": (1, "more is better"), "co": (-1, "less is better")}


def _turn(run: str, turn: int, liked: bool, modes: list[FailureMode], source: str = "person") -> JudgedTurn:
    good = sum(m == FailureMode.EFFECTIVE for m in modes)
    bad = sum(m in (FailureMode.REDUNDANT, FailureMode.PREREQ_BLOCKED, FailureMode.OVERLOAD_WASTED) for m in modes)
    score = (good - bad) / len(modes) if modes else 0.0  # agreement.turn_score's definition
    return JudgedTurn(run_id=run, turn=turn, liked=liked, source=source, modes=tuple(sorted({m.value for m in modes})),
                      scores={"knowsim": score, "upward": 0.0, "reply_length": 10.0},
                      explained=tuple((f"IU{k + 1}", f"c{k + 1}", m.value) for k, m in enumerate(modes)))


def test_the_calls_and_the_two_disagreements():
    assert (turn_call(0.5), turn_call(0.0), turn_call(-0.1)) == (GOOD, NEUTRAL, POOR)
    assert [iu_call(m) for m in FailureMode] == [POOR, POOR, GOOD, POOR, NEUTRAL]  # R P E O U
    assert (kind(GOOD, False), kind(POOR, True), kind(GOOD, True), kind(POOR, False), kind(NEUTRAL, False)) == (
        GOOD_DOWN, POOR_UP, "agree", "agree", NEUTRAL)
    E, R, U = FailureMode.EFFECTIVE, FailureMode.REDUNDANT, FailureMode.UNDER_ABSORBED
    turns = [_turn("a", 1, False, [E, E, R]),  # called good, thumb down
             _turn("a", 2, True, [R, U]),  # called poor, thumb up
             _turn("b", 1, True, [E]),  # agree
             _turn("b", 2, False, []),  # neutral: nothing explained
             _turn("b", 3, True, [E], source="researcher")]  # not the people's: left out
    d = disagreement(Agreement(turns=turns), directions=DIRECTIONS)
    t = d["turns"]
    assert (t["n"], t[GOOD_DOWN], t[POOR_UP], t["agree"], t[NEUTRAL]) == (4, 1, 1, 1, 1)
    assert t["table"] == {GOOD: {"up": 1, "down": 1}, NEUTRAL: {"up": 0, "down": 1}, POOR: {"up": 1, "down": 0}}
    assert [r["kind"] for r in t["rows"]] == [GOOD_DOWN, POOR_UP, "agree", NEUTRAL]
    a_iu1 = next(r for r in d["ius"] if (r["run"], r["iu"]) == ("a", "IU1"))
    # IU1 of run a: EFFECTIVE under a thumb down (turn 1), REDUNDANT under a thumb up (turn 2)
    assert (a_iu1[GOOD_DOWN], a_iu1[POOR_UP], a_iu1["turns"]) == (1, 1, [1, 2])
    assert d["ius"][0] is a_iu1  # most disagreements first


def _conv(i: int, correct: bool | None, kg: float, co: float) -> Conversation:
    return Conversation(run_id=f"r{i}", conversation=f"c{i}", level="9-12", model="m", rating=None, correct=correct,
                        metrics={"kg": kg, "co": co})


def test_pairs_against_the_stated_direction_count_the_auc():
    convs = [_conv(0, True, 3, 0.2), _conv(1, True, 1, 0.9), _conv(2, False, 2, 0.5), _conv(3, False, 1, 0.1),
             _conv(4, None, 9, 0.0)]  # an unknown answer is in no pair
    d = disagreement(Agreement(conversations=convs), directions=DIRECTIONS)["answers"]
    # KG, higher is better: (3 vs 2) ok, (3 vs 1) ok, (1 vs 2) against, (1 vs 1) a tie: 1.5 of 4
    assert (d["kg"]["pairs"], d["kg"]["against"], d["kg"]["share_against"]) == (4, 1.5, 0.375)
    # CO, lower is better: (0.2 vs 0.5) ok, (0.2 vs 0.1) against, (0.9 vs 0.5) against, (0.9 vs 0.1) against
    assert d["co"]["against"] == 3
    by = {r["run"]: r["against"] for r in d["kg"]["rows"]}
    assert by == {"r0": 0.0, "r1": 1.5, "r2": 1.0, "r3": 0.5}  # each pair counted from both of its sides
    assert "r4" not in by


@pytest.fixture()
def judged(tmp_path, monkeypatch):
    path = tmp_path / "studio.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    store = Store(path)
    import_path(store, conversations(tmp_path))
    return path, store


def test_the_share_against_is_one_minus_the_summarys_auc(judged):
    _, store = judged
    report = to_json(collect(store, resamples=50))
    for metric, e in report["disagreement"]["answers"].items():
        auc = report["conversations"]["correctness"][metric]["auc"]
        sign = {"kg": 1, "dc": 1, "co": -1}[metric]
        assert e["share_against"] == pytest.approx(1 - auc if sign > 0 else auc), metric
    d = report["disagreement"]["turns"]
    assert d["n"] == report["votes"]["n"] == sum(r["up"] + r["down"] for r in d["table"].values())
    assert sum(r["up"] for r in d["table"].values()) == report["votes"]["up"]


def _command(path, capsys) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["agreement", "--db", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert main(["agreement", "--db", str(path)]) == 0
    return data, capsys.readouterr().out


def _page() -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=180)
    at.run()
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _check_page_against_the_command(at: AppTest, data: dict, text: str) -> None:
    d = data["disagreement"]
    t = d["turns"]
    shown = {m.label: m.value for m in at.metric}
    assert (shown["Called good, thumb down"], shown["Called poor, thumb up"], shown["Agree"], shown["Called neutral"]) \
        == tuple(str(t[k]) for k in (GOOD_DOWN, POOR_UP, "agree", NEUTRAL))
    calls = next(df.value for df in at.dataframe if "the reading called the turn" in df.value.columns)
    assert [list(r) for _, r in calls.iterrows()] == [[c, t["table"][c]["up"], t["table"][c]["down"]]
                                                      for c in (GOOD, NEUTRAL, POOR)]
    assert f"{t[GOOD_DOWN]} turn(s) called good got 👎; {t[POOR_UP]} called poor got 👍" in text
    for metric, e in d["answers"].items():
        assert f"{metric.upper()} {e['against']:g} of {e['pairs']}" in text
    dc = d["answers"]["dc"]
    assert any(f"DC ({dc['direction']}): {dc['against']:g} of {dc['pairs']} pairs" in c.value for c in at.caption)
    listed = next(df.value for df in at.dataframe if df.key and df.key.startswith("agr_dis_turns_"))
    assert len(listed) == t[GOOD_DOWN]
    ius = next(df.value for df in at.dataframe if df.key and df.key.startswith("agr_dis_ius_"))
    assert len(ius) == len(d["ius"])
    # the reader's trust note stays in view beside the disagreements
    assert any(re.search(r"rest on the reader", i.value) for i in at.info)


def test_the_page_shows_the_commands_counts(judged, capsys):
    path, _ = judged
    data, text = _command(path, capsys)
    at = _page()
    _check_page_against_the_command(at, data, text)
    at.radio(key="agr_dis_kind").set_value(POOR_UP).run()
    listed = next(df.value for df in at.dataframe if df.key and df.key.startswith("agr_dis_turns_"))
    assert len(listed) == data["disagreement"]["turns"][POOR_UP] and set(listed["thumb"]) <= {"thumb up"}
    answers = next(df for df in at.dataframe if df.key and df.key.startswith("agr_dis_answers_"))
    at.session_state[answers.key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    first = data["disagreement"]["answers"]["dc"]["rows"][0]
    parts = next(df.value for df in at.dataframe if "taught, not teachable" in df.value.columns)
    assert list(parts["IU"]) == [x["iu"] for x in first["dc_parts"]]
    assert any(first["conversation"] in m.value for m in at.markdown)


def test_the_simulatorarena_conversations(tmp_path, monkeypatch, arena_annotations, capsys):
    """The 25 real conversations: the disagreement the summary counts (DC against correct answers)
    can be looked at turn by turn and pair by pair, with the same figures in the page and the command."""
    path = tmp_path / "studio.db"
    monkeypatch.setenv("KNOWSIM_DB", str(path))
    import_path(Store(path), arena_annotations)
    data, text = _command(path, capsys)
    dc = data["disagreement"]["answers"]["dc"]
    assert dc["share_against"] == pytest.approx(1 - data["conversations"]["correctness"]["dc"]["auc"])
    assert data["disagreement"]["turns"]["n"] == data["votes"]["n"]
    _check_page_against_the_command(_page(), data, text)
