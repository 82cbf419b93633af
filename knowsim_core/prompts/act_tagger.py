"""The LLM dialogue-act tagger's prompt (our wording of the five acts' definitions in
:mod:`knowsim_core.text.dialogue_acts`)."""

from __future__ import annotations

PROMPT_VERSION = "act-tagger-v1"
TEMPERATURE = 0.0

SYSTEM = "You label the dialogue act of one message a learner sent to a maths tutor. You answer with JSON only."

DEFINITIONS = """Pick exactly one act:
- math_answer: the learner attempts the maths: gives a value, a step, an expression, a guess or a claim
  about the problem (also when asking the tutor to check it, e.g. "is it 6?").
- not_understanding: the learner says they do not know, do not understand, are stuck or lost.
- seek_information: the learner asks a clarifying or conceptual question, or asks the tutor to do or explain something
  (stating the problem and asking for help counts here).
- off_topic: greetings, goodbyes, giving up, remarks about the tutor or anything not about the maths.
- acknowledge: the learner acknowledges the tutor's previous message ("ok, thanks, that makes sense")."""


def render(message: str) -> str:
    return (f"{DEFINITIONS}\n\n## The learner's message\n{message or '(empty)'}\n\n"
            '## Output format\n{"act": "<one of math_answer, not_understanding, seek_information, '
            'off_topic, acknowledge>"}')
