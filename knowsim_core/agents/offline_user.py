"""The offline learners' voice, and ``offline/knowsim``, which reasons like the paper's
LLM-simulated learner.

:class:`VoiceUser` (the people-like voice; ``offline/person`` in :mod:`person_user` is this voice in
the person's own earlier words) is a template user that speaks from its knowledge state (spec §9
rules).

Turn 1 asks from the true starting point (what it knows, what it half-knows, where it is
stuck), its phrasing following the articulation mode: Explicit (specific, full concept names),
Vague (fuzzy references), Compliant (short, deferential). Later turns write as real learners do
(:mod:`learner_voice`): mostly an answer attempt with the value or step the tutor asked for,
"I don't get it" when stuck, a question, a short acknowledgement, a goodbye when the overload
stop is pending — the act read from the tutor's last turn and the state of the IU it discussed
(known: a confident answer; struggling: hedged and wrong, or stuck; unaware: never the concept's
name or step, though asked for a value it may guess one, hedged and wrong),
the length drawn from real learners' lengths and kept near the learner's own previous turn. A
final filter guarantees that no sentence names an unaware concept (neither its name nor its
distinctive words): such sentences are dropped. It never ends the conversation itself
(``terminate`` stays false; the engine's stop rules decide).

``offline/knowsim`` (:class:`PaperLearner`) is the stand-in for the paper's LLM-simulated learner:
the same voice, plus the attempts the paper's learner makes — each turn, for every IU, a draw
against the rates measured on the paper's recordings of the question's domain (:mod:`learner_rates`:
by the IU's state and by whether the tutor told the learner about it), written as one sentence per drawn IU: a
reasoning attempt brings a claim of its own (a statement of the IU in its own words), an
articulation restates the tutor's sentence about it. An unaware IU the tutor never told it about
is never drawn, and never named. The paper check, the samples and the demo use this learner.
"""

from __future__ import annotations

import math
import random
import re

from knowsim_core.agents import learner_rates as rates
from knowsim_core.agents import learner_voice as voice
from knowsim_core.agents.lexical import ATTEMPT_COVER, COEFFICIENTS, tq_features
from knowsim_core.agents.offline_reading import lower_first
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import UserContext, UserTurn
from knowsim_core.engine.state import IUState
from knowsim_core.text.profiles import content_stems, forbidden_stems, profiles_for, sentences

DISCUSSED = 0.40  # relevance of an IU in the assistant's message for the user to react to it
COMPLIANT_WORDS = 6  # a Compliant learner (low density) keeps to a few deferential words
_NUM = re.compile(r"\b\d+\b")


# running text keeps a name's case ("For Cas9 cutting mechanism", "I think R0 is…"): the tutors'
# rule, one copy
_lc = lower_first


class _Speaker:
    def __init__(self, ctx: UserContext):
        self.ctx = ctx
        self.graph: IUGraph = ctx.material.graph
        self.rng = random.Random(ctx.seed)
        idx = self.graph.index
        self.state = {v: ctx.state.state_of(idx.label_of[v]) for v in idx.ids}
        self.unaware = [v for v in idx.ids if self.state[v] == IUState.UNAWARE]
        # the same stems every turn the unaware set stays the same: remembered per graph (read only)
        self.forbidden = _concepts(self.graph).unsaid(self.unaware, ctx.material.question)[0]
        self.unaware_names = [self.graph.node(v).concept.lower() for v in self.unaware]
        self.mode = ctx.articulation_mode
        self.level = voice.level_of(list(self.state.values()))

    def pick(self, options):
        return options[self.rng.randrange(len(options))]

    def safe(self, text: str) -> bool:
        low = text.lower()
        if any(name and name in low for name in self.unaware_names):
            return False
        return not (set(content_stems(text)) & self.forbidden)

    def name(self, iu: str) -> str:
        c = _lc(self.graph.node(iu).concept)
        if self.mode == "Vague":
            first = c.split(",")[0].split("(")[0].split()
            return "that " + " ".join(first[:2]) + " thing"
        return c

    def fact(self, iu: str) -> str | None:
        """A safe statement of the IU, preferring one with numbers (something to attempt)."""
        parts = [p.rstrip(".") for p in sentences(self.graph.node(iu).description) if self.safe(p)]
        if not parts:
            return None
        numeric = [p for p in parts if _NUM.search(p)]
        return _lc(self.pick(numeric or parts))

    def by_state(self, *states: IUState) -> list[str]:
        return [v for v in self.graph.index.topo_order if self.state[v] in states]


