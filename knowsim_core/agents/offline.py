"""The offline agents, registered on import (``registry.resolve`` imports this module).

Deterministic, seeded and key-free: they are the Studio's embedded default and what every test
uses. Implementations live in :mod:`offline_assistants`, :mod:`offline_user`, :mod:`person_user`
and :mod:`lexical`.
"""

from __future__ import annotations

from knowsim_core.agents import person_user  # noqa: F401  (registers offline/person, the people-like learner)
from knowsim_core.agents import registry
from knowsim_core.agents.lexical import LexicalExtractor, LexicalModel, label_turn
from knowsim_core.agents.offline_assistants import (
    AdaptiveAssistant,
    ComprehensiveAssistant,
    OracleAssistant,
    SimpleAssistant,
    SocraticAssistant,
)
from knowsim_core.agents.offline_user import PaperLearner, VoiceUser

ASSISTANT_IDS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic", "offline/oracle")
STRATEGY_IDS = ASSISTANT_IDS[:4]

registry.register(
    "assistant", SimpleAssistant.id, SimpleAssistant,
    "Scripted: answers what the user asked, one step at a time, never the whole answer at once; "
    "replies shaped like the middle half of real LLM tutor replies (length, IUs touched and explained).",
)
registry.register(
    "assistant", AdaptiveAssistant.id, AdaptiveAssistant,
    "Scripted: infers novice / intermediate / advanced from the user's latest message and sizes "
    "one teaching unit to it (novice: one concept in plain words; intermediate: confirm, teach, "
    "direct; advanced: up to two units), carried the way the paper's recorded adaptive LLM replies "
    "were (their whole measured range of length and IUs touched).",
)
registry.register(
    "assistant", ComprehensiveAssistant.id, ComprehensiveAssistant,
    "Scripted: a thorough first answer covering the whole solution, then new ground every turn; "
    "replies shaped like the longer, broader half of real LLM tutor replies.",
)
registry.register(
    "assistant", SocraticAssistant.id, SocraticAssistant,
    "Scripted: one reasoning-level question per turn (or a hint plus a question), ending on the "
    "question; never explains the final step; replies shaped like the shorter half of real LLM "
    "tutor replies.",
)
registry.register(
    "assistant", OracleAssistant.id, OracleAssistant,
    "Upper bound, not a strategy: reads the hidden knowledge state and the run's own rule "
    "parameters (privileged access no real assistant has) and teaches the next teachable IUs "
    "while the load stays under capacity.",
)
registry.register(
    "user", PaperLearner.id, PaperLearner,
    "Stand-in for the paper's LLM-simulated learner: the template voice plus, every turn, reasoning "
    "and restating attempts on IUs drawn from rates measured on the paper's recordings (by IU state "
    "and whether the tutor told it about the IU); never an unaware IU it was not told about.",
)

registry.register(
    "extractor", LexicalExtractor.id, LexicalExtractor,
    "Text-only labeller (TF-IDF similarity, explanation cues and a small logistic model): works on "
    "any transcript, no download needed.",
)

__all__ = [
    "ASSISTANT_IDS", "STRATEGY_IDS", "AdaptiveAssistant", "ComprehensiveAssistant", "PaperLearner", "VoiceUser",
    "LexicalExtractor", "LexicalModel", "OracleAssistant", "SimpleAssistant", "SocraticAssistant",
    "label_turn",
]
