"""LLM settings: keys, base URLs, timeouts, retries, cache switch, prices — from env and secrets.

Keys live in memory only. They are wrapped in pydantic's :class:`~pydantic.SecretStr`, whose
``repr``/``str`` print stars, so a settings object can be logged, shown in a debugger or put in an error message
without leaking them; :meth:`LLMSettings.describe` (what a run records) never includes them.

Sources, later ones win: built-in defaults < environment < a secrets mapping (``st.secrets``,
read by the app and passed in as a plain mapping) < values typed into the sidebar
(:meth:`LLMSettings.with_overrides`). This module imports no streamlit and no SDK.

Variables (same names in the environment and in secrets)::

    OPENAI_API_KEY, OPENAI_BASE_URL          openai/<model>
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL    anthropic/<model>
    KNOWSIM_COMPAT_BASE_URL (one URL: several servers go behind a router), KNOWSIM_COMPAT_API_KEY (optional)   compat/<model>
    KNOWSIM_LLM_TIMEOUT (s: the deadline of one whole request, body included), KNOWSIM_LLM_MAX_RETRIES,
    KNOWSIM_LLM_MAX_REPLY_BYTES (a reply body larger than this is refused; default 4 MiB), KNOWSIM_LLM_CACHE (1/0),
    KNOWSIM_LLM_MAX_CONCURRENCY, KNOWSIM_LLM_RPM (0 = unlimited),
    KNOWSIM_LLM_STRUCTURED (auto | schema | json),
    KNOWSIM_LLM_MAX_TOKENS (per role: "assistant=300,user=200,extractor=1500"; a bare number for every role),
    KNOWSIM_LLM_CONTEXT (the compatible server's context in tokens: prompts that do not fit are refused),
    KNOWSIM_LOCAL_MODEL_FILE (where `make local-model` records its running server; ~/.knowsim/local-model.json),
    KNOWSIM_OPENAI_MODELS, KNOWSIM_ANTHROPIC_MODELS, KNOWSIM_COMPAT_MODELS (comma lists),
    KNOWSIM_LLM_PRICES (JSON {"model": [usd_per_1M_input, usd_per_1M_output]})

Every number is checked against its range (:data:`LIMITS`; prices in :mod:`.prices`) when it is read
and whenever settings are made: nan, inf, a value past its range or text is one line naming the
variable and the range, never a value that fails later, at a call, with a traceback.
"""

from __future__ import annotations

from pydantic import SecretStr

import importlib.util
import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from knowsim_core.engine.agent_id import DEFAULT_STRATEGY, METHODS, STRATEGIES, AgentId
from knowsim_core.errors import ConfigError
from knowsim_core.llm.local_record import LocalServer, read_record
from knowsim_core.llm.prices import DEFAULT_PRICES, PriceTable
from knowsim_core.llm.proxy import credentials_misread, masked, proxy_for
from knowsim_core.text.redact import redact_url, redact_urls, url_secrets

PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "compat")
STRUCTURED_MODES: tuple[str, ...] = ("auto", "schema", "json")

DEFAULT_TIMEOUT_S = 60.0  # the SDKs default to 600 s; a stuck local server should fail sooner
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_MAX_RETRIES = 2  # retries of 429, 5xx, connection errors and unusable 200 bodies, with backoff
# A reply is a few KB of JSON (a long extractor reply ~30 KB); 4 MiB is ~100x that, and small
# enough that a hostile or broken server (one sending 50 MB) cannot fill the memory.
DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_CONCURRENCY = 4  # parallel calls per provider endpoint during batches
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o-mini", "gpt-4o"),
    "anthropic": ("claude-sonnet-4-5", "claude-haiku-4-5"),
    "compat": (),  # whatever the local server serves; the user types the name
}
# the selectors offer the default strategy first
ASSISTANT_STRATEGIES: tuple[str, ...] = (DEFAULT_STRATEGY, *(s for s in STRATEGIES if s != DEFAULT_STRATEGY))
ROLES: tuple[str, ...] = ("assistant", "user", "extractor", "graph_extractor", "judge", "act_tagger")
# A small model on a busy CPU writes a few tokens per second: replies are capped per role, so one
# call takes minutes at most. The extractor's compact format is ~25-30 tokens per IU (333 tokens on
# average for graphs of 11 and 13 IUs, benchmarks/logs/local_model.json), so its cap leaves room for
# ~40 IUs; the learner's JSON reply was ~50 tokens.
LOCAL_MAX_TOKENS: dict[str, int] = {"assistant": 160, "user": 120, "extractor": 1200, "graph_extractor": 2000,
                                    "judge": 200, "act_tagger": 40}
