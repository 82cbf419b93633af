"""The scripted assistants: simple, adaptive, comprehensive, socratic, and the oracle.

The four strategies follow the paper's strategy descriptions and see only the conversation and
the question's material (``reads_state = False``); what they think the user knows comes from
:func:`read_user`. The oracle is an upper bound, not a strategy: it reads the true state and the
run's own rule parameters and teaches the next teachable IUs. None of them calls the signal
extractor: what they teach follows from their own plan over the graph, so the extractor that
grades them cannot also steer them.

Like chat assistants, the strategies tie a step to what comes after it (a pointer to a later step
or to the goal): in the paper's recorded conversations the assistant touches about 60 % of the
graph's IUs per turn (0.596, the mean over the 30 recorded turns of
:data:`~knowsim_core.agents.tutor_shapes.RECORDED_TURNS`), and a forward mention of an IU the user cannot absorb
yet is how prerequisite-blocked explanations arise. Each reply is carried that way by
:func:`widen`: its length, how many IUs it touches and how many it explains are drawn from
distributions measured on real LLM tutor replies (:mod:`knowsim_core.agents.tutor_shapes`), in a
band of those distributions stated per strategy — so the offline tutors err as the LLMs the paper
measured do (``python benchmarks/paper_check.py`` prints the distance from the paper's figures).
"""

from __future__ import annotations

from knowsim_core.engine.ports import AssistantContext, AssistantTurn
from knowsim_core.engine.config import preset
from knowsim_core.engine.state import IUState
from knowsim_core.agents.offline_reading import Belief, Writer, lower_first, next_units, own_coverage, read_user
from knowsim_core.agents.tutor_shapes import ReplyShape, draw_shape

COMPREHENSIVE_MAX_SENTENCES = 10
ORACLE_LOAD_SHARE = 0.6  # the oracle adds a second unit only while its load stays under this share of τ
ORACLE_UNITS = 2  # at most this many IUs per reply


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


# Sentences a tutor adds that teach nothing (check-ins, encouragement): what pads a reply to its
# drawn length when the IUs it carries take fewer sentences. None names a concept.
FILLERS = (
    "Does that make sense so far?", "Take your time with this.", "Let me know if any part is unclear.",
    "We'll check each piece as we go.", "Feel free to ask about anything here.",
    "You're doing fine; this takes practice.", "Tell me what you think before we move on.",
    "Try to keep the overall plan in mind.",
)


NAMES_PER_SENTENCE = 3  # concepts named in one passing sentence ("Remember A, B and C from earlier.")
MAX_FILLERS = 2  # check-ins one reply carries at most: a tutor asks "does that make sense?" once, not eight times


class _Scripted:
    id = "offline/base"
    reads_state = False
    # Where in the measured reply-shape distributions (tutor_shapes) this strategy's replies fall:
    # a sub-range of [0, 1], stated per strategy on general grounds (not fitted).
    band: tuple[float, float] = (0.0, 1.0)
    question_last = False  # Socratic: the reply ends on its question
    # Whether the goal (the last IU in solution order) stays out of the asides: a strategy that
    # teaches step by step never explains the answer in passing, only when its plan reaches it.
    holds_answer = True

    def reply(self, ctx: AssistantContext) -> AssistantTurn:
        graph = ctx.material.graph
        belief = read_user(graph, ctx.history)
        w = Writer(graph, ctx.seed)
        core = self.compose(ctx, belief, w)
        shape = draw_shape(w.rng, self.band_for(belief), len(graph.nodes), ctx.material.domain)
        return AssistantTurn(message=_join(widen(core, shape, w, question_last=self.question_last,
                                                 hold_goal=self.holds_answer)))

    def band_for(self, belief: Belief) -> tuple[float, float]:
        """The band of the measured reply shapes this reply is drawn from (see :data:`band`)."""
        return self.band

    def compose(self, ctx: AssistantContext, belief: Belief, w: Writer) -> list[str]:
        raise NotImplementedError


