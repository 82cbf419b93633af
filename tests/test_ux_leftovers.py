"""What was left of issue 34 (items 8, 15, 18) — each test names the old behaviour it catches.

AppTest for the pages, the command line through ``cli.main``; the layout items are checked in
Debian's chromium by tests/browser/test_above_fold_browser.py.
"""

from __future__ import annotations

import json
import re
from typing import Callable

from streamlit.testing.v1 import AppTest

from knowsim_core.cli import main
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.storage_fakes import Clock

QID = "sample_lava_lamps"


def _open(page: str, **query) -> AppTest:
    at = AppTest.from_file(page, default_timeout=90)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_table_never_shows_python_none(seeded_store):
    """Old: a run that failed before its first turn showed KG / DC / CO as "None" on Saved runs
    (Streamlit's grid writes a missing value as Python's None unless given a placeholder)."""
    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/simple", seed=1)
    seeded_store.runs.finish(live.run_id, status="failed", error="the model did not answer")
    start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/simple", seed=2,
              max_turns=2).run_to_end()
    at = _open("../pages/runs.py")
    table = next(d for d in at.dataframe if "KG" in d.value.columns)
    assert table.value["KG"].isna().any()  # the case in question: a run with no metrics
    for d in at.dataframe:
        assert d.proto.placeholder == "—", d.value.columns.tolist()


def test_paper_check_cells_are_never_cut(seeded_store):
    """Old: the Paper check tables had Streamlit's default column widths, so "1/1 (100 %, 1 overload)",
    "Studio (spec …)" and "9 LLM tutors, simple prompt, …" were cut with an ellipsis; then, sized to
    their longest cells, the grids ran off the page's right edge (issue 47). They are static tables
    now, whose cells wrap between words: every text is sent whole (the browser's side of the width:
    tests/browser/test_pages_fit_browser.py)."""
    from knowsim_core.evaluation.paper import BENCHMARK

    for level in ("novice", "advanced"):
        for assistant in ("offline/simple", "offline/adaptive"):
            start_run(seeded_store, question_id=QID, level=level, assistant_id=assistant, seed=1,
                      max_turns=15).run_to_end()
    at = _open("../pages/failures.py")
    at.toggle(key="pc_paper_only").set_value(False).run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [d.value for d in at.table if {"figure", "source"} <= set(d.value.columns)  # per level
              or {"assistant", "n"} <= set(d.value.columns) or {"figure", "recordings"} <= set(d.value.columns)]
    assert len(tables) == 3, [d.value.columns.tolist() for d in at.table]
    cells = {str(v) for t in tables for column in t.columns for v in t[column]}
    assert "Studio (spec §6.2)" in cells and any(c.endswith(" overload)") for c in cells)
    assert BENCHMARK in " ".join(c.value for c in at.caption)  # the population, said once


def test_failures_says_one_run_and_explains_in_one_set_of_columns(capsys, db_path):
    """Old: `failures` printed "1 runs"; `explain` sized its columns per turn, so turn 1's table
    (with OVERLOAD-WASTED) and turn 3's (without) started "why" at different places."""
    assert cli(capsys, "run", "--question", QID, "--level", "novice", "--assistant", "offline/adaptive", "--seed", "1",
               "--max-turns", "3", "--db", str(db_path))[0] == 0
    code, out, _ = cli(capsys, "failures", "--db", str(db_path))
    assert code == 0 and out.splitlines()[0].startswith("1 finished run ·"), out
    rid = json.loads(cli(capsys, "runs", "--db", str(db_path), "--json")[1])["runs"][0]["id"]
    code, out, _ = cli(capsys, "explain", rid, "--db", str(db_path))
    headers = [line for line in out.splitlines() if line.startswith("IU ")]
    assert len(headers) == 3 and len(set(headers)) == 1, headers
    modes = {line.split()[1] for line in out.splitlines() if line.startswith("IU") and not line.startswith("IU ")}
    assert "OVERLOAD-WASTED" in modes  # the widest mode is in some turn but not in every one


def test_the_learner_keeps_the_case_of_names_too():
    """Old: the offline learner lower-cased the first letter unless the second was a capital:
    "For cas9 cutting mechanism, I think …", "I think r0 is …" (the tutors were fixed, the learner not)."""
    from knowsim_core.agents import offline_user

    assert offline_user._lc("Cas9 cutting mechanism") == "Cas9 cutting mechanism"
    assert offline_user._lc("R0 is the average") == "R0 is the average"
    assert offline_user._lc("Adaptive immune memory") == "adaptive immune memory"


