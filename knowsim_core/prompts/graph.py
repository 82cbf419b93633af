"""The IU graph extraction prompt: question + reference answer → Information Units and prerequisites.

Rules from the paper (spec §1.1): 10–30 IUs in 2–7 knowledge areas; an abstraction level in [0, 1]
per IU (1 general principle, 0 item-specific computation); hard prerequisite edges only; no edge
may jump more than Δl = 0.35 — insert a bridging IU instead; no cycles.
"""

from __future__ import annotations

from typing import Iterable

PROMPT_VERSION = "graph-v1"
TEMPERATURE = 0.0
MIN_IUS, MAX_IUS = 10, 30
MAX_DELTA_L = 0.35

SYSTEM = (
    "You are an expert curriculum designer. You break the knowledge needed to understand an answer into "
    "small Information Units and the prerequisite relations between them."
)


def render(question: str, reference_answer: str) -> str:
    answer = reference_answer.strip() or "(No reference answer was provided: use the standard correct answer.)"
    return f"""Build the Information Unit (IU) graph a learner must master to fully understand the answer below.

## Question
{question}

## Reference answer
{answer}

## Rules
1. {MIN_IUS}–{MAX_IUS} IUs. Each IU is one concept, fact, principle or step: an id "IU1", "IU2", … (consecutive),
   a short concept name, and a description of 2–4 sentences saying what understanding it means here.
2. Give every IU an abstraction_level between 0 and 1: 1 = a general principle of the field,
   0 = a computation or fact specific to this question.
3. Group the IUs into 2–7 knowledge areas (short names).
4. Edges are HARD prerequisites only: "prerequisite" → "dependent" means the dependent IU cannot be
   understood without the prerequisite. Leave out edges that are merely related or helpful.
5. No edge may connect IUs whose abstraction levels differ by more than {MAX_DELTA_L}: add a bridging IU at an
   intermediate level and route the edge through it.
6. No cycles: the prerequisites must form a directed acyclic graph.

## Output format
One JSON object: {{"knowledge_areas": ["..."], "nodes": [{{"id": "IU1", "concept": "...", "abstraction_level": 0.8,
 "description": "..."}}], "edges": [{{"prerequisite": "IU1", "dependent": "IU2", "reason": "..."}}]}}"""


def render_repair(problems: Iterable[str]) -> str:
    """The one repair request sent when the first graph is not usable."""
    listed = "\n".join(f"- {p}" for p in problems)
    return f"""That graph cannot be used yet:
{listed}

Fix these problems (remove or reverse an edge to break each cycle; keep every other rule) and reply with
the complete corrected graph as one JSON object in the same format."""
