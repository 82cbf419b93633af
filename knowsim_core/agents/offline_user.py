"""``offline/knowsim``: a template user that speaks from its knowledge state (spec §9 rules).

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
"""

from __future__ import annotations

import random
import re

from knowsim_core.agents import learner_voice as voice
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import UserContext, UserTurn
from knowsim_core.engine.state import IUState
from knowsim_core.text.profiles import content_stems, forbidden_stems, profiles_for, sentences

DISCUSSED = 0.40  # relevance of an IU in the assistant's message for the user to react to it
COMPLIANT_WORDS = 6  # a Compliant learner (low density) keeps to a few deferential words
_NUM = re.compile(r"\b\d+\b")


def _lc(text: str) -> str:
    return text[0].lower() + text[1:] if len(text) > 1 and text[0].isupper() and not text[1].isupper() else text


class _Speaker:
    def __init__(self, ctx: UserContext):
        self.ctx = ctx
        self.graph: IUGraph = ctx.material.graph
        self.rng = random.Random(ctx.seed)
        idx = self.graph.index
        self.state = {v: ctx.state.state_of(idx.label_of[v]) for v in idx.ids}
        self.unaware = [v for v in idx.ids if self.state[v] == IUState.UNAWARE]
        self.forbidden = forbidden_stems(self.graph, self.unaware, ctx.material.question)
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
    discussed = [iu for iu, r in prof.rank(last)[:3] if r >= DISCUSSED]
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
    turn = voice.write(act, n, cue=cue, focus=focus_state, clause=clause, name=name, rng=sp.rng, safe=sp.safe)
    return [turn.text], turn.attempt


class KnowSimUser:
    """Template user simulator driven by the knowledge state (deterministic for a given seed)."""

    id = "offline/knowsim"

    def respond(self, ctx: UserContext) -> UserTurn:
        sp = _Speaker(ctx)
        parts, attempt = _first_turn(sp) if ctx.turn == 1 or not ctx.history else _later_turn(sp)
        kept = [p for p in parts if sp.safe(p)]
        if not kept:
            kept = ["I'm not sure how to go on from here; can you help?"]
            attempt = False
        n_known = sum(1 for s in sp.state.values() if s >= IUState.PARTIAL)
        thought = (f"{n_known}/{len(sp.state)} IUs known; mode {sp.mode}; "
                   f"{len(sp.unaware)} unaware concepts kept out of the message")
        return UserTurn(message=" ".join(kept), attempt=attempt, thought=thought)
