"""Store real conversations (:mod:`realworld`): a question, an IU graph version and a human run each.

The human run *is* the KnowSim reading of the conversation (:mod:`knowsim_core.services.reading`): the
recorded messages, the extractor's labels and the rules' trajectory. Everything is read, checked
and read through before the first write; the writes happen in one transaction. Importing the
same file again adds nothing (a question with a human run is skipped).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from knowsim_core.text.titles import concept_title
from knowsim_core.agents import registry
from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import QuestionMaterial, SignalExtractor
from knowsim_core.services.reading import RECORDED_PREFIX, read_conversation
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import IUState, KnowledgeState, initial_state
from knowsim_core.storage import Store
from knowsim_core.formats.conversations import read_conversations
from knowsim_core.formats.realworld import AUTHOR, GRAPH_NOTE, Conversation, is_image_path

DEFAULT_EXTRACTOR = "offline/lexical"
IMAGE_NOTE = "image-path message: the person sent a picture; only its path is recorded"


@dataclass
class RealworldReport:
    kind: str
    conversations: int = 0
    questions: int = 0
    graph_versions: int = 0
    initial_states: int = 0  # conversations whose initial state came from the file (not sampled)
    user_messages: int = 0  # read as turns
    null_replies: int = 0
    image_messages: int = 0
    later_messages: int = 0  # about the person's second problem: kept in metadata, not read
    runs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (f"{self.kind}: {self.conversations} conversation(s) → {self.questions} question(s), "
                f"{self.graph_versions} graph version(s), {len(self.runs)} human run(s) (KnowSim readings); "
                f"{self.user_messages} user message(s) read, {self.null_replies} null repl(ies), "
                f"{self.image_messages} image-path message(s), {self.later_messages} second-problem message(s) "
                f"kept as metadata; {self.initial_states} initial state(s) from the file")
        if self.skipped:
            text += f"; skipped {len(self.skipped)}: {'; '.join(self.skipped[:3])}"
        return text


def initial_of(conv: Conversation, graph: IUGraph, params: RuleParams) -> tuple[KnowledgeState, str]:
    """s_0 of the person and where it came from (the file, or sampled for the level)."""
    if conv.initial is None:
        seed = zlib.crc32(conv.key.encode())
        return initial_state(graph, conv.level, params, seed=seed), f"sampled for {conv.level} (seed {seed})"
    states = {n.id: conv.initial.get(n.concept.strip().lower(), IUState.UNAWARE) for n in graph.nodes}
    missing = [n.concept for n in graph.nodes if n.concept.strip().lower() not in conv.initial]
    where = "knowledge state file" + (f" ({len(missing)} concept(s) not rated, read as unaware)" if missing else "")
    return KnowledgeState.from_ids(graph, states), where


def make_extractor(extractor_id: str, store: Store | None = None) -> SignalExtractor:
    """The extractor that reads the conversations, by registry id (a typo gets a "did you mean").

    LLM ids get the environment's settings and, when caching is on, ``store`` as the response
    cache — as a run started from the command line does.

    Raises:
        ConfigError: an unknown id.
    """
    if extractor_id.startswith("offline/"):
        return registry.resolve("extractor", extractor_id)
    from knowsim_core.llm import LLMSettings  # lazy: offline imports never load the LLM layer

    settings = LLMSettings.from_env()
    return registry.resolve("extractor", extractor_id, settings=settings,
                            cache=store if settings.cache_enabled else None)


def build_run(
    conv: Conversation, *, extractor: SignalExtractor | None = None, params: RuleParams | None = None
) -> RunRecord:
    """The KnowSim reading of one conversation (needs its concepts); ``offline/lexical`` by default."""
    extractor = extractor or make_extractor(DEFAULT_EXTRACTOR)
    params = params or preset()
    graph = conv.graph()
    s0, origin = initial_of(conv, graph, params)
    material = QuestionMaterial(conv.question_id, conv.question, "", graph, "math")
    notes = [[IMAGE_NOTE] if is_image_path(u) else [] for u, _ in conv.pairs]
    meta = {**conv.meta, "initial_state_source": origin,
            "null_replies": sum(a is None for _, a in conv.pairs),
            "image_messages": sum(is_image_path(u) for u, _ in conv.pairs),
            "later_messages": json.dumps([[u, a] for u, a in conv.later], ensure_ascii=False)}
    return read_conversation(
        material, conv.pairs, s0, level=conv.level, extractor=extractor,
        assistant_id=f"{RECORDED_PREFIX}{conv.model}", params=params, meta=tuple(meta.items()), turn_notes=notes,
    )


def import_realworld(store: Store, path: str | Path, *, extractor_id: str = DEFAULT_EXTRACTOR,
                     params: RuleParams | None = None) -> RealworldReport:
    """Import a real-conversation file (see :mod:`realworld`) into ``store``.

    Raises:
        FormatError: a malformed file, naming file, record and field; nothing is written then.
        ConfigError: an unknown ``extractor_id``.
    """
    p = Path(path)
    extractor = make_extractor(extractor_id, store)  # a bad id is refused before the file is read
    kind, convs, notes = read_conversations(p)
    report = RealworldReport(kind, conversations=len(convs), skipped=list(notes))
    built: list[tuple[Conversation, RunRecord | None]] = []
    for conv in convs:
        run = build_run(conv, extractor=extractor, params=params) if conv.concepts else None
        if run is None:
            report.skipped.append(f"{conv.key} (no concepts: question only)")
        built.append((conv, run))
    with store.transaction():
        known = {q.id for q in store.list_questions()}
        for conv, run in built:
            if conv.question_id not in known:
                store.add_question(question_id=conv.question_id, text=conv.question, domain="math",
                                   field=conv.field, source=conv.source, kind="real",
                                   title=concept_title(conv.field, [c[0] for c in conv.concepts], conv.source))
                report.questions += 1
            if run is None:
                continue
            if any(r.assistant.startswith(RECORDED_PREFIX) for r in store.list_runs(question_id=conv.question_id)):
                report.skipped.append(f"{conv.key} (already imported)")
                continue
            gid = _graph_version(store, conv.question_id, run.graph, report)
            report.runs.append(store.save_run(run, status="finished", graph_version_id=gid))
            report.user_messages += len(run.turns)
            meta = dict(run.meta)
            report.null_replies += int(meta["null_replies"])
            report.image_messages += int(meta["image_messages"])
            report.later_messages += len(conv.later)
            report.initial_states += conv.initial is not None
    return report


def _graph_version(store: Store, qid: str, graph: IUGraph, report: RealworldReport) -> int:
    target = graph.to_data()
    for v in store.graph_versions(qid):
        if v.graph.to_data() == target:
            return v.id
    report.graph_versions += 1
    return store.add_graph_version(qid, graph, note=GRAPH_NOTE, author=AUTHOR)
