"""Several model servers behind one URL (issue 45): nginx in front of stand-in servers on 127.0.0.1
(``knowsim_core.llm.router``), a list of URLs refused in one line, and the batch command through the
router with one server killed mid-batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowsim_core.cli import main
from knowsim_core.errors import ConfigError
from knowsim_core.llm import router
from knowsim_core.llm.settings import ROUTER_RECIPE, LLMSettings
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter

ROOT = Path(__file__).resolve().parent.parent
needs_nginx = pytest.mark.skipif(not (os.access("/usr/sbin/nginx", os.X_OK) or router.shutil.which("nginx")),
                                 reason="nginx is not installed (scripts/bootstrap.sh test installs it)")
LLM = ("--assistants", "compat/bench:adaptive", "--user", "compat/bench", "--extractor", "compat/bench")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KNOWSIM_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


class StandIn:
    """A stand-in model server in its own process (``tests/fakes/stand_in.py``), to be killed."""

    def __init__(self, log: Path, latency: float):
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.stand_in", "--latency", str(latency),
                                      "--log", str(log), "--ttl", "300"], cwd=ROOT, env=child_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.url = self.proc.stdout.readline().strip() + "/v1"

    def replies(self) -> int:
        try:
            return len(self.log.read_text().splitlines())
        except FileNotFoundError:
            return 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture()
def two_servers(tmp_path):
    servers = [StandIn(tmp_path / f"server-{k}.log", latency=0.05) for k in (1, 2)]
    try:
        yield servers
    finally:
        for s in servers:
            s.kill()


# ---------------------------------------------------------------------- one URL per role
@pytest.mark.parametrize("value", ["http://a:1/v1,http://b:2/v1", "http://a:1/v1, http://b:2/v1/", "http://a:1/v1,"])
def test_a_list_of_servers_is_refused_naming_the_recipe(value):
    """Old behaviour: a comma-separated list was split and conversations sent round robin (no health
    check, no least-busy choice, no retry elsewhere). Now one line sends the user to the router recipe."""
    with pytest.raises(ConfigError) as err:
        LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": value})
    msg = str(err.value)
    assert "\n" not in msg and "KNOWSIM_COMPAT_BASE_URL takes one server's URL" in msg and ROUTER_RECIPE in msg
    assert "a:1" not in msg  # the URLs (which may hold credentials) are not repeated
    with pytest.raises(ConfigError, match="router"):
        LLMSettings().with_overrides(compat_base_url=value)  # typed into the sidebar


def test_the_command_line_refuses_a_list_in_the_environment_or_an_id(capsys, tmp_path, monkeypatch):
    db = str(tmp_path / "s.db")
    monkeypatch.setenv("KNOWSIM_COMPAT_BASE_URL", "http://127.0.0.1:9/v1,http://127.0.0.1:10/v1")
    code = main(["batch", "--questions", "sample_lava_lamps", *LLM, "--max-turns", "1", "--db", db])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and ROUTER_RECIPE in err, err
    monkeypatch.delenv("KNOWSIM_COMPAT_BASE_URL")
    for argv in (["batch", "--questions", "sample_lava_lamps", "--user", "compat/m@http://a/v1,http://b/v1"],
                 ["run", "--question", "sample_lava_lamps", "--level", "novice", "--max-turns", "1",
                  "--assistant", "compat/m@http://a:1/v1,http://b:2/v1"]):
        code = main([*argv, "--db", db])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "takes one server's URL" in err and ROUTER_RECIPE in err, err
    assert not Store(db).search.list(RunFilter())  # refused before any run was stored
    code = main(["batch", "--questions", "sample_lava_lamps", "--user", "compat/m@http://bob:s3cret-pw@a/v1,http://b/v1",
                 "--db", db])
    err = capsys.readouterr().err
    assert code == 2 and "s3cret-pw" not in err and "takes one server's URL" in err, err


# ---------------------------------------------------------------------- the recipe: nginx in front
def test_the_configuration_keeps_least_busy_first_health_and_no_resent_posts(tmp_path):
    conf = router.nginx_config(["http://10.0.0.5:8000/v1", "http://[::1]:8001/v1"], port=8100, workdir=tmp_path)
    assert "least_conn;" in conf and "listen 127.0.0.1:8100;" in conf
    assert "server 10.0.0.5:8000 max_fails=1 fail_timeout=10s;" in conf and "server [::1]:8001 max_fails" in conf
    assert "proxy_next_upstream error timeout http_502 http_503 http_504;" in conf
    assert "non_idempotent" not in conf and "http_500" not in conf  # a POST a server received is not re-sent
    assert "proxy_read_timeout 1800s;" in conf  # the local model's deadline
    for bad, words in ((["https://h:1/v1"], "no https"), (["http://h/v1"], "http://HOST:PORT/PATH"),
                       (["http://a:1/v1", "http://b:2/api"], "different paths"), ([], "give the URLs")):
        with pytest.raises(router.RouterError, match=words):
            router.nginx_config(bad, port=1, workdir=tmp_path)


def test_without_nginx_the_router_says_what_to_install():
    with pytest.raises(router.RouterError, match="nginx is not installed: install Debian's nginx"):
        router.find_nginx(which=lambda name: None, also=())


@needs_nginx
@pytest.mark.timeout(240)
def test_a_batch_through_the_router_survives_a_server_killed_mid_batch(two_servers, tmp_path):
    """Two stand-in servers behind nginx; the batch command (its real process) plays 12 conversations
    through the router's one URL; one server is SIGKILLed once it has answered 20 calls. Every
    conversation finishes, both servers answered, and nothing is counted twice: every stored turn
    holds exactly its three calls, each conversation has one run with one record per turn, and the
    servers answered at least as many calls as were counted (more only by those lost in the kill)."""
    a, b = two_servers
    live = router.start([a.url, b.url], workdir=tmp_path / "router")
    db = tmp_path / "batch.db"
    Store(db).questions.seed_samples()
    try:
        batch = subprocess.Popen(
            [sys.executable, "-m", "knowsim_core", "batch", "--questions", "sample_lava_lamps",
             "--levels", "all", "--seeds", "4", *LLM, "--max-turns", "3", "--concurrency", "4",
             "--tag", "routed", "--db", str(db)],
            cwd=ROOT, env=child_env(KNOWSIM_COMPAT_BASE_URL=live.url, KNOWSIM_LLM_CACHE="0"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while b.replies() < 20 and batch.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert batch.poll() is None, "the batch ended before the server could be killed"
        b.kill()
        killed_at = b.replies()
        out, err = batch.communicate(timeout=180)
    finally:
        live.stop()
    assert batch.returncode == 0, err
    store = Store(db)
    runs = store.search.list(RunFilter(batch_tag="routed"))
    cells = {(r.question_id, r.level, r.assistant, r.seed) for r in runs}
    assert len(runs) == len(cells) == 12 and all(r.status == "finished" for r in runs)
    calls = 0
    for row in runs:
        record = store.runs.load(row.id)
        assert [t.turn for t in record.turns] == [1, 2, 3]
        for t in record.turns:
            assert sorted(u.role for u in t.usage if not u.unknown_calls) == ["assistant", "extractor", "user"]
            calls += len([u for u in t.usage if not u.unknown_calls])
    assert calls == 12 * 3 * 3
    answered = a.replies() + killed_at
    assert a.replies() > 0 and killed_at >= 20  # both servers were used
    assert calls <= answered <= calls + 4  # at most the calls in flight at the kill were answered unseen


@needs_nginx
def test_the_router_sends_each_request_to_the_least_busy_server_and_passes_every_path(two_servers, tmp_path):
    """Eight requests at once over two idle servers are shared out, and the prompt-size check's path
    (llama-cpp-python's /extras/tokenize/count) reaches a server too."""
    import concurrent.futures
    import urllib.request

    a, b = two_servers
    live = router.start([a.url, b.url], workdir=tmp_path / "router")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()

    def post(path: str) -> int:
        req = urllib.request.Request(live.url.removesuffix("/v1") + path, body, {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(post, ["/v1/chat/completions"] * 8))
        tokenize = post("/extras/tokenize/count")
    finally:
        code = live.stop()
    assert codes == [200] * 8 and a.replies() >= 2 and b.replies() >= 2
    assert tokenize == 404  # the stand-ins have no tokenizer: the request reached one (nginx would not 404)
    assert code == 0


@needs_nginx
@pytest.mark.timeout(60)
def test_the_router_command_prints_its_url_and_stops_on_ctrl_c(two_servers, tmp_path):
    a, b = two_servers
    proc = subprocess.Popen([sys.executable, "-m", "knowsim_core.llm.router", a.url, b.url, "--workdir",
                             str(tmp_path / "r")], cwd=ROOT, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stdout.readline()
        url = proc.stdout.readline().split("KNOWSIM_COMPAT_BASE_URL=")[1].strip()
        assert url in first and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        LLMSettings.from_sources(env={"KNOWSIM_COMPAT_BASE_URL": url})  # one URL: accepted
        pid = int((tmp_path / "r" / "nginx.pid").read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
