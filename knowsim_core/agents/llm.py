"""LLM-backed agents: assistant, KnowSim user, signal extractor, graph extractor, IQ judge.

Registered for the prefixes ``openai/``, ``anthropic/`` and ``compat/`` of every kind, so any model
name resolves: ``openai/gpt-4o-mini:socratic`` (an assistant's strategy, default adaptive),
``compat/llama3.1@http://localhost:11434/v1`` (endpoint in the id). Factories take
``(agent_id, *, settings=None, cache=None, temperature=None, max_tokens=None, ...)``.

Each agent exposes ``describe()`` — model id, prompt version, sampling — for the run's metadata.
Every call is recorded in the run's usage ledger when it is made (``bill_to``), so a failure
costs nothing twice and loses nothing. Provider failures propagate as :class:`ProviderError`
(the run stops, resumable); malformed
extractor output is retried and then recorded as a flagged extractor failure, never silently.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from knowsim_core.agents import registry
from knowsim_core.engine.agent_id import STRATEGIES, AgentId
from knowsim_core.errors import ConfigError, GraphError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.llm.cache import ResponseCache
from knowsim_core.llm.chat import ChatModel, ModelRef, as_messages
from knowsim_core.llm.errors import MalformedOutputError
from knowsim_core.llm.jsontext import extract_json
from knowsim_core.llm.schemas import (
    COMPACT_FORMAT, ExtractorOut, GraphOut, JudgeOut, UserOut, compact_entries, compact_extractor_model,
    graph_from_output, graph_problems,
)
from knowsim_core.llm.settings import PROVIDERS, LLMSettings
from knowsim_core.text.redact import redact_urls
from knowsim_core.engine.ports import (
    AssistantContext, AssistantTurn, Extraction, ExtractorContext, Judgement, UserContext, UserTurn,
)
from knowsim_core.prompts import (
    assistant as p_assistant, extractor as p_extractor, graph as p_graph, judge as p_judge, user as p_user,
)
from knowsim_core.engine.records import RunRecord, Usage
from knowsim_core.engine.signals import parse_extractor_output

ASSISTANT_TEMPERATURE, ASSISTANT_MAX_TOKENS = 0.0, 3000  # spec §9
USER_MAX_TOKENS = 1000
EXTRACTOR_MAX_TOKENS = 8000  # one entry per IU, up to 30 IUs with two reasons each
GRAPH_MAX_TOKENS = 8000
JUDGE_MAX_TOKENS = 1000


class LLMAgent:
    kind = ""
    prompt_version = ""
    default_temperature: float | None = 0.0
    default_max_tokens = 1000

    def __init__(self, ref: ModelRef, *, settings: LLMSettings | None = None, cache: ResponseCache | None = None,
                 temperature: float | None = None, max_tokens: int | None = None):
        self.chat = ChatModel(ref, settings=settings, cache=cache)
        self.temperature = self.default_temperature if temperature is None else float(temperature)
        # the reply cap: given here, else KNOWSIM_LLM_MAX_TOKENS (or the local model's) for this role, else ours
        self.max_tokens = int(max_tokens or self.chat.settings.max_tokens_for(self.kind, self.chat.base_url)
                              or self.default_max_tokens)
        self.id = ref.id

    def bill_to(self, ledger: Any) -> None:
        """Record every call of this agent in ``ledger`` (a run's usage ledger) as it is made."""
        self.chat.ledger = ledger

    def _complete(self, messages: list[dict[str, str]], *, seed: int | None = None,
                  temperature: float | None = None, **kw: Any):
        t = self.temperature if temperature is None else temperature
        return self.chat.complete(messages, temperature=t, max_tokens=self.max_tokens, seed=seed,
                                  role=self.kind, **kw)

    def describe(self) -> dict[str, Any]:
        """What a run records about this agent (never a key)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "prompt_version": self.prompt_version,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed_sent": self.chat.ref.provider != "anthropic",  # the Messages API has no seed
            **self.chat.describe(),
        }


class LLMAssistant(LLMAgent):
    """The evaluated assistant: a strategy's system prompt + the visible conversation."""

    kind = "assistant"
    prompt_version = p_assistant.PROMPT_VERSION
    default_temperature = ASSISTANT_TEMPERATURE
    default_max_tokens = ASSISTANT_MAX_TOKENS
    reads_state = False

    def __init__(self, ref: ModelRef, *, strategy: str = p_assistant.DEFAULT_STRATEGY, **kw: Any):
        super().__init__(ref, **kw)
        self.strategy = strategy
        self.id = ref.agent_id.with_strategy(strategy).id

    def reply(self, ctx: AssistantContext) -> AssistantTurn:
        system = p_assistant.system_prompt(self.strategy, ctx.material.domain or "math")
        res = self._complete(as_messages(system, ctx.history), seed=ctx.seed)
        return AssistantTurn(message=res.text.strip(), usage=(res.usage,))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "strategy": self.strategy}


