"""Agent ids as values: one parser (``parse_id``), one spelling (``AgentId.id``), issues 32 and 44.

Issue 44 found two wrong ones left: the batch planner spelled a compat assistant
``compat/llama3.1@http://localhost:11434/v1:socratic`` (strategy after the URL) while the id's own
spelling puts it before, and the reference export read the strategy of
``compat/llama3.1:socratic@http://localhost:11434/v1`` as ``11434/v1``. The tests marked so fail on
that code. The property test runs every id shape the registry accepts through parse → spell → parse,
and through a reference export and its import. The guard at the end fails on a planted hand parser.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from knowsim_core.agents import registry
from knowsim_core.agents.registry import AgentId, parse_id
from knowsim_core.engine.agent_id import DEFAULT_STRATEGY, METHODS, MODEL_PROVIDERS, STRATEGIES
from knowsim_core.errors import ConfigError
from knowsim_core.formats import reference_export
from knowsim_core.formats.reference import run_from_reference
from knowsim_core.llm.settings import LLMSettings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("agent_id, parts", [
    ("openai/gpt-4o", AgentId("openai", "gpt-4o")),
    ("openai/gpt-4o:socratic", AgentId("openai", "gpt-4o", strategy="socratic")),
    ("anthropic/claude-x:zs-cot", AgentId("anthropic", "claude-x", method="zs-cot")),
    ("compat/llama3:8b@http://h:8080/v1", AgentId("compat", "llama3:8b", url="http://h:8080/v1")),
    ("compat/llama3:8b:socratic@http://h:8080/v1", AgentId("compat", "llama3:8b", strategy="socratic",
                                                           url="http://h:8080/v1")),
    ("compat/m:zs@http://h:8080/v1", AgentId("compat", "m", method="zs", url="http://h:8080/v1")),
    # the older spelling, which the LLM agents recorded and stored runs keep: the strategy after the URL
    ("compat/gemma@http://127.0.0.1:8080/v1:adaptive", AgentId("compat", "gemma", strategy="adaptive",
                                                                url="http://127.0.0.1:8080/v1")),
    ("compat/m@http://h:8080/v1:zs-cot", AgentId("compat", "m", method="zs-cot", url="http://h:8080/v1")),
    ("compat/m@http://h:8080", AgentId("compat", "m", url="http://h:8080")),  # a port is not a suffix
    ("compat/meta-llama/Llama-3.1-8B@http://[::1]:8000/v1", AgentId("compat", "meta-llama/Llama-3.1-8B",
                                                                    url="http://[::1]:8000/v1")),
    ("offline/adaptive", AgentId("offline", "adaptive")),
    ("recorded/gpt-4o:socratic@x", AgentId("recorded", "gpt-4o:socratic@x")),  # a recording's name, as written
    ("human", AgentId("human")),
])
def test_parse_id(agent_id, parts):
    assert parse_id(agent_id) == parts


def test_an_id_is_spelled_one_way_the_strategy_before_the_url():
    old = parse_id("compat/m@http://h:8080/v1:socratic")
    assert old.id == "compat/m:socratic@http://h:8080/v1"
    assert str(old) == old.id
    assert old.with_method("zs").id == "compat/m:zs@http://h:8080/v1"
    assert old.bare().id == "compat/m@http://h:8080/v1"
    assert AgentId("openai", "gpt-4o").as_assistant().id == f"openai/gpt-4o:{DEFAULT_STRATEGY}"
    assert AgentId.recorded("gpt-4o").id == "recorded/gpt-4o"


def test_a_value_names_a_known_strategy_or_method_and_never_both():
    with pytest.raises(ConfigError, match="unknown strategy"):
        AgentId("openai", "m", strategy="sokratic")
    with pytest.raises(ConfigError, match="not both"):
        AgentId("openai", "m", strategy="socratic", method="zs")


def _llm_settings() -> LLMSettings:
    return LLMSettings.from_sources(env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k",
                                         "KNOWSIM_COMPAT_BASE_URL": "http://127.0.0.1:9/v1"})


def test_the_agent_records_the_id_it_was_built_from():
    """A compat id with a URL keeps its strategy and method, and the built agent records the id in
    the one spelling (the agents used to record ``compat/m@http://…/v1:socratic``)."""
    s = _llm_settings()
    assistant = registry.resolve("assistant", "compat/m:socratic@http://127.0.0.1:9/v1", settings=s)
    assert (assistant.strategy, assistant.id) == ("socratic", "compat/m:socratic@http://127.0.0.1:9/v1")
    assert assistant.chat.ref.model == "m" and assistant.chat.base_url == "http://127.0.0.1:9/v1"
    user = registry.resolve("user", parse_id("compat/m@http://127.0.0.1:9/v1:zs"), settings=s)
    assert (user.method, user.id) == ("zs", "compat/m:zs@http://127.0.0.1:9/v1")
    assert registry.spec_of("compat/m:socratic@http://127.0.0.1:9/v1").model == "m"  # pricing agrees


def test_a_suffix_on_an_agent_that_cannot_take_it_is_refused():
    """A strategy or method the built agent would drop is refused: its recorded id would differ
    from the id asked for (a batch cell would never find its run)."""
    with pytest.raises(ConfigError, match="baseline user method 'zs'"):
        registry.resolve("assistant", "openai/gpt-4o:zs", settings=_llm_settings())
    with pytest.raises(ConfigError, match="write openai/gpt-4o$"):
        registry.resolve("extractor", "openai/gpt-4o:socratic", settings=_llm_settings())
    with pytest.raises(ConfigError, match="a strategy is an assistant's"):
        registry.resolve("user", "compat/m:simple@http://127.0.0.1:9/v1", settings=_llm_settings())


def test_the_batch_planner_spells_an_assistant_as_its_agent_records_it():
    """Issue 44: ``_canonical_assistant`` built the strategy after the URL; a stored run is found
    again by its cell only when the two spellings are the same."""
    from knowsim_core.batch.plan import _canonical_assistant

    s = _llm_settings()
    for typed in ("compat/llama3.1:socratic@http://localhost:11434/v1", "compat/llama3.1@http://localhost:11434/v1",
                  "compat/llama3.1@http://localhost:11434/v1:socratic", "openai/gpt-4o", "anthropic/c:simple"):
        assert _canonical_assistant(typed) == registry.resolve("assistant", typed, settings=s).id
    assert _canonical_assistant("compat/llama3.1@http://localhost:11434/v1") == \
        "compat/llama3.1:adaptive@http://localhost:11434/v1"


def test_the_reference_export_reads_the_strategy_of_a_compat_id_with_a_url():
    """Issue 44: ``strategy_of`` returned ``11434/v1`` here, and an exported run recorded it."""
    assert reference_export.strategy_of("compat/llama3.1:socratic@http://localhost:11434/v1") == "socratic"
    assert reference_export.strategy_of("openai/gpt-4o") == DEFAULT_STRATEGY  # what it played
    assert reference_export.strategy_of("offline/adaptive") == "adaptive"
    assert reference_export.strategy_of("recorded/adaptive") == "adaptive"


# ---------------------------------------------------------------------- every shape, round trip
_SUFFIXES = STRATEGIES + METHODS
_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=12)
# a model name may hold ":" (llama3:8b) and "/" (meta-llama/Llama-3.1-8B), never "@" (the URL follows it),
# and never end in ":<strategy or method>" (that suffix is the id's, by definition)
_model = st.lists(st.tuples(st.sampled_from(["", ":", "/"]), _name), min_size=1, max_size=3).map(
    lambda parts: "".join(sep + part for sep, part in parts).lstrip(":/") or "m"
).filter(lambda m: bool(m) and not any(m.endswith(f":{s}") for s in _SUFFIXES))
_host = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,8}){0,2}", fullmatch=True),  # a name
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
)
_url = st.builds(
    lambda scheme, user, host, port, path: f"{scheme}://{user}{host}{port}{path}",
    st.sampled_from(["http", "https"]),
    st.sampled_from(["", "bob:s3cret@", "key@"]),
    _host,
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.lists(_name, max_size=3).map(lambda segs: "".join(f"/{s}" for s in segs)),
)
_llm_ids = st.builds(
    lambda provider, model, suffix, url: AgentId(provider, model, strategy=suffix if suffix in STRATEGIES else "",
                                                 method=suffix if suffix in METHODS else "",
                                                 url=url if provider == "compat" else ""),
    st.sampled_from(MODEL_PROVIDERS), _model, st.sampled_from(("",) + _SUFFIXES), st.one_of(st.just(""), _url),
)
_registered = st.sampled_from(sorted({e.id for kind in registry.KINDS for e in registry.available(kind)}))
_any_id = st.one_of(
    _llm_ids,
    _registered.map(parse_id),  # offline agents and the realism floors (baseline/…)
    st.just(AgentId("human")),
    st.text(min_size=1, max_size=30).filter(lambda t: t.strip() == t).map(AgentId.recorded),
)


