"""Pick agents by id, and say what an id is: ``offline/adaptive``, ``baseline/copy-last``, ``human``,
``recorded/<model>``, ``openai/gpt-4o[:strategy]``, ``anthropic/claude-…``, ``compat/<model>[@url]``.

Offline agents register exact ids; LLM providers register a prefix and build an agent for any
model name. Modules register themselves on import; :func:`resolve` imports the offline module
always and the LLM module only when an LLM id is asked for (the SDKs stay unimported otherwise).

:func:`spec_of` is the one place that reads an id's form: whether the agent needs a model, runs
offline, is a person or a recording. Batch planning, cost estimates, the runner, realism and the
pages ask it rather than testing prefixes themselves (they used to, with six different rules).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal

from knowsim_core.engine.records import HUMAN_ID, RECORDED_PREFIX
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
    "openai": _Provider("knowsim_core.agents.llm_baselines", needs_model=True),
    "anthropic": _Provider("knowsim_core.agents.llm_baselines", needs_model=True),
    "compat": _Provider("knowsim_core.agents.llm_baselines", needs_model=True),
    "baseline": _Provider("knowsim_core.agents.baselines", offline=True, baseline=True),  # realism floors
    HUMAN_ID: _Provider("knowsim_core.agents.human"),  # the researcher typing one side: the bare id
    RECORDED_PREFIX.rstrip("/"): _Provider(None),  # imported recordings: nothing to build
}
MODEL_PROVIDERS: tuple[str, ...] = tuple(p for p, d in _PROVIDERS.items() if d.needs_model)


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


@dataclass(frozen=True, slots=True)
class AgentId:
    """An agent id's parts: ``<provider>/<model>[:<strategy>|:<method>][@<base_url>]``.

    ``compat/llama3:8b:socratic@http://h:8080/v1`` → provider ``compat``, model ``llama3:8b``, strategy
    ``socratic``, url ``http://h:8080/v1``; the strategy may also follow the URL
    (``compat/llama3:8b@http://h:8080/v1:socratic``, the older spelling). A suffix that is neither an assistant's strategy
    (``prompts/assistant.STRATEGIES``) nor a baseline user's method (``prompts/baseline_user.METHODS``)
    stays in the model name (``llama3:8b``). The one parser of ids: pricing, the LLM agents, the
    baseline users, the batch planner and the pages ask it (parsing by hand in 7–8 places priced a
    baseline-user batch at $0 and dropped the strategy of a compat id with a URL).
    """

    provider: str
    model: str
    strategy: str = ""
    method: str = ""
    url: str = ""

    @property
    def model_spec(self) -> str:
        """The model with its base URL and without the strategy or method (what ``ModelRef.parse`` reads)."""
        return f"{self.model}@{self.url}" if self.url else self.model

    @property
    def id(self) -> str:
        """The id these parts spell, the strategy or method before the URL (the one builder of ids:
        ``f"{uid}:{method}"`` put it after the URL of a compat id)."""
        if not self.model:
            return self.provider
        suffix = self.strategy or self.method
        return f"{self.provider}/{self.model}" + (f":{suffix}" if suffix else "") + (f"@{self.url}" if self.url else "")


def parse_id(agent_id: str) -> AgentId:
    """The parts of ``agent_id`` (an id without a ``/`` is all provider: ``human``)."""
    from knowsim_core.prompts.assistant import STRATEGIES  # tiny; the strategies an assistant id may name
    from knowsim_core.prompts.baseline_user import METHODS  # the :zs / :zs-cot / :zs-cot-prof users

    provider, sep, rest = agent_id.partition("/")
    if not sep:
        return AgentId(agent_id, "")
    name, at, url = rest.partition("@")
    head, colon, tail = name.rpartition(":")
    if at and not (colon and tail in STRATEGIES + METHODS):
        # the suffix after the URL (``compat/m@http://h/v1:socratic``), as ids were written before
        # this parser and as stored runs keep them: a URL never ends in a strategy's name (a port is
        # digits), so it is the strategy, not part of the URL
        base, ucolon, utail = url.rpartition(":")
        if ucolon and utail in STRATEGIES + METHODS and "/" in base:
            url, head, colon, tail = base, name, ":", utail
    strategy = tail if colon and tail in STRATEGIES else ""
    method = tail if colon and tail in METHODS and not strategy else ""
    return AgentId(provider, head if strategy or method else name, strategy, method, url if at else "")


def _model_name(rest: str) -> str:
    """The model a provider-relative spec calls (batch pricing looks it up in the price table)."""
    return parse_id(f"_/{rest}").model


def spec_of(agent_id: str) -> AgentSpec:
    """The :class:`AgentSpec` of any id form; never raises (an unknown form gets a flagless spec).

    Registered ids (offline, baseline, ``human``) load their provider's module to list their
    roles; LLM ids do not load the LLM layer.
    """
    if agent_id == HUMAN_ID:
        _load(HUMAN_ID)
        return AgentSpec(agent_id, HUMAN_ID, _roles(agent_id), human=True)
    if agent_id.startswith(RECORDED_PREFIX):
        return AgentSpec(agent_id, RECORDED_PREFIX.rstrip("/"), CONVERSATION_ROLES, recorded=True)
    prefix, sep, rest = agent_id.partition("/")
    provider = _PROVIDERS.get(prefix) if sep and rest else None
    if provider is None:  # an exact id registered under no known provider (tests' fakes) is code too
        roles = _roles(agent_id)
        return AgentSpec(agent_id, prefix if sep else "", roles, offline=bool(roles))
    if provider.needs_model:
        # a model provider builds every kind (agents/llm.py registers each); known without loading it
        return AgentSpec(agent_id, prefix, KINDS, needs_model=True, model=_model_name(rest))
    _load(prefix)
    return AgentSpec(agent_id, prefix, _roles(agent_id), offline=provider.offline, baseline=provider.baseline)


def _roles(agent_id: str) -> tuple[str, ...]:
    return tuple(k for (k, i) in _EXACT if i == agent_id)


def register(kind: str, agent_id: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register an exact id (``offline/adaptive``)."""
    _EXACT[(kind, agent_id)] = Entry(kind, agent_id, factory, description)


def register_prefix(kind: str, prefix: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register a provider prefix (``openai``): ``factory(model_spec, **settings)`` builds the agent.

    For an assistant the spec is ``<model>`` or ``<model>:<strategy>``.
    """
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


def resolve(kind: str, agent_id: str, **settings: Any) -> Any:
    """Build the agent for ``agent_id``.

    Raises:
        ConfigError: unknown kind or id, with the expected format and a "did you mean".
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown agent kind {kind!r}; expected one of {', '.join(KINDS)}")
    prefix, sep, rest = agent_id.partition("/")
    if agent_id == HUMAN_ID:
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
    if pentry is not None and spec_of(agent_id).needs_model:
        return pentry.factory(rest, **settings)
    choices = [e.id for (k, _), e in _EXACT.items() if k == kind]
    guess = difflib.get_close_matches(agent_id, choices, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise ConfigError(
        f"unknown {kind} {redact_urls(agent_id)!r}{hint} Offline {kind}s: {', '.join(choices) or 'none'}; "
        "LLM ids are openai/<model>, anthropic/<model> or compat/<model>"
    )


__all__ = ["AgentSpec", "CONVERSATION_ROLES", "Entry", "HUMAN_ID", "KINDS", "MODEL_PROVIDERS", "RECORDED_PREFIX",
           "available", "register", "register_prefix", "resolve", "spec_of"]
