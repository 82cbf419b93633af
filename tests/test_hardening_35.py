"""Issue 35's minor findings that are not about model replies (those are in test_llm_bounds.py): each
test names the old behaviour it catches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowsim_core.cli import main
from tests.test_hardening_minor import one_line_error  # one owner of the one-line check

ROOT = Path(__file__).resolve().parent.parent
QID = "sample_lava_lamps"


def cli(*argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    e["PYTHONPATH"] = str(ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "knowsim_core", *argv], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout)


# ---------------------------------------------------------------------- compare of a run with no turns
def test_comparing_a_run_without_turns_shows_its_starting_state():
    """Old code: ``run.turns[min(turn, 0) - 1]`` on an empty tuple → IndexError (ui/compare.py:43)."""
    from dataclasses import replace

    from knowsim_core.formats.samples import load_samples
    from tests.part2_support import make_run
    from ui.runs.compare import state_diff, why_diff

    g = next(s for s in load_samples() if s.id == QID).graph
    b = make_run(g, question_id=QID, level="advanced", seed=2, max_turns=4)
    empty = replace(make_run(g, question_id=QID, level="novice", seed=1, max_turns=4), turns=(), stop_reason=None)
    rows = state_diff(empty, b, 3)
    start = {v: empty.initial_state.state_of(empty.graph.index.label_of[v]) for v in g.index.ids}
    from ui.common.theme import state_badge
    assert [r["A"] for r in rows] == [state_badge(start[r["IU"]]) for r in rows]
    assert all(r["A mode"] == "" for r in why_diff(empty, b, 3))


# ---------------------------------------------------------------------- several thumbs on one turn
def _count_stored(store) -> int:
    return sum(len(store.judgments.list(r.id)) for r in store.search.list(limit=1000))


def test_several_thumbs_on_one_turn_are_stored_and_counted_as_one_or_none(tmp_path):
    """Old code stored the last of 👍👎👎 on one turn while the summary counted three thumbs (3 👍 / 👎, 5
    "not checked"); now it counts the one it stores and says what became of the others."""
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store
    from tests.test_realworld_import import CONV

    conv = {**CONV, "votes": [{"turn": 1, "liked": True}, {"turn": 1, "liked": False}, {"turn": 1, "liked": False},
                              {"turn": 2, "liked": True}, {"turn": 2, "liked": True}]}
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    store = Store(tmp_path / "s.db")
    report = import_path(store, path)
    (rid,) = report.runs
    assert [(j.turn, j.liked) for j in store.judgments.list(rid)] == [(1, False), (2, True)]  # the last of each
    assert report.judgments == 2 == _count_stored(store)
    text = report.summary()
    assert "2 thumb(s) stored as judgments (1 👍, 1 👎; reply text matched exactly 0, as a prefix 0, mismatched 0, " \
           "not checked (no reply text) 2)" in text
    assert ("not stored: 2 repeating a thumb on the same turn (kept once), "
            "1 overridden by a later thumb on the same turn (the last one kept)") in text


def test_arena_keys_that_name_one_reply_twice_are_one_thumb(tmp_path, arena_annotations):
    """``"[0, 1]"`` and ``"[0,1]"`` are one reply: old code counted two and stored one."""
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store
    from tests.test_realworld_import import _variant

    def twice(data):
        rec = next(r for r in data if r.get("turn_level_vote"))
        votes = rec["turn_level_vote"]
        votes["[0,1]"] = list(votes["[0, 1]"])
        data[:] = [rec]

    path = _variant(tmp_path, twice, n=25)
    store = Store(tmp_path / "s.db")
    report = import_path(store, path)
    rec = json.loads(path.read_text())[0]
    listed = len(rec["turn_level_vote"])
    assert report.judgments == listed - 1 == _count_stored(store)
    v = report.votes
    assert v["up"] + v["down"] == listed - 1 and v["votes_repeated"] == 1
    assert sum(v[k] for k in ("votes_exact", "votes_prefix", "votes_mismatch", "votes_unchecked")) == listed - 1


# ---------------------------------------------------------------------- invisible characters in ids
@pytest.mark.parametrize("bad", ["math_\u200b001", "math_\u202e001"])
def test_an_items_jsonl_id_with_an_invisible_character_is_refused(tmp_path, bad):
    """Old code accepted U+200B / U+202E in an item id: two questions that print the same id."""
    from knowsim_core.errors import FormatError
    from knowsim_core.formats.reference import load_items

    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps({"id": bad, "problem": "What is 1 + 1?", "solution": "2"}) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"(?i)line 1.*field id.*invisible character U\+20"):
        load_items(path)


@pytest.mark.parametrize("field", ["question_id", "run_id"])
def test_a_studio_run_with_an_invisible_character_in_an_id_is_refused(seeded_store, tmp_path, field):
    from knowsim_core.errors import FormatError
    from knowsim_core.formats import studio
    from knowsim_core.services.importing import import_path
    from knowsim_core.services.runner import start_run

    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/simple", max_turns=2)
    live.run_to_end()
    data = json.loads(studio.dumps(seeded_store.runs.load(live.run_id)))
    data[field] = data[field][:3] + "\u202e" + data[field][3:]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    before = seeded_store.search.count()
    with pytest.raises(FormatError, match=rf"(?i)field {field}.*invisible character U\+202E"):
        import_path(seeded_store, path)
    assert seeded_store.search.count() == before


# ---------------------------------------------------------------------- files that never end, BOMs
def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))  # the old unbounded read dies here, not the machine


@pytest.mark.parametrize("argv", [["import", "/dev/zero"], ["relabel", "/dev/zero", "--graphs", "/dev/zero"]],
                         ids=["import", "relabel"])
def test_a_device_is_refused_in_one_line_not_read_without_end(argv, tmp_path):
    """Old code: /dev/zero has size 0, passed the size check and was read until the OOM killer (17.8 GB)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    e["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-m", "knowsim_core", *argv, *(["--db", str(tmp_path / "s.db")]
                          if argv[0] == "import" else [])], cwd=ROOT, env=e, capture_output=True, text=True,
                         timeout=120, preexec_fn=_limited)
    one_line_error(out, "/dev/zero is a device, not a file")


