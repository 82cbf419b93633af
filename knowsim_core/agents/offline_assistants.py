"""The scripted assistants: simple, adaptive, comprehensive, socratic, and the oracle.

The four strategies follow the paper's strategy descriptions and see only the conversation and
the question's material (``reads_state = False``); what they think the user knows comes from
:func:`read_user`. The oracle is an upper bound, not a strategy: it reads the true state and the
run's own rule parameters and teaches the next teachable IUs. None of them calls the signal
extractor: what they teach follows from their own plan over the graph, so the extractor that
grades them cannot also steer them.

Like chat assistants, the strategies tie a step to what comes after it (a pointer to a later step
or to the goal): in the paper's recorded conversations the assistant touches about 60 % of the
graph's IUs per turn (259 of 435 labels), and a forward mention of an IU the user cannot absorb
yet is how prerequisite-blocked explanations arise.
"""

from __future__ import annotations

from knowsim_core.engine.ports import AssistantContext, AssistantTurn
from knowsim_core.engine.config import preset
from knowsim_core.engine.state import IUState
from knowsim_core.agents.offline_reading import Belief, Writer, next_units, read_user

COMPREHENSIVE_MAX_SENTENCES = 10
ORACLE_LOAD_SHARE = 0.6  # the oracle adds a second unit only while its load stays under this share of τ
ORACLE_UNITS = 2  # at most this many IUs per reply


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


class _Scripted:
    id = "offline/base"
    reads_state = False

    def reply(self, ctx: AssistantContext) -> AssistantTurn:
        graph = ctx.material.graph
        belief = read_user(graph, ctx.history)
        w = Writer(graph, ctx.seed)
        return AssistantTurn(message=_join(self.compose(ctx, belief, w)))

    def compose(self, ctx: AssistantContext, belief: Belief, w: Writer) -> list[str]:
        raise NotImplementedError


class SimpleAssistant(_Scripted):
    """Answers what the user asked, one step at a time, never the whole answer at once."""

    id = "offline/simple"

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
    """Infers novice / intermediate / advanced from the latest message and sizes one unit to it."""

    id = "offline/adaptive"

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
            confirm = (w.pick(("You're right about ", "Good, you have ", "Yes, that's correct for ")) + w.concept(shown).lower() + "."
                       if shown else w.pick(("You're on the right track.", "Good thinking.")))
            order = graph.index.topo_order
            ahead = [v for v in order[order.index(iu) + 1:] if not belief.known(v)]
            direct = [w.point(ahead[0])] if ahead else []  # confirm – teach – direct
            return [confirm, *w.teach(iu)[1:], *direct, w.question(iu)]
        opener = w.pick(("Let's take this one small step at a time.", "No problem — let's start simple.",
                         "Let's build this up slowly."))
        goal = graph.index.topo_order[-1]
        return [opener, *w.teach(iu, plain=True)[:4], *([w.toward(goal)] if goal != iu else [])]


class ComprehensiveAssistant(_Scripted):
    """A thorough first answer covering the whole solution, then new ground each turn (~10 sentences)."""

    id = "offline/comprehensive"

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
    """One reasoning-level question per turn (or a one-sentence hint plus a question); never the answer."""

    id = "offline/socratic"

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
