"""A batch's matrix and its price: the cells, their identity, the model calls and an estimated cost.

A batch is stored as its :class:`BatchSpec` (under its tag) rather than as a list of runs, so
``batch --resume TAG`` knows the cells that never started as well as the ones that did. A cell's
identity is (question, level, assistant, user, extractor, preset, seed): the columns a stored run
already has, so finding a cell's run is a filter on the runs table, never a parsed record.

The estimate is deliberately simple and says what it assumes: every conversation plays the
preset's max turns (an upper bound — conversations may end earlier) and each LLM agent makes one
call per turn (repair requests are not counted). Tokens per call come from earlier runs of the same
agents when the database has any, else :data:`DEFAULT_TOKENS_PER_CALL`; prices from the LLM price
table. Offline agents make no call and cost 0; models missing from the price table are counted at 0
and named as unpriced.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from knowsim_core import llm
from knowsim_core.agents import registry
from knowsim_core.engine.agent_id import STRATEGIES
from knowsim_core.engine.config import DEFAULT_PRESET, LEVELS, preset as get_preset
from knowsim_core.errors import ConfigError
from knowsim_core.services.runner import DEFAULT_EXTRACTOR, DEFAULT_USER, ensure_question
from knowsim_core.storage import Store

# (input, output) tokens per call when no earlier run of the agents is stored: a KnowSim extractor
# prompt carries the graph and the conversation so far; a user or assistant turn is a paragraph.
DEFAULT_TOKENS_PER_CALL = (2000, 300)
AGENT_KINDS = ("assistant", "user", "extractor")
def needs_model(agent_id: str) -> bool:
    """Does this agent call a model (settings, cost)? The registry's :class:`AgentSpec` answers."""
    return registry.spec_of(agent_id).needs_model


@dataclass(frozen=True, slots=True)
class Cell:
    """One conversation of the matrix; ``index`` is its place in the matrix (it picks the URL)."""

    index: int
    question_id: str
    level: str
    assistant_id: str
    user_id: str
    extractor_id: str
    preset: str
    seed: int
    max_turns: int | None
    graph_version_id: int | None = None  # fixed when the batch was planned (None: the newest at start)

    @property
    def key(self) -> tuple[str, str, str, str, str, str, int]:
        return (self.question_id, self.level, self.assistant_id, self.user_id, self.extractor_id, self.preset,
                self.seed)

    def start_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`knowsim_core.services.runner.start_run` for this cell."""
        return {"question_id": self.question_id, "level": self.level, "assistant_id": self.assistant_id,
                "user_id": self.user_id, "extractor_id": self.extractor_id, "seed": self.seed,
                "preset": self.preset, "max_turns": self.max_turns, "graph_version_id": self.graph_version_id}


def row_key(row: Any) -> tuple[str, str, str, str, str, str, int]:
    """The cell identity of a stored run (a :class:`~knowsim_core.storage.RunRow`)."""
    return (row.question_id, row.level, row.assistant, row.user, row.extractor, row.preset, int(row.seed))


@dataclass(frozen=True)
class BatchSpec:
    """The matrix: questions × levels × assistants × seeds 1..N, one user, extractor and preset."""

    questions: tuple[str, ...]
    levels: tuple[str, ...]
    assistants: tuple[str, ...]
    seeds: int
    user: str
    extractor: str
    preset: str
    max_turns: int | None = None
    # the graph version (row id) of each question, in the order of ``questions``, fixed when the batch
    # is planned: a resume plays on the same graphs even after a new version is saved. Empty in
    # batches stored before versions were chosen (each question's newest then).
    graph_version_ids: tuple[int, ...] = ()

    def cells(self) -> list[Cell]:
        versions = dict(zip(self.questions, self.graph_version_ids))
        product = itertools.product(self.questions, self.levels, self.assistants, range(1, self.seeds + 1))
        return [Cell(i, q, lv, a, self.user, self.extractor, self.preset, s, self.max_turns, versions.get(q))
                for i, (q, lv, a, s) in enumerate(product)]

    @property
    def turns_per_conversation(self) -> int:
        return self.max_turns if self.max_turns is not None else get_preset(self.preset).max_turns

    def llm_agents(self) -> list[str]:
        """Every LLM agent id of the matrix (assistants, user, extractor), in order, once."""
        ids = [*self.assistants, self.user, self.extractor]
        return [a for a in dict.fromkeys(ids) if needs_model(a)]

    def to_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, d: dict[str, Any]) -> "BatchSpec":
        return cls(tuple(d["questions"]), tuple(d["levels"]), tuple(d["assistants"]), int(d["seeds"]),
                   d["user"], d["extractor"], d["preset"], d.get("max_turns"),
                   tuple(int(v) for v in d.get("graph_version_ids") or ()))


def model_name(agent_id: str) -> str:
    """The model an LLM agent id calls, as the price table names it: ``openai/gpt-4o:socratic`` →
    ``gpt-4o``; ``compat/llama3:8b@http://h/v1`` → ``llama3:8b`` (the registry's spec says)."""
    return registry.spec_of(agent_id).model or agent_id