@given(_any_id)
@settings(max_examples=400, deadline=None)
def test_every_id_shape_round_trips(agent):
    assert parse_id(agent.id) == agent
    assert parse_id(agent.id).id == agent.id
    spec = registry.spec_of(agent.id)
    assert spec.needs_model == agent.calls_model == (agent.provider in MODEL_PROVIDERS)
    assert spec.recorded == (agent.provider == "recorded") and spec.human == (agent.id == "human")
    if agent.calls_model:
        assert spec.model == agent.model
        if agent.url and (agent.strategy or agent.method):  # the older spelling reads the same
            old = f"{agent.provider}/{agent.model}@{agent.url}:{agent.strategy or agent.method}"
            assert parse_id(old) == agent


@pytest.fixture(scope="module")
def a_run():
    from knowsim_core.formats.samples import load_samples
    from tests.part2_support import make_run

    return make_run(load_samples()[0].graph, max_turns=2)


_assistant_ids = st.one_of(
    _llm_ids.filter(lambda a: not a.method),
    st.sampled_from([e.id for e in registry.available("assistant")]).map(parse_id),
    st.just(AgentId("human")),
    st.sampled_from(STRATEGIES).map(AgentId.recorded),
)


@given(agent=_assistant_ids)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_exported_reference_run_records_the_strategy_the_assistant_played(a_run, agent):
    run = replace(a_run, adapters=(("assistant", agent.id), *[(r, a) for r, a in a_run.adapters if r != "assistant"]))
    record = json.loads(json.dumps(reference_export.to_reference(run, domain="math")))
    assert record["assistant_strategy"] == agent.played_strategy
    again = run_from_reference(record, run.graph, run.params)  # imported back: recorded/<strategy>
    assert parse_id(again.adapter["assistant"]) == AgentId.recorded(agent.played_strategy)
    assert parse_id(again.adapter["assistant"]).played_strategy == agent.played_strategy


