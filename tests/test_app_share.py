"""The Studio's share buttons (issue 25): "Export replay" on Simulate and Saved runs, figure and LaTeX
downloads on Failure modes — present where they should be, and building the command line's bytes.

AppTest cannot click a download (Streamlit defers the data to the click), so the wiring is checked
here (labels and keys per selection) and the bytes through ``ui.common.share``'s builders against the
commands; tests/browser/test_replay_browser.py downloads them for real from a running Studio.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from tests.test_saved_runs import FAILURES, _open, _select, db  # noqa: F401  (the fixture)


def _downloads(at: AppTest) -> dict[str, str]:
    return {b.proto.label: b.key for b in at.get("download_button")}


def test_saved_runs_offer_a_replay_of_one_run_and_of_a_compared_pair(db):  # noqa: F811
    at = _select(_open(), [0])
    assert _downloads(at).get("Export replay") == "runs_replay"
    at = _select(_open(), [0, 1])
    assert _downloads(at).get("Export replay (side by side)") == "runs_replay_pair"
    at = _select(_open(), [0, 1, 2])
    assert not any(label.startswith("Export replay") for label in _downloads(at))


def test_simulate_offers_the_replay_of_the_open_run(db):  # noqa: F811
    from tests.test_app_part1 import APP, SIMULATE, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"], at.query_params["turn"] = db.singles[0], "2"
    at.run()
    at.switch_page(SIMULATE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert _downloads(at).get("Export replay") == "sim_replay"


def test_failure_modes_offers_the_figure_and_the_table_of_the_runs_it_shows(db, tmp_path, capsys):  # noqa: F811
    from ui.common import share

    at = _open(FAILURES)
    assert {"Figure (SVG)", "Figure (PDF)", "Figure (PNG)", "LaTeX table"} <= set(_downloads(at))
    facts = db.search.facts(status="finished")
    capsys.readouterr()
    assert main(["failures", "--db", str(db.path), "--latex"]) == 0
    assert share.table_text(facts) == capsys.readouterr().out
    out = tmp_path / "f.svg"
    assert main(["failures", "--db", str(db.path), "--figure", str(out)]) == 0
    assert share.figure_bytes(facts, "svg") == out.read_bytes()


def test_the_replay_button_builds_the_export_commands_file(db, capsys):  # noqa: F811
    from knowsim_core.evaluation.replay import replay_html
    from ui.common.share import replay_file_name

    a, b = db.singles
    capsys.readouterr()
    assert main(["export", a, "--pair", b, "--format", "html", "--db", str(db.path)]) == 0
    assert replay_html(db, [a, b]) == capsys.readouterr().out
    assert replay_file_name([a, b]) == f"knowsim_replay_{a}_vs_{b}.html"


def test_no_runs_no_paper_buttons(db_path, monkeypatch):
    monkeypatch.setenv("KNOWSIM_DB", str(db_path))
    at = _open(FAILURES)
    assert not any(label.startswith("Figure") for label in _downloads(at))
