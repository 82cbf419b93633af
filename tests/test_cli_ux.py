"""The command line as a new researcher meets it (issue 34): ``runs --json`` and ``batch --questions all``."""

from __future__ import annotations

import json

from knowsim_core.cli import main
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _runs(capsys, db, questions=("sample_lava_lamps", "sample_dice_reroll_game", "sample_lava_lamps")):
    for seed, q in enumerate(questions, 1):
        assert cli(capsys, "run", "--question", q, "--level", "novice", "--assistant", "offline/simple",
                   "--seed", str(seed), "--max-turns", "2", "--db", str(db))[0] == 0


def test_runs_json_says_how_many_more_and_names_the_version_number(capsys, db_path):
    """Old: ``--json`` cut at --limit in silence (text mode said "… N more"), and its rows only had
    ``graph_version_id`` — a row id, not the N ``--graph-version N`` takes."""
    _runs(capsys, db_path)
    code, out, err = cli(capsys, "runs", "--db", str(db_path), "--json", "--limit", "2")
    page = json.loads(out)  # stdout stays pure JSON, and says itself that it was cut (issue 49)
    rows = page["runs"]
    assert code == 0 and len(rows) == 2 and (page["total"], page["more"]) == (3, 1)
    assert "1 more (use --limit)" in err
    store = Store(db_path)
    for row in rows:
        version = next(v for v in store.questions.graph_versions(row["question_id"]) if v.id == row["graph_version_id"])
        assert row["graph_version"] == version.version
    # some run's version row id is not its number (two questions, one v1 each), and the number filters
    assert any(r["graph_version"] != r["graph_version_id"] for r in json.loads(cli(capsys, "runs", "--db", str(db_path), "--json")[1])["runs"])
    code, out, _ = cli(capsys, "runs", "--db", str(db_path), "--json", "--graph-version", str(rows[0]["graph_version"]))
    assert rows[0]["id"] in {r["id"] for r in json.loads(out)["runs"]}
    # nothing more to say when everything fits
    code, out, err = cli(capsys, "runs", "--db", str(db_path), "--json")
    assert "more" not in err and (json.loads(out)["total"], json.loads(out)["more"]) == (3, 0)


def test_batch_all_offline_means_the_readme_matrix_and_the_dry_run_shows_it(capsys, db_path):
    """Old: after importing real conversations, the README's `batch --questions all --assistants
    offline` planned their questions too, and the oracle (an upper bound reading the hidden state)
    as a strategy — 1,575 runs, and the dry run printed only the count. Agents a test (or a plug-in)
    registers under another prefix are in-process too, but `offline` means the offline provider's
    strategies: with the test fakes registered first, the old filter planned 540 runs, not 360."""
    from tests.storage_fakes import register_fakes

    register_fakes()
    store = Store(db_path)
    store.questions.seed_samples()
    samples = [q.id for q in store.questions.list()]
    graph = store.questions.latest_graph_version(samples[0]).graph
    real = store.questions.add(text="Hello, are you functioning properly?", kind="real", question_id="sa_math_1_hello")
    store.questions.add_graph_version(real, graph)
    code, out, _ = cli(capsys, "batch", "--questions", "all", "--levels", "all", "--assistants", "offline",
                       "--seeds", "3", "--dry-run", "--db", str(db_path))
    assert code == 0
    assert f"{len(samples) * 3 * 4 * 3} to run" in out
    mix = next(line for line in out.splitlines() if line.startswith("questions:"))
    assert f"questions: {len(samples)} ({len(samples)} sample)" in mix
    assert "assistants: 4 (offline/simple, offline/adaptive, offline/comprehensive, offline/socratic)" in mix
    assert "oracle" not in mix and "seeds 1..3" in mix
    # named, both are still there
    code, out, _ = cli(capsys, "batch", "--questions", f"{real},{samples[0]}", "--assistants", "offline/oracle",
                       "--dry-run", "--db", str(db_path))
    assert code == 0 and "questions: 2 (1 real, 1 sample)" in out and "offline/oracle" in out


