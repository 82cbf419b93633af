"""Store real conversations (:mod:`realworld`): a question, an IU graph version and a human run each.

The human run *is* the KnowSim reading of the conversation (:mod:`knowsim_core.services.reading`): the
recorded messages, the extractor's labels and the rules' trajectory. Everything is read, checked
and read through before the first write; the writes happen in one transaction. Importing the
same file again adds nothing: a conversation whose question already has a human run with the same
messages is skipped as "already imported"; one whose stored run holds *other* messages under the
same id is refused naming the file, the record and the id (nothing is written then).

The person's judgments come along: each mapped thumb is stored as a judgment of its turn
(:mod:`knowsim_core.storage.judgments`), the per-conversation answers (rating, correctness, …) are
in the run's metadata. A conversation whose problem has no concepts is still stored — messages and
judgments — as a run without a reading (:func:`~knowsim_core.services.reading.transcript_run`),
which says why.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from knowsim_core import llm
from knowsim_core.text.titles import concept_title
from knowsim_core.agents import registry
from knowsim_core.engine.config import RuleParams, preset
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import QuestionMaterial, SignalExtractor
from knowsim_core.errors import FormatError
from knowsim_core.agents.registry import AgentId, spec_of
from knowsim_core.services.reader_trust import reading_note
from knowsim_core.services.reading import read_conversation, transcript_run
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import IUState, KnowledgeState, initial_state
from knowsim_core.storage import Store
from knowsim_core.formats.conversations import read_conversations
from knowsim_core.formats.realworld import AUTHOR, GRAPH_NOTE, SHAPES, Conversation, is_image_path, legacy_question_id
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import RunStatus

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
    unread: list[str] = field(default_factory=list)  # stored without a KnowSim reading, and why
    shapes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SHAPES, 0))  # messages by shape
    votes: dict[str, int] = field(default_factory=dict)  # thumbs: stored, up, down, exact, prefix, …
    judgments: int = 0  # judgments stored
    reader: str = ""  # the extractor of the readings
    graph_sizes: list[int] = field(default_factory=list)  # IUs per read conversation's graph
    mentioned: int = 0  # (turn, IU) pairs read as mentioned
    pairs: int = 0  # (turn, IU) pairs read

    def trust(self) -> dict | None:
        """How far these readings are trusted (:func:`knowsim_core.services.reader_trust.reading_note`),
        None when nothing was read."""
        if not self.pairs:
            return None
        return reading_note(self.reader, "math", self.graph_sizes, self.mentioned / self.pairs)

    def add_counts(self, conv: Conversation) -> None:
        for k, v in conv.counts.items():
            if k in self.shapes:
                self.shapes[k] += v
            else:
                self.votes[k] = self.votes.get(k, 0) + v
        self.votes["up"] = self.votes.get("up", 0) + sum(j.liked for j in conv.votes)
        self.votes["down"] = self.votes.get("down", 0) + sum(not j.liked for j in conv.votes)

    def summary(self) -> str:
        text = (f"{self.kind}: {self.conversations} conversation(s) → {self.questions} question(s), "
                f"{self.graph_versions} graph version(s), {len(self.runs)} human run(s) (KnowSim readings); "
                f"{self.user_messages} user message(s) read, {self.null_replies} null repl(ies), "
                f"{self.image_messages} image-path message(s), {self.later_messages} second-problem message(s) "
                f"kept as metadata; {self.initial_states} initial state(s) from the file")
        text += ("; messages by shape: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in self.shapes.items()))
        v = self.votes
        if self.judgments or any(v.values()):
            text += (f"; {self.judgments} thumb(s) stored as judgments ({v.get('up', 0)} 👍, {v.get('down', 0)} 👎; "
                     f"reply text matched exactly {v.get('votes_exact', 0)}, as a prefix {v.get('votes_prefix', 0)}, "
                     f"mismatched {v.get('votes_mismatch', 0)}"
                     + (f", not checked (no reply text) {v['votes_unchecked']}" if v.get("votes_unchecked") else "")
                     + ")")
            rest = [f"{v[k]} {what}" for k, what in (
                ("votes_on_user", "on the person's own message"), ("votes_later", "on second-problem turns"),
                ("votes_unrated", "without a verdict"), ("problem_2_votes", "second-problem vote(s) kept in metadata"))
                if v.get(k)]
            if rest:
                text += "; not mapped to turns: " + ", ".join(rest)
            twice = [f"{v[k]} {what}" for k, what in (
                ("votes_repeated", "repeating a thumb on the same turn (kept once)"),
                ("votes_overridden", "overridden by a later thumb on the same turn (the last one kept)")) if v.get(k)]
            if twice:
                text += "; not stored: " + ", ".join(twice)
        note = self.trust()
        if note:
            text += "; " + note["text"]
        if self.unread:
            text += f"; {len(self.unread)} stored without a KnowSim reading: {'; '.join(self.unread[:3])}"
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
    if not spec_of(extractor_id).needs_model:
        return registry.resolve("extractor", extractor_id)
    settings = llm.LLMSettings.from_env()  # the LLM layer loads here: an offline import never does
    return registry.resolve("extractor", extractor_id, settings=settings,
                            cache=store.caches if settings.cache_enabled else None)


def _run_meta(conv: Conversation, origin: str) -> dict:
    return {**conv.meta, "initial_state_source": origin,
            "null_replies": sum(a is None for _, a in conv.pairs),
            "image_messages": sum(is_image_path(u) for u, _ in conv.pairs),
            "later_messages": json.dumps([[u, a] for u, a in conv.later], ensure_ascii=False),
            **{f"messages_{k}": v for k, v in conv.counts.items() if k in SHAPES},
            "problem_2_votes": conv.counts.get("problem_2_votes", 0)}


def no_reading_reason(conv: Conversation) -> str:
    where = conv.meta.get("problem_id")
    return (f"problem {where} has no extracted concepts in the companion file, so there are no IUs to read"
            if where else "the conversation names no concepts, so there are no IUs to read")


def build_run(
    conv: Conversation, *, extractor: SignalExtractor | None = None, params: RuleParams | None = None
) -> RunRecord:
    """The KnowSim reading of one conversation; ``offline/lexical`` by default. Without concepts,
    the conversation's messages without a reading (:func:`transcript_run`), saying why."""
    notes = [[IMAGE_NOTE] if is_image_path(u) else [] for u, _ in conv.pairs]
    assistant_id = AgentId.recorded(conv.model).id
    if not conv.concepts:
        material = QuestionMaterial(conv.question_id, conv.question, "", conv.graph(), "math")
        reason = no_reading_reason(conv)
        return transcript_run(material, conv.pairs, level=conv.level, assistant_id=assistant_id, reason=reason,
                              meta=tuple(_run_meta(conv, "none (no IUs)").items()), turn_notes=notes)
    extractor = extractor or make_extractor(DEFAULT_EXTRACTOR)
    params = params or preset()
    graph = conv.graph()
    s0, origin = initial_of(conv, graph, params)
    material = QuestionMaterial(conv.question_id, conv.question, "", graph, "math")
    return read_conversation(
        material, conv.pairs, s0, level=conv.level, extractor=extractor,
        assistant_id=assistant_id, params=params, meta=tuple(_run_meta(conv, origin).items()), turn_notes=notes,
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
    report = RealworldReport(kind, conversations=len(convs), skipped=list(notes), reader=extractor_id)
    built = [(conv, build_run(conv, extractor=extractor, params=params)) for conv in convs]
    with store.transaction():
        known = {q.id for q in store.questions.list()}
        for i, (conv, run) in enumerate(built):
            if _already_imported(store, conv, p):
                report.skipped.append(f"{conv.key} (already imported)")
                continue
            if conv.question_id not in known:
                store.questions.add(question_id=conv.question_id, text=conv.question, domain="math",
                                   field=conv.field, source=conv.source, kind="real",
                                   title=concept_title(conv.field, [c[0] for c in conv.concepts], conv.source))
                report.questions += 1
            gid = _graph_version(store, conv.question_id, run.graph, report) if conv.concepts else None
            rid = store.runs.save(run, status=RunStatus.FINISHED, graph_version_id=gid)
            report.runs.append(rid)
            report.judgments += store.judgments.add_many(rid, conv.votes)
            report.add_counts(conv)
            if not conv.concepts:
                report.unread.append(f"{conv.key} ({no_reading_reason(conv)})")
            else:
                report.graph_sizes.append(len(run.graph.nodes))
                report.mentioned += sum(1 for t in run.turns for x in t.signals if x.mentioned)
                report.pairs += sum(len(t.signals) for t in run.turns)
            report.user_messages += len(run.turns)
            meta = dict(run.meta)
            report.null_replies += int(meta["null_replies"])
            report.image_messages += int(meta["image_messages"])
            report.later_messages += len(conv.later)
            report.initial_states += conv.initial is not None
    return report


def _already_imported(store: Store, conv: Conversation, path: Path) -> bool:
    """True when this conversation's human run is stored already (same messages).

    Raises:
        FormatError: a stored human run under the same question id holds other messages — two
            different conversations claim one id; naming the file, the conversation and the id.
    """
    same = [(u, a or "") for u, a in conv.pairs]
    for row in store.search.list(RunFilter(question_id=legacy_question_id(conv))):  # imported before ids were hashed
        if spec_of(row.assistant).recorded:
            stored = store.runs.load(row.id)
            if (dict(stored.meta).get("conversation") == conv.key
                    and [(t.user_message, t.assistant_message) for t in stored.turns] == same):
                return True
    for row in store.search.list(RunFilter(question_id=conv.question_id)):
        if not spec_of(row.assistant).recorded:
            continue
        stored = store.runs.load(row.id)
        if [(t.user_message, t.assistant_message) for t in stored.turns] == same:
            return True
        raise FormatError(
            f"{path.name}: conversation {conv.key!r} has question id {conv.question_id}, but the stored human "
            f"run {row.id} under that id holds other messages (conversation "
            f"{dict(stored.meta).get('conversation', '?')!r}); nothing was imported — delete that run first "
            "if this file replaces it"
        )
    return False


def _graph_version(store: Store, qid: str, graph: IUGraph, report: RealworldReport) -> int:
    target = graph.to_data()
    for v in store.questions.graph_versions(qid):
        if v.graph.to_data() == target:
            return v.id
    report.graph_versions += 1
    return store.questions.add_graph_version(qid, graph, note=GRAPH_NOTE, author=AUTHOR)
