"""An agent id as a value: :class:`AgentId`, its one parser :func:`parse_id` and its one spelling :attr:`AgentId.id`.

An id is text only where it crosses a boundary — typed on the command line or in a page, stored
with a run, read from a file. It is parsed there, once, and passed on as an :class:`AgentId`;
anything that needs an id's text again (a run record, a batch cell, a selector option) takes
:attr:`AgentId.id`. The forms::

    offline/adaptive   baseline/copy-last     code in this process: a registered name, read as written
    human                                     a person types that side
    recorded/<what>                           imported from a recording; <what> is read as written
    openai/<model>[:<strategy> | :<method>]   a model at a provider (anthropic/… alike)
    compat/<model>[:<strategy> | :<method>][@<base_url>]

A strategy (:data:`STRATEGIES`) is how an assistant teaches; a method (:data:`METHODS`) is one of the
paper's baseline users. Any other ``:suffix`` is part of the model name (``llama3:8b``). The suffix goes
before the URL; an id with it after the URL (``compat/m@http://h/v1:socratic``, as the LLM agents
recorded it before) is read the same, and spelled the new way.

This module sits in the engine, the lowest layer that writes ids (into run records), so the formats
and the LLM layer read and write ids with it too; ``agents.registry`` says what each id *is*
(its :class:`~knowsim_core.agents.registry.AgentSpec`) and builds the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from knowsim_core.errors import ConfigError

# what an assistant id may name after its model (the prompts in ``prompts/assistant.py`` are keyed by these)
STRATEGIES: tuple[str, ...] = ("simple", "adaptive", "comprehensive", "socratic")
DEFAULT_STRATEGY = "adaptive"  # what an LLM assistant id without a strategy plays
# the paper's LLM baseline users (``prompts/baseline_user.py``): zero-shot, with reasoning, with a profile
METHODS: tuple[str, ...] = ("zs", "zs-cot", "zs-cot-prof")
MODEL_PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "compat")  # ids that call a model
HUMAN_ID = "human"  # a person typed or wrote that side (the Studio's typed turns, real conversations)
RECORDED = "recorded"  # ``recorded/<what>``: the side was imported from a recording
RECORDED_PREFIX = f"{RECORDED}/"

_SUFFIXES = frozenset(STRATEGIES + METHODS)


@dataclass(frozen=True, slots=True)
class AgentId:
    """An agent id's parts: ``<provider>/<model>[:<strategy>|:<method>][@<url>]``.

    ``compat/llama3:8b:socratic@http://h:8080/v1`` is provider ``compat``, model ``llama3:8b``,
    strategy ``socratic``, url ``http://h:8080/v1``. A bare id (``human``) is all provider. Only the
    model providers have a strategy, a method or a URL; building one with a strategy and a method,
    or with a suffix that names neither, raises :class:`ConfigError`.
    """

    provider: str
    model: str = ""
    strategy: str = ""
    method: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        if self.strategy and self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}; expected one of {', '.join(STRATEGIES)}")
        if self.method and self.method not in METHODS:
            raise ConfigError(f"unknown baseline method {self.method!r}; expected one of {', '.join(METHODS)}")
        if self.strategy and self.method:
            raise ConfigError(f"an agent id names a strategy or a method, not both ({self.strategy}, {self.method})")

    # ------------------------------------------------------------------ reading one
    @classmethod
    def of(cls, provider: str, spec: str) -> AgentId:
        """The id of ``spec`` (``<model>[:<suffix>][@<url>]``, or a registered name) at ``provider``."""
        if provider not in MODEL_PROVIDERS:
            return cls(provider, spec)  # a registered name or a recording: read as written
        name, at, url = spec.partition("@")
        head, colon, tail = name.rpartition(":")
        if at and not (colon and tail in _SUFFIXES):
            # the suffix after the URL, as the LLM agents recorded it: a URL never ends in a
            # strategy's or a method's name (a port is digits), so it is the suffix
            base, ucolon, utail = url.rpartition(":")
            if ucolon and utail in _SUFFIXES and "/" in base:
                url, head, colon, tail = base, name, ":", utail
        suffix = tail if colon and tail in _SUFFIXES else ""
        return cls(provider, head if suffix else name, suffix if suffix in STRATEGIES else "",
                   suffix if suffix in METHODS else "", url if at else "")

    @classmethod
    def recorded(cls, what: str) -> AgentId:
        """``recorded/<what>``: a side imported from a recording (``what``: its model or strategy)."""
        return cls(RECORDED, what)

    # ------------------------------------------------------------------ spelling it
    @property
    def id(self) -> str:
        """The id these parts spell, its strategy or method before the URL: the one spelling of ids."""
        if not self.model:
            return self.provider
        suffix = self.strategy or self.method
        return f"{self.provider}/{self.model}" + (f":{suffix}" if suffix else "") + (f"@{self.url}" if self.url else "")

    def __str__(self) -> str:
        return self.id

    # ------------------------------------------------------------------ what it says
    @property
    def calls_model(self) -> bool:
        """Whether the id names a model at a provider (``openai/…``, ``anthropic/…``, ``compat/…``)."""
        return self.provider in MODEL_PROVIDERS and bool(self.model)

    @property
    def name(self) -> str:
        """What the id names within its provider: the model (``gpt-4o`` of ``recorded/gpt-4o`` and of
        ``openai/gpt-4o:socratic``), or the bare id itself (``human``)."""
        return self.model or self.provider

    @property
    def played_strategy(self) -> str:
        """The strategy an assistant with this id plays: the one it names; an LLM assistant naming
        none plays :data:`DEFAULT_STRATEGY`; an offline tutor or a recording is its name
        (``offline/socratic`` → ``socratic``, ``recorded/adaptive`` → ``adaptive``)."""
        if self.strategy:
            return self.strategy
        return DEFAULT_STRATEGY if self.calls_model else self.name

    # ------------------------------------------------------------------ copies
    def with_strategy(self, strategy: str) -> AgentId:
        """The same model playing ``strategy`` (its method dropped)."""
        return replace(self, strategy=strategy, method="")

    def with_method(self, method: str) -> AgentId:
        """The same model as the baseline user ``method`` (its strategy dropped)."""
        return replace(self, strategy="", method=method)

    def bare(self) -> AgentId:
        """The same model with neither a strategy nor a method."""
        return replace(self, strategy="", method="")

    def as_assistant(self) -> AgentId:
        """The id an assistant records: an LLM id names the strategy it plays; others are as they are."""
        return self.with_strategy(self.played_strategy) if self.calls_model and not self.strategy else self


HUMAN = AgentId(HUMAN_ID)


def parse_id(agent_id: str | AgentId) -> AgentId:
    """The parts of ``agent_id``; an id without a ``/`` is all provider (``human``). Never raises:
    whether the id names an agent that exists is the registry's question. An :class:`AgentId` is
    returned as it is."""
    if isinstance(agent_id, AgentId):
        return agent_id
    provider, sep, rest = agent_id.partition("/")
    return AgentId.of(provider, rest) if sep else AgentId(agent_id)


__all__ = ["AgentId", "DEFAULT_STRATEGY", "HUMAN", "HUMAN_ID", "METHODS", "MODEL_PROVIDERS", "RECORDED",
           "RECORDED_PREFIX", "STRATEGIES", "parse_id"]