def test_batch_plays_the_chosen_graph_version_and_says_which(capsys, db_path):
    """Old: a batch always played each question's newest version, said nothing of it, and a resume
    after a new version was saved played on the new graph."""
    store = Store(db_path)
    store.questions.seed_samples()
    q = "sample_lava_lamps"
    v1 = store.questions.latest_graph_version(q)
    v2 = store.questions.get_graph_version(store.questions.add_graph_version(q, v1.graph, note="edited", author="test"))
    code, out, _ = cli(capsys, "batch", "--questions", q, "--levels", "novice", "--assistants", "offline/simple",
                       "--dry-run", "--db", str(db_path))
    assert code == 0 and "graph versions: v2 ×1" in out  # the newest, said
    code, out, _ = cli(capsys, "batch", "--questions", q, "--levels", "novice", "--assistants", "offline/simple",
                       "--graph-version", "1", "--max-turns", "2", "--tag", "onv1", "--workers", "1", "--db", str(db_path))
    assert code == 0 and "graph versions: v1 ×1" in out
    runs = store.search.list(RunFilter(batch_tag="onv1"))
    assert [r.graph_version_id for r in runs] == [v1.id] and v2.id != v1.id
    # a version some question lacks is refused before anything runs
    code, _, err = cli(capsys, "batch", "--questions", f"{q},sample_dice_reroll_game", "--graph-version", "2",
                       "--dry-run", "--db", str(db_path))
    assert code != 0 and "sample_dice_reroll_game" in err and "graph version 2" in err


def test_the_tutors_keep_the_case_of_names_in_running_text():
    """Old: "That is why cas9 is one such nuclease", "Good, you have guide rna targeting"."""
    from knowsim_core.agents.offline_reading import lower_first

    assert lower_first("Cas9 is one such nuclease.") == "Cas9 is one such nuclease."
    assert lower_first("DNA base pairing") == "DNA base pairing"
    assert lower_first("Guide RNA targeting") == "guide RNA targeting"
    assert lower_first("Adaptive immune memory") == "adaptive immune memory"


def test_a_crispr_conversation_never_writes_dna_or_cas9_in_lower_case(db_path):
    import re

    from knowsim_core.services.runner import start_run

    store = Store(db_path)
    store.questions.seed_samples()
    for assistant in ("offline/simple", "offline/adaptive"):
        for level in ("novice", "intermediate"):
            run = start_run(store, question_id="sample_crispr_gene_editing", level=level, assistant_id=assistant,
                            seed=3, max_turns=8).run_to_end()
            text = " ".join(t.assistant_message for t in run.turns)
            assert not re.findall(r"\b(dna|cas9|rna)\b", text), (assistant, level)


def test_one_spelling_per_failure_mode_and_explain_columns_line_up(capsys, db_path):
    """Old: the why text said "prerequisite-blocked" where badges, charts and the CLI said
    PREREQ-BLOCKED; explain's fixed 8/16/34 columns went out of line with longer entries."""
    from knowsim_core.engine.failures import FailureMode
    from knowsim_core.evaluation.explain import MODE_WORDS

    assert all(MODE_WORDS[m] == m.title.lower() for m in FailureMode)
    _runs(capsys, db_path, questions=("sample_lava_lamps",))
    rid = json.loads(cli(capsys, "runs", "--db", str(db_path), "--json")[1])["runs"][0]["id"]
    code, out, _ = cli(capsys, "explain", rid, "--turn", "2", "--db", str(db_path))
    lines = [line for line in out.splitlines() if line.strip()][1:]
    header = lines[0]
    starts = [header.index(h) for h in ("mode", "before → after", "why")]
    for line in lines[1:]:
        iu, mode, moved, why = line.split(None, 1)[0], *(line[a:b].strip() for a, b in zip(starts, starts[1:] + [None]))
        assert line[starts[0] - 1] == " " and line[starts[2] - 1] == " " and "→" in moved, line
        assert mode == "–" or why.startswith(mode.lower() + ":"), line


def test_without_a_key_the_command_line_does_not_point_at_a_sidebar(capsys, db_path, monkeypatch):
    """Old: `run --assistant openai/…` without a key said "type the key in the sidebar" — the
    command line has none."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(db_path.parent))  # no secrets file of the machine's user
    code, _, err = cli(capsys, "run", "--question", "sample_lava_lamps", "--level", "novice",
                       "--assistant", "openai/gpt-4o-mini", "--max-turns", "1", "--db", str(db_path))
    assert code != 0 and "OPENAI_API_KEY" in err
    assert "type the key in the sidebar" not in err
