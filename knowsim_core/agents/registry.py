"""Pick agents by id, and say what an id is: ``offline/adaptive``, ``baseline/copy-last``, ``human``,
``recorded/<model>``, ``openai/gpt-4o[:strategy]``, ``anthropic/claude-…``, ``compat/<model>[@url]``.

An id is parsed once, where it comes in, into an :class:`AgentId` (the value type lives in
``engine/agent_id.py``, below the formats and the LLM layer that read ids too; it is re-exported
here). Offline agents register exact ids; LLM providers register a prefix and a factory that
builds an agent for any :class:`AgentId` of theirs. Modules register themselves on import;
:func:`resolve` imports the offline module always and the LLM module only when an LLM id is asked
for (the SDKs stay unimported otherwise).

:func:`spec_of` says what an id is: whether the agent needs a model, runs offline, is a person or
a recording. Batch planning, cost estimates, the runner, realism and the pages ask it rather than
testing prefixes themselves.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal

from knowsim_core.engine.agent_id import (
    HUMAN_ID, MODEL_PROVIDERS, RECORDED, RECORDED_PREFIX, AgentId, parse_id,
)
from knowsim_core.errors import ConfigError
from knowsim_core.text.redact import redact_urls  # an id may embed a base URL with credentials

Kind = Literal["assistant", "user", "extractor", "graph_extractor", "judge"]
KINDS: tuple[str, ...] = ("assistant", "user", "extractor", "graph_extractor", "judge")
# the roles a conversation has: what a recorded side can stand for
CONVERSATION_ROLES: tuple[str, ...] = ("assistant", "user", "extractor")


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """What an agent id is, independent of whether it can be built here.

    ``needs_model``: it calls an LLM (settings, keys, cost). ``offline``: code in this process plays
    it (no model, no person; ``baseline`` ids are offline floors for realism). ``human``: a person
    types it. ``recorded``: it was imported from a recording and nothing can play it on. ``roles``
    are the kinds the id is registered for (every kind for a model provider); an id that is not
    registered has none, and an id of no known form has every flag False too (building either
    raises the registry's error, with a "did you mean").
    ``model`` is the model an LLM id calls, as the price table names it.
    """

    id: str
    provider: str
    roles: tuple[str, ...] = ()
    needs_model: bool = False
    offline: bool = False
    human: bool = False
    recorded: bool = False
    baseline: bool = False
    model: str | None = None


@dataclass(frozen=True, slots=True)
class _Provider:
    module: str | None  # registers this provider's agents on import
    needs_model: bool = False
    offline: bool = False
    baseline: bool = False


# the provider of an id is the part before its first "/" (the bare ``human`` is its own provider)
_PROVIDERS: dict[str, _Provider] = {
    "offline": _Provider("knowsim_core.agents.offline", offline=True),
    # llm_baselines imports llm (every LLM agent) and adds the :zs / :zs-cot / :zs-cot-prof users
    **{p: _Provider("knowsim_core.agents.llm_baselines", needs_model=True) for p in MODEL_PROVIDERS},
    "baseline": _Provider("knowsim_core.agents.baselines", offline=True, baseline=True),  # realism floors
    HUMAN_ID: _Provider("knowsim_core.agents.human"),  # the researcher typing one side: the bare id
    RECORDED: _Provider(None),  # imported recordings: nothing to build
}


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    id: str
    factory: Callable[..., Any]
    description: str = ""

    @property
    def spec(self) -> AgentSpec:
        """The entry's :class:`AgentSpec` (every role its id is registered for)."""
        return spec_of(self.id)


_EXACT: dict[tuple[str, str], Entry] = {}
_PREFIX: dict[tuple[str, str], Entry] = {}


def spec_of(agent_id: str | AgentId) -> AgentSpec:
    """The :class:`AgentSpec` of any id form; never raises (an unknown form gets a flagless spec).

    Registered ids (offline, baseline, ``human``) load their provider's module to list their
    roles; LLM ids do not load the LLM layer.
    """
    text = agent_id if isinstance(agent_id, str) else agent_id.id
    aid = parse_id(agent_id)
    if text == HUMAN_ID:
        _load(HUMAN_ID)
        return AgentSpec(text, HUMAN_ID, _roles(text), human=True)
    if aid.provider == RECORDED and aid.model:
        return AgentSpec(text, RECORDED, CONVERSATION_ROLES, recorded=True)
    provider = _PROVIDERS.get(aid.provider) if aid.model else None
    if provider is None:  # an exact id registered under no known provider (tests' fakes) is code too
        roles = _roles(text)
        return AgentSpec(text, aid.provider if aid.model else "", roles, offline=bool(roles))
    if provider.needs_model:
        # a model provider builds every kind (agents/llm.py registers each); known without loading it
        return AgentSpec(text, aid.provider, KINDS, needs_model=True, model=aid.model)
    _load(aid.provider)
    return AgentSpec(text, aid.provider, _roles(text), offline=provider.offline, baseline=provider.baseline)


def _roles(agent_id: str) -> tuple[str, ...]:
    return tuple(k for (k, i) in _EXACT if i == agent_id)


def register(kind: str, agent_id: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register an exact id (``offline/adaptive``)."""
    _EXACT[(kind, agent_id)] = Entry(kind, agent_id, factory, description)


def register_prefix(kind: str, prefix: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register a model provider (``openai``): ``factory(agent_id, **settings)`` builds the agent
    of ``kind`` for any :class:`AgentId` of that provider (its model, strategy or method, URL)."""
    _PREFIX[(kind, prefix)] = Entry(kind, prefix, factory, description)


def _load(prefix: str) -> None:
    provider = _PROVIDERS.get(prefix)
    module = provider.module if provider else None
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


def resolve(kind: str, agent_id: str | AgentId, **settings: Any) -> Any:
    """Build the agent for ``agent_id``.

    Raises:
        ConfigError: unknown kind or id, with the expected format and a "did you mean".
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown agent kind {kind!r}; expected one of {', '.join(KINDS)}")
    text = agent_id if isinstance(agent_id, str) else agent_id.id
    aid = parse_id(agent_id)
    if text == HUMAN_ID:
        _load(text)
        entry = _EXACT.get((kind, text))
        if entry is not None:
            return entry.factory(**settings)
    if not aid.model:
        raise ConfigError(
            f"agent id {redact_urls(text)!r} should look like provider/name, e.g. offline/adaptive, "
            "openai/gpt-4o-mini, anthropic/claude-sonnet-4-5 or compat/llama3"
        )
    _load(aid.provider)
    entry = _EXACT.get((kind, text))
    if entry is not None:
        return entry.factory(**settings)
    pentry = _PREFIX.get((kind, aid.provider))
    if pentry is not None and aid.calls_model:
        return pentry.factory(aid, **settings)
    choices = [e.id for (k, _), e in _EXACT.items() if k == kind]
    guess = difflib.get_close_matches(text, choices, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise ConfigError(
        f"unknown {kind} {redact_urls(text)!r}{hint} Offline {kind}s: {', '.join(choices) or 'none'}; "
        "LLM ids are openai/<model>, anthropic/<model> or compat/<model>"
    )


__all__ = ["AgentId", "AgentSpec", "CONVERSATION_ROLES", "Entry", "HUMAN_ID", "KINDS", "MODEL_PROVIDERS",
           "RECORDED_PREFIX", "available", "parse_id", "register", "register_prefix", "resolve", "spec_of"]
