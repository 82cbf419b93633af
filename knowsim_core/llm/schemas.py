"""Output schemas the LLM agents ask for, and the step from an extracted graph to an :class:`IUGraph`.

Every field is required and has no default, so the same models serve OpenAI's strict
``json_schema``, Anthropic's ``output_config`` and JSON-mode validation. Range checks that a strict
schema cannot carry everywhere (score 1–10, levels in [0, 1]) are validators: a reply that breaks
them goes back to the model once, like malformed JSON.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from knowsim_core.engine.graph import IUGraph
from knowsim_core.prompts.graph import MAX_IUS, MIN_IUS

Quality = Literal["well_explained", "shallow", "not_mentioned"]
Attempt = Literal["reasoning", "articulation", "none"]
Role = Literal[
    "confirmed_correct",
    "confirmed_incorrect_no_explanation",
    "confirmed_incorrect_with_explanation",
    "ignored",
    "not_applicable",
]


class UserOut(BaseModel):
    thought: str
    message: str
    attempt_verify: bool
    terminate: bool


class IUAnalysisEntry(BaseModel):
    id: str
    concept: str
    teaching_quality_reasoning: str
    teaching_quality: Quality
    user_attempt_reasoning: str
    user_attempt_type: Attempt
    assistant_response_role: Role


class ExtractorOut(BaseModel):
    iu_analysis: list[IUAnalysisEntry]


# ---------------------------------------------------------------------- the compact local format
# A small model on this machine writes a token every 0.3–1.5 s under llama.cpp's grammar (the grammar is
# checked against Gemma's 262k-token vocabulary at every step). The full format above costs ~75 tokens per
# IU before any reasoning text, so a 4-IU reply is cut at CI's cap every time. The compact format asks
# for the three labels per IU and nothing else, keyed by the graph's own IU ids (so the grammar writes the
# ids, in graph order, and the model only chooses labels): ~40 tokens per IU. It is read into the same
# entries as the full format (:func:`compact_entries`), with no reasoning and no concept echo.
COMPACT_FORMAT = "compact (small local model): the three labels per IU id, no reasoning"


class CompactLabels(BaseModel):
    """One IU's labels in the compact format."""

    quality: Quality
    attempt: Attempt
    role: Role


@lru_cache(maxsize=64)
def compact_extractor_model(ids: tuple[str, ...]) -> type[BaseModel]:
    """The compact output model for a graph whose IU ids are ``ids`` (in graph order): one required
    property per IU id, each a :class:`CompactLabels`. One class per graph (its schema is cached by class)."""
    fields: dict[str, Any] = {f"iu_{i}": (CompactLabels, Field(alias=iu)) for i, iu in enumerate(ids)}
    return create_model("CompactExtractorOut", **fields)


def compact_entries(payload: Any) -> list[dict[str, Any]]:
    """A compact reply (``{"IU1": {"quality": …, "attempt": …, "role": …}, …}``, parsed or as raw JSON
    data) as full-format ``iu_analysis`` entries, for :func:`~knowsim_core.engine.signals.parse_extractor_output`.
    Values that are not objects are skipped; a label left out stays out (the normalisation's defaults apply)."""
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(by_alias=True)
    if not isinstance(payload, dict):
        return []
    keys = {"quality": "teaching_quality", "attempt": "user_attempt_type", "role": "assistant_response_role"}
    out = []
    for iu, labels in payload.items():
        if isinstance(labels, dict):
            out.append({"id": iu, **{full: labels[short] for short, full in keys.items() if short in labels}})
    return out


class GraphNodeOut(BaseModel):
    id: str
    concept: str
    abstraction_level: float
    description: str

    @field_validator("abstraction_level")
    @classmethod
    def _in_range(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"abstraction_level must be between 0 and 1, got {v}")
        return v


class GraphEdgeOut(BaseModel):
    prerequisite: str
    dependent: str
    reason: str


class GraphOut(BaseModel):
    knowledge_areas: list[str]
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut]


class JudgeOut(BaseModel):
    rationale: str
    score: int = Field(description="1 (harmful or useless) to 10 (excellent)")

    @field_validator("score")
    @classmethod
    def _score_range(cls, v: int) -> int:
        if not 1 <= v <= 10:
            raise ValueError(f"score must be an integer from 1 to 10, got {v}")
        return v


def graph_from_output(out: GraphOut) -> IUGraph:
    """The extracted graph in the Studio's format, with Δl computed from the levels.

    Raises:
        GraphError: the data cannot be read as a graph at all.
    """
    levels = {n.id: n.abstraction_level for n in out.nodes}
    edges = []
    for e in out.edges:
        a, b = levels.get(e.prerequisite), levels.get(e.dependent)
        dl = round(abs(a - b), 6) if a is not None and b is not None else None
        edges.append({"from": e.prerequisite, "to": e.dependent, "delta_l": dl, "reason": e.reason})
    return IUGraph.from_data(
        {
            "knowledge_areas": list(out.knowledge_areas),
            "nodes": [n.model_dump() for n in out.nodes],
            "edges": edges,
        }
    )


def graph_problems(graph: IUGraph) -> tuple[list[str], list[str]]:
    """(blocking errors, other problems worth one repair request) of an extracted graph."""
    errors = [i.message for i in graph.errors()]
    soft = []
    n = len(graph.nodes)
    if not MIN_IUS <= n <= MAX_IUS:
        soft.append(f"the graph has {n} IUs; it must have between {MIN_IUS} and {MAX_IUS}")
    soft += [i.message for i in graph.issues() if i.code == "delta_l_large"]
    return errors, soft

