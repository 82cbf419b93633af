"""``offline/person``: the people-like offline learner for turn-level realism.

It is the learner voice (:mod:`learner_voice`, today written by the state-driven template user)
plus what the history legitimately gives a turn-level simulator: in turn-level realism, as in
*Simulated Students in Tutoring Dialogues*, the simulator sees the real history, the person's own
earlier messages included. Where one of them has the act the learner chose, it reuses that
message's words and register (:func:`learner_voice.own_words`; an answer carries the value the
voice chose). In a simulation the history is the simulator's own, so it reuses its own phrasing.
The unaware filter still holds: a reused message never names a concept the learner is unaware of.
"""

from __future__ import annotations

from dataclasses import replace

from knowsim_core.agents import learner_voice as voice
from knowsim_core.agents import registry
from knowsim_core.agents.offline_user import VoiceUser as Voice  # the people-like voice
from knowsim_core.engine.ports import UserContext, UserTurn
from knowsim_core.engine.state import IUState
from knowsim_core.text.profiles import content_stems, forbidden_stems


def unaware_filter(ctx: UserContext):
    """``safe(text)``: False when ``text`` names a concept the learner is unaware of (its name or a
    distinctive word of it, spec §9's hard constraint)."""
    graph = ctx.material.graph
    unaware = [v for v in graph.index.ids if ctx.state.state_of(graph.index.label_of[v]) == IUState.UNAWARE]
    forbidden = forbidden_stems(graph, unaware, ctx.material.question)
    names = [graph.node(v).concept.lower() for v in unaware]

    def safe(text: str) -> bool:
        low = text.lower()
        return not any(n and n in low for n in names) and not (set(content_stems(text)) & forbidden)

    return safe


class PersonUser:
    """The learner voice, in the person's own words where their history has the act (seeded)."""

    id = "offline/person"

    def __init__(self) -> None:
        self.voice = Voice()

    def respond(self, ctx: UserContext) -> UserTurn:
        turn = self.voice.respond(ctx)
        if ctx.turn == 1 or not ctx.history:
            return turn
        act = voice.tag_act(turn.message)
        mine = [m.text for m in ctx.history if m.role == "user"][1:]  # the opening states the problem
        said = voice.own_words(act, turn.message, mine, safe=unaware_filter(ctx))
        if said is None:
            return turn
        return replace(turn, message=said, thought=f"{turn.thought}; in the person's own words ({act})")


registry.register("user", PersonUser.id, PersonUser,
                  "People-like learner for realism: the learner voice (act from the tutor's turn and its state, "
                  "people's lengths), in the person's own earlier words where they have the act it chose.")
