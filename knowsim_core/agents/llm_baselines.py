"""LLM baseline user simulators: ``<provider>/<model>:zs``, ``:zs-cot`` and ``:zs-cot-prof``.

The three simulators the KnowSim paper compares its user with (prompts in
:mod:`knowsim_core.prompts.baseline_user`). They hold no evolving knowledge state: ``zs`` and
``zs-cot`` see a level descriptor, ``zs-cot-prof`` also a synthetic profile and the initial state.
A user agent sees no level, so the level descriptor is read from the first state the agent is
shown for a conversation (share of IUs known: < 1/3 novice, < 2/3 intermediate, else advanced)
unless ``level=`` is given; that state, level and profile are then kept for the conversation —
"never updated". When the model declares it is done the turn says so (``terminate`` and the
thought record the judged termination).

Importing this module registers the ordinary LLM agents too (:mod:`llm`); the registry loads it for
the LLM prefixes, and it sends every user id without a baseline suffix on to :func:`llm.make_agent`.
"""

from __future__ import annotations

import zlib
from typing import Any

from pydantic import BaseModel

from knowsim_core.agents import registry
from knowsim_core.engine.agent_id import AgentId
from knowsim_core.errors import ConfigError
from knowsim_core.llm.chat import ModelRef, as_messages
from knowsim_core.llm.settings import PROVIDERS
from knowsim_core.engine.ports import UserContext, UserTurn
from knowsim_core.prompts import baseline_user as p
from knowsim_core.engine.state import IUState
from knowsim_core.agents import llm as _llm
from knowsim_core.text.redact import redact_urls

DONE_NOTE = "[declared done: judged termination]"


class ZsOut(BaseModel):
    message: str
    done: bool


class CotOut(BaseModel):
    reasoning: str
    message: str
    done: bool


def level_from_state(ctx: UserContext) -> str:
    labels = ctx.material.graph.index.labels
    known = sum(ctx.state.state_of(lab) >= IUState.PARTIAL for lab in labels) / max(1, len(labels))
    return "novice" if known < 1 / 3 else "intermediate" if known < 2 / 3 else "advanced"


class BaselineLLMUser(_llm.LLMAgent):
    """One of the paper's baseline users, backed by any configured LLM."""

    kind = "user"
    prompt_version = p.PROMPT_VERSION
    default_temperature = p.TEMPERATURE
    default_max_tokens = _llm.USER_MAX_TOKENS

    def __init__(self, ref: ModelRef, *, method: str, level: str | None = None, **kw: Any):
        super().__init__(ref, **kw)
        self.method = method
        self.level = level
        self.id = ref.agent_id.with_method(method).id
        self._fixed: dict[str, tuple[str, str, dict[str, list[str]]]] = {}

    def _fixed_for(self, ctx: UserContext) -> tuple[str, str, dict[str, list[str]]]:
        """(level, profile, initial state lists) of this conversation, fixed at first sight."""
        key = ctx.material.question_id
        if key not in self._fixed:
            graph = ctx.material.graph
            lists = {s.key: [graph.node(v).concept for v in graph.index.ids
                             if ctx.state.state_of(graph.index.label_of[v]) == s] for s in IUState}
            profile = p.synthetic_profile(zlib.crc32(key.encode()))
            self._fixed[key] = (self.level or level_from_state(ctx), profile, lists)
        return self._fixed[key]

    def start_conversation(self, material: Any, *, level: str, initial: Any) -> None:
        """Fix a conversation's level and initial state before its first turn (realism gives the
        person's own level and the run's s_0; otherwise both are read from the first state seen)."""
        graph = material.graph
        lists = {s.key: [graph.node(v).concept for v in graph.index.ids
                         if initial.state_of(graph.index.label_of[v]) == s] for s in IUState}
        profile = p.synthetic_profile(zlib.crc32(material.question_id.encode()))
        self._fixed[material.question_id] = (self.level or level, profile, lists)

    def respond(self, ctx: UserContext) -> UserTurn:
        level, profile, initial = self._fixed_for(ctx)
        prompt = p.render(self.method, question=ctx.material.question, level=level, history=ctx.history,
                          profile=profile, initial_state=initial)
        schema = ZsOut if self.method == "zs" else CotOut
        res = self._complete(as_messages(p.SYSTEM, user=prompt), seed=ctx.seed, json_schema=schema)
        out = res.parsed
        thought = getattr(out, "reasoning", "")
        if out.done:
            thought = f"{thought} {DONE_NOTE}".strip()
        return UserTurn(message=out.message.strip(), thought=thought, terminate=bool(out.done), usage=(res.usage,))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "method": self.method, "level": self.level or "read from the first state"}


def make_user(agent_id: AgentId, **kw: Any) -> Any:
    """``<model>:<method>`` → a baseline user; any other id → the KnowSim LLM user."""
    if not agent_id.method:
        return _llm.make_agent("user", agent_id, **kw)
    unknown = sorted(set(kw) - _llm.COMMON_OPTIONS - {"level"})
    if unknown:
        raise ConfigError(f"user {redact_urls(agent_id.id)}: unknown option(s) {', '.join(unknown)}; "
                          f"accepted: {', '.join(sorted(_llm.COMMON_OPTIONS | {'level'}))}")
    return BaselineLLMUser(ModelRef.of(agent_id), method=agent_id.method, **kw)


for _provider in PROVIDERS:
    registry.register_prefix("user", _provider, make_user,
                             f"user backed by a {_provider} model (KnowSim, or :zs / :zs-cot / :zs-cot-prof baselines)")
