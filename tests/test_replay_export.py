"""The single-file replay (issue 25): ``export RUN --format html [--pair RUN_B] [-o PATH]``.

What can be checked without a browser: the data element round-trips to the same why text as
``explain --json``; run text can never close the data element (the five escaped characters, for
any text — a hypothesis property); the file names nothing it could fetch and carries the strict
Content-Security-Policy; credentials are redacted as in every export; bad arguments get one line.
The browser half (file:// with the network blocked) is tests/browser/test_replay_browser.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings, strategies as st

from knowsim_core.cli import main
from knowsim_core.errors import FormatError
from knowsim_core.formats.replay_html import CSP, render, script_json
from knowsim_core.services.runner import start_run

HOSTILE = ("</script><script>window.__pwned = 1</script> <!-- <script> ![x](http://127.0.0.1:9/pixel.png) "
           "<img src=x onerror=\"window.__pwned = 2\"> & \u2028line\u2029para </SCRIPT >")


class _Doc(HTMLParser):
    """The tags of a page, and the text of each <script> (as the browser's tokenizer splits it)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in, self._buf = dict(attrs), []

    def handle_data(self, data):
        if self._in is not None:
            self._buf.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append((self._in, "".join(self._buf)))
            self._in = None


def parse(page: str) -> _Doc:
    doc = _Doc()
    doc.feed(page)
    return doc


def replay_data(page: str) -> dict:
    doc = parse(page)
    blobs = [text for attrs, text in doc.scripts if attrs.get("type") == "application/json"]
    assert len(blobs) == 1
    return json.loads(blobs[0])


def stored(store, level="novice", turns=3, seed=3) -> str:
    live = start_run(store, question_id="sample_lava_lamps", level=level, assistant_id="offline/comprehensive",
                     seed=seed, max_turns=turns)
    live.run_to_end()
    return live.run_id


def hostile_run(store, base_id: str, *, secret_url: str = "") -> str:
    """A stored copy of ``base_id`` whose question, messages and one IU description are hostile."""
    run = store.runs.load(base_id)
    g = run.graph.to_data()
    g["nodes"][0]["description"] = HOSTILE
    from knowsim_core.engine.graph import IUGraph

    turns = tuple(replace(t, user_message=HOSTILE + f" turn {t.turn}", assistant_message=HOSTILE + secret_url)
                  for t in run.turns)
    hostile = replace(run, run_id=None, question_id="hostile_q", question=HOSTILE, graph=IUGraph.from_data(g),
                      turns=turns)
    return store.runs.save(hostile)


@pytest.fixture()
def two_runs(seeded_store):
    return seeded_store, stored(seeded_store), stored(seeded_store, level="advanced", turns=2)


def export(store, *args: str) -> int:
    return main(["export", *args, "--db", str(store.path)])


def test_the_replay_carries_explains_why_text_turn_by_turn(two_runs, tmp_path, capsys):
    store, a, _ = two_runs
    out = tmp_path / "replay.html"
    assert export(store, a, "--format", "html", "-o", str(out)) == 0
    assert "wrote" in capsys.readouterr().err
    assert main(["explain", a, "--db", str(store.path), "--json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    data = replay_data(out.read_text(encoding="utf-8"))
    (run,) = data["runs"]
    rec = store.runs.load(a)
    assert run["run_id"] == a and [t["turn"] for t in run["turns"]] == [1, 2, 3]
    for t, e, r in zip(run["turns"], explained["turns"], rec.turns):
        assert [{k: iu[k] for k in ("id", "label", "mode", "why", "before", "after")} for iu in t["ius"]] == e["ius"]
        assert (t["user"], t["assistant"]) == (r.user_message, r.assistant_message)
        assert t["load"] == r.quantities.effective_load and t["overload"] == r.quantities.overload
    assert {n["id"] for n in run["graph"]["nodes"]} == set(rec.graph.index.ids)
    assert [m["name"] for m in data["modes"]] == ["REDUNDANT", "PREREQ-BLOCKED", "EFFECTIVE", "OVERLOAD-WASTED",
                                                  "UNDER-ABSORBED"]


def test_stdout_and_file_are_the_same_bytes_and_deterministic(two_runs, tmp_path, capsys):
    store, a, _ = two_runs
    assert export(store, a, "--format", "html") == 0
    first = capsys.readouterr().out
    out = tmp_path / "r.html"
    assert export(store, a, "--format", "html", "-o", str(out)) == 0
    assert out.read_text(encoding="utf-8") == first
    assert not list(tmp_path.glob("*.part"))


def test_the_page_fetches_nothing_and_says_so_in_its_policy(two_runs, capsys):
    store, a, _ = two_runs
    assert export(store, a, "--format", "html") == 0
    page = capsys.readouterr().out
    doc = parse(page)
    csp = [attrs["content"] for tag, attrs in doc.tags
           if tag == "meta" and attrs.get("http-equiv", "").lower() == "content-security-policy"]
    assert csp == [CSP] and "default-src 'none'" in CSP and "connect-src" not in CSP
    for tag, attrs in doc.tags:  # no element names a resource (the graph and gauge are drawn by the script)
        assert not ({"src", "href", "srcset", "data", "action", "poster"} & set(attrs)), (tag, attrs)
    assert not re.search(r"\b(?:fetch\s*\(|XMLHttpRequest|WebSocket|import\s*\(|\.innerHTML|outerHTML|insertAdjacentHTML|"
                         r"document\.write|eval\s*\()", "".join(t for a, t in doc.scripts if "type" not in a))


def test_hostile_text_cannot_leave_the_data_element(seeded_store, capsys):
    base = stored(seeded_store)
    rid = hostile_run(seeded_store, base)
    assert export(seeded_store, rid, "--format", "html") == 0
    page = capsys.readouterr().out
    doc = parse(page)
    # exactly our two scripts: the data and the page's own code; no other element came from the text
    assert [a.get("type") for a, _ in doc.scripts] == ["application/json", None]
    assert not any(tag == "img" for tag, _ in doc.tags)
    assert page.lower().count("</script") == 2 and "\u2028" not in page and "\u2029" not in page
    data = replay_data(page)  # …and the text arrives intact
    assert data["runs"][0]["question"] == HOSTILE
    assert data["runs"][0]["turns"][0]["assistant"] == HOSTILE
    assert data["runs"][0]["graph"]["nodes"][0]["description"] == HOSTILE


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>&/!-'\"\\sScriptSCRIPT \u2028\u2029\n\x00é😀")), max_size=60))
def test_script_json_never_contains_an_element_breaker(text):
    out = script_json({"t": text, text: [text]})
    assert not set(out) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(out) == {"t": text, text: [text]}


def test_script_json_refuses_nan_and_render_refuses_an_empty_payload():
    with pytest.raises(FormatError, match="JSON cannot carry"):
        script_json({"x": float("nan")})
    with pytest.raises(FormatError, match="at least one run"):
        render({"format": "knowsim-replay", "runs": []})


def test_credentials_are_redacted_like_every_export(seeded_store, capsys):
    base = stored(seeded_store)
    run = seeded_store.runs.load(base)
    leaky = replace(run, run_id=None, adapters=tuple(
        (role, f"compat/llama@http://admin:hunter2secret@127.0.0.1:9/v1?api_key=abcd1234xyz" if role == "assistant"
         else agent) for role, agent in run.adapters))
    rid = seeded_store.runs.save(leaky)
    rid2 = hostile_run(seeded_store, rid, secret_url=" see http://bob:pa55word99@10.0.0.1/x?token=tok123456 sk-abcdef1234567890")
    assert export(seeded_store, rid2, "--format", "html") == 0
    page = capsys.readouterr().out
    for secret in ("hunter2secret", "abcd1234xyz", "pa55word99", "tok123456", "sk-abcdef1234567890"):
        assert secret not in page
    data = replay_data(page)
    agents = dict(data["runs"][0]["agents"])
    assert agents["assistant"] == "compat/llama@http://***@127.0.0.1:9/v1?api_key=***"


def test_pair_export_and_bad_arguments(two_runs, tmp_path, capsys):
    store, a, b = two_runs
    out = tmp_path / "pair.html"
    assert export(store, a, "--pair", b, "--format", "html", "-o", str(out)) == 0
    data = replay_data(out.read_text(encoding="utf-8"))
    assert [r["run_id"] for r in data["runs"]] == [a, b]
    assert [r["level"] for r in data["runs"]] == ["novice", "advanced"]
    capsys.readouterr()
    assert export(store, a, "--pair", b, "--format", "csv") == 2
    assert capsys.readouterr().err.strip() == "error: --pair needs --format html (a side-by-side replay)"
    assert export(store, a, "--pair", "nope", "--format", "html", "-o", str(tmp_path / "x.html")) == 2
    err = capsys.readouterr().err
    assert "unknown run id" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()
    assert export(store, a, "--format", "html", "-o", str(tmp_path / "no" / "dir" / "x.html")) == 2
    assert capsys.readouterr().err.startswith("error: cannot write")


def test_a_run_without_turns_exports_its_start(seeded_store, capsys):
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="advanced",
                     assistant_id="offline/comprehensive", seed=1)
    assert export(seeded_store, live.run_id, "--format", "html") == 0
    (run,) = replay_data(capsys.readouterr().out)["runs"]
    start = seeded_store.runs.load(live.run_id).initial_state
    assert run["turns"] == [] and run["start"] == {
        v: int(start.state_of(live.run.graph.index.label_of[v])) for v in live.run.graph.index.ids}
    assert any(s > 0 for s in run["start"].values())  # an advanced learner starts knowing something


def test_an_iu_name_holding_a_key_is_redacted_in_every_turn():
    """The IU names reach the replay twice: in the graph and in each turn's per-IU label."""
    from knowsim_core.agents import registry
    from knowsim_core.engine.graph import IUGraph
    from knowsim_core.engine.ports import QuestionMaterial
    from knowsim_core.engine.session import Simulation
    from knowsim_core.evaluation.replay import run_data

    secret = "sk-ABCDEFGHIJKLMNOP1234"
    nodes = [{"id": f"IU{i}", "concept": f"Concept {i}" + (f" {secret}" if i == 2 else ""), "abstraction_level": 0.5,
              "description": f"Desc of concept {i}. It matters a lot. Apply it here."} for i in range(1, 5)]
    edges = [{"from": f"IU{i}", "to": f"IU{i + 1}", "delta_l": 0.0} for i in range(1, 4)]
    material = QuestionMaterial("q1", "What is X?", "X", IUGraph.from_data({"nodes": nodes, "edges": edges}), "math")
    sim = Simulation(material=material, assistant=registry.resolve("assistant", "offline/simple"),
                     user=registry.resolve("user", "offline/knowsim"),
                     extractor=registry.resolve("extractor", "offline/lexical"), level="novice")
    sim.reset(seed=1)
    data = run_data(sim.run_to_end())
    assert any(iu["id"] == "IU2" for t in data["turns"] for iu in t["ius"]), "IU2 is explained in some turn"
    assert secret not in json.dumps(data)


def test_the_replay_carries_every_ius_story_and_what_the_metrics_mean(two_runs, capsys):
    """Issue 47 item 3: the replay file carries each IU's story (its load part, carry, ceilings, DC part,
    the reader's reason and words — the figures Simulate's story shows) and KG/DC/CO's meaning."""
    from knowsim_core.engine.metrics import METRIC_GLOSSARY
    from knowsim_core.evaluation.iu_story import iu_story

    store, a, _ = two_runs
    assert export(store, a, "--format", "html") == 0
    data = replay_data(capsys.readouterr().out)
    (run,) = data["runs"]
    rec = store.runs.load(a)
    assert set(run["stories"]) == set(rec.graph.index.ids) and data["metric_words"] == METRIC_GLOSSARY
    columns = data["story_columns"]
    replies = {t["turn"]: t["assistant"] for t in run["turns"]}
    quoted = 0
    for iu, story in run["stories"].items():
        want = iu_story(rec, iu)
        assert story["note"] == want.evidence_note() and story["prerequisites"] == list(want.prerequisites)
        for row, t in zip(story["rows"], want.turns, strict=True):
            got = dict(zip(columns, row, strict=True))
            assert (got["turn"], got["dc"], got["ceiling"], got["mentions"], got["teaching"]) == (
                t.turn, t.dc, int(t.ceiling), t.mentions, t.teaching)
            assert got["load"] == pytest.approx(t.load) and got["carry"] == pytest.approx(t.carry, abs=1e-4)
            assert got["reason"] == (t.reason if t.mentions or t.attempt != "none" else "")
            # each quoted sentence is a span of the reply the file carries (UTF-16 offsets: ASCII here)
            words = [replies[t.turn][a:b] if isinstance(span, list) else span
                     for span in got["evidence"] for a, b in [span if isinstance(span, list) else (0, 0)]]
            assert words == list(t.evidence)
            quoted += len(words)
    assert quoted


def test_the_words_in_a_replayed_story_are_redacted(seeded_store, capsys):
    """A sentence quoted as evidence carries a credential in a URL: the file keeps the sentence, not the secret."""
    from knowsim_core.evaluation.iu_story import iu_story

    rid = stored(seeded_store)
    run = seeded_store.runs.load(rid)
    iu, t = next((iu, t) for iu in run.graph.index.ids for t in iu_story(run, iu).turns if t.evidence)
    sentence = t.evidence[0]
    leaky = sentence.rstrip(".") + " (notes at https://ana:hunter2secret@example.org/x)."
    turns = tuple(replace(r, assistant_message=r.assistant_message.replace(sentence, leaky)) if r.turn == t.turn else r
                  for r in run.turns)
    copy = replace(run, run_id=None, turns=turns)
    assert any(leaky in s for s in iu_story(copy, iu).turns[t.turn - 1].evidence)  # still read as about the IU
    new_id = seeded_store.runs.save(copy)
    assert export(seeded_store, new_id, "--format", "html") == 0
    page = capsys.readouterr().out
    data = replay_data(page)
    row = dict(zip(data["story_columns"], data["runs"][0]["stories"][iu]["rows"][t.turn - 1]))
    reply = data["runs"][0]["turns"][t.turn - 1]["assistant"]
    words = [reply[a:b] if isinstance(span, list) else span for span in row["evidence"]
             for a, b in [span if isinstance(span, list) else (0, 0)]]
    assert any("example.org" in w for w in words) and "hunter2secret" not in page
