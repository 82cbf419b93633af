"""The LLM layer: settings, one chat interface, provider adapters, errors, cache and prices.

This package is the only place the ``openai`` and ``anthropic`` SDKs are imported, and only
inside functions (``providers.py``), so importing it costs nothing when no model is used.

Public API::

    LLMSettings.from_sources(env=os.environ, secrets=st_secrets_or_None)
    settings.with_overrides(openai_api_key="sk-…")           # sidebar, this session only
    provider_status(settings) -> [ProviderStatus(name, available, detail)]
    llm_agent_ids(settings) -> {"assistant": [...], "user": [...], ...}
    ChatModel(ModelRef.parse("compat", "llama3.1"), settings=, cache=).complete(messages, json_schema=)
"""

from knowsim_core.llm.cache import MemoryCache, ResponseCache, request_key
from knowsim_core.llm.chat import ChatModel, ChatResult, ModelRef, as_messages
from knowsim_core.llm.errors import MalformedOutputError, ProviderCallError, redact
from knowsim_core.llm.prices import DEFAULT_PRICES, PriceTable
from knowsim_core.llm.settings import (
    ASSISTANT_STRATEGIES,
    PROVIDERS,
    LLMSettings,
    ProviderStatus,
    llm_agent_ids,
    provider_status,
)

__all__ = [
    "ASSISTANT_STRATEGIES",
    "ChatModel",
    "ChatResult",
    "DEFAULT_PRICES",
    "LLMSettings",
    "MalformedOutputError",
    "MemoryCache",
    "ModelRef",
    "PROVIDERS",
    "PriceTable",
    "ProviderCallError",
    "ProviderStatus",
    "ResponseCache",
    "as_messages",
    "llm_agent_ids",
    "provider_status",
    "redact",
    "request_key",
]