def test_a_pipe_is_read_only_up_to_the_size_cap(tmp_path, monkeypatch):
    """A FIFO also reports size 0: the read stops at the cap (counted by what the writer got rid of)."""
    import threading

    from knowsim_core.errors import FormatError
    from knowsim_core.formats import jsonio

    monkeypatch.setattr(jsonio, "MAX_FILE_BYTES", 100_000)
    fifo = tmp_path / "runs.json"
    os.mkfifo(fifo)
    written = []

    def writer():
        n = 0
        try:
            with open(fifo, "wb") as fh:
                for _ in range(1000):  # 64 MB if nobody stops reading
                    fh.write(b" " * 65536)
                    n += 65536
        except BrokenPipeError:
            pass
        written.append(n)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    with pytest.raises(FormatError, match="larger than"):
        jsonio.read_json(fifo)
    t.join(60)
    assert written and written[0] < 2_000_000, written  # old code read all 64 MB


def test_a_utf8_bom_in_a_json_file_is_not_content(seeded_store, tmp_path):
    """Old code refused a .json file starting with a BOM as "not valid JSON … truncated?" (JSONL took it)."""
    from knowsim_core.formats import studio
    from knowsim_core.formats.reference import load_items
    from knowsim_core.services.importing import import_path
    from knowsim_core.services.runner import start_run

    live = start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/simple", max_turns=2)
    live.run_to_end()
    text = studio.dumps(seeded_store.runs.load(live.run_id))
    seeded_store.runs.delete([live.run_id])
    path = tmp_path / "run.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert import_path(seeded_store, path).runs == [live.run_id]
    items = tmp_path / "math.jsonl"
    items.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "m1", "problem": "1 + 1?"}).encode() + b"\n")
    assert [it.id for it in load_items(items)] == ["m1"]  # the first line is not "\ufeff{…}"


def test_an_over_long_concept_explanation_names_the_file_and_the_problem(tmp_path, arena_annotations):
    """Old code: 'IU graph field nodes.0.description: … at most 20000 characters' — no file, no record."""
    from knowsim_core.errors import FormatError
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store
    from tests.test_realworld_import import ARENA, CONCEPTS_NAME, STATES_NAME, _variant

    path = _variant(tmp_path, n=25, companions=(STATES_NAME,))
    concepts = json.loads((ARENA / CONCEPTS_NAME).read_text())
    pid = str(json.loads(path.read_text())[0]["problem_id"])
    concepts[pid]["extracted_concepts"][0]["Concept Explanation"] = "x" * 30_000
    (tmp_path / CONCEPTS_NAME).write_text(json.dumps(concepts))
    with pytest.raises(FormatError) as err:
        import_path(Store(tmp_path / "s.db"), path)
    text = str(err.value)
    assert text.startswith(CONCEPTS_NAME) and f"field {pid}.extracted_concepts[0].Concept Explanation" in text
    assert "at most 20000 characters" in text and "\n" not in text


# ---------------------------------------------------------------------- a batch matrix lists each cell once
def test_a_batch_matrix_with_repeated_items_plays_each_cell_once(db_path, capsys):
    """Old code planned 8 cells for ``a,a × novice,novice × x,x`` and reported "6 left to another process
    that claimed them first" (the repeats share one cell key)."""
    from knowsim_core.storage.run_filter import RunFilter
    from knowsim_core.storage import Store

    code = main(["batch", "--questions", f"{QID},{QID}", "--levels", "novice,novice", "--assistants",
                 "offline/simple, offline/simple", "--max-turns", "2", "--db", str(db_path), "--tag", "twice"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "another process" not in out + err and "1 of 1 runs finished" in out
    assert Store(db_path).search.count(RunFilter(batch_tag="twice")) == 1


# ---------------------------------------------------------------------- a malformed base URL
def test_a_malformed_base_url_is_one_line_for_run_and_batch(db_path, capsys):
    """Old code: ``compat/m@http://[::1`` → httpx ``InvalidURL`` traceback in ``run``; a batch stored
    the raw exception ("InvalidURL: Invalid port") as the cell's error."""
    out = cli("run", "--question", QID, "--level", "novice", "--assistant", "compat/m@http://[::1", "--max-turns", "1",
              "--db", str(db_path))
    one_line_error(out, "compat/m@http://[::1", "is not a usable base URL", "Invalid port")
    code = main(["batch", "--questions", QID, "--levels", "novice", "--assistants", "compat/m@http://[::1",
                 "--max-turns", "1", "--db", str(db_path), "--tag", "badurl", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    (row,) = json.loads(captured.out)
    assert row["status"] == "failed" and "is not a usable base URL" in row["error"] and "InvalidURL" not in row["error"]
