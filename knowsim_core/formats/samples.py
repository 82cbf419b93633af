"""The Studio's own sample questions (``assets/samples/*.json``, authored for this project)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from knowsim_core.errors import FormatError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.ports import QuestionMaterial

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "assets" / "samples"


@dataclass(frozen=True, slots=True)
class SampleQuestion:
    id: str
    domain: str  # "math" | "expert"
    field: str
    source: str
    question: str
    reference_answer: str
    graph: IUGraph

    @property
    def material(self) -> QuestionMaterial:
        return QuestionMaterial(self.id, self.question, self.reference_answer, self.graph, self.domain)


def _load(path: Path) -> SampleQuestion:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return SampleQuestion(
            id=d["id"], domain=d["domain"], field=d.get("field", ""), source=d.get("source", ""),
            question=d["question"], reference_answer=d["reference_answer"],
            graph=IUGraph.from_data(d["graph"]),
        )
    except (KeyError, json.JSONDecodeError) as exc:
        raise FormatError(f"sample {path.name} is damaged: {exc}") from None


@lru_cache(maxsize=1)
def load_samples() -> tuple[SampleQuestion, ...]:
    """Every sample question, sorted by id."""
    return tuple(_load(p) for p in sorted(SAMPLES_DIR.glob("*.json")))


def get_sample(question_id: str) -> SampleQuestion:
    for s in load_samples():
        if s.id == question_id:
            return s
    ids = ", ".join(s.id for s in load_samples())
    raise FormatError(f"unknown sample question {question_id!r}; samples are: {ids}")