@dataclass(frozen=True)
class Estimate:
    conversations: int
    turns: int
    llm_agents_per_turn: int
    calls: int
    per_conversation_usd: float
    cost_usd: float
    unpriced: tuple[str, ...]
    tokens_source: str

    def lines(self) -> list[str]:
        """What ``batch`` prints before it starts (and all that ``--dry-run`` prints)."""
        out = [f"matrix: {self.conversations} conversation(s) × up to {self.turns} turns"]
        if not self.llm_agents_per_turn:
            out.append("model calls: 0 (offline agents only) · estimated cost: $0.00 (offline agents cost nothing)")
            return out
        out.append(
            f"model calls: ≈ {self.calls} (= conversations × max turns × {self.llm_agents_per_turn} LLM agent(s) "
            "per turn; an upper bound: conversations may end sooner, repair requests not counted)"
        )
        cost = f"estimated cost: ≈ ${self.cost_usd:.2f} (${self.per_conversation_usd:.4f} per conversation; " \
               f"tokens per call from {self.tokens_source})"
        if self.unpriced:
            cost += f"; not in the price table, counted as $0: {', '.join(self.unpriced)}"
        out.append(cost)
        return out


def tokens_per_call(agent_ids: list[str], history: Iterable[tuple]) -> tuple[dict[str, tuple[float, float]], int]:
    """Average (input, output) tokens per call of each agent over earlier runs.

    ``history`` rows are (assistant, user, extractor, turns, tokens in, tokens out) — a run's
    totals, shared evenly between its LLM agents' calls (one per agent per turn).
    """
    sums: dict[str, list[float]] = {}
    n_runs = 0
    for assistant, user, extractor, turns, tin, tout in history:
        agents = [a for a in (assistant, user, extractor) if a and needs_model(a)]
        if not agents or not turns:
            continue
        n_runs += 1
        calls = turns * len(agents)
        for a in set(agents) & set(agent_ids):
            s = sums.setdefault(a, [0.0, 0.0, 0])
            s[0] += tin / calls
            s[1] += tout / calls
            s[2] += 1
    return {a: (s[0] / s[2], s[1] / s[2]) for a, s in sums.items()}, n_runs


def estimate(spec: BatchSpec, conversations: int, *, prices: Any = None, history: Iterable[tuple] = ()) -> Estimate:
    """The calls and cost of ``conversations`` cells of ``spec`` (see the module docstring)."""
    turns = spec.turns_per_conversation
    per_turn = [a for a in (spec.user, spec.extractor) if needs_model(a)]
    llm_assistants = [a for a in spec.assistants if needs_model(a)]
    # assistants differ per cell: count the share of cells whose assistant is an LLM
    share = len(llm_assistants) / len(spec.assistants) if spec.assistants else 0.0
    agents_per_turn = len(per_turn) + (1 if llm_assistants else 0)
    calls = round(conversations * turns * (len(per_turn) + share))
    if not agents_per_turn:
        return Estimate(conversations, turns, 0, 0, 0.0, 0.0, (), "")
    averages, n_runs = tokens_per_call(spec.llm_agents(), history)
    unpriced: list[str] = []

    def call_cost(agent_id: str) -> float:
        tin, tout = averages.get(agent_id, DEFAULT_TOKENS_PER_CALL)
        model = model_name(agent_id)
        if prices is None or prices.price(model) is None:
            unpriced.append(model)
            return 0.0
        return prices.cost(model, round(tin), round(tout))

    fixed = sum(call_cost(a) for a in per_turn)
    assistant_mean = sum(call_cost(a) for a in llm_assistants) / len(spec.assistants) if spec.assistants else 0.0
    per_conv = turns * (fixed + assistant_mean)
    source = (f"{n_runs} earlier run(s) of these agents" if averages and len(averages) == len(spec.llm_agents())
              else f"earlier runs where stored, else a rough default of {DEFAULT_TOKENS_PER_CALL[0]} in / "
                   f"{DEFAULT_TOKENS_PER_CALL[1]} out" if averages
              else f"a rough default of {DEFAULT_TOKENS_PER_CALL[0]} in / {DEFAULT_TOKENS_PER_CALL[1]} out "
                   "(no earlier runs of these agents)")
    return Estimate(conversations, turns, agents_per_turn, calls, per_conv, per_conv * conversations,
                    tuple(dict.fromkeys(unpriced)), source)


def estimate_stored(store: Any, spec: BatchSpec, conversations: int) -> Estimate:
    """:func:`estimate` with the environment's price table and the token history of ``store`` —
    what ``batch`` prints before it starts and what the app's Batch page shows (one source)."""
    prices = None
    if spec.llm_agents():
        prices = llm.LLMSettings.from_env().prices  # the LLM layer loads here: offline batches never need it
    return estimate(spec, conversations, prices=prices, history=store.search.token_totals(spec.llm_agents()))


