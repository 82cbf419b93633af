"""How a scripted assistant reads the conversation, and the prose it writes from IU descriptions.

An offline assistant never sees the hidden knowledge state. It forms a *belief* about the user
from the text alone: IUs the user talks about confidently (shown), hedges on or asks about
(asked), and what the assistant itself has already said. That last part comes from its own plan,
by construction — :class:`Writer` writes an IU's explanation from the IU's description, so a past
message that carries the description's opening sentences *is* that explanation — and never from
the signal extractor, which grades the assistant and must not also steer it. Strategies then pick
IUs from that belief and write about them with :class:`Writer`, which varies phrasing with the
per-call seed (same seed ⇒ same words).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from knowsim_core.engine.graph import IUGraph, IUNode
from knowsim_core.engine.ports import Message
from knowsim_core.text.profiles import content_stems, profiles_for, sentences

HEDGE = re.compile(
    r"\b(not sure|don't (?:fully |really )?(?:get|understand|know|follow)|confus|lost|no idea|unsure|"
    r"i haven't|never (?:learned|seen)|what (?:is|does|are)|how (?:do|does|would)|can you|could you|"
    r"explain|not certain|i'm stuck|help me|where (?:do|should) i)\b"
)
CONFIDENT = re.compile(r"\b(i know|i understand|i get|i remember|i'm comfortable|i computed|i calculated|so it'?s|"
                       r"that gives|which gives|i got|equals|=)")
MENTION = 0.42  # sentence relevance for an IU to count as what a user sentence is about


@dataclass
class Belief:
    """What the assistant believes about the user, from the visible conversation only."""

    shown: set[str] = field(default_factory=set)  # ever stated confidently
    asked: list[str] = field(default_factory=list)  # hedged on / asked about in the latest message
    latest_shown: list[str] = field(default_factory=list)
    taught: dict[str, int] = field(default_factory=dict)  # times the assistant gave its full explanation
    mentioned: set[str] = field(default_factory=set)  # ever mentioned by the assistant
    level: str = "novice"  # inferred from the latest user message

    def known(self, iu: str) -> bool:
        """Shown by the user, or explained well once: like the chat assistants the paper studies,
        the scripted ones take "I explained it" for "they understood it" (they cannot see
        absorption), which is how they come to build on prerequisites a novice does not have."""
        return iu in self.shown or self.taught.get(iu, 0) >= 1


def description_sentences(text: str) -> list[str]:
    """An IU description's sentences, with a split inside a formula undone: the generic splitter
    also cuts after "!)" or "?)" (``C(n,k) = n!/(k!(n-k)!) is the number of …``), and a
    sentence never starts with a lower-case word, so such a piece is joined back to the one before
    — otherwise the Writer's "This matters because " + the second piece reads "This matters
    because is the number of …"."""
    out: list[str] = []
    for s in sentences(text):
        if out and s[:1].islower():
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    return out


def iu_sentences(node: IUNode) -> list[str]:
    """The sentences the offline assistants state an IU with: its description's, or — when the
    description has none (an empty one loads with a warning and runs) — one naming the concept
    (or the id), so every "first sentence" the Writer reads exists."""
    found = description_sentences(node.description)
    if found:
        return found
    name = " ".join((node.concept or node.id).split())
    return [name[:1].upper() + name[1:] + ("" if name.endswith((".", "!", "?")) else ".")]


def _sentence_facts(graph: IUGraph, text: str) -> tuple[tuple[bool, bool, tuple[str, ...]], ...]:
    """Per sentence of one user message: (hedges or asks, sounds confident, the IUs it is about —
    at most two, relevance at least :data:`MENTION`). A function of the text and the graph's
    content alone, remembered on the graph's profiles: :func:`read_user` re-reads the whole
    history every turn."""
    prof = profiles_for(graph)
    key = ("sentence-facts", text)
    hit = prof.memo.get(key)
    if hit is None:
        facts = []
        for s in sentences(text):
            low = s.lower()
            scored = sorted(prof.relevances(set(content_stems(s))).items(), key=lambda x: -x[1])
            ius = tuple(iu for iu, r in scored[:2] if r >= MENTION)
            facts.append((bool(HEDGE.search(low)) or s.rstrip().endswith("?"), bool(CONFIDENT.search(low)), ius))
        hit = prof.remember(key, tuple(facts))
    return hit