class LLMUser(LLMAgent):
    """The KnowSim simulated user (spec §9): JSON thought / message / attempt_verify / terminate."""

    kind = "user"
    prompt_version = p_user.PROMPT_VERSION
    default_temperature = p_user.TEMPERATURE
    default_max_tokens = USER_MAX_TOKENS

    def __init__(self, ref: ModelRef, *, honour_terminate: bool = False, universal_guidance: bool = True, **kw: Any):
        super().__init__(ref, **kw)
        self.honour_terminate = honour_terminate
        self.universal_guidance = universal_guidance

    def respond(self, ctx: UserContext) -> UserTurn:
        if ctx.turn <= 1 and not ctx.history:
            prompt = p_user.render_initial(ctx)
        else:
            prompt = p_user.render_followup(
                ctx, honour_terminate=self.honour_terminate, universal_guidance=self.universal_guidance
            )
        res = self._complete(as_messages(p_user.SYSTEM, user=prompt), seed=ctx.seed, json_schema=UserOut)
        out: UserOut = res.parsed  # type: ignore[assignment]
        first = ctx.turn <= 1 and not ctx.history
        return UserTurn(
            message=out.message.strip(),
            attempt=False if first else out.attempt_verify,
            thought=out.thought,
            terminate=out.terminate if self.honour_terminate else False,
            usage=(res.usage,),
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "honour_terminate": self.honour_terminate,
                "universal_guidance": self.universal_guidance}


class LLMExtractor(LLMAgent):
    """Phase-B labels for every IU; malformed output retried at a higher temperature, then flagged.

    The small local model (``make local-model``) is asked for the compact format
    (:data:`~knowsim_core.llm.schemas.COMPACT_FORMAT`: three labels per IU id, no reasoning — the full
    format does not fit a reply cap that a 270M model under a grammar writes in CI time); its replies are
    read into the same entries. Every other server gets the full format, unchanged.
    """

    kind = "extractor"
    prompt_version = p_extractor.PROMPT_VERSION
    default_temperature = p_extractor.TEMPERATURE
    default_max_tokens = EXTRACTOR_MAX_TOKENS

    def __init__(self, ref: ModelRef, **kw: Any):
        super().__init__(ref, **kw)
        self.compact = self.chat.local
        if self.compact:
            self.prompt_version = p_extractor.COMPACT_PROMPT_VERSION

    def extract(self, ctx: ExtractorContext) -> Extraction:
        messages = as_messages(p_extractor.SYSTEM, user=p_extractor.render(ctx, compact=self.compact))
        known = set(ctx.material.graph.index.ids)
        schema = compact_extractor_model(tuple(ctx.material.graph.index.ids)) if self.compact else ExtractorOut
        temps = [self.temperature] + [p_extractor.RETRY_TEMPERATURE] * p_extractor.MAX_RETRIES
        usages: list[Usage] = []
        problems: list[str] = []
        entries = ()
        for attempt, t in enumerate(temps, start=1):
            try:
                res = self._complete(messages, seed=ctx.seed, temperature=t, json_schema=schema)
                usages.append(res.usage)
                entries = parse_extractor_output(compact_entries(res.parsed) if self.compact
                                                 else res.parsed.model_dump())  # type: ignore[union-attr]
            except MalformedOutputError as exc:
                if exc.usage is not None:
                    usages.append(exc.usage)
                entries = _lenient_entries(exc.text)  # spec §3.1 normalisation accepts more than the schema
                if not entries:
                    problems.append(f"attempt {attempt}: {exc}")
                    if exc.cut:  # cut at the reply cap under an enforced schema: a retry would be cut again
                        temps = temps[:attempt]
                        break
            if any(e.id in known for e in entries):
                return Extraction(entries=entries, usage=tuple(usages))
            if entries:
                problems.append(f"attempt {attempt}: no entry names an IU of this graph")
        if entries:  # only unknown ids: let the rules see them (the turn notes flag every one)
            return Extraction(entries=entries, usage=tuple(usages))
        return Extraction(
            entries=(), failed=True, usage=tuple(usages),
            error=f"{self.id} gave no usable IU labels after {len(temps)} attempts; " + "; ".join(problems)[:600],
        )


    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **({"output_format": COMPACT_FORMAT} if self.compact else {})}


def _lenient_entries(text: str):
    """Entries from a reply that failed validation: the full format, or else the compact one."""
    try:
        data = extract_json(text)
    except ValueError:
        return ()
    return parse_extractor_output(data) or parse_extractor_output(compact_entries(data))