def _first_turn(sp: _Speaker) -> tuple[list[str], bool]:
    known = sp.by_state(IUState.KNOWS_WELL)
    partial = sp.by_state(IUState.PARTIAL)
    struggling = sp.by_state(IUState.STRUGGLING)
    out: list[str] = []
    attempt = False
    if sp.mode == "Compliant":
        out.append(sp.pick(("I'm not sure how to start this problem.", "I don't really know where to begin here.")))
        if known:
            out.append(f"I do know {sp.name(known[0])}.")
        out.append(sp.pick(("Can you guide me?", "What should I do first?")))
        return out, attempt
    if known:
        out.append("I know " + " and ".join(sp.name(v) for v in known[:2]) + ".")
    if partial:
        f = sp.fact(partial[0])
        if f and sp.mode == "Explicit":
            out.append(f"I think {f} — is that the right way to start?")
            attempt = True
        else:
            out.append(f"I partly understand {sp.name(partial[0])}.")
    if struggling:
        out.append(f"I've seen {sp.name(struggling[0])} before but I'm not sure how it works here.")
    out.append(sp.pick(("How should I set this up?", "Where do I start?", "Can you explain how to approach it?")))
    return out, attempt


def _later_turn(sp: _Speaker) -> tuple[list[str], bool]:
    """React to the tutor's last turn as real learners do (:mod:`learner_voice`): the act from what
    the tutor asked and the state of the IU it discussed most, the length drawn from real learners'
    lengths for that act, the value or step taken from the tutor's turn (wrong when struggling)."""
    ctx = sp.ctx
    last = next((m.text for m in reversed(ctx.history) if m.role == "assistant"), "") or ""
    prof = profiles_for(sp.graph)
    discussed = prof.memo.get(("discussed", last))  # replies recur across conversations
    if discussed is None:
        discussed = prof.remember(("discussed", last), tuple(iu for iu, r in prof.rank(last)[:3] if r >= DISCUSSED))
    focus = discussed[0] if discussed else None
    focus_state = sp.state[focus] if focus is not None else None
    cue = voice.read_tutor(last)
    own = next((m.text for m in reversed(ctx.history) if m.role == "user" and m.text.strip()), "")
    act = voice.choose_act(cue, focus_state, stuck_before=voice.was_stuck(own), stop_hint=ctx.stop_hint,
                           mode=sp.mode, rng=sp.rng)
    n = voice.keep_register(voice.draw_length(sp.level, act, sp.rng), len(own.split()))
    if sp.mode == "Compliant":
        n = min(n, COMPLIANT_WORDS)
    talks_about = focus is not None and focus_state >= IUState.STRUGGLING
    # Only an answer shows a step in the concept's words, as often as real learners' answers do.
    shows_step = (act == voice.ANSWER and talks_about
                  and sp.rng.random() < voice.SHOWS_STEP.get(sp.level, voice.SHOWS_STEP["*"]))
    clause = sp.fact(focus) if shows_step else None
    name = sp.name(focus) if shows_step else None
    if act == voice.ASK:  # only a question names what it asks about
        askable_labels = set(ctx.askable)
        askable = [v for v in sp.graph.index.ids if sp.graph.index.label_of[v] in askable_labels]
        topic = focus if talks_about else (askable[0] if askable else None)
        name = sp.name(topic) if topic is not None else None
    goal = sp.graph.node(sp.graph.index.topo_order[-1]).concept if sp.graph.nodes else ""
    told = voice.told_answer(voice.answer_values(ctx.material.reference_answer, goal),
                             [m.text for m in ctx.history if m.role == "assistant"])
    turn = voice.write(act, n, cue=cue, focus=focus_state, clause=clause, name=name, rng=sp.rng, safe=sp.safe,
                       told=told)
    return [turn.text], turn.attempt