def own_coverage(graph: IUGraph, text: str) -> tuple[set[str], set[str]]:
    """``(explained, mentioned)``: the IUs one of the assistant's own past messages explained
    (:meth:`Writer.teach`: the description's first two sentences) and mentioned (any of its
    sentences or the concept's name), read off the text the Writer produced."""
    memo = profiles_for(graph).memo
    hit = memo.get(("own", text))
    if hit is not None:
        return hit
    units = memo.get("own-units")
    if units is None:  # per IU: (id, first description sentence, second sentence or the name, its names)
        units = memo["own-units"] = []
        for n in graph.nodes:
            parts = [" ".join(p.lower().split()).rstrip(".") for p in iu_sentences(n)]
            names = tuple(dict.fromkeys((n.concept.lower(), passing_name(n.concept).lower())))
            units.append((n.id, parts[0], parts[1] if len(parts) > 1 else n.concept.lower(), names))
    low = " ".join(text.lower().split())
    explained: set[str] = set()
    mentioned: set[str] = set()
    for iu, first, second, names in units:
        if first and first in low:
            mentioned.add(iu)
            if second in low:
                explained.add(iu)
        elif any(name in low for name in names):
            mentioned.add(iu)
    return profiles_for(graph).remember(("own", text), (explained, mentioned))


def _absorb(graph: IUGraph, b: Belief, m: Message) -> None:
    """Add one message that is not the user's latest to the belief (what it taught, mentioned, showed)."""
    if m.role == "assistant":
        explained, mentioned = own_coverage(graph, m.text)
        for iu in explained:
            b.taught[iu] = b.taught.get(iu, 0) + 1
        b.mentioned |= mentioned
        return
    for hedged, _, ius in _sentence_facts(graph, m.text):
        if not hedged:
            b.shown.update(ius)


def _prefix_belief(graph: IUGraph, prefix: tuple[Message, ...]) -> Belief:
    """The belief from the messages before the user's latest, remembered per conversation prefix:
    every turn re-reads the whole history, and all but its last message were read the turn
    before, so only the new ones are read (from the longest prefix already remembered)."""
    memo = profiles_for(graph).memo
    msgs = tuple((m.role, m.text) for m in prefix)
    chain = [0]  # a running hash per prefix length: keys in O(length), not O(length²)
    for item in msgs:
        chain.append(hash((chain[-1], *item)))
    start = len(msgs)
    cached = None
    while start > 0:
        hit = memo.get(("belief-prefix", start, chain[start]))
        if hit is not None and hit[0] == msgs[:start]:  # a hash collision never passes for a hit
            cached = hit[1]
            break
        start -= 1
    b = Belief() if cached is None else Belief(shown=set(cached.shown), taught=dict(cached.taught),
                                               mentioned=set(cached.mentioned))
    for k in range(start, len(prefix)):
        _absorb(graph, b, prefix[k])
        profiles_for(graph).remember(("belief-prefix", k + 1, chain[k + 1]), (msgs[:k + 1], Belief(
            shown=set(b.shown), taught=dict(b.taught), mentioned=set(b.mentioned))))
    return b


def read_user(graph: IUGraph, history: tuple[Message, ...]) -> Belief:
    """Build the belief from the conversation (the last message is the user's latest)."""
    last_user = max((i for i, m in enumerate(history) if m.role == "user"), default=-1)
    if last_user < 0:
        b = Belief()
        for m in history:
            _absorb(graph, b, m)
        return b
    b = _prefix_belief(graph, history[:last_user])
    hedges = confident = 0
    for hedged, sure, ius in _sentence_facts(graph, history[last_user].text):
        if hedged:
            hedges += 1
            b.asked.extend(iu for iu in ius if iu not in b.asked)
        else:
            confident += 1 if (sure or ius) else 0
            b.shown.update(ius)
            b.latest_shown.extend(iu for iu in ius if iu not in b.latest_shown)
    if confident >= 2 and hedges == 0 or len(b.latest_shown) >= 3:
        b.level = "advanced"
    elif confident >= 1 and len(b.latest_shown) >= 1:
        b.level = "intermediate"
    else:
        b.level = "novice"
    for m in history[last_user + 1:]:
        _absorb(graph, b, m)
    return b


