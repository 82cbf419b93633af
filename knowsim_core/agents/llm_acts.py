"""The LLM dialogue-act tagger: the five acts of :mod:`knowsim_core.evaluation.acts`, judged by any configured model.

``realism --tagger openai/<model>`` tags the real and the simulated turns with it instead of the
offline rules. Each distinct message is asked once per tagger (responses are also cached in the
database when the LLM cache is on).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from knowsim_core.engine.agent_id import AgentId
from knowsim_core.errors import ConfigError
from knowsim_core.llm.chat import ModelRef, as_messages
from knowsim_core.prompts import act_tagger as p
from knowsim_core.agents import llm as _llm, registry
from knowsim_core.text.redact import redact_urls


class ActOut(BaseModel):
    act: Literal["math_answer", "not_understanding", "seek_information", "off_topic", "acknowledge"]


class LLMActTagger(_llm.LLMAgent):
    kind = "act_tagger"
    prompt_version = p.PROMPT_VERSION
    default_temperature = p.TEMPERATURE
    default_max_tokens = 100

    def __init__(self, ref: ModelRef, **kw: Any):
        super().__init__(ref, **kw)
        self._seen: dict[str, str] = {}

    def tag(self, text: str) -> str:
        if text not in self._seen:
            res = self._complete(as_messages(p.SYSTEM, user=p.render(text)), json_schema=ActOut, seed=0)
            self._seen[text] = res.parsed.act  # type: ignore[union-attr]
        return self._seen[text]


def make_tagger(agent_id: str | AgentId, **settings: Any) -> LLMActTagger:
    """``<provider>/<model>`` → an LLM act tagger (settings, cache as for every LLM agent)."""
    parsed = registry.parse_id(agent_id)
    if not parsed.calls_model:
        raise ConfigError(f"act tagger {redact_urls(parsed.id)!r} should be offline or <provider>/<model>, "
                          "e.g. openai/gpt-4o-mini")
    return LLMActTagger(ModelRef.of(parsed), **settings)
