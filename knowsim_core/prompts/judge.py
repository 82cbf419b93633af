"""The interaction-quality (IQ) judge: one 1–10 rating of a whole conversation, with its rationale.

The judge reads what a human rater would: the question, the reference answer and the transcript.
It never sees the simulated state, so IQ stays an outside view next to the state-based metrics.
"""

from __future__ import annotations

from knowsim_core.engine.ports import Message
from knowsim_core.engine.records import RunRecord
from knowsim_core.prompts import transcript

PROMPT_VERSION = "judge-v1"
TEMPERATURE = 0.0
SYSTEM = "You are an experienced teacher who evaluates tutoring conversations fairly and concisely."


def run_transcript(run: RunRecord) -> str:
    msgs: list[Message] = []
    for t in run.turns:
        msgs.append(Message("user", t.user_message))
        msgs.append(Message("assistant", t.assistant_message))
    return transcript(msgs, user="Learner", assistant="Tutor")


def render(run: RunRecord) -> str:
    answer = run.reference_answer.strip() or "(No reference answer was provided.)"
    convo = run_transcript(run) or "(The conversation is empty.)"
    return f"""Rate the quality of this tutoring interaction for the learner.

## Question
{run.question}

## Reference answer
{answer}

## Conversation ({len(run.turns)} turns)
{convo}

## How to rate
Consider: is each reply correct and consistent with the reference answer; is it pitched at the learner's
level as their messages reveal it; does it build understanding step by step instead of overwhelming or
merely handing over the answer; does it respond to the learner's attempts and confusion.
Score 1 (harmful or useless) to 10 (excellent teaching throughout).

## Output format
One JSON object: {{"rationale": "<2–4 sentences>", "score": <integer 1–10>}}"""