class LLMGraphExtractor(LLMAgent):
    """Question + reference answer → IU graph, validated; one repair request when it is not usable.

    After each call ``last_usage`` holds the calls' usage and ``last_notes`` the problems that
    remain (warnings such as large Δl), for the app to show next to the new graph version.
    """

    kind = "graph_extractor"
    prompt_version = p_graph.PROMPT_VERSION
    default_temperature = p_graph.TEMPERATURE
    default_max_tokens = GRAPH_MAX_TOKENS

    def __init__(self, ref: ModelRef, **kw: Any):
        super().__init__(ref, **kw)
        self.last_usage: tuple[Usage, ...] = ()
        self.last_notes: tuple[str, ...] = ()

    def extract_graph(self, question: str, reference_answer: str) -> IUGraph:
        """Raises GraphError when the graph still has errors (e.g. a cycle) after the repair request."""
        messages = as_messages(p_graph.SYSTEM, user=p_graph.render(question, reference_answer))
        res = self._complete(messages, json_schema=GraphOut)
        usages = [res.usage]
        graph = graph_from_output(res.parsed)  # type: ignore[arg-type]
        errors, soft = graph_problems(graph)
        if errors or soft:
            repair = [*messages, {"role": "assistant", "content": res.text},
                      {"role": "user", "content": p_graph.render_repair(errors + soft)}]
            res = self._complete(repair, json_schema=GraphOut)
            usages.append(res.usage)
            graph = graph_from_output(res.parsed)  # type: ignore[arg-type]
            errors, soft = graph_problems(graph)
        self.last_usage = tuple(usages)
        self.last_notes = tuple(soft)
        if errors:
            raise GraphError(
                f"{self.id} produced a graph that is still invalid after one repair request: "
                + "; ".join(errors[:5]) + " — try again, another model, or fix it by hand"
            )
        return graph


class LLMJudge(LLMAgent):
    """Interaction quality (IQ, 1–10) of a whole run, from its transcript."""

    kind = "judge"
    prompt_version = p_judge.PROMPT_VERSION
    default_temperature = p_judge.TEMPERATURE
    default_max_tokens = JUDGE_MAX_TOKENS

    def judge(self, run: RunRecord) -> Judgement:
        res = self._complete(as_messages(p_judge.SYSTEM, user=p_judge.render(run)), json_schema=JudgeOut,
                             seed=run.seed)
        out: JudgeOut = res.parsed  # type: ignore[assignment]
        return Judgement(score=float(out.score), rationale=out.rationale.strip(), usage=(res.usage,))


# ---------------------------------------------------------------------- factories + registration
_CLASSES = {
    "assistant": LLMAssistant,
    "user": LLMUser,
    "extractor": LLMExtractor,
    "graph_extractor": LLMGraphExtractor,
    "judge": LLMJudge,
}
COMMON_OPTIONS = {"settings", "cache", "temperature", "max_tokens"}
_EXTRA = {"user": {"honour_terminate", "universal_guidance"}}


def make_agent(kind: str, agent_id: AgentId, **kw: Any) -> Any:
    """Build an LLM agent of ``kind`` for ``agent_id`` (the registry calls this).

    Raises:
        ConfigError: an unknown option, provider or strategy, an empty model name, a missing key
            or base URL — each with what to set.
    """
    allowed = COMMON_OPTIONS | _EXTRA.get(kind, set())
    unknown = sorted(set(kw) - allowed)
    if unknown:
        raise ConfigError(f"{kind} {redact_urls(agent_id.id)}: unknown option(s) {', '.join(unknown)}; "
                          f"accepted: {', '.join(sorted(allowed))}")
    extra: dict[str, Any] = {}
    if kind == "assistant":
        if agent_id.method:
            raise ConfigError(f"assistant {redact_urls(agent_id.id)} names the baseline user method "
                              f"{agent_id.method!r}; an assistant takes a strategy ({', '.join(STRATEGIES)})")
        extra["strategy"] = agent_id.played_strategy
    elif agent_id.strategy or agent_id.method:  # a baseline user's method never reaches here (make_user)
        suffix = agent_id.strategy or agent_id.method
        raise ConfigError(f"{kind} {redact_urls(agent_id.id)} names {suffix!r}: a strategy is an assistant's and "
                          f"a method a baseline user's; write {redact_urls(agent_id.bare().id)}")
    return _CLASSES[kind](ModelRef.of(agent_id), **kw, **extra)


for _kind in _CLASSES:
    for _provider in PROVIDERS:
        registry.register_prefix(_kind, _provider, partial(make_agent, _kind),
                                 f"{_kind} backed by a {_provider} model")