# The deadline of one request to the local model: a 13-IU extractor call (3,500 prompt tokens, 1,200
# generated under the grammar) took 1,000 s on this 2-core machine under load.
LOCAL_TIMEOUT_S = 1800.0
# Where a list of servers is sent: the recipe that puts them behind one router URL.
ROUTER_RECIPE = "docs/how-to/router.md"


@dataclass(frozen=True, slots=True)
class Limit:
    """The values one numeric setting may take: a finite number in [low, high] (``low`` itself
    excluded when ``above``), whole when ``kind`` is int. nan, inf, a float over the range of floats
    (1e309) and text are refused like any value outside it, in one line naming the variable."""

    attr: str
    kind: type
    low: float
    high: float
    what: str  # how the message names the unit: "seconds", "retries", ...
    above: bool = False

    def rule(self) -> str:
        low = f"above {_figure(self.low)}" if self.above else f"at least {_figure(self.low)}"
        kind = "a whole number of" if self.kind is int else "a number of"
        return f"{kind} {self.what}, {low} and at most {_figure(self.high)}"

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind is int and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite (and may not fit a float)
            return False
        return (value > self.low if self.above else value >= self.low) and value <= self.high


# Each bound is far past any real use and short of where a number stops meaning anything: a day for
# one request (a socket timeout overflows at ~292 years; a typo's 1e300 is not a deadline), 1 GiB for
# one reply (the cap is there to protect memory), --concurrency's own 1024, a million requests a
# minute, and a context of 10^9 tokens (the most one request can report, providers.MAX_TOKEN_COUNT).
MAX_TIMEOUT_S = 86_400.0
MIN_REPLY_BYTES = 1024
MAX_REPLY_BYTES = 1 << 30
MAX_CONCURRENCY = 1024
MAX_RPM = 1_000_000.0
MAX_CONTEXT_TOKENS = 10**9
MAX_RETRIES = 10
LIMITS: dict[str, Limit] = {
    "KNOWSIM_LLM_TIMEOUT": Limit("timeout_s", float, 0, MAX_TIMEOUT_S, "seconds", above=True),
    "KNOWSIM_LLM_MAX_RETRIES": Limit("max_retries", int, 0, MAX_RETRIES, "retries"),
    "KNOWSIM_LLM_MAX_REPLY_BYTES": Limit("max_reply_bytes", int, MIN_REPLY_BYTES, MAX_REPLY_BYTES, "bytes"),
    "KNOWSIM_LLM_MAX_CONCURRENCY": Limit("max_concurrency", int, 1, MAX_CONCURRENCY, "calls in flight"),
    "KNOWSIM_LLM_RPM": Limit("requests_per_minute", float, 0, MAX_RPM, "requests a minute (0 = unlimited)"),
    "KNOWSIM_LLM_CONTEXT": Limit("context_tokens", int, 0, MAX_CONTEXT_TOKENS, "tokens (0 = unknown)"),
}
CONNECT_TIMEOUT = Limit("connect_timeout_s", float, 0, MAX_TIMEOUT_S, "seconds", above=True)


