"""Secrets never leave memory (issue 13): URL credentials, configured keys and a model reply that
echoes them are absent from the database files (WAL included, compressed records opened), from
every export, from ``runs`` listings and from error messages. Plus the two output hygiene rules:
CSV cells a spreadsheet would execute are neutralised, and terminal output carries no escapes.

The LLM runs talk to a real local HTTP server (tests/fakes/llm_server.py) through the real SDK,
driven in-process through ``knowsim_core.cli.main``.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from knowsim_core.cli import main, terminal_safe
from knowsim_core.formats import csv_export, studio
from knowsim_core.llm import ModelRef
from knowsim_core.text.redact import redact, redact_url, unredact_url, url_secrets
from knowsim_core.llm.settings import LLMSettings, provider_status
from knowsim_core.services.runner import start_run
from knowsim_core.storage import Store
from tests.fakes.llm_server import FakeLLMServer, Fault

PASSWORD = "pw-SENTINEL-7f3a9"
QUERY_KEY = "qk-SENTINEL-55c1e"
ENV_KEY = "envkey-SENTINEL-0b2d4"
SENTINELS = (PASSWORD, QUERY_KEY, ENV_KEY)
QID = "sample_lava_lamps"


# ---------------------------------------------------------------------- pure redaction
@pytest.mark.parametrize("url,shown", [
    ("http://admin:secret@host/v1", "http://***@host/v1"),
    ("http://host:8080/v1?api_key=abc123&model=x", "http://host:8080/v1?api_key=***&model=x"),
    ("https://u:p@h:1/v1?token=t0k3n", "https://***@h:1/v1?token=***"),
    ("http://localhost:11434/v1", "http://localhost:11434/v1"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert unredact_url(shown, ["http://other/v1", url]) == url  # a resumed run finds its real URL


def test_the_stored_id_is_redacted_but_the_client_keeps_the_real_url(monkeypatch):
    monkeypatch.delenv("KNOWSIM_COMPAT_BASE_URL", raising=False)
    ref = ModelRef.parse("compat", f"llama@http://admin:{PASSWORD}@host/v1?api_key={QUERY_KEY}")
    assert ref.id == "compat/llama@http://***@host/v1?api_key=***"
    assert ref.base_url == f"http://admin:{PASSWORD}@host/v1?api_key={QUERY_KEY}"
    settings = LLMSettings.from_env({"KNOWSIM_COMPAT_BASE_URL": ref.base_url, "KNOWSIM_COMPAT_API_KEY": ENV_KEY})
    assert set(settings.secrets()) >= {PASSWORD, QUERY_KEY, ENV_KEY}
    assert not any(s in str(provider_status(settings)) for s in SENTINELS)
    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()  # what the client sends as Basic auth
    assert url_secrets(ref.base_url) == (PASSWORD, basic, QUERY_KEY)
    assert redact(f"key {ENV_KEY} at {ref.base_url}", settings.secrets()).count("***") == 3


# ---------------------------------------------------------------------- end to end through the CLI
def _leaks(db: Path, texts: list[str]) -> list[str]:
    """Where a sentinel appears: raw database files (db, -wal, -shm), every decompressed cell, ``texts``."""
    found = []
    for f in db.parent.glob(db.name + "*"):
        raw = f.read_bytes()
        found += [f"{f.name}: {s}" for s in SENTINELS if s.encode() in raw]
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        try:
                            cell = zlib.decompress(cell).decode("utf-8", "replace")
                        except zlib.error:
                            cell = cell.decode("utf-8", "replace")
                    found += [f"{table}: {s}" for s in SENTINELS if s in str(cell)]
    finally:
        conn.close()
    found += [f"output: {s}" for t in texts for s in SENTINELS if s in t]
    return found


@pytest.fixture()
def echo_server():
    """An OpenAI-compatible server whose replies quote the key and URL credentials it was sent."""
    def reply(req):
        return f"Sure. (debug: key={ENV_KEY} auth={req.api_key} password={PASSWORD}) Let us start."

    with FakeLLMServer(reply=reply) as srv:
        yield srv


def test_no_secret_reaches_the_database_exports_listings_or_errors(echo_server, db_path, monkeypatch, capsys):
    monkeypatch.setenv("KNOWSIM_COMPAT_API_KEY", ENV_KEY)
    base = echo_server.openai_url.replace("http://", f"http://admin:{PASSWORD}@")
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", base)  # configured too: a resume finds the real URL
    code = main(["run", "--question", QID, "--level", "novice", "--assistant", f"compat/tutor@{base}",
                 "--max-turns", "2", "--db", str(db_path), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    auth = echo_server.requests[0].headers["authorization"]  # httpx sends URL credentials as Basic auth
    assert base64.b64decode(auth.removeprefix("Basic ")).decode() == f"admin:{PASSWORD}"  # the live client had it
    run = studio.loads(out.out)
    assert run.adapter["assistant"].startswith("compat/tutor:adaptive@http://***@127.0.0.1:")
    assert "key=***" in run.turns[0].assistant_message  # the echo was redacted before storage

    texts = [out.out, out.err]
    for argv in (["runs"], ["runs", "--json"], *(["export", run.run_id, "--format", f] for f in
                                                  ("studio-json", "reference-json", "csv", "html"))):
        assert main([*argv, "--db", str(db_path)]) == 0
        captured = capsys.readouterr()
        texts += [captured.out, captured.err]
    assert "http://***@127.0.0.1:" in texts[2]  # the listing shows the redacted id
    assert _leaks(db_path, texts) == []


@pytest.mark.parametrize("case", ["auth", "query-key", "no-server"])
def test_provider_errors_name_no_secret(echo_server, db_path, monkeypatch, capsys, case):
    monkeypatch.setenv("KNOWSIM_COMPAT_API_KEY", ENV_KEY)
    monkeypatch.setenv("KNOWSIM_LLM_MAX_RETRIES", "0")
    monkeypatch.delenv("KNOWSIM_COMPAT_BASE_URL", raising=False)
    host = echo_server.openai_url.split("://", 1)[1]
    url, expected = {
        "auth": (f"http://admin:{PASSWORD}@{host}", "rejected the API key"),  # 401 quoting the key
        "query-key": (f"http://admin:{PASSWORD}@{host}?api_key={QUERY_KEY}", "not found"),  # 404 quoting the path
        "no-server": (f"http://admin:{PASSWORD}@127.0.0.1:9/v1?api_key={QUERY_KEY}", "cannot connect"),
    }[case]
    if case == "auth":
        echo_server.push(Fault(status=401))
    code = main(["run", "--question", QID, "--level", "novice", "--assistant", f"compat/tutor@{url}",
                 "--max-turns", "1", "--db", str(db_path)])
    out = capsys.readouterr()
    assert code != 0 and expected in out.err, out.err
    assert main(["runs", "--json", "--db", str(db_path)]) == 0
    listing = capsys.readouterr().out
    assert '"status": "failed"' in listing
    assert _leaks(db_path, [out.out, out.err, listing]) == []


# ---------------------------------------------------------------------- output hygiene
@pytest.fixture()
def offline_run(seeded_store):
    return start_run(seeded_store, question_id=QID, level="novice", assistant_id="offline/adaptive", seed=2,
                     max_turns=2).run_to_end()


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_csv_cells_a_spreadsheet_would_execute_are_neutralised(offline_run, cell):
    t0 = offline_run.turns[0]
    from dataclasses import replace

    run = offline_run.with_turns((replace(t0, user_message=cell),) + offline_run.turns[1:])
    rows = list(csv.DictReader(io.StringIO(csv_export.dumps(run), newline="")))
    assert rows[0]["user_message"] == "'" + cell
    assert float(rows[0]["efficiency"]) == t0.quantities.efficiency  # numbers stay numbers


def test_terminal_output_carries_no_escape_sequences(offline_run, tmp_path, capsys):
    data = json.loads(studio.dumps(offline_run))
    data["question"] = "Lava \x1b[31mlamps\x1b[0m\x1b]0;pwned\x07 \x9b2J\rarranged"
    data["run_id"] = None
    path = tmp_path / "ansi.json"
    path.write_text(json.dumps(data))
    db = tmp_path / "other.db"
    assert main(["import", str(path), "--db", str(db)]) == 0
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Lava lamps" in out and not any(c in out for c in "\x1b\x07\x9b\r")
    assert terminal_safe("a\x1b[2Kb\x00c\td\n") == "abc\td\n"
    stored = Store(db).search.list()[0]
    assert "\x1b" in stored.question  # the data is kept as imported; only the terminal is protected


def test_an_unknown_agent_id_is_quoted_without_its_credentials():
    from knowsim_core.agents import registry
    from knowsim_core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        registry.resolve("assistant", f"nosuch@http://admin:{PASSWORD}@host/v1")
    assert PASSWORD not in str(info.value) and "http://***@host/v1" in str(info.value)


def test_runs_stored_before_redaction_are_exported_and_listed_without_credentials(offline_run, seeded_store, capsys):
    """A run whose id still holds a password (stored by an older Studio) never shows it again."""
    from dataclasses import replace

    from knowsim_core.formats import reference_export

    leaky = f"compat/tutor@http://admin:{PASSWORD}@host/v1?api_key={QUERY_KEY}"
    run = replace(offline_run, run_id=None, adapters=(("assistant", leaky), *offline_run.adapters[1:]))
    run_id = seeded_store.runs.save(run)
    texts = [reference_export.dumps(run), csv_export.dumps(run)]
    for argv in (["runs"], ["runs", "--json"], *(["export", run_id, "--format", f] for f in
                                                  ("studio-json", "reference-json", "csv", "html"))):
        assert main([*argv, "--db", str(seeded_store.path)]) == 0
        texts.append(capsys.readouterr().out)
    assert "http://***@host/v1?api_key=***" in texts[3]
    assert not [t for t in texts if PASSWORD in t or QUERY_KEY in t]
