"""registry.parse_id: the one parser of agent-id suffixes (``:strategy``, ``:method``, ``@url``), issue 32.

The old hand-written parsers took the last ``:`` of the whole spec, so a compat id with a URL lost its
strategy (``compat/m:socratic@http://h:8080/v1`` played ``adaptive`` against model ``m:socratic``)
and its baseline method (``compat/m:zs@http://h:8080/v1`` became the KnowSim LLM user); the first
test fails on that code. The last test fails on a planted hand-written parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knowsim_core.agents import llm, registry
from knowsim_core.agents.registry import AgentId, parse_id

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("agent_id, parts", [
    ("openai/gpt-4o", AgentId("openai", "gpt-4o")),
    ("openai/gpt-4o:socratic", AgentId("openai", "gpt-4o", strategy="socratic")),
    ("anthropic/claude-x:zs-cot", AgentId("anthropic", "claude-x", method="zs-cot")),
    ("compat/llama3:8b@http://h:8080/v1", AgentId("compat", "llama3:8b", url="http://h:8080/v1")),
    ("compat/llama3:8b:socratic@http://h:8080/v1", AgentId("compat", "llama3:8b", strategy="socratic",
                                                           url="http://h:8080/v1")),
    ("compat/m:zs@http://h:8080/v1", AgentId("compat", "m", method="zs", url="http://h:8080/v1")),
    # the older spelling, which `make local-model` prints and stored runs keep: the strategy after the
    # URL (the merged parser read ":adaptive" as part of the URL and the run got a 404 at /v1:adaptive)
    ("compat/gemma@http://127.0.0.1:8080/v1:adaptive", AgentId("compat", "gemma", strategy="adaptive",
                                                                url="http://127.0.0.1:8080/v1")),
    ("compat/m@http://h:8080/v1:zs-cot", AgentId("compat", "m", method="zs-cot", url="http://h:8080/v1")),
    ("compat/m@http://h:8080", AgentId("compat", "m", url="http://h:8080")),  # a port is not a suffix
    ("offline/adaptive", AgentId("offline", "adaptive")),
    ("human", AgentId("human", "")),
])
def test_parse_id(agent_id, parts):
    assert parse_id(agent_id) == parts


def test_a_compat_id_with_a_url_keeps_its_strategy():
    assert llm.split_strategy("m:socratic@http://127.0.0.1:9/v1") == ("m@http://127.0.0.1:9/v1", "socratic")
    assert llm.split_strategy("llama3:8b@http://127.0.0.1:9/v1") == ("llama3:8b@http://127.0.0.1:9/v1", "adaptive")
    assert registry.spec_of("compat/m:socratic@http://127.0.0.1:9/v1").model == "m"  # pricing agrees


# an id's ":suffix" / "@url" taken apart by hand (an IU label's "IU1: concept" split is not an id)
_HAND_PARSER = re.compile(r"""\.r?partition\(\s*["'][:@]["']\s*\)|\.r?split\(\s*["']@["']""")


def _hand_parsers(root: Path) -> list[str]:
    folders = [root / "knowsim_core" / d for d in ("agents", "batch", "services", "commands", "evaluation")]
    files = [p for d in folders for p in d.rglob("*.py")] + [*(root / "pages").glob("*.py"), *(root / "ui").rglob("*.py")]
    return [f"{p.relative_to(root)}:{i}" for p in files if p.name != "registry.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if _HAND_PARSER.search(line)]


def test_no_agent_id_is_parsed_by_hand_outside_the_registry(tmp_path):
    assert _hand_parsers(ROOT) == []
    (tmp_path / "knowsim_core" / "batch").mkdir(parents=True)
    (tmp_path / "pages").mkdir()
    (tmp_path / "ui").mkdir()
    (tmp_path / "knowsim_core" / "batch" / "planted.py").write_text('model = agent_id.rpartition(":")[0]\n')
    assert _hand_parsers(tmp_path) == ["knowsim_core/batch/planted.py:1"]