def widen(core: list[str], shape: ReplyShape, w: Writer, *, question_last: bool = False,
          hold_goal: bool = False) -> list[str]:
    """The strategy's planned reply (``core``) carried the way an LLM tutor's reply is: touching
    ``shape.mentions`` IUs in all, ``shape.explained`` of them explained, about ``shape.sentences``
    sentences long.

    The IUs the plan already covers count first (read off its own text, as the strategy's belief
    does). The rest are drawn uniformly from the graph's other IUs — in the paper's recordings a
    tutor mentions early, middle and late steps of the solution alike (62 / 62 / 54 % per turn by
    thirds of the topological order), and it cannot see what the user knows — and placed in
    solution order around the plan: earlier steps as a recap before it, later ones as pointers
    after it. The first of them (in draw order) are explained in two sentences (the idea and why it
    matters), the others named in passing, a few to a sentence, as real replies list the steps
    they touch. Generic check-ins (at most :data:`MAX_FILLERS`) pad a short reply toward its drawn
    length; a plan longer than the drawn length drops its units' descriptions past the first two
    sentences (the idea and its reason stay). A plan that opens with a sentence about no IU ("Good question.") keeps it first.

    ``question_last`` (Socratic): everything else comes before the plan, so the reply ends on the
    plan's question. ``hold_goal`` (and ``question_last``): the goal (the last IU in solution order)
    is only ever named in an aside, never explained — a step-by-step tutor does not give the answer
    away in passing.
    """
    graph = w.graph
    if len(core) > shape.sentences:
        # a plan longer than the drawn reply keeps each unit's idea and reason and drops the rest
        # of its description (real replies are as long as drawn: ExpertQA's are held to 4-5 sentences)
        rest = {p for n in graph.nodes for p in w.parts(n.id)[2:]}
        core = [c for c in core if c not in rest]
    explained, mentioned = own_coverage(graph, " ".join(core))
    order = graph.index.topo_order
    rank = {iu: i for i, iu in enumerate(order)}
    rest = [iu for iu in order if iu not in mentioned]
    extra = w.rng.sample(rest, max(0, min(len(rest), shape.mentions - len(mentioned))))
    explainable = [iu for iu in extra if not ((question_last or hold_goal) and iu == order[-1])]
    teach = set(explainable[:max(0, shape.explained - len(explained))])
    anchor = min((rank[iu] for iu in mentioned if iu in rank), default=len(order))
    before: list[str] = []
    after: list[str] = []
    named_before: list[str] = []
    named_after: list[str] = []
    for iu in sorted(extra, key=rank.__getitem__):
        early = rank[iu] < anchor
        if iu in teach:
            (before if early else after).extend(w.explain_briefly(iu))
        else:
            (named_before if early else named_after).append(iu)
    for i in range(0, len(named_before), NAMES_PER_SENTENCE):
        before.append(w.recall(named_before[i:i + NAMES_PER_SENTENCE]))
    for i in range(0, len(named_after), NAMES_PER_SENTENCE):
        after.append(w.ahead(named_after[i:i + NAMES_PER_SENTENCE]))
    fill = list(FILLERS)
    w.rng.shuffle(fill)
    pad = []
    while len(before) + len(core) + len(after) + len(pad) < shape.sentences and len(pad) < MAX_FILLERS:
        pad.append(fill.pop())
    lead = core[:1] if core and not question_last and not own_coverage(graph, core[0])[1] else []
    if question_last:
        return [*lead, *before, *after, *pad, *core[len(lead):]]
    return [*lead, *before, *core[len(lead):], *after, *pad]