def next_units(graph: IUGraph, belief: Belief, n: int, *, prefer_asked: bool = True) -> list[str]:
    """Up to ``n`` IUs to teach next: the earliest not-yet-known prerequisites of what was asked,
    else the earliest unknown IUs in topological order."""
    topo = graph.index.topo_order
    prereqs = graph.index.prereqs
    picked: list[str] = []

    def root_gap(iu: str, seen: set[str]) -> str:
        """Follow the first unknown prerequisite up the graph until none is left. A loop, not
        recursion: a prerequisite chain may be as long as the graph (1000 IUs is allowed)."""
        while True:
            for p in prereqs.get(iu, ()):
                if p in graph.index.index_of and p not in seen and not belief.known(p):
                    seen.add(p)
                    iu = p
                    break
            else:
                return iu

    if prefer_asked:
        for iu in belief.asked:
            if not belief.known(iu):
                gap = root_gap(iu, {iu})
                if gap not in picked:
                    picked.append(gap)
            if len(picked) >= n:
                return picked
    for iu in topo:
        if len(picked) >= n:
            break
        if not belief.known(iu) and iu not in picked:
            picked.append(iu)
    return picked


class Writer:
    """Seeded prose from IU descriptions (deterministic for a given seed)."""

    def __init__(self, graph: IUGraph, seed: int):
        self.graph = graph
        self.rng = random.Random(seed)

    def pick(self, options: tuple[str, ...] | list[str]) -> str:
        return options[self.rng.randrange(len(options))]

    def concept(self, iu: str) -> str:
        """The IU's name as running text says it (:func:`passing_name`: without a value it carries)."""
        return passing_name(self.graph.node(iu).concept)

    def parts(self, iu: str) -> list[str]:
        memo = profiles_for(self.graph).memo
        hit = memo.get(("description-sentences", iu))
        if hit is None:
            hit = memo[("description-sentences", iu)] = iu_sentences(self.graph.node(iu))
        return hit

    def teach(self, iu: str, *, plain: bool = False) -> list[str]:
        """A substantive explanation: named idea, definition, reason and the problem's application."""
        c = self.concept(iu)
        parts = self.parts(iu)
        intro = self.pick((f"Let's look at {_lc(c)}.", f"The key idea here is {_lc(c)}.",
                           f"Start with {_lc(c)}.", f"Here is how {_lc(c)} works."))
        out = [intro, parts[0]]
        simpler = _plain(parts[0]) if plain else None
        if simpler:
            out.append(self.pick(("Put simply: ", "In plain words: ", "In short: ")) + simpler)
        if len(parts) > 1:
            out.append(self.reason(parts[1]))
        if len(parts) > 2:
            out.append(parts[2])  # as written: a description's third sentence is rarely an example
        return out

    def reason(self, sentence: str) -> str:
        """A description's second sentence as the reason for the first: behind "This matters
        because …" only when it reads as a clause there (:func:`_joins`); a labelled or headed
        sentence ("Situation 2: …", "As a check: …") stands as written."""
        if not _joins(sentence):
            return sentence
        return self.pick(("This matters because ", "The reason is that ")) + _lc(sentence)

    def explain_briefly(self, iu: str) -> list[str]:
        """An explanation in two sentences: the idea and why it matters (an LLM reply's aside)."""
        parts = self.parts(iu)
        if len(parts) < 2:
            return [parts[0]]
        return [parts[0], self.reason(parts[1])]

    def recall(self, ius: list[str]) -> str:
        """One sentence naming earlier steps in passing (a recap, not an explanation)."""
        names = _names([self.concept(iu) for iu in ius])
        return self.pick((f"Remember {names} from earlier.", f"We already rely on {names}.",
                          f"Keep in mind {names}."))

    def ahead(self, ius: list[str]) -> str:
        """One sentence naming later steps in passing (a pointer, not an explanation)."""
        names = _names([self.concept(iu) for iu in ius])
        return self.pick((f"Later we'll need {names}.", f"After that come {names}.",
                          f"This sets up {names}."))

    def brief(self, iu: str) -> str:
        """One sentence that states the idea without developing it."""
        return self.parts(iu)[0]

    def point(self, iu: str) -> str:
        """A bare pointer to an IU (a mention, not an explanation)."""
        c = _lc(self.concept(iu))
        return self.pick((f"Next we'll need {c}.", f"After that comes {c}.", f"Keep {c} in mind for the next step."))

    def toward(self, iu: str) -> str:
        """A sentence that ties the current step to a later one (chat assistants do this habitually)."""
        c = _lc(self.concept(iu))
        return self.pick((f"This is what we'll build on for {c}.", f"All of this leads up to {c}.",
                          f"Eventually this gets us to {c}."))

    def question_toward(self, iu: str, goal: str) -> str:
        """A reasoning question that links one step to where the problem is heading."""
        c, g = _lc(self.concept(iu)), _lc(self.concept(goal))
        return self.pick((f"How could {c} help you with {g}?", f"What does {c} tell you about {g}?"))

    def question(self, iu: str) -> str:
        c = _lc(self.concept(iu))
        return self.pick((f"How do you think {c} applies here?", f"Can you try the step on {c} yourself?",
                          f"What would {c} give you in this problem?", f"Why do you think {c} matters here?"))