def test_a_crispr_learner_never_writes_cas9_or_dna_in_lower_case(db_path):
    store = Store(db_path)
    store.questions.seed_samples()
    seen = 0
    for assistant in ("offline/simple", "offline/comprehensive"):
        run = start_run(store, question_id="sample_crispr_gene_editing", level="novice", assistant_id=assistant,
                        seed=1, max_turns=15).run_to_end()
        text = " ".join(t.user_message for t in run.turns)
        seen += len(re.findall(r"\b(DNA|Cas9|RNA)\b", text))
        assert not re.findall(r"\b(dna|cas9|rna)\b", text), assistant
    assert seen  # the learner does name them


def test_a_rejected_key_on_the_command_line_points_at_the_variable_first():
    """Old: a 401 said "check OPENAI_API_KEY or the key typed in the sidebar" — the command line has
    no sidebar; the app's sidebar is named as the app's."""
    from knowsim_core.llm.errors import translate

    class AuthenticationError(Exception):
        status_code = 401

    err = translate(AuthenticationError("bad key"), provider="openai", model="gpt-4o-mini", base_url="",
                    timeout_s=10, retries=0, secrets=())
    assert "OPENAI_API_KEY" in str(err) and "in the app" in str(err), str(err)


def test_realism_spells_each_llm_baseline_once_with_the_method_before_the_url(seeded_store, tmp_path, monkeypatch):
    """Old: the page added the paper's baselines as f"{uid}:{method}", which for a compat id with a
    URL wrote the method after the URL (``compat/m@http://h/v1:zs``) — beside the same agent spelled
    by the model picker, so one baseline could be listed under two ids."""
    from knowsim_core.agents.registry import parse_id
    from knowsim_core.services.importing import import_path
    from tests.test_app_realism import CONVS

    path = tmp_path / "convs.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in CONVS) + "\n")
    import_path(seeded_store, path)
    url = "http://127.0.0.1:9/v1"
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", url)
    monkeypatch.setenv("KNOWSIM_COMPAT_MODELS", f"tiny@{url},llama3:8b")
    at = _open("../pages/realism.py")
    options = at.multiselect(key="realism_users").options
    assert f"compat/tiny:zs@{url}" in options and "compat/llama3:8b:zs-cot" in options, options
    assert all(parse_id(o).id == o for o in options), options  # the registry's spelling
    assert len({parse_id(o) for o in options}) == len(options)  # one id per agent


def test_an_abandoned_start_leaves_no_zero_turn_run_and_a_played_one_stays_resumable(db_path):
    """Old: Start pressed in Simulate and the tab left — the run's lease lapsed and it was kept as an
    "interrupted" run with 0 turns, listed with the runs worth resuming."""
    from knowsim_core.services.runner import resume_run

    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    empty = start_run(store, question_id=QID, level="novice", assistant_id="offline/simple", seed=1, lease_seconds=60)
    played = start_run(store, question_id=QID, level="novice", assistant_id="offline/simple", seed=2, max_turns=4,
                       lease_seconds=60)
    played.step()
    typed = start_run(store, question_id=QID, level="novice", assistant_id="offline/simple", seed=3)  # command line
    clock.t += 61
    assert sorted(store.runs.mark_dead()) == sorted([empty.run_id, played.run_id])
    ids = {r.id: r for r in store.search.list()}
    assert empty.run_id not in ids  # nothing was played: nothing to resume
    # left open with its turn (issue 47: it used to turn "interrupted", among the failed runs)
    assert (ids[played.run_id].status, ids[played.run_id].turns) == ("open", 1)
    assert ids[typed.run_id].status == "running"  # no lease: the pid check keeps it (this process is alive)
    assert resume_run(store, played.run_id).run_to_end().turns


def _url_run(at: AppTest) -> str:
    value = at.query_params["run"]
    return value[0] if isinstance(value, list) else value