class SimpleAssistant(_Scripted):
    """Answers what the user asked, one step at a time, never the whole answer at once."""

    id = "offline/simple"
    band = (0.25, 0.75)  # one step as asked: the middle half of real replies

    def compose(self, ctx, belief, w):
        asked = [iu for iu in belief.asked if belief.taught.get(iu, 0) < 2]
        if asked:
            target = asked[0]
            opener = w.pick(("Good question.", "Sure.", "Happy to explain."))
        else:
            todo = next_units(ctx.material.graph, belief, 1, prefer_asked=False)
            if not todo:
                return [w.pick(("You have every step now.", "That covers the whole solution.")),
                        "Put the pieces together and check your final answer against the question."]
            target = todo[0]
            opener = w.pick(("Here is the next step.", "Let's take the next step.", "On to the next step."))
        order = ctx.material.graph.index.topo_order
        later = [iu for iu in order[order.index(target) + 1:] if not belief.known(iu)]
        out = [opener, *w.teach(target)]
        if later:
            out.append(w.point(later[0]))
        if len(later) > 1:
            out.append(w.toward(later[-1]))  # and where it is all heading
        return out


class AdaptiveAssistant(_Scripted):
    """Infers novice / intermediate / advanced from the latest message and sizes one unit to it:
    a novice — and every learner in the first reply, before it has seen them work — gets a reply
    from the shorter, narrower half of real replies (:data:`NOVICE_BAND`); the others get the whole
    distribution."""

    id = "offline/adaptive"
    band = (0.0, 1.0)  # the recorded tutor turns are adaptive replies: their whole distribution
    NOVICE_BAND = (0.0, 0.5)  # "start small": what it says to a novice, it does

    def band_for(self, belief):
        # its first reply too: it has not seen the learner work yet, so it starts small
        return self.NOVICE_BAND if belief.level == "novice" or not belief.mentioned else self.band

    def compose(self, ctx, belief, w):
        graph = ctx.material.graph
        if belief.level == "advanced":
            units = next_units(graph, belief, 2)
            out = [w.pick(("Nice work — that's right.", "Exactly, you've got that.", "Yes, that's correct."))]
            for iu in units:
                out.extend(w.teach(iu)[1:])
            if units:
                out.append(w.question(units[-1]))
            return out or ["You have the whole solution; check the final value once more."]
        units = next_units(graph, belief, 1)
        if not units:
            return ["You have covered every step. Try writing the full solution out in your own words."]
        iu = units[0]
        if belief.level == "intermediate":
            shown = belief.latest_shown[0] if belief.latest_shown else None
            confirm = (w.pick(("You're right about ", "Good, you have ", "Yes, that's correct for ")) + lower_first(w.concept(shown)) + "."
                       if shown else w.pick(("You're on the right track.", "Good thinking.")))
            order = graph.index.topo_order
            ahead = [v for v in order[order.index(iu) + 1:] if not belief.known(v)]
            direct = [w.point(ahead[0])] if ahead else []  # confirm – teach – direct
            return [confirm, *w.teach(iu)[1:], *direct, w.question(iu)]
        opener = (w.pick(("Let's take this one small step at a time.", "No problem — let's start simple.",
                          "Let's build this up slowly.")) if not belief.mentioned
                  else w.pick(("Let's take the next small step.", "One more small step.", "Here is the next piece.")))
        goal = graph.index.topo_order[-1]
        return [opener, *w.teach(iu, plain=True)[:4], *([w.toward(goal)] if goal != iu else [])]


class ComprehensiveAssistant(_Scripted):
    """A thorough first answer covering the whole solution, then new ground each turn.

    Its own plan is at most :data:`COMPREHENSIVE_MAX_SENTENCES` sentences; :func:`widen` then
    carries it to a length drawn from the longer half of real replies (13 to 26 sentences, the
    95 % quantile), with recaps, pointers and check-ins.
    """

    id = "offline/comprehensive"
    band = (0.5, 1.0)  # thorough by design: the broader, longer half of real replies
    holds_answer = False  # the whole answer is its first reply

    def compose(self, ctx, belief, w):
        graph = ctx.material.graph
        order = list(graph.index.topo_order)
        out: list[str] = []
        if ctx.turn == 1 or not belief.mentioned:
            out.append(w.pick(("Here is the complete picture.", "Let me walk you through the whole solution.",
                               "Here's a full answer, step by step.")))
            # the whole answer: evenly spaced steps from the first to the final one
            k = min(len(order), COMPREHENSIVE_MAX_SENTENCES - 2)
            picks = sorted({round(i * (len(order) - 1) / max(1, k - 1)) for i in range(k)})
            out.extend(w.brief(order[i]) for i in picks)
            return out
        fresh = [iu for iu in order if belief.taught.get(iu, 0) == 0 and iu not in belief.shown]
        # nothing new left: what was asked first, then the least covered ground
        fresh = fresh or list(dict.fromkeys([*belief.asked, *sorted(order, key=lambda iu: belief.taught.get(iu, 0))]))
        out.append(w.pick(("Let's go deeper.", "Building on that, here is more.", "There is more to cover.")))
        # one idea developed in full, then as much further ground as fits in ~10 sentences
        out.extend(w.teach(fresh[0])[1:])
        for iu in fresh[1:COMPREHENSIVE_MAX_SENTENCES - len(out) + 1]:
            out.append(w.brief(iu))
        return out


