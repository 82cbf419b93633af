"""The paper's own validation, condition by condition: a *simulated* batch against the people.

The paper (§5, App. E.3.1, after SimulatorArena) validates a simulator by comparing, for every
(arm, level, condition) cell, the simulator's cell mean with the people's cell mean. Here:

* **arm** — the question set's domain (``math`` for the SimulatorArena people; the paper's MathQA
  and ExpertQA arms); **level** — the expertise level (``9-12`` → novice, ``undergrad`` →
  intermediate, ``grad`` → advanced, as imported); **condition** — the tutor, matched by model id
  (a person's ``gpt-4o`` is a batch assistant whose registry model is ``gpt-4o``: ``openai/gpt-4o``,
  ``compat/gpt-4o@URL``; an offline assistant's model id is its agent id).
* A simulated run counts only when a person had the same (question, level, tutor): the batch plays
  the people's own settings. Runs outside them are left out and counted. Every people's cell must
  hold at least one matched run, else the comparison is **refused** (:class:`NoMatch`, naming the
  cells and the batch command that would fill them): a cell mean over no run is not a figure.
* **Sign agreement** (spec §13.3) — within an (arm, level) block, for each pair of conditions whose
  cells hold at least :data:`~knowsim_core.evaluation.agreement.MIN_CELL` rated people and whose
  ratings differ (|Cliff's δ| ≥ :data:`PAPER_CLIFFS_MIN`, the paper's 0.15, by default; the Studio's
  earlier choice, 0.33 — "medium" — stays as an option, labelled), does the simulated metric's
  difference, in the metric's declared direction, have δ's sign? One-sided binomial test against
  0.5; conclusive only with enough pairs and p < :data:`~knowsim_core.evaluation.agreement.ALPHA`.
  The paper reports its result stable over thresholds 0.10–0.20: :data:`SWEEP` shows it there.
* **Spearman with z-normalisation** (spec §13.3, App. E.3.1) — per metric, the simulated cell means
  and the people's cell means (rating; share of correct answers) per (arm, level, condition) are
  z-normalised within each (arm, level) block (a block needs ≥ 2 cells), pooled over the blocks of
  a task (the arm; the paper pools its two arms of a task, n = 18 cells per task), and
  rank-correlated; its n (cells) is reported. The metric is oriented by its declared direction first
  (:data:`~knowsim_core.evaluation.agreement.METRIC_DIRECTIONS`), so ρ > 0 is agreement.

Each user simulator of the given batches (KnowSim's and the baseline simulators') is compared on its
own, side by side.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Iterable

from knowsim_core.agents.registry import spec_of
from knowsim_core.errors import ConfigError
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import RunStatus
from knowsim_core.evaluation import scoring
from knowsim_core.evaluation.agreement import (ALPHA, CLIFFS_MIN, METRIC_DIRECTIONS, MIN_CELL, MIN_PAIRS, Agreement,
                                               read_p)

SIM_METRICS = ("kg", "dc", "co", "iq")
MEASURES = ("rating", "correct")
PAPER_CLIFFS_MIN = 0.15  # spec §13.3: pairs whose human effect has |Cliff's δ| >= 0.15
STUDIO_CLIFFS_MIN = CLIFFS_MIN  # the Studio's earlier choice ("medium", 0.33), kept as an option
SWEEP = (0.10, 0.125, 0.15, 0.175, 0.20)  # the paper's stability range
PAPER_SPEARMAN_N = 18  # cells per task in the paper's Spearman (two arms x three levels x three conditions)


class NoMatch(ConfigError):
    """The batch does not cover the people's cells: no comparison is made."""


@dataclass(frozen=True)
class Person:
    question_id: str
    arm: str
    level: str
    model: str
    rating: float | None
    correct: bool | None
    simulable: bool = True  # False: the conversation has no reading (no concepts), so no batch can play it


@dataclass(frozen=True)
class SimRun:
    run_id: str
    question_id: str
    arm: str
    level: str
    model: str
    user: str
    metrics: dict[str, float | None]


def model_id(agent_id: str) -> str:
    """The model id a tutor is matched by: the registry's model for an LLM id, else the id itself."""
    return spec_of(agent_id).model or agent_id


def people_of(store, agreement: Agreement) -> list[Person]:
    """Every human conversation of an :class:`Agreement`, read or not (a rating needs no reading)."""
    arms: dict[str, str] = {}

    def arm(qid: str) -> str:
        if qid not in arms:
            try:
                arms[qid] = store.questions.get(qid).domain or "math"
            except Exception:  # noqa: BLE001 - a question deleted since: its runs still carry the level
                arms[qid] = "math"
        return arms[qid]
    return [*(Person(c.question_id, arm(c.question_id), c.level, c.model, c.rating, c.correct)
              for c in agreement.conversations),
            *(Person(u.question_id, arm(u.question_id), u.level, u.model, u.rating, u.correct, simulable=False)
              for u in agreement.unread)]