def _figure(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _quoted(value: Any) -> str:
    """A bad value as a message quotes it: its repr, cut short (a 4,000-digit number is one line too)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


_EMPTY = SecretStr("")


@dataclass(frozen=True)
class LLMSettings:
    """Everything the LLM layer needs; immutable, cheap to copy with :meth:`with_overrides`."""

    openai_api_key: SecretStr = _EMPTY
    openai_base_url: str = ""
    anthropic_api_key: SecretStr = _EMPTY
    anthropic_base_url: str = ""
    compat_api_key: SecretStr = _EMPTY
    compat_base_url: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    requests_per_minute: float = 0.0
    cache_enabled: bool = True
    structured: str = "auto"
    models: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_MODELS))
    prices: PriceTable = field(default_factory=lambda: PriceTable(DEFAULT_PRICES))
    key_sources: Mapping[str, str] = field(default_factory=dict)  # provider -> "env" / "secrets" / "session"
    max_tokens: Mapping[str, int] = field(default_factory=dict)  # role -> reply cap (KNOWSIM_LLM_MAX_TOKENS)
    context_tokens: int = 0  # the compatible server's context (KNOWSIM_LLM_CONTEXT); 0 = unknown, not checked
    local: "LocalServer | None" = None  # the server `make local-model` runs, when it is up
    local_refused: str = ""  # why a local-model record was ignored (it did not check out), for the status line

    def __post_init__(self) -> None:
        for name in ("openai_api_key", "anthropic_api_key", "compat_api_key"):
            value = getattr(self, name)
            if isinstance(value, str):  # accept plain strings, store them wrapped
                object.__setattr__(self, name, SecretStr(value.strip()))
        for name, limit in (*LIMITS.items(), ("the connect timeout", CONNECT_TIMEOUT)):
            value = getattr(self, limit.attr)
            if not limit.allows(value):
                raise ConfigError(f"{name} must be {limit.rule()}, got {_quoted(value)}")
        bad = {r: n for r, n in self.max_tokens.items()
               if r not in ROLES or isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONTEXT_TOKENS}
        if bad:
            raise ConfigError(f"KNOWSIM_LLM_MAX_TOKENS: roles are {', '.join(ROLES)} with a whole number of tokens "
                              f"each, 1 to {MAX_CONTEXT_TOKENS:,}, got {bad}")
        check_one_url("KNOWSIM_COMPAT_BASE_URL", self.compat_base_url)
        if self.structured not in STRUCTURED_MODES:
            raise ConfigError(
                f"KNOWSIM_LLM_STRUCTURED must be one of {', '.join(STRUCTURED_MODES)}, got {self.structured!r}"
            )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "LLMSettings":
        """Settings from environment variables (``os.environ`` when None)."""
        return cls.from_sources(env=os.environ if environ is None else environ, secrets=None)

    @classmethod
    def from_sources(
        cls, *, env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
    ) -> "LLMSettings":
        """Merge the environment and a secrets mapping (secrets win). ``secrets=None`` is fine.

        Raises:
            ConfigError: a number or JSON value that cannot be read, naming the variable.
        """
        env = os.environ if env is None else env
        merged: dict[str, str] = {}
        origin: dict[str, str] = {}
        for source_name, source in (("env", env), ("secrets", _safe_mapping(secrets))):
            for k, v in source.items():
                if isinstance(k, str) and (k.startswith(("OPENAI_", "ANTHROPIC_", "KNOWSIM_"))):
                    if v is None or isinstance(v, (dict, list)):
                        continue
                    merged[k] = str(v).strip()
                    origin[k] = source_name
        kw: dict[str, Any] = {}
        key_sources: dict[str, str] = {}
        for provider, key_var, url_var in (
            ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
            ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            ("compat", "KNOWSIM_COMPAT_API_KEY", "KNOWSIM_COMPAT_BASE_URL"),
        ):
            if merged.get(key_var):
                kw[f"{provider}_api_key"] = SecretStr(merged[key_var])
                key_sources[provider] = origin[key_var]
            if merged.get(url_var):
                kw[f"{provider}_base_url"] = merged[url_var].rstrip("/")
        for var, limit in LIMITS.items():
            if merged.get(var):
                kw[limit.attr] = _number(var, merged[var], limit)
        if merged.get("KNOWSIM_LLM_CACHE"):
            kw["cache_enabled"] = merged["KNOWSIM_LLM_CACHE"].lower() not in ("0", "false", "no", "off")
        if merged.get("KNOWSIM_LLM_STRUCTURED"):
            kw["structured"] = merged["KNOWSIM_LLM_STRUCTURED"].lower()
        if merged.get("KNOWSIM_LLM_MAX_TOKENS"):
            kw["max_tokens"] = parse_max_tokens(merged["KNOWSIM_LLM_MAX_TOKENS"])
        kw["local"], kw["local_refused"] = read_record(merged.get("KNOWSIM_LOCAL_MODEL_FILE") or None)
        models = dict(DEFAULT_MODELS)
        for provider in PROVIDERS:
            var = f"KNOWSIM_{provider.upper()}_MODELS"
            if var in merged:
                models[provider] = tuple(m.strip() for m in merged[var].split(",") if m.strip())
        kw["models"] = models
        kw["prices"] = _prices(merged.get("KNOWSIM_LLM_PRICES") or "")
        kw["key_sources"] = key_sources
        return cls(**kw)

    def with_overrides(self, **changes: Any) -> "LLMSettings":
        """A copy with some fields changed, e.g. a key typed into the sidebar for this session.

        Empty strings for keys or base URLs are ignored (an empty sidebar box keeps the env value).
        """
        clean: dict[str, Any] = {}
        sources = dict(self.key_sources)
        for k, v in changes.items():
            if k.endswith(("_api_key", "_base_url")) and (v is None or (isinstance(v, str) and not v.strip())):
                continue
            if k.endswith("_api_key"):
                v = v if isinstance(v, SecretStr) else SecretStr(str(v).strip())
                sources[k.removesuffix("_api_key")] = "session"
            if k.endswith("_base_url"):
                v = str(v).strip().rstrip("/")
            clean[k] = v
        clean.setdefault("key_sources", sources)
        try:
            return replace(self, **clean)
        except TypeError as exc:
            raise ConfigError(f"unknown LLM setting in {sorted(changes)}: {exc}") from None

    # ------------------------------------------------------------------ lookups
    def is_local(self, base_url: str) -> bool:
        """Whether ``base_url`` is the server `make local-model` runs (recorded, its process alive)."""
        return self.local is not None and base_url.rstrip("/") == self.local.url

    def max_tokens_for(self, role: str, base_url: str = "") -> int | None:
        """The reply cap of ``role``: KNOWSIM_LLM_MAX_TOKENS, else the local model's cap when
        ``base_url`` is the local server, else None (the agent's own default)."""
        if role in self.max_tokens:
            return self.max_tokens[role]
        return LOCAL_MAX_TOKENS.get(role) if self.is_local(base_url) else None

    def context_for(self, provider: str, base_url: str) -> int:
        """The context (tokens) prompts are checked against before sending; 0 = unknown."""
        if self.is_local(base_url):
            return self.local.n_ctx  # type: ignore[union-attr]
        return self.context_tokens if provider == "compat" else 0

    def api_key(self, provider: str) -> str:
        """The key for a provider (revealed; use only to build a client)."""
        return getattr(self, f"{provider}_api_key").get_secret_value()

    def base_url(self, provider: str) -> str:
        if provider == "openai":
            return self.openai_base_url or DEFAULT_OPENAI_BASE_URL
        if provider == "anthropic":
            return self.anthropic_base_url or DEFAULT_ANTHROPIC_BASE_URL
        return self.compat_base_url

    def secrets(self) -> tuple[str, ...]:
        """Every configured key and every credential inside a configured base URL, for redaction."""
        keys = tuple(k.get_secret_value() for k in (self.openai_api_key, self.anthropic_api_key, self.compat_api_key) if k)
        urls = self.base_urls()
        return keys + tuple(s for u in urls for s in url_secrets(u))

    def base_urls(self) -> tuple[str, ...]:
        """Every configured base URL (to find the real one behind a redacted id)."""
        return tuple(u for u in (self.openai_base_url, self.anthropic_base_url, self.compat_base_url) if u)

    def describe(self) -> dict[str, Any]:
        """Non-secret settings, safe to store with a run or show in the UI."""
        return {
            "timeout_s": self.timeout_s,
            "connect_timeout_s": self.connect_timeout_s,
            "max_retries": self.max_retries,
            "max_reply_bytes": self.max_reply_bytes,
            "max_concurrency": self.max_concurrency,
            "requests_per_minute": self.requests_per_minute,
            "cache_enabled": self.cache_enabled,
            "structured": self.structured,
            **({"max_tokens_by_role": dict(self.max_tokens)} if self.max_tokens else {}),
            **({"context_tokens": self.context_tokens} if self.context_tokens else {}),
        }


def _number(var: str, text: str, limit: Limit) -> int | float:
    """``text`` read as ``limit`` says, in its range.

    Raises:
        ConfigError: quoting ``text`` as written (``1e309`` reads as inf). ``int`` and ``float`` read
            a few forms no one means here — ``1_000``, non-ASCII digits — so only plain ASCII is taken.
    """
    value: int | float | None = None
    if text.isascii() and "_" not in text:
        try:
            value = limit.kind(text)
        except ValueError:  # not a number of that kind (or an int of more than 4,300 digits)
            pass
    if value is None or not limit.allows(value):
        raise ConfigError(f"{var} must be {limit.rule()}, got {_quoted(text)}")
    return value


def _prices(text: str) -> PriceTable:
    """The default price table updated with ``KNOWSIM_LLM_PRICES`` (when set).

    Raises:
        ConfigError: the text is not JSON, or not an object of two finite, non-negative prices per model.
    """
    example = '{"gpt-4o-mini": [0.15, 0.6]} (USD per 1M input and output tokens)'
    if not text:
        return PriceTable(DEFAULT_PRICES)
    try:
        changes = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; its text quotes no value
        raise ConfigError(f"KNOWSIM_LLM_PRICES must be JSON like {example}: {exc}") from None
    try:
        return PriceTable(DEFAULT_PRICES).updated(changes)
    except ValueError as exc:
        raise ConfigError(f"KNOWSIM_LLM_PRICES: {exc}; write e.g. {example}") from None


def check_one_url(where: str, url: str) -> None:
    """Refuse a list of servers where one base URL goes (``where``: the setting or the agent id, shown
    with any password in it masked).

    Spreading calls over several servers is a router's job (health checks, the least busy server,
    a retry on another when one dies): the recipe puts them behind one URL.

    Raises:
        ConfigError: ``url`` holds a comma (one line naming the recipe).
    """
    if "," in url:
        raise ConfigError(f"{redact_urls(where)} takes one server's URL, got a list ({url.count(',') + 1} URLs): "
                          f"put the servers behind one router (nginx) and give its URL (see {ROUTER_RECIPE})")


def parse_max_tokens(text: str) -> dict[str, int]:
    """``"assistant=300,extractor=1500"`` (or one number for every role) → {role: tokens}.

    Raises:
        ConfigError: an unknown role, or a value that is not a whole number of tokens from 1 to
            :data:`MAX_CONTEXT_TOKENS`.
    """
    text = text.strip()
    if _whole(text):
        return dict.fromkeys(ROLES, _reply_cap(text, text))
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, sep, value = (x.strip() for x in part.partition("="))
        if not sep or role not in ROLES or not _whole(value):
            raise ConfigError(f"KNOWSIM_LLM_MAX_TOKENS: cannot read {_quoted(part)}; write e.g. "
                              f"assistant=300,user=200,extractor=1500 (roles: {', '.join(ROLES)})")
        out[role] = _reply_cap(value, part)
    return out


def _reply_cap(digits: str, part: str) -> int:
    """One role's cap from its digits (``part``: how the message quotes it)."""
    # more digits than the bound has is over it: never handed to int() (which refuses 4,300 digits)
    n = int(digits) if len(digits.lstrip("0")) <= len(str(MAX_CONTEXT_TOKENS)) else MAX_CONTEXT_TOKENS + 1
    if not 1 <= n <= MAX_CONTEXT_TOKENS:
        raise ConfigError(f"KNOWSIM_LLM_MAX_TOKENS: {_quoted(part)} is not a reply cap; each role's is a whole "
                          f"number of tokens from 1 to {MAX_CONTEXT_TOKENS:,}")
    return n


def _whole(text: str) -> bool:
    """Plain ASCII digits: ``str.isdigit`` is true of "²" too, which ``int`` cannot read."""
    return text.isascii() and text.isdigit()


def _safe_mapping(secrets: Any) -> dict[str, Any]:
    """Read a secrets object defensively: st.secrets raises on *any* access when no file exists."""
    if secrets is None:
        return {}
    try:
        return {k: secrets[k] for k in list(secrets.keys())}
    except Exception:  # noqa: BLE001 — a missing/broken secrets file means "no secrets", not a crash
        return {}


# ---------------------------------------------------------------------- status for the app
@dataclass(frozen=True, slots=True)
class ProviderStatus:
    name: str
    available: bool
    detail: str


def _sdk_installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _shown_url(url: str) -> str:
    """A base URL as the status line shows it: credentials masked — up to the last ``@`` when a URL
    parser would misread them (a bare ``@`` or ``/`` in a password; the model refuses such a URL)."""
    return masked(url) if credentials_misread(url) else redact_url(url)


def _route(url: str, env: Mapping[str, str]) -> tuple[bool, str]:
    """(usable, what the status line adds) for the proxy calls to ``url`` go through under ``env``:
    nothing when direct, the proxy and its variable when there is one, the one-line refusal (and
    not usable) when the environment names a proxy the clients cannot use."""
    try:
        proxy = proxy_for(url, env)
    except ConfigError as exc:
        return False, f"; {exc}"
    return True, (f"; through the proxy {proxy.label}" if proxy is not None else "")


def provider_status(settings: LLMSettings, env: Mapping[str, str] | None = None) -> list[ProviderStatus]:
    """One line per provider for the sidebar: offline always; others when configured.

    No network call is made: "available" means the SDK is installed and a key (or, for
    compat, a base URL) is set. A wrong key shows up as a clear error on the first call. A
    provider reached through a proxy (``env``'s proxy variables, ``os.environ`` when None) says so.
    """
    env = os.environ if env is None else env
    out = [ProviderStatus("offline", True, "built-in deterministic agents; no model calls")]
    for provider, sdk in (("openai", "openai"), ("anthropic", "anthropic"), ("compat", "openai")):
        if not _sdk_installed(sdk):
            out.append(ProviderStatus(provider, False, f"the {sdk} package is not installed (pip install {sdk})"))
            continue
        if provider == "compat":
            url = settings.compat_base_url
            if settings.local is not None:
                loc = settings.local
                extra = f"; also {_shown_url(url)}" if url and not settings.is_local(settings.base_url("compat")) else ""
                behind = f" ({len(loc.servers)} servers behind nginx)" if loc.servers else ""
                out.append(ProviderStatus(provider, True, f"{loc.label} at {loc.url}{behind}{extra}"))
            elif url:
                usable, route = _route(url, env)
                out.append(ProviderStatus(provider, usable, f"OpenAI-compatible server at {_shown_url(url)}{route}"))
            else:
                out.append(ProviderStatus(
                    provider, False,
                    "set KNOWSIM_COMPAT_BASE_URL (e.g. http://localhost:11434/v1 for Ollama) or type it in the sidebar",
                ))
            if settings.local_refused:
                last = out[-1]
                out[-1] = ProviderStatus(last.name, last.available, f"{last.detail}; {settings.local_refused}")
            continue
        var = f"{provider.upper()}_API_KEY"
        if settings.api_key(provider):
            src = settings.key_sources.get(provider, "session")
            usable, route = _route(settings.base_url(provider), env)
            out.append(ProviderStatus(provider, usable,
                                      f"key from {src}; {_shown_url(settings.base_url(provider))}{route}"))
        else:
            out.append(ProviderStatus(provider, False, f"no key: set {var} or type one in the sidebar"))
    return out


def llm_agent_ids(settings: LLMSettings) -> dict[str, list[str]]:
    """Suggested LLM ids per agent kind for the app's selectors (available providers only).

    Assistants get one id per strategy (``openai/gpt-4o-mini:socratic``); users get the KnowSim
    user and the paper's baseline users (``openai/gpt-4o-mini:zs``, ``:zs-cot``, ``:zs-cot-prof``).
    Any other model name can be typed: every ``<provider>/<model>`` resolves.
    """
    ok = {s.name for s in provider_status(settings) if s.available}
    kinds: dict[str, list[str]] = {k: [] for k in ("assistant", "user", "extractor", "graph_extractor", "judge")}
    for provider in PROVIDERS:
        if provider not in ok:
            continue
        models = [AgentId.of(provider, m) for m in settings.models.get(provider, ())
                  if provider != "compat" or settings.compat_base_url]
        if provider == "compat" and settings.local is not None:
            models.insert(0, settings.local.agent_id)  # the local model first, its address in the id
        for model in (m.bare() for m in models):
            kinds["assistant"].extend(model.with_strategy(s).id for s in ASSISTANT_STRATEGIES)
            for kind in ("user", "extractor", "graph_extractor", "judge"):
                kinds[kind].append(model.id)
            kinds["user"].extend(model.with_method(m).id for m in METHODS)
    return kinds