class SocraticAssistant(_Scripted):
    """One reasoning-level question per turn (or a one-sentence hint plus a question); never the answer.

    That is its own plan; :func:`widen` adds the asides a chat tutor's reply carries (recaps of
    earlier steps, some explained in two sentences, pointers to later ones, check-ins) up to a
    length drawn from the shorter half of real replies (4 to 12 sentences), all before the
    question so the reply ends on it, and never explains the goal.
    """

    id = "offline/socratic"
    band = (0.0, 0.5)  # a hint and a question: the narrower, shorter half of real replies
    question_last = True

    def compose(self, ctx, belief, w):
        units = next_units(ctx.material.graph, belief, 1)
        if not units:
            return ["What do you get when you put all the steps together?"]
        iu = units[0]
        goal = ctx.material.graph.index.topo_order[-1]
        ask = w.question(iu) if goal == iu or w.rng.random() < 0.5 else w.question_toward(iu, goal)
        if belief.asked or w.rng.random() < 0.5:
            return [w.pick(("Here's a hint: ", "Think about this: ", "A hint: ")) + w.brief(iu), ask]
        return [ask]


class OracleAssistant:
    """Upper bound, not a strategy: reads the true state and the run's rule parameters, and teaches
    the next teachable IUs (within the prerequisite ceiling) while the load stays well under τ."""

    id = "offline/oracle"
    reads_state = True

    def reply(self, ctx: AssistantContext) -> AssistantTurn:
        graph = ctx.material.graph
        w = Writer(graph, ctx.seed)
        if ctx.state is None:
            return AssistantTurn(message="(the oracle needs the knowledge state)")
        params = ctx.params or preset()  # the run's own preset; the default only outside a run
        idx = graph.index
        state = {v: ctx.state.state_of(idx.label_of[v]) for v in idx.ids}

        def ceiling(v: str) -> IUState:
            pre = [state.get(p, IUState.UNAWARE) for p in idx.prereqs.get(v, ())]
            if not pre:
                return IUState.KNOWS_WELL
            low = min(pre)
            return IUState.STRUGGLING if low <= IUState.STRUGGLING else low

        zpd = [v for v in idx.update_order if state[v] < IUState.KNOWS_WELL and ceiling(v) > state[v]]
        if not zpd:
            return AssistantTurn(message="You understand every part of this now. Try restating the full solution.")
        budget = ORACLE_LOAD_SHARE * params.capacity(len(graph.nodes))
        # by construction, a reply made of Writer.teach units mentions exactly the units' IUs
        units: list[str] = []
        load = 0.0
        for v in zpd:
            cost = params.mention_weights[int(state[v])]
            if units and (len(units) >= ORACLE_UNITS or load + cost > budget):
                break
            units.append(v)
            load += cost
        out = [part for v in units for part in w.teach(v, plain=state[v] == IUState.UNAWARE)]
        return AssistantTurn(message=_join(out))


ASSISTANTS = (SimpleAssistant, AdaptiveAssistant, ComprehensiveAssistant, SocraticAssistant, OracleAssistant)
