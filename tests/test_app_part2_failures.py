"""AppTest: the Failure Modes page's numbers equal those computed from the stored records."""

from __future__ import annotations

import json
import re
from collections import Counter
from statistics import quantiles

import pytest
from streamlit.testing.v1 import AppTest

from knowsim_core.engine.failures import FAILURE_ORDER

from tests.part2_support import make_run

PAGE = "../pages/failures.py"
QID = "sample_lava_lamps"


@pytest.fixture()
def db(seeded_store):
    store = seeded_store
    g = store.questions.latest_graph_version(QID).graph
    ids = []
    for seed, lv, asst in [(1, "novice", "a1"), (2, "novice", "a2"), (3, "advanced", "a1"), (4, "intermediate", "a1")]:
        ids.append(store.runs.save(make_run(g, question_id=QID, level=lv, assistant_id=asst, seed=seed, max_turns=5)))
    store.ids = ids
    return store


def _charts(at: AppTest) -> dict[str, dict]:
    out = {}
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        out[el.proto.id if not getattr(el, "key", None) else el.key] = spec
    return out


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def test_per_run_bars_and_heatmap_match_the_stored_turns(db):
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.query_params["run"] = db.ids[2]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    run = db.runs.load(db.ids[2])
    bars, heat = _specs(at)[:2]
    by_mode = {t["name"]: t["y"] for t in bars["data"]}
    for m in FAILURE_ORDER:
        assert by_mode[m.title] == [t.mode_counts()[m] for t in run.turns]
    z = heat["data"][0]["z"]
    assert sum(v is not None for row in z for v in row) == sum(len(t.modes) for t in run.turns)
    hover = " ".join(x for row in heat["data"][0]["text"] for x in row)
    assert "already known well" in hover or "could not advance" in hover or "advanced this turn" in hover


def test_across_runs_shares_and_table_match_the_records(db):
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    runs = [db.runs.load(i) for i in db.ids]
    shares, table = _specs(at)[2:4]
    for trace in shares["data"]:
        for level_label, share, (level, mode, count) in zip(trace["y"], trace["x"], trace["customdata"]):
            direct = Counter(m.value for r in runs if r.level == level for t in r.turns for _, m in t.modes)
            assert count == direct[mode]
            assert share == pytest.approx(direct[mode] / sum(direct.values()))
            assert level_label == f"{level} (n={sum(r.level == level for r in runs)})"
    cells = {(row, col): t for row, line in zip(table["data"][0]["y"], table["data"][0]["text"]) for col, t in zip(table["data"][0]["x"], line)}
    a1_novice = [r for r in runs if r.level == "novice" and r.adapter["assistant"] == "a1"]
    dc = sum(r.metrics().delivery_calibration for r in a1_novice) / len(a1_novice)
    assert cells[("a1", "novice DC")] == f"{dc:.2f}<br>n=1"
    assert cells[("a1", "advanced KG")].endswith("n=1")


def test_filters_narrow_the_runs_and_a_click_opens_the_run(db):
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    at.session_state["fm_level"] = "novice"
    at.run()
    specs = _specs(at)
    assert [t["y"] for t in specs[2]["data"]][0] == ["novice (n=2)"]
    # a click on the novice PREREQ-BLOCKED segment opens the first novice run showing that mode
    at.session_state["fm_shares"] = {"selection": {"points": [{"customdata": ["novice", "prereq_blocked", 1]}],
                                                   "point_indices": [0], "box": [], "lasso": []}}
    at.run()
    [where] = [m for i in at.info if (m := re.search(r"Open run (\S+) at turn (\d+) on the Simulate", i.value))]
    target = {"run": where[1], "turn": int(where[2])}
    run = db.runs.load(target["run"])
    assert run.level == "novice"
    first = next(t.turn for t in run.turns if any(m.value == "prereq_blocked" for _, m in t.modes))
    assert target["turn"] == first


def test_empty_database_shows_guidance(db_path, monkeypatch):
    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    assert not at.exception
    assert any("No saved runs" in i.value for i in at.info)


