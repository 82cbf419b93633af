"""AppTest end to end with LLM agents: ``compat/<model>`` pointed at the local wire-format server.

The Simulate page offers the configured model ids, a run with an LLM user, assistant and extractor
is stepped from the page, and each turn is stored with its token accounting and the agents'
descriptions — the HTTP requests really went over a socket to 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from knowsim_core.storage import Store
from tests.fakes.llm_server import KnowSimReplies, llm_server  # noqa: F401

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def compat_env(monkeypatch, llm_server, db: Path) -> None:
    monkeypatch.setenv("KNOWSIM_DB", str(db))
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", llm_server.openai_url)
    monkeypatch.setenv("KNOWSIM_COMPAT_MODELS", "fake")


def simulate_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["question"] = "sample_lava_lamps"
    at.run()
    at.switch_page("pages/simulate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def start_and_step(at: AppTest, steps: int) -> str:
    """Start the run the setup form describes and press Step ``steps`` times; returns its id."""
    at.button(key="setup_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run_id = at.query_params["run"]
    for _ in range(steps):
        at.button(key="sim_step").click().run()
        assert not at.exception, [e.value for e in at.exception]
    return run_id


def test_simulate_a_run_with_compat_agents_from_the_app(llm_server, tmp_path, monkeypatch):
    db = tmp_path / "studio.db"
    compat_env(monkeypatch, llm_server, db)
    llm_server.reply = KnowSimReplies(explain=3)

    at = simulate_page()
    assert "compat/fake:socratic" in at.selectbox(key="setup_assistant").options
    at.selectbox(key="setup_assistant").set_value("compat/fake:socratic")
    at.selectbox(key="setup_user").set_value("compat/fake")
    at.selectbox(key="setup_extractor").set_value("compat/fake")
    at.number_input(key="setup_max_turns").set_value(2)
    run_id = start_and_step(at, 2)

    store = Store(db)
    row = store.search.get_row(run_id)
    assert (row.status, row.turns, row.assistant) == ("finished", 2, "compat/fake:socratic")
    assert row.tokens_in > 0 and row.tokens_out > 0
    run = store.runs.load(run_id)
    assert all({u.role for u in t.usage} == {"user", "assistant", "extractor"} for t in run.turns)
    described = json.loads(dict(run.meta)["agents"])
    assert described["assistant"]["strategy"] == "socratic"
    paths = [r.path for r in llm_server.requests]
    assert paths and all(p.endswith("/chat/completions") for p in paths)


def test_the_user_selector_lists_the_baseline_users_and_one_ends_the_run(llm_server, tmp_path, monkeypatch):
    from knowsim_core.prompts import baseline_user
    from knowsim_core.engine.session import STOP_USER_DONE

    compat_env(monkeypatch, llm_server, tmp_path / "studio.db")
    knowsim = KnowSimReplies(explain=3)
    asked = []

    def reply(req):
        if not req.system.startswith(baseline_user.SYSTEM):
            return knowsim(req)
        asked.append(req)  # the baseline user: done at its second turn
        return json.dumps({"message": f"is it {len(asked)}?", "done": len(asked) >= 2})
    llm_server.reply = reply

    at = simulate_page()
    users = at.selectbox(key="setup_user").options
    assert {"compat/fake", "compat/fake:zs", "compat/fake:zs-cot", "compat/fake:zs-cot-prof"} <= set(users)
    at.selectbox(key="setup_user").set_value("compat/fake:zs")
    at.number_input(key="setup_max_turns").set_value(5)
    run_id = start_and_step(at, 2)
    row = Store(tmp_path / "studio.db").search.get_row(run_id)
    assert (row.user, row.status, row.stop_reason, row.turns) == ("compat/fake:zs", "finished", STOP_USER_DONE, 2)
    assert len(asked) == 2


def test_without_a_provider_the_user_selector_offers_offline_users_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KNOWSIM_DB", str(tmp_path / "studio.db"))
    for var in ("KNOWSIM_COMPAT_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    at = simulate_page()
    users = at.selectbox(key="setup_user").options
    assert "offline/knowsim" in users and not any(u.startswith(("openai/", "anthropic/", "compat/")) for u in users)