# ---------------------------------------------------------------------- the guard
SCANNED = ("knowsim_core", "ui", "pages", "benchmarks")
OWNER = "knowsim_core/engine/agent_id.py"  # the one parser and the one spelling
_SEPS = ("/", ":", "@")
_PROVIDER_PREFIX = re.compile(r"(?:^|[^\w-])(offline|openai|anthropic|compat|baseline|recorded|human)/$")
# what an expression holding an id (or a part of one) is called in this code base
_ID_WORDS = re.compile(r"agent|assistant|adapter|extractor|uid|model|provider|strategy|method|tutor|simulator|spec\b|"
                       r"RECORDED|HUMAN_ID|user_id", re.IGNORECASE)
_SPLITTERS = {"partition", "rpartition", "split", "rsplit"}
_PREFIX_TESTS = {"removeprefix", "removesuffix", "startswith", "endswith"}


def _id_like(node: ast.AST, src: str) -> bool:
    return bool(_ID_WORDS.search(ast.get_source_segment(src, node) or ""))


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_findings(node: ast.Call, src: str) -> list[str]:
    if not isinstance(node.func, ast.Attribute):
        return []
    name, first = node.func.attr, (node.args[0] if node.args else None)
    lit = _string(first)
    if name in _SPLITTERS and lit in _SEPS and _id_like(node.func.value, src):
        return [f".{name}({lit!r})"]
    if name in _PREFIX_TESTS and ((lit is not None and _PROVIDER_PREFIX.search(lit))
                                  or (isinstance(first, ast.Name) and first.id == "RECORDED_PREFIX")):
        return [f".{name}(<provider>/)"]
    if name == "join" and _string(node.func.value) in _SEPS and first is not None and _id_like(first, src):
        return [f"{_string(node.func.value)!r}.join"]
    return []


