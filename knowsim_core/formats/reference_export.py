"""Export a run as the reference implementation's run record (spec §1.5).

So runs made in the Studio can be fed to the paper's analysis scripts: the record carries the
fields those scripts read — identity, s_0 and the state history, the labelled IU analyses (with
the runtime's ``label`` key), the per-turn metrics under their §4.11 names, the conversation,
the aggregate ``metrics`` (§6), the virtual early stop (§5) and the running totals.
Provenance the reference has no field for (run id, seed, agent ids, preset) goes under
``knowsim_studio``. API keys are never part of a record, so never part of an export.
"""

from __future__ import annotations

from typing import Any, Iterable

from knowsim_core.text.redact import redact_urls
from knowsim_core.engine.agent_id import parse_id
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.rules import TurnQuantities
from knowsim_core.engine.metrics import reference_metrics
from knowsim_core.formats import jsonio
from knowsim_core.vocab import STOP_MAX_TURNS

TASKS = {"math": "math", "expert": "expertqa", "expertqa": "expertqa"}
EARLY_STOP_KEYS = (  # spec §6.5: what the reference writes at a virtual early stop
    "knowledge_gain", "normalized_knowledge_gain", "normalized_knowledge_gain_3N", "raw_state_progress",
    "information_calibration", "perceived_overload", "engagement", "learning_experience", "overload_inverse",
    "ic_precision", "ic_recall", "ic_f1",
)
ABSORPTION_MODE = "weightabsorb_attempt_sigmoid"  # spec §1.5: every paper-final structured run


def strategy_of(assistant_id: str) -> str:
    """The strategy a stored assistant id played (:attr:`AgentId.played_strategy`): ``offline/adaptive``
    → adaptive, ``compat/m:socratic@http://h:8080/v1`` → socratic, ``openai/gpt-4o`` → adaptive (the
    default), ``recorded/x`` → x."""
    return parse_id(assistant_id).played_strategy


def turn_metrics(turn: int, q: TurnQuantities) -> dict[str, Any]:
    """One ``turn_metrics_history`` entry, in the reference's names and numeric types."""
    return {
        "turn": turn,
        "engagement": q.engagement,
        "information_calibration_turn": q.information_calibration_turn,
        "ic_numerator": float(q.ic_numerator),
        "ic_denominator": float(q.ic_denominator),
        "zpd_size": float(q.zpd_size),
        "perceived_overload_turn": q.perceived_overload_turn,
        "overload_threshold": float(q.overload_threshold),
        "familiarity_term": q.familiarity_term,
        "novelty_term": q.novelty_term,
        "overload": q.overload,
        "n_upward_transitions": q.n_upward_transitions,
        "absorbed_gain": q.absorbed_gain,
        "comprehension_load": q.comprehension_load,
        "attempt_load": q.attempt_load,
        "effective_load": q.effective_load,
        "absorbed_ic_numerator": q.absorbed_numerator_code,
    }


def _analysis(run: RunRecord, t: TurnRecord) -> list[dict[str, Any]]:
    label_of = run.graph.index.label_of
    out = []
    for s in t.signals:
        d = s.to_data()
        d["label"] = label_of.get(s.id) if s.id else None
        if d["label"] is None and s.id:
            d["label"] = f"{s.id}: {s.concept}"
        out.append(d)
    return out


def _early_stop_metrics(run: RunRecord, stop: int | None, full: dict[str, Any]) -> dict[str, Any]:
    if stop is None:
        return dict(full)
    kept = run.turns[: stop + 1]
    m = reference_metrics(run.initial_state, kept[-1].state_after, [t.quantities for t in kept],
                          legacy_proxy=full.get("absorbed_ic_uses_legacy_proxy", False))
    m = {k: m[k] for k in EARLY_STOP_KEYS}
    m["turns_included"] = stop + 1
    m["turn_metrics_history"] = [turn_metrics(t.turn, t.quantities) for t in kept]
    m["note"] = "NKG from accumulated absorbed_gain (matches final metric)"
    return m


