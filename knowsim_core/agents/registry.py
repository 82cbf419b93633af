"""Pick agents by id: ``offline/adaptive``, ``openai/gpt-4o``, ``anthropic/claude-…``, ``compat/<model>``.

Offline agents register exact ids; LLM providers register a prefix and build an agent for any
model name. Modules register themselves on import; :func:`resolve` imports the offline module
always and the LLM module only when an LLM id is asked for (the SDKs stay unimported otherwise).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal

from knowsim_core.errors import ConfigError
from knowsim_core.text.redact import redact_urls  # an id may embed a base URL with credentials

Kind = Literal["assistant", "user", "extractor", "graph_extractor", "judge"]
KINDS: tuple[str, ...] = ("assistant", "user", "extractor", "graph_extractor", "judge")


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    id: str
    factory: Callable[..., Any]
    description: str = ""


_EXACT: dict[tuple[str, str], Entry] = {}
_PREFIX: dict[tuple[str, str], Entry] = {}
_LAZY_MODULES = {
    "offline": "knowsim_core.agents.offline",
    # llm_baselines imports llm (every LLM agent) and adds the :zs / :zs-cot / :zs-cot-prof users
    "openai": "knowsim_core.agents.llm_baselines",
    "anthropic": "knowsim_core.agents.llm_baselines",
    "compat": "knowsim_core.agents.llm_baselines",
    "baseline": "knowsim_core.agents.baselines",  # floor user simulators for realism
    "human": "knowsim_core.agents.human",  # the researcher typing one side: the bare id ``human``
}


def register(kind: str, agent_id: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register an exact id (``offline/adaptive``)."""
    _EXACT[(kind, agent_id)] = Entry(kind, agent_id, factory, description)


def register_prefix(kind: str, prefix: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register a provider prefix (``openai``): ``factory(model_spec, **settings)`` builds the agent.

    For an assistant the spec is ``<model>`` or ``<model>:<strategy>``.
    """
    _PREFIX[(kind, prefix)] = Entry(kind, prefix, factory, description)


def _load(prefix: str) -> None:
    module = _LAZY_MODULES.get(prefix)
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:  # an optional module not built yet / SDK missing
            raise ConfigError(f"agents of provider {prefix!r} are unavailable: {exc}") from None


def available(kind: str) -> list[Entry]:
    """Registered exact ids of a kind (offline agents), in registration order."""
    _load("offline")
    _load("baseline")
    return [e for (k, _), e in _EXACT.items() if k == kind]


def resolve(kind: str, agent_id: str, **settings: Any) -> Any:
    """Build the agent for ``agent_id``.

    Raises:
        ConfigError: unknown kind or id, with the expected format and a "did you mean".
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown agent kind {kind!r}; expected one of {', '.join(KINDS)}")
    prefix, sep, rest = agent_id.partition("/")
    if agent_id == "human":
        _load(agent_id)
        entry = _EXACT.get((kind, agent_id))
        if entry is not None:
            return entry.factory(**settings)
    if not sep or not rest:
        raise ConfigError(
            f"agent id {redact_urls(agent_id)!r} should look like provider/name, e.g. offline/adaptive, "
            "openai/gpt-4o-mini, anthropic/claude-sonnet-4-5 or compat/llama3"
        )
    _load(prefix)
    entry = _EXACT.get((kind, agent_id))
    if entry is not None:
        return entry.factory(**settings)
    pentry = _PREFIX.get((kind, prefix))
    if pentry is not None and prefix != "offline":
        return pentry.factory(rest, **settings)
    choices = [e.id for (k, _), e in _EXACT.items() if k == kind]
    guess = difflib.get_close_matches(agent_id, choices, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise ConfigError(
        f"unknown {kind} {redact_urls(agent_id)!r}{hint} Offline {kind}s: {', '.join(choices) or 'none'}; "
        "LLM ids are openai/<model>, anthropic/<model> or compat/<model>"
    )