def runs_of(store, tags: Iterable[str]) -> list[SimRun]:
    """The finished runs of the batches ``tags`` with their stored metrics."""
    out = []
    domains = {q.id: q.domain for q in store.questions.list()}
    for tag in tags:
        rows = store.search.list(RunFilter(batch_tag=tag, status=RunStatus.FINISHED), limit=10**9)
        if not rows:
            raise NoMatch(f"--simulated {tag}: no finished run carries this batch tag; "
                          "`python -m knowsim_core runs --batch TAG` lists a batch's runs")
        for r in rows:
            out.append(SimRun(r.id, r.question_id, domains.get(r.question_id) or "math", r.level,
                              model_id(r.assistant), r.user, {"kg": r.kg, "dc": r.dc, "co": r.co, "iq": r.iq_score}))
    return out


def batch_command(people: list[Person], tag: str = "TAG") -> str:
    """The ``batch`` command that plays the people's questions, levels and tutors (a product: runs
    outside the people's own (question, level, tutor) are played too and left out here)."""
    people = [p for p in people if p.simulable]
    qs = ",".join(sorted({p.question_id for p in people}))
    levels = ",".join(sorted({p.level for p in people}))
    # an offline tutor's model id is its agent id; an LLM tutor needs its provider (openai/…, compat/…@URL)
    tutors = ",".join(m if spec_of(m).offline else f"<provider>/{m}" for m in sorted({p.model for p in people}))
    return (f"python -m knowsim_core batch --questions {qs} --levels {levels} --assistants {tutors} "
            f"--user offline/knowsim --tag {tag} (replace <provider> by openai, anthropic or compat/…@URL; or one "
            "batch per (level, tutor) with that cell's questions, all tags given to --simulated)")


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _z(values: list[float]) -> list[float]:
    m = sum(values) / len(values)
    sd = (sum((v - m) ** 2 for v in values) / len(values)) ** 0.5
    return [0.0 if sd == 0 else (v - m) / sd for v in values]


def compare(people: list[Person], runs: list[SimRun], cliffs_min: float = PAPER_CLIFFS_MIN) -> dict[str, Any]:
    """Each user simulator's runs against the people, cell by cell (module docstring). People whose
    conversation has no reading (no concepts, so no IU graph a batch could play) are counted and left out."""
    unplayable = sum(not p.simulable for p in people)
    people = [p for p in people if p.simulable]
    settings = {(p.question_id, p.level, p.model) for p in people}
    pcells: dict[tuple[str, str, str], list[Person]] = defaultdict(list)
    for p in people:
        pcells[(p.arm, p.level, p.model)].append(p)
    by_user: dict[str, list[SimRun]] = defaultdict(list)
    for r in runs:
        by_user[r.user].append(r)
    out: dict[str, Any] = {}
    for user, rs in sorted(by_user.items()):
        matched = [r for r in rs if (r.question_id, r.level, r.model) in settings]
        scells: dict[tuple[str, str, str], list[SimRun]] = defaultdict(list)
        for r in matched:
            scells[(r.arm, r.level, r.model)].append(r)
        missing = sorted(k for k in pcells if k not in scells)
        entry: dict[str, Any] = {"runs": len(rs), "matched_runs": len(matched), "left_out_runs": len(rs) - len(matched),
                                 "people": len(people), "people_without_concepts": unplayable,
                                 "people_without_a_run": sum(1 for p in people if not any(
                                     (r.question_id, r.level, r.model) == (p.question_id, p.level, p.model)
                                     for r in matched))}
        if missing:
            entry["refused"] = (f"{len(missing)} of {len(pcells)} people's cell(s) have no simulated run of the same "
                                "question, level and tutor: " + ", ".join(" / ".join(k) for k in missing[:8])
                                + (" …" if len(missing) > 8 else ""))
            entry["missing"] = [list(k) for k in missing]
            out[user] = entry
            continue
        cells = []
        for key in sorted(pcells):
            ps, ss = pcells[key], scells[key]
            rated = [p.rating for p in ps if p.rating is not None]
            known = [p.correct for p in ps if p.correct is not None]
            cells.append({"arm": key[0], "level": key[1], "condition": key[2], "n_people": len(ps),
                          "n_rated": len(rated), "n_sim": len(ss), "rating": _mean(rated),
                          "correct": _mean([float(c) for c in known]), "ratings": rated,
                          "sim": {m: _mean([r.metrics[m] for r in ss if r.metrics.get(m) is not None])
                                  for m in SIM_METRICS}})
        metrics = [m for m in SIM_METRICS if any(c["sim"][m] is not None for c in cells)]
        entry["cells"] = cells
        entry["spearman"] = {m: {ms: z_spearman(cells, m, ms) for ms in MEASURES} for m in metrics}
        entry["spearman_by_task"] = {arm: {m: z_spearman([c for c in cells if c["arm"] == arm], m, "rating")
                                           for m in metrics} for arm in sorted({c["arm"] for c in cells})}
        entry["sign"] = {m: sign_pairs(cells, m, cliffs_min) for m in metrics}
        entry["sweep"] = {m: [{"cliffs_delta_min": t, **{k: v for k, v in sign_pairs(cells, m, t).items()
                                                          if k in ("n", "agree", "p", "conclusive")}}
                              for t in SWEEP] for m in metrics}
        out[user] = entry
    return {"simulators": out, "threshold": {"cliffs_delta_min": cliffs_min, "min_cell": MIN_CELL,
                                             "min_pairs": MIN_PAIRS, "alpha": ALPHA,
                                             "paper": PAPER_CLIFFS_MIN, "sweep": list(SWEEP),
                                             "choice": "the paper's (spec §13.3)" if cliffs_min == PAPER_CLIFFS_MIN
                                             else ("the Studio's earlier 'medium'" if cliffs_min == STUDIO_CLIFFS_MIN
                                                   else "chosen by the user")},
            "spearman_note": f"cells per task as n; the paper's is {PAPER_SPEARMAN_N} per task (two arms pooled)",
            "directions": {m: METRIC_DIRECTIONS[m][1] for m in SIM_METRICS},
            "note": "cells: (arm = question domain, level, condition = tutor model id); Spearman over cell means "
                    "z-normalised within each (arm, level) block; metrics oriented by their stated direction"}