def to_reference(
    run: RunRecord, *, judgement: tuple[float, str, str] | None = None, domain: str = ""
) -> dict[str, Any]:
    """The run as one reference run record (a dict ready for ``json.dumps``).

    ``domain`` (the question's: math / expert) names the reference ``task`` for Studio runs.
    """
    meta = dict(run.meta)
    adapters = {role: redact_urls(agent) for role, agent in run.adapter.items()}  # no URL credentials
    imported = meta.get("source") == "reference-run"
    qs = [t.quantities for t in run.turns]
    history = [run.initial_state.to_data(), *(t.state_after.to_data() for t in run.turns)]
    metrics = run.reference_metrics(legacy_proxy=imported)
    stop, reason = run.virtual_stop
    explained = sorted({lab for q in qs for lab in q.explained})
    last = qs[-1] if qs else None
    conversation: list[list[str]] = []
    lines = []
    for t in run.turns:
        conversation += [["user", t.user_message], ["assistant", t.assistant_message]]
        lines.append(f"- You: {t.user_message}\n- AI Tutor: {t.assistant_message}\n")
    record: dict[str, Any] = {
        "problem_id": run.question_id,
        "task": meta.get("task") or TASKS.get(domain, domain) or _task_guess(run.question_id),
        "problem": run.question,
        "reference_answer": run.reference_answer,
        "knowledge_level": run.level,
        "assistant_strategy": strategy_of(adapters.get("assistant", "")),
        "run_type": "KS-based",
        "simulation_method": "structured",
        "absorption_mode": ABSORPTION_MODE if run.params.preset == "paper-final" else run.params.preset,
        "initial_overload_threshold": run.tau,
        "initial_knowledge_state": run.initial_state.to_data(),
        "knowledge_state_history": history,
        "knowledge_state": history[-1],
        "iu_analysis_history": [_analysis(run, t) for t in run.turns],
        "turn_metrics_history": [turn_metrics(t.turn, t.quantities) for t in run.turns],
        "engagement_score_history": [
            {"engagement": q.engagement, "familiarity": q.familiarity_term, "novelty": q.novelty_term} for q in qs
        ],
        "absorbed_gain_total": sum(q.absorbed_gain for q in qs),
        "ic_numerator_total": float(sum(q.ic_numerator for q in qs)),
        "ic_denominator_total": float(sum(q.ic_denominator for q in qs)),
        "zpd_size_total": float(sum(q.zpd_size for q in qs)),
        "new_ius_total": float(sum(q.new_ius for q in qs)),
        "disallowed_total": float(sum(q.disallowed for q in qs)),
        "explained_concepts": explained,
        "overall_density": last.overall_density if last else None,
        "articulation_mode": last.articulation_mode if last else None,
        "gap_sum": last.gap_sum if last else 0.0,
        "query_tone": ("Vague" if last.gap_sum >= 2 else "Explicit") if last else None,
        "metrics": metrics,
        "stop_reason": run.stop_reason,
        "stop_details": {"turn_number": len(run.turns), "max_turns": run.params.max_turns},
        "virtual_early_stop_turn": stop,
        "virtual_early_stop_reason": reason,
        "metrics_at_early_stop": _early_stop_metrics(run, stop, metrics),
        "turns": len(run.turns),
        "over_max": len(run.turns) >= run.params.max_turns,
        "finished": run.stop_reason is not None and run.stop_reason != STOP_MAX_TURNS,
        "conversation": conversation,
        "conversation_history": "".join(lines),
        "knowsim_studio": {
            "run_id": run.run_id, "seed": run.seed, "adapters": adapters, "preset": run.params.preset,
            "max_turns": run.params.max_turns,
        },
    }
    if judgement is not None:
        score, rationale, model = judgement
        record["judged_metrics"] = {"quality_score": score, "quality_reasoning": rationale, "judge_model": model}
    return record


def _task_guess(question_id: str) -> str:
    return "math" if question_id.startswith("math") else "expertqa" if question_id.startswith("expertqa") else ""


def dumps(runs: RunRecord | Iterable[RunRecord], *, indent: int | None = 2) -> str:
    """A reference run file: a JSON list of records."""
    if isinstance(runs, RunRecord):
        runs = [runs]
    return jsonio.dumps([to_reference(r) for r in runs], indent=indent)  # FormatError rather than NaN
