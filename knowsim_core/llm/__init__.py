"""The LLM layer: settings, one chat interface, provider adapters, errors, cache and prices.

This package is the only place the ``openai`` and ``anthropic`` SDKs are imported, and only by
:mod:`.sdks` when a request is first made. The layer itself loads on first use
(:mod:`knowsim_core.lazy`): ``from knowsim_core import llm`` costs nothing, and ``llm.LLMSettings``
(or ``llm.settings``) loads that module — its pydantic settings (~0.1–0.3 s) — when read, so an
offline run, an offline batch and a command's ``--help`` never load it.

Public API::

    LLMSettings.from_sources(env=os.environ, secrets=st_secrets_or_None)
    settings.with_overrides(openai_api_key="sk-…")           # sidebar, this session only
    provider_status(settings) -> [ProviderStatus(name, available, detail)]
    llm_agent_ids(settings) -> {"assistant": [...], "user": [...], ...}
    ChatModel(ModelRef.parse("compat", "llama3.1"), settings=, cache=).complete(messages, json_schema=)
"""

from knowsim_core.lazy import attach

__getattr__, __dir__ = attach(__name__, {
    "MemoryCache": "cache", "ResponseCache": "cache", "request_key": "cache",
    "ChatModel": "chat", "ChatResult": "chat", "ModelRef": "chat", "as_messages": "chat",
    "MalformedOutputError": "errors", "ProviderCallError": "errors", "redact": "errors",
    "DEFAULT_PRICES": "prices", "PriceTable": "prices",
    "ASSISTANT_STRATEGIES": "settings", "PROVIDERS": "settings", "LLMSettings": "settings",
    "ProviderStatus": "settings", "llm_agent_ids": "settings", "provider_status": "settings",
})

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