def z_spearman(cells: list[dict[str, Any]], metric: str, measure: str) -> dict[str, Any]:
    """Spearman's ρ of the oriented simulated ``metric`` vs the people's ``measure`` over cells, both
    z-normalised within each (arm, level) block of ≥ 2 usable cells."""
    sign = METRIC_DIRECTIONS[metric][0]
    blocks: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for c in cells:
        if c["sim"].get(metric) is not None and c.get(measure) is not None:
            blocks[(c["arm"], c["level"])].append(c)
    xs, ys, used = [], [], 0
    for block in blocks.values():
        if len(block) < 2:
            continue
        used += 1
        xs += _z([sign * c["sim"][metric] for c in block])
        ys += _z([c[measure] for c in block])
    rho = scoring.spearman(xs, ys) if len(xs) >= 3 else None
    return {"rho": rho, "cells": len(xs), "blocks": used, "blocks_left_out": len(blocks) - used}


def sign_pairs(cells: list[dict[str, Any]], metric: str, cliffs_min: float = PAPER_CLIFFS_MIN) -> dict[str, Any]:
    """Sign agreement of the simulated ``metric`` (oriented) with the people's ratings, over pairs of
    conditions within an (arm, level) block whose ratings differ by |Cliff's δ| ≥ ``cliffs_min``
    (module docstring)."""
    sign = METRIC_DIRECTIONS[metric][0]
    blocks: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for c in cells:
        blocks[(c["arm"], c["level"])].append(c)
    pairs, small, close = [], 0, 0
    for (arm, level), block in sorted(blocks.items()):
        for a, b in combinations(sorted(block, key=lambda c: c["condition"]), 2):
            if len(a["ratings"]) < MIN_CELL or len(b["ratings"]) < MIN_CELL or None in (a["sim"][metric],
                                                                                         b["sim"][metric]):
                small += 1
                continue
            delta = scoring.cliffs_delta(a["ratings"], b["ratings"])
            if delta is None or abs(delta) < cliffs_min:
                close += 1
                continue
            diff = sign * (a["sim"][metric] - b["sim"][metric])
            pairs.append({"arm": arm, "level": level, "a": a["condition"], "b": b["condition"], "cliffs_delta": delta,
                          "sim_diff": diff, "agree": diff != 0 and (diff > 0) == (delta > 0)})
    agree = sum(p["agree"] for p in pairs)
    p = scoring.binomial_p(agree, len(pairs))
    conclusive = len(pairs) >= MIN_PAIRS and p is not None and p < ALPHA
    return {"n": len(pairs), "agree": agree, "p": p, "conclusive": conclusive, "note": read_p(agree, len(pairs), p,
                                                                                            conclusive),
            "skipped_small_cells": small, "skipped_close_ratings": close, "pairs": pairs}


def validate(store, agreement: Agreement, tags: list[str], cliffs_min: float = PAPER_CLIFFS_MIN) -> dict[str, Any]:
    """``agreement --simulated TAG[,TAG…]``: the batches' runs against the people of ``agreement``.

    Raises:
        NoMatch: no people, or no simulator of the batches covers every people's cell (the message
            names the missing cells and the batch command that plays the people's settings).
    """
    people = people_of(store, agreement)
    if not any(p.simulable for p in people):
        raise NoMatch("--simulated: no human conversation to compare with; import the people's conversations first")
    result = compare(people, runs_of(store, tags), cliffs_min)
    result["tags"] = list(tags)
    result["people_cells"] = len({(p.arm, p.level, p.model) for p in people if p.simulable})
    ok = [u for u, e in result["simulators"].items() if "refused" not in e]
    if not ok:
        reasons = "; ".join(f"{u}: {e['refused']}" for u, e in result["simulators"].items())
        raise NoMatch(f"--simulated {','.join(tags)}: the batch does not match the people's cells, so nothing is "
                      f"compared — {reasons}. A matching batch plays the people's own questions, levels and tutors "
                      f"(tutors matched by model id): {batch_command(people)}")
    return result