class VoiceUser:
    """Template user simulator driven by the knowledge state, written like people (deterministic
    for a given seed). Not registered itself: ``offline/person`` and ``offline/knowsim`` build on it."""

    id = "offline/voice"

    def respond(self, ctx: UserContext) -> UserTurn:
        return self.speak(_Speaker(ctx))

    def speak(self, sp: _Speaker) -> UserTurn:
        ctx = sp.ctx
        parts, attempt = _first_turn(sp) if ctx.turn == 1 or not ctx.history else _later_turn(sp)
        kept = [p for p in parts if sp.safe(p)]
        if not kept:
            kept = ["I'm not sure how to go on from here; can you help?"]
            attempt = False
        n_known = sum(1 for s in sp.state.values() if s >= IUState.PARTIAL)
        thought = (f"{n_known}/{len(sp.state)} IUs known; mode {sp.mode}; "
                   f"{len(sp.unaware)} unaware concepts kept out of the message")
        return UserTurn(message=" ".join(kept), attempt=attempt, thought=thought)


TOLD_MEMO = 512  # replies whose reading a graph's profiles remember for the learner (then cleared)


def _mentioned(graph: IUGraph, reply: str, user: str) -> frozenset[str]:
    """The IUs the offline labeller reads as mentioned in a tutor reply (what the extractor gave
    that turn: the same call on the same two messages), remembered per graph content."""
    prof = profiles_for(graph)
    memo = prof.memo.setdefault("learner-told", {})
    key = (reply, user)
    got = memo.get(key)
    if got is None:
        if len(memo) >= TOLD_MEMO:
            memo.clear()
        w = COEFFICIENTS.mentioned  # lexical.teaching_quality's "mentioned" decision, without its reasons
        got = memo[key] = frozenset(
            iu for iu, x in tq_features(prof, reply, user).items()
            if 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, sum(a * b for a, b in zip(w, x)))))) >= 0.5)
    return got


def told_of(graph: IUGraph, history) -> dict[str, str]:
    """IU id -> when the tutor told the learner about it (:data:`learner_rates.LAST` / ``EARLIER`` /
    ``NEVER``), from the replies in ``history`` as the offline labeller reads them."""
    told = dict.fromkeys(graph.index.ids, rates.NEVER)
    user = ""
    last: frozenset[str] = frozenset()
    for m in history:
        if m.role == "user":
            user = m.text
        elif m.role == "assistant":
            for iu in last:
                told[iu] = rates.EARLIER
            last = _mentioned(graph, m.text, user)
    for iu in last:
        told[iu] = rates.LAST
    return told


class PaperLearner:
    """``offline/knowsim``: the people-like voice plus the attempts of the paper's LLM learner,
    drawn per turn from the question's domain's table (:func:`learner_rates.rates_for`;
    deterministic for a given seed)."""

    id = "offline/knowsim"
    rates = None  # None: the question's domain's table; a test may set a table measured on part of the recordings

    def __init__(self) -> None:
        self.voice = VoiceUser()

    def respond(self, ctx: UserContext) -> UserTurn:
        sp = _Speaker(ctx)
        turn = self.voice.speak(sp)
        graph = ctx.material.graph
        idx = graph.index
        state = sp.state
        told = told_of(graph, ctx.history)
        rng = random.Random(f"{ctx.seed}:attempts")  # a stream of its own: the voice draws from Random(seed)
        table = self.rates if self.rates is not None else rates.rates_for(ctx.material.domain)
        reasoning, articulation = rates.draw_attempts(rng, state, told, idx.topo_order, table)
        if not reasoning and not articulation:
            return turn
        never = [v for v in idx.ids if state[v] == IUState.UNAWARE and told[v] == rates.NEVER]
        forbidden, names = _concepts(graph).unsaid(never, ctx.material.question)

        def safe(text: str) -> bool:
            low = text.lower()
            return not any(n and n in low for n in names) and not (set(content_stems(text)) & forbidden)

        last = next((m.text for m in reversed(ctx.history) if m.role == "assistant"), "")
        # Written one drawn IU at a time; a sentence whose words would make the extractor's attempt
        # rule read more IUs in the message than were drawn (concept names sharing words) is left out.
        names_of = _concepts(graph)
        target = len(reasoning) + len(articulation)
        terms = set(content_stems(turn.message))
        said: list[str] = []
        for iu, kind in [*((v, True) for v in reasoning), *((v, False) for v in articulation)]:
            text = _attempt(graph, names_of, iu, kind, last, rng, safe)
            if text is None:
                continue
            more = terms | set(content_stems(text))
            if names_of.read(more) <= target:
                said.append(text)
                terms = more
        if not said:
            return turn
        message = " ".join([*said, turn.message])
        return UserTurn(message=message, attempt=True,
                        thought=f"{turn.thought}; attempts: reasoning {', '.join(reasoning) or '—'}, "
                                f"articulation {', '.join(articulation) or '—'}")