__all__ = ["BatchSpec", "Cell", "Estimate", "estimate", "estimate_stored", "model_name", "row_key",
           "tokens_per_call"]


def _split(value: str) -> list[str]:
    """A comma list, each item once (``a,a`` is one cell, not two cells with one key)."""
    return list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))


def _items(value: Sequence[str] | str) -> list[str]:
    """Ids given as a sequence (each once) or as one comma-separated string."""
    return _split(value) if isinstance(value, str) else list(dict.fromkeys(v.strip() for v in value if v.strip()))


def _canonical_assistant(agent_id: str) -> str:
    """The id a run records for this assistant (an LLM assistant names the strategy it plays, before
    its URL), so a stored run is found again by its cell."""
    return registry.parse_id(agent_id).as_assistant().id


def plan(
    store: Store, *, questions: Sequence[str] | str | None, levels: Sequence[str] | str = "all",
    assistants: Sequence[str] | str = "offline", seeds: int = 1,
    user: str = DEFAULT_USER, extractor: str = DEFAULT_EXTRACTOR, preset: str = DEFAULT_PRESET,
    max_turns: int | None = None, graph_version: int | None = None,
) -> BatchSpec:
    """The batch's matrix from ids, or the command's words alone (``all`` / ``offline``; a comma
    list in one string is split); checks every id before anything runs. The batch service calls it
    for the command line and the Batch page.
    ``graph_version``: the version number every question is played on (each must have it); None:
    each question's newest. Either way the versions are fixed in the spec."""
    if seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {seeds}")
    if max_turns is not None and not 1 <= max_turns <= 1000:
        raise ConfigError(f"--max-turns must be from 1 to 1000, got {max_turns}")
    if questions is None:
        raise ConfigError("batch needs --questions (all or ids), or --resume TAG")
    questions, levels, assistants = _items(questions), _items(levels), _items(assistants)
    if questions == ["all"]:
        if not store.questions.list():
            store.questions.seed_samples()
        # what the README's `--questions all` means: every question to simulate on (samples, the
        # paper's, yours); an imported real conversation's question is read, not replayed, unless named
        questions = [q.id for q in store.questions.list() if q.n_graph_versions and q.kind != "real"]
    else:
        for q in questions:
            ensure_question(store, q)
    levels = list(LEVELS) if levels == ["all"] else levels
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ConfigError(f"unknown level {bad[0]!r}; expected all or some of {', '.join(LEVELS)}")
    if assistants == ["offline"]:
        # the scripted strategies of the offline provider (not every in-process agent: a plug-in or a
        # test's agent registered under another prefix is played only when named); the oracle reads
        # the hidden state (an upper bound): only when named
        assistants = [e.id for e in registry.available("assistant")
                      if e.spec.provider == "offline" and not getattr(e.factory, "reads_state", False)]
    for kind, ids in (("assistant", assistants), ("user", [user]), ("extractor", [extractor])):
        for agent_id in ids:
            agent = registry.spec_of(agent_id)
            if agent.human or agent.recorded:
                raise ConfigError(f"{kind} {agent_id!r} cannot play a batch: "
                                  + ("a person types it" if agent.human else "it is a recording"))
            if not agent.needs_model:
                registry.resolve(kind, agent_id)  # fail fast on a typo, with a "did you mean"
            elif kind == "assistant" and registry.parse_id(agent_id).method:
                raise ConfigError(f"assistant {agent_id} names the baseline user method "
                                  f"{registry.parse_id(agent_id).method!r}; an assistant takes a strategy "
                                  f"({', '.join(STRATEGIES)})")
            else:
                llm.settings.check_one_url(f"{kind} {agent_id}", registry.parse_id(agent_id).url)
    if not questions or not levels or not assistants:
        raise ConfigError("the batch is empty: no questions with an IU graph, no levels, or no assistants")
    # two spellings of one assistant (compat/m and compat/m:<its default strategy>) are one
    canonical = tuple(dict.fromkeys(_canonical_assistant(a) for a in assistants))
    return BatchSpec(tuple(questions), tuple(levels), canonical, seeds, user, extractor, preset, max_turns,
                     _versions(store, questions, graph_version))


def _versions(store: Store, questions: list[str], number: int | None) -> tuple[int, ...]:
    """The graph version id each question plays on: version ``number``, else its newest."""
    out, missing = [], []
    for q in questions:
        versions = store.questions.graph_versions(q)
        pick = next((v for v in versions if v.version == number), None) if number is not None else (
            versions[-1] if versions else None)
        if pick is None:
            missing.append(q)
        else:
            out.append(pick.id)
    if missing:
        what = f"graph version {number}" if number is not None else "IU graph"
        raise ConfigError(f"{len(missing)} question(s) have no {what}: {', '.join(missing[:5])}"
                          + ("" if number is None else "; choose another --graph-version or leave it out (newest)"))
    return tuple(out)
