"""The Phase-B signal extractor prompt (spec §9): label every IU for the latest exchange.

Inputs: the IU graph as JSON with its top-level keys renamed (knowledge_areas→concept_areas,
nodes→concepts, edges→prerequisite_pairs), the pre-turn state {id: {"state"}}, the earlier
conversation (``- User:`` / ``- Assistant:``, or a first-turn note), the latest user message, the
latest assistant response and the reference answer. Step 1: teaching quality of the latest response
only. Step 2: the user's attempt type and the assistant's response role. Output: ``iu_analysis``.
"""

from __future__ import annotations

import json

from knowsim_core.engine.ports import ExtractorContext
from knowsim_core.engine.signals import RESPONSE_ROLES
from knowsim_core.prompts import transcript

PROMPT_VERSION = "extractor-v1"
COMPACT_PROMPT_VERSION = "extractor-v1-compact"  # the same task, the compact output format (small local models)
TEMPERATURE = 0.0  # spec §9
RETRY_TEMPERATURE = 0.4  # spec §9: up to two retries at 0.4 when no entries parse
MAX_RETRIES = 2
SYSTEM = "You are a careful learning assessment analyst."


def graph_json(ctx: ExtractorContext) -> str:
    g = ctx.material.graph.to_data()
    renamed = {
        "concept_areas": g["knowledge_areas"],
        "concepts": g["nodes"],
        "prerequisite_pairs": g["edges"],
    }
    return json.dumps(renamed, ensure_ascii=False, indent=1)


def state_json(ctx: ExtractorContext) -> str:
    """The pre-turn state keyed by bare IU id (spec §1.1: the extractor works with ids)."""
    g = ctx.material.graph
    return json.dumps(
        {v: {"state": ctx.state.state_of(g.index.label_of[v]).key} for v in g.index.ids}, ensure_ascii=False
    )


def render(ctx: ExtractorContext, *, compact: bool = False) -> str:
    """The prompt; ``compact``: ask for the compact output format (labels only, keyed by IU id) that
    small local models are given (:data:`knowsim_core.llm.schemas.COMPACT_FORMAT`)."""
    earlier = transcript(ctx.history) or "(This is the first turn: there is no earlier conversation.)"
    reference = ctx.material.reference_answer.strip() or "(No reference answer was provided.)"
    roles = " | ".join(RESPONSE_ROLES)
    return _BODY.format(graph=graph_json(ctx), state=state_json(ctx), earlier=earlier, user=ctx.user_message,
                        assistant=ctx.assistant_message, reference=reference, roles=roles,
                        output=_COMPACT_OUTPUT if compact else _FULL_OUTPUT)


_FULL_OUTPUT = """One JSON object: {"iu_analysis": [{"id": "IU1", "concept": "<concept>",
 "teaching_quality_reasoning": "<one sentence>", "teaching_quality": "well_explained|shallow|not_mentioned",
 "user_attempt_reasoning": "<one sentence>", "user_attempt_type": "reasoning|articulation|none",
 "assistant_response_role": "<role>"}, ...]}"""
_COMPACT_OUTPUT = """One JSON object with one key per IU id, in graph order, holding its three labels only (no reasoning):
"quality" (step 1), "attempt" (user_attempt_type) and "role" (assistant_response_role):
{"IU1": {"quality": "well_explained|shallow|not_mentioned", "attempt": "reasoning|articulation|none",
 "role": "<role>"}, ...}"""
_BODY = """Assess one exchange of a tutoring conversation against a graph of Information Units (IUs).

## IU graph
{graph}

## The learner's knowledge state before this exchange
{state}

## Earlier conversation
{earlier}

## Latest user message
{user}

## Latest assistant response
{assistant}

## Reference answer
{reference}

## Task
Write one entry for EVERY IU of the graph, in graph order.

Step 1 — teaching quality, judged on the LATEST ASSISTANT RESPONSE ONLY:
- "well_explained": substantive teaching of this IU — a definition together with a derivation, an
  example or a worked application; or targeted scaffolding questions that lead the learner through it.
- "shallow": the IU is touched but not taught — named without explanation, a one-liner, an echo of the
  user, or an explanation containing a factual error. When in doubt between the two, choose "shallow".
- "not_mentioned": the response does not touch the IU.

Step 2 — the learner's attempt, judged on the LATEST USER MESSAGE, and the assistant's reaction:
- "user_attempt_type": "reasoning" if the user produced new content about this IU themselves
  (a step, a claim, a calculation); "articulation" if they restated what the assistant had said;
  otherwise "none".
- "assistant_response_role": one of {roles}.

## Output format
{output}"""