def _fstring_findings(node: ast.JoinedStr, src: str) -> list[str]:
    out, parts = [], node.values
    for i, part in enumerate(parts):
        text = _string(part)
        if text is None:
            continue
        before = parts[i - 1] if i > 0 and isinstance(parts[i - 1], ast.FormattedValue) else None
        after = parts[i + 1] if i + 1 < len(parts) and isinstance(parts[i + 1], ast.FormattedValue) else None
        if after is not None and _PROVIDER_PREFIX.search(text):
            out.append(f"f'{text}{{…}}'")
        elif after is not None and text[-1:] in _SEPS and (
                _id_like(after.value, src) or (before is not None and _id_like(before.value, src))):
            out.append(f"f'…{text[-1]}{{…}}'")
        elif before is not None and text[:1] in _SEPS and re.match(r".[\w-]", text) and _id_like(before.value, src):
            out.append(f"f'{{…}}{text[:1]}…'")
    for a, b in zip(parts, parts[1:]):
        if isinstance(a, ast.FormattedValue) and isinstance(b, ast.FormattedValue) and \
                isinstance(a.value, ast.Name) and a.value.id == "RECORDED_PREFIX":
            out.append("f'{RECORDED_PREFIX}{…}'")
    return out


def _concat_findings(node: ast.BinOp, src: str) -> list[str]:
    if not isinstance(node.op, ast.Add):
        return []
    return [f"+ {lit!r}" for side, other in ((node.left, node.right), (node.right, node.left))
            if (lit := _string(side)) is not None and (_PROVIDER_PREFIX.search(lit) or (lit in _SEPS and _id_like(other, src)))]


def hand_parsers(root: Path) -> list[str]:
    """``path:line: what`` for every id taken apart or put together by hand outside the owner:
    ``.partition("/")`` / ``.split(":")`` / ``.rpartition("@")`` of an id-like expression, a
    provider-prefix test, and f-string or ``+`` builders that join id parts with ``/ : @``."""
    files = [p for d in SCANNED for p in (root / d).rglob("*.py")] + [p for p in (root / "app.py",) if p.exists()]
    found = []
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if rel == OWNER:
            continue
        src = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(src)):
            hits = (_call_findings(node, src) if isinstance(node, ast.Call) else
                    _fstring_findings(node, src) if isinstance(node, ast.JoinedStr) else
                    _concat_findings(node, src) if isinstance(node, ast.BinOp) else [])
            found += [f"{rel}:{node.lineno}: {h}" for h in hits]
    return sorted(set(found))


def test_no_agent_id_is_parsed_or_built_by_hand_outside_its_module():
    assert hand_parsers(ROOT) == []


@pytest.mark.parametrize("planted", [
    'provider, _, model = agent_id.partition("/")',
    'name = tutor.split(":")[0]',
    'url = run.adapter["assistant"].rpartition("@")[2]',
    'aid = f"{provider}/{model}"',
    'aid = f"{ref.id}:{strategy}"',
    'aid = f"compat/{name}"',
    'aid = f"{RECORDED_PREFIX}{what}"',
    'aid = provider + "/" + model',
    'mine = assistant_id.startswith("recorded/")',
    'name = assistant.removeprefix("offline/")',
])
def test_the_guard_finds_a_planted_hand_parser(tmp_path, planted):
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    (tmp_path / "pages" / "planted.py").write_text(f"def f(agent_id, provider, model, ref, strategy, name, "
                                                   f"RECORDED_PREFIX, what, tutor, run, assistant_id, assistant):\n"
                                                   f"    {planted}\n")
    assert [f.split(": ")[0] for f in hand_parsers(tmp_path)] == ["pages/planted.py:2"]


def test_the_guard_leaves_other_colons_and_slashes_alone(tmp_path):
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    (tmp_path / "knowsim_core" / "fine.py").write_text(
        'def f(label, seed, turn, value, url, path, exc, agent_id):\n'
        '    a = label.split(":", 1)[0]\n    b = f"{seed}:{turn}"\n    c = value.split("/")\n'
        '    d = f"{url}/{path}"\n    e = f"{agent_id}: {exc}"\n')
    assert hand_parsers(tmp_path) == []