def test_close_after_start_deletes_the_unplayed_run_and_keeps_a_played_one(seeded_store):
    """Old: Start, then Close (or Start again) kept a 0-turn run in Saved runs."""
    at = _open("../pages/simulate.py")
    at.button(key="setup_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    first = _url_run(at)
    assert seeded_store.search.get_row(first).turns == 0
    at.button(key="setup_start").click().run()  # a second Start replaces the first, never played
    second = _url_run(at)
    assert second != first and first not in {r.id for r in seeded_store.search.list()}
    at.button(key="sim_step").click().run()
    assert seeded_store.search.get_row(second).turns == 1
    at.run()  # the step redrew only the player's fragments: the whole page, with Close
    at.button(key="sim_close").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert seeded_store.search.get_row(second).turns == 1  # played: it stays, resumable
    at.button(key="setup_start").click().run()
    third = _url_run(at)
    at.button(key="sim_close").click().run()
    assert third not in {r.id for r in seeded_store.search.list()}


_HELP_PROBE = """
import json, sys
from knowsim_core.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
# a layer counts as loaded when one of its modules is (the packages themselves load nothing: knowsim_core.lazy)
layers = ("knowsim_core.storage", "knowsim_core.llm", "knowsim_core.evaluation", "knowsim_core.agents")
heavy = sorted([m for m in ("sqlite_utils", "numpy", "pydantic") if m in sys.modules]
               + [p for p in layers if any(m.startswith(p + ".") for m in sys.modules)])
commands = sorted(m for m in sys.modules if m.startswith("knowsim_core.commands."))
print(json.dumps({"code": code, "heavy": heavy, "commands": commands}))
"""


def _help_probe(*argv: str) -> dict:
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", _HELP_PROBE, *argv], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_help_loads_no_storage_models_or_evaluation():
    """Old: `python -m knowsim_core --help` imported all 13 command modules, and `explain --help`
    (export, judge, …) imported storage (sqlite-utils, numpy), pydantic and evaluation just to print
    its options — 3-7 s on a busy machine. Speed is measured by benchmarks/startup.py, not here."""
    top = _help_probe("--help")
    assert top == {"code": 0, "heavy": [], "commands": []}, top
    assert _help_probe("rnus")["commands"] == []  # the "invalid choice" list too
    for command in ("explain", "export", "judge", "extract-graph", "agreement", "realism", "relabel"):
        out = _help_probe(command, "--help")
        assert out["code"] == 0 and out["heavy"] == [], (command, out)
    for command in ("replay", "import", "run"):  # their --preset choices are engine.config's presets (pydantic)
        out = _help_probe(command, "--help")
        assert out["code"] == 0 and out["heavy"] == ["pydantic"], (command, out)


def test_the_db_option_names_the_storage_variable():
    from knowsim_core.commands.runs import DB_ENV
    from knowsim_core.storage import ENV_DB

    assert DB_ENV == ENV_DB


def test_the_batch_progress_line_says_how_runs_ended():
    """Old: the bar read "2/360 runs" while the summary at the stop read "0 done, 2 interrupted" —
    two words for two counts. The bar counts what ended and names the interrupted; the summary says
    "finished"."""
    import io

    from knowsim_core.batch.schedule import Tally
    from knowsim_core.commands.batch import Progress

    line = Progress(Tally(total=360, done=2, interrupted=2), 360, stream=io.StringIO()).line()
    assert "2/360 runs ended" in line and "2 interrupted" in line, line


def test_batch_progress_into_a_log_prints_tenths_failures_and_a_line_every_few_seconds():
    """Old: a line per finished conversation when stderr is not a terminal (120 lines for the
    sample matrix, 7,200 for a night's batch). Now: the first end, each tenth of the batch, any
    conversation that did not finish, a line at least every ``LOG_EVERY_S``, and the last state."""
    import io

    from knowsim_core.batch.schedule import Outcome, Tally
    from knowsim_core.commands.batch import Progress

    def play(total: int, statuses: dict[int, str], clock_at: Callable[[int], float]) -> list[str]:
        tally, stream, now = Tally(total=total), io.StringIO(), [0.0]
        progress = Progress(tally, total, stream=stream, clock=lambda: now[0])
        for i in range(total):
            out = Outcome(i, statuses.get(i, "finished"))
            with tally.lock:
                tally.done += 1
            now[0] = clock_at(i)
            progress.finished_one(out)
        progress.close()
        return stream.getvalue().splitlines()

    lines = play(120, {}, lambda i: 0.0)
    assert [int(line.split("] ")[1].split("/")[0]) for line in lines] == [1, 12, 24, 36, 48, 60, 72, 84, 96, 108, 120]
    assert "120/120 runs ended" in lines[-1]
    with_failure = play(120, {30: "failed"}, lambda i: 0.0)
    assert len(with_failure) == 12 and any(line.split("] ")[1].startswith("31/120") for line in with_failure)
    slow = play(5, {}, lambda i: 10.0 * i)  # a tenth per conversation anyway: every one prints
    assert len(slow) == 5
    # 1,000 conversations 2.5 s apart: a line per 10 s (~250) and the tenths, not 1,000 lines
    long_night = play(1000, {}, lambda i: 2.5 * i)
    assert 250 <= len(long_night) <= 262, len(long_night)


def test_a_page_left_idle_past_the_lease_of_an_unplayed_run_says_it_was_removed(db_path):
    """With the empty run deleted when its lease lapsed, Step on the page still holding it said
    "unknown run id … — the turns played so far are saved; step again to retry" (neither holds)."""
    from ui.simulate.player import Player

    clock = Clock()
    store = Store(db_path, clock=clock)
    store.questions.seed_samples()
    live = start_run(store, question_id=QID, level="novice", assistant_id="offline/simple", seed=1, lease_seconds=60)
    p = Player(store, (live.run_id,), live={live.run_id: live})
    clock.t += 600  # the page sat idle: nobody renewed the lease
    store.runs.mark_dead()
    assert not p.forward()
    assert "was removed" in p.error and "New simulation" in p.error and "step again" not in p.error, p.error