# First words after which a sentence reads as a clause behind "because" (or on its own): a
# pronoun, an article or a determiner opens a statement ("This matters because it is how …"); a
# sentence that opens with a noun, a gerund or a label ("Situation 2: …", "Separating …") does not.
_CLAUSE_OPENERS = frozenset("""the this that these those it its they their there a an each every any
    such both all one when if once whenever""".split())


def _joins(sentence: str) -> bool:
    """Whether ``sentence`` reads as a clause behind a connective: it opens with a word of
    :data:`_CLAUSE_OPENERS` and carries no heading (no colon)."""
    first = sentence.split(" ", 1)[0].lower().strip(",;\"'(")
    return first in _CLAUSE_OPENERS and ":" not in sentence


_LINKS = re.compile(r"^(?:and|but|or|so|which|while|whereas|then)\s+", re.I)
_VALUE_TAIL = re.compile(r"\s*(?::\s*\S*\d\S*|\s+(?:of\s+)?[-$]?\d[\d.,/]*)\s*$")


def _plain(sentence: str) -> str | None:
    """A shorter restatement for a novice: the last clause of a long sentence, when it reads as one
    (five words or more, a linking word dropped); ``None`` when there is none."""
    clause = _LINKS.sub("", sentence.rsplit(", ", 1)[-1].strip().rstrip("."))
    if clause != sentence.strip().rstrip(".") and len(clause.split()) >= 5 and _joins(clause):
        return clause[0].upper() + clause[1:] + "."
    return None


def passing_name(concept: str) -> str:
    """A concept's name as a sentence says it in passing: a value the name carries is left out
    ("Answer: 7/20" → "the answer", "Total seat count 1410" → "total seat count") — a pointer to a
    later step names it, it does not state its result."""
    name = _VALUE_TAIL.sub("", concept).strip()
    if not name or name == concept:
        return concept
    return name if " " in name else "the " + lower_first(name)


def _names(concepts: list[str]) -> str:
    """"a", "a and b", "a, b and c" (first letters lower-cased as in running text)."""
    low = [_lc(c) for c in concepts]
    return low[0] if len(low) == 1 else ", ".join(low[:-1]) + " and " + low[-1]


def lower_first(text: str) -> str:
    """Lower-case the first letter for running text, unless the first word is a name that keeps its
    case: an acronym or symbol ("DNA", "R0"), or a word with a digit or a capital inside ("Cas9",
    "CRISPR-Cas9", "mRNA") — never "dna", "cas9"."""
    word = text.split(" ", 1)[0]
    if len(word) > 1 and word[0].isupper() and not any(c.isupper() or c.isdigit() for c in word[1:]):
        return text[0].lower() + text[1:]
    return text


_lc = lower_first