def test_across_runs_counts_finished_runs_unless_asked_and_shows_n_and_the_iqr(db):
    from knowsim_core.storage.run_filter import RunFilter
    g = db.questions.latest_graph_version(QID).graph
    for seed in (21, 22):  # stopped at turn 1: must not be averaged with finished runs by default
        stopped = make_run(g, question_id=QID, level="novice", assistant_id="a1", seed=seed, max_turns=5)
        db.runs.save(stopped.with_turns(stopped.turns[:1]), status="interrupted")
    finished = [db.runs.load(i) for i in db.ids]
    everything = finished + [db.runs.load(r.id) for r in db.search.list(RunFilter(status="interrupted"))]

    at = AppTest.from_file(PAGE, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="fm_status").value == "finished"
    caption = next(c.value for c in at.caption if "runs ·" in c.value)
    assert caption.startswith("4 runs · finished runs") and "interquartile range" in caption
    shares = _specs(at)[2]
    assert "novice (n=2)" in shares["data"][0]["y"]
    table = at.dataframe[-1].value.set_index(["assistant", "level"])
    a1_novice = [r for r in finished if r.level == "novice" and r.adapter["assistant"] == "a1"]
    assert table.loc[("a1", "novice"), "n runs"] == 1 and table.loc[("a1", "novice"), "DC IQR"] is None
    assert table.loc[("a1", "novice"), "DC"] == pytest.approx(a1_novice[0].metrics().delivery_calibration, abs=5e-4)

    at.selectbox(key="fm_status").set_value("all").run()
    assert not at.exception, [e.value for e in at.exception]
    shares = _specs(at)[2]
    assert "novice (n=4)" in shares["data"][0]["y"]
    for trace in shares["data"]:
        for level, mode, count in trace["customdata"]:
            assert count == sum(1 for r in everything if r.level == level for t in r.turns for _, m in t.modes
                                if m.value == mode)
    table = at.dataframe[-1].value.set_index(["assistant", "level"])
    cell = [r.metrics().delivery_calibration for r in everything
            if r.level == "novice" and r.adapter["assistant"] == "a1"]
    assert table.loc[("a1", "novice"), "n runs"] == 3
    q1, _, q3 = quantiles(cell, n=4, method="inclusive")
    assert table.loc[("a1", "novice"), "DC IQR"] == f"{q1:.3f} – {q3:.3f}"

    at.selectbox(key="fm_status").set_value("unfinished").run()
    assert "novice (n=2)" in _specs(at)[2]["data"][0]["y"]


# ---------------------------------------------------------------------- chart legibility (issue 14)
def test_mode_colours_are_the_shared_palette_and_legends_stay_off_the_axes(db):
    from knowsim_core.engine.failures import FailureMode
    from ui.common.theme import MODE_COLORS, STATE_STYLE

    at = AppTest.from_file(PAGE, default_timeout=30)
    at.query_params["run"] = db.ids[2]
    at.run()
    bars, heat, shares, table = _specs(at)[:4]
    # one palette, from ui.common.theme, in every mode chart — and none of it means a state elsewhere
    assert {t["name"]: t["marker"]["color"] for t in bars["data"]} == {m.title: MODE_COLORS[m] for m in FAILURE_ORDER}
    assert {t["name"]: t["marker"]["color"] for t in shares["data"]} == {m.title: MODE_COLORS[m] for m in FAILURE_ORDER}
    assert {c for _, c in heat["data"][0]["colorscale"]} == set(MODE_COLORS.values())
    assert not set(MODE_COLORS.values()) & {s.colour for s in STATE_STYLE.values()}
    assert len(set(MODE_COLORS.values())) == len(FailureMode)
    # legends outside the plot area, with room kept for them: right of the stacked columns, read
    # top-down like the stack (first trace = bottom), and above the stacked rows, read left to right
    leg = bars["layout"]["legend"]
    assert leg["orientation"] == "v" and leg["x"] >= 1 and leg["traceorder"] == "reversed"
    assert bars["layout"]["margin"]["r"] >= 150 and bars["layout"]["xaxis"]["title"]["text"] == "turn"
    leg = shares["layout"]["legend"]
    assert leg["orientation"] == "h" and leg["y"] >= 1 and leg["yanchor"] == "bottom" and leg["traceorder"] == "normal"
    assert shares["layout"]["margin"]["t"] >= 60


def test_metric_table_has_a_colour_key_and_coloured_kg_columns(db):
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    table = _specs(at)[3]["data"][0]
    assert table["showscale"] is True and "better" in table["colorbar"]["ticktext"]
    kg_cols = [j for j, x in enumerate(table["x"]) if x.endswith(" KG")]
    assert kg_cols
    filled = [line[j] for line, texts in zip(table["z"], table["text"]) for j in kg_cols if texts[j]]
    assert filled and all(v is not None for v in filled)
    assert max(filled) == pytest.approx(1.0)  # KG is coloured relative to the table's largest KG
    # CO is coloured the way round that makes darker mean better (less overload)
    co = [(float(texts[j].split("<br>")[0]), line[j]) for line, texts in zip(table["z"], table["text"])
          for j, x in enumerate(table["x"]) if x.endswith(" CO") and texts[j]]
    assert all(v == pytest.approx(1 - mean, abs=6e-3) for mean, v in co)


def test_the_metric_table_can_have_a_row_per_batch(db):
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    at.radio(key="fm_rows").set_value("batch").run()
    assert not at.exception, [e.value for e in at.exception]
    table = _specs(at)[3]
    # these runs were stored one by one: a single row, the one without a batch tag
    assert list(table["data"][0]["y"]) == [""]
    rows = next(d.value for d in at.dataframe if "batch" in d.value.columns)
    assert set(rows["batch"]) == {""} and rows["n runs"].sum() == len(db.ids)