class _Concepts:
    """A graph's concept names as the extractor's attempt rule reads them (:func:`lexical.attempt_types`:
    an IU is attempted when at least :data:`lexical.ATTEMPT_COVER` of its concept words are used),
    and each IU's description sentences that, said as a reasoning attempt, name no other IU."""

    def __init__(self, graph: IUGraph):
        prof = profiles_for(graph)
        self.need = [(iu, frozenset(p.concept_terms), ATTEMPT_COVER * max(1, len(p.concept_terms)))
                     for iu, p in prof.profiles.items()]
        self.facts: dict[str, list[str]] = {}
        self.replies: dict[str, dict[str, str]] = {}
        self.never: dict[tuple, tuple[set[str], list[str]]] = {}
        self.graph = graph
        for n in graph.nodes:
            name = _lc(n.concept)
            self.facts[n.id] = [f"For {name}, I think {_lc(f.rstrip('.'))}." for f in sentences(n.description)]
            self.facts[n.id] = [f for f in self.facts[n.id] if self.only(set(content_stems(f)), n.id)]

    def attempted(self, terms: set[str]) -> list[str]:
        return [iu for iu, words, need in self.need if words and len(words & terms) >= need]

    def read(self, terms: set[str]) -> int:
        return len(self.attempted(terms))

    def restatable(self, reply: str) -> dict[str, str]:
        """IU -> the first sentence of ``reply`` that the rule reads as about that IU alone
        (remembered for the last :data:`TOLD_MEMO` replies)."""
        got = self.replies.get(reply)
        if got is None:
            if len(self.replies) >= TOLD_MEMO:
                self.replies.clear()
            got = {}
            for sent in sentences(reply):
                hit = self.attempted(set(content_stems(sent)))
                if len(hit) == 1:
                    got.setdefault(hit[0], sent)
            self.replies[reply] = got
        return got

    def unsaid(self, never: list[str], question: str) -> tuple[set[str], list[str]]:
        """(:func:`forbidden_stems`, lower-cased concept names) of the IUs in ``never``,
        remembered for the last :data:`TOLD_MEMO` sets."""
        key = (tuple(never), question)
        got = self.never.get(key)
        if got is None:
            if len(self.never) >= TOLD_MEMO:
                self.never.clear()
            got = self.never[key] = (forbidden_stems(self.graph, never, question),
                                     [self.graph.node(v).concept.lower() for v in never])
        return got

    def only(self, terms: set[str], iu: str) -> bool:
        """Whether ``terms`` make the rule read no IU but ``iu``."""
        return all(v == iu for v in self.attempted(terms))


def _concepts(graph: IUGraph) -> _Concepts:
    memo = profiles_for(graph).memo
    got = memo.get("learner-concepts")
    if got is None:
        got = memo["learner-concepts"] = _Concepts(graph)
    return got


def _attempt(graph: IUGraph, names_of: _Concepts, iu: str, reasoning: bool, last: str, rng: random.Random,
             safe) -> str | None:
    """One sentence attempting ``iu`` alone: reasoning states it in the learner's own words (the
    concept and a statement of it from its description, one naming no other IU's concept, with a
    number when one has); articulation restates the tutor's sentence that names it and no other
    concept. ``None`` when unsafe or when the tutor's last reply has no such sentence to restate."""
    if reasoning:
        facts = [f for f in names_of.facts[iu] if safe(f)]
        pool = [f for f in facts if _NUM.search(f)] or facts
        text = pool[rng.randrange(len(pool))] if pool else f"I think {_lc(graph.node(iu).concept)} is the step we need here."
    else:
        own = names_of.restatable(last).get(iu)
        if own is None:  # nothing of the tutor's to restate
            return None
        text = f"So, as you said: {_lc(own)}"
    return text if safe(text) else None
