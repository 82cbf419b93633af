"""The data of a single-file run replay: every turn's graph colours, load, messages, modes and whys.

:func:`knowsim_core.formats.replay_html.render` turns this into one HTML file; it lives here,
not in ``formats``, because the why text must be :func:`knowsim_core.evaluation.explain.explain_run`'s
(the words ``explain`` prints and the Studio shows) and ``formats`` sits below ``evaluation``.

The file leaves the Studio — it is mailed, attached to a review, shown in a talk — so it carries
no credential: agent ids lose URL credentials (:func:`redact_urls`, as every export), and free
text written by people or models (question, messages, IU names and descriptions) goes through
:func:`redact` (URL credentials and anything shaped like a key). The why text is built from ids
and numbers and is kept verbatim so it equals ``explain --json``'s. Plain data (JSON-ready).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace
from typing import Any, Sequence

from knowsim_core import vocab
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.presentation.layout import layered_positions
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import IUState
from knowsim_core.errors import FormatError
from knowsim_core.engine.metrics import METRIC_GLOSSARY
from knowsim_core.evaluation.explain import explain_run
from knowsim_core.evaluation.iu_story import iu_stories
from knowsim_core.formats.replay_html import render
from knowsim_core.services.fork import fork_link, parent_of
from knowsim_core.text.redact import redact, redact_urls

FORMAT_VERSION = 1
ROW_GAP = 96  # replay graph pixels: room for three label lines per node
COL_GAP = 170
LABEL_WIDTH = 20  # characters per node label line
LABEL_LINES = 2  # concept lines under the id (the full text is in the IU table)


def gauge_top(run: RunRecord) -> float:
    """The gauge's fixed upper end for the whole run: max(2τ, the heaviest turn's load), rounded up
    (the Studio's gauge rule, so stepping never rescales the dial)."""
    peak = max((t.quantities.effective_load for t in run.turns), default=0.0)
    return float(max(2 * run.tau, math.ceil(peak), 1))


def _label_lines(concept: str) -> list[str]:
    lines = textwrap.wrap(" ".join(concept.split()), LABEL_WIDTH) or [""]
    if len(lines) > LABEL_LINES:
        lines = lines[:LABEL_LINES]
        lines[-1] = lines[-1][: LABEL_WIDTH - 1].rstrip() + "…"
    return lines


def _graph(run: RunRecord) -> dict[str, Any]:
    pos = dict(layered_positions(run.graph, row_gap=ROW_GAP, col_gap=COL_GAP))
    nodes, seen = [], set()
    for n in run.graph.nodes:
        if n.id in seen or n.id not in pos:  # a duplicate id is drawn once
            continue
        seen.add(n.id)
        x, y = pos[n.id]
        concept = redact(n.concept)
        nodes.append({"id": n.id, "concept": concept, "description": redact(n.description),
                      "lines": _label_lines(concept), "x": x, "y": y})
    edges = [[e.from_, e.to] for e in run.graph.edges if e.from_ in seen and e.to in seen]
    return {"nodes": nodes, "edges": edges}


# One row per IU and turn, as a list in this order (a row of named fields tripled the file): what the
# turn's own IU rows (state, mode, why) and its load do not already say.
STORY_COLUMNS = ("turn", "teaching", "attempt", "mentions", "load", "carry", "prior_carry", "step_share", "ceiling",
                 "ceiling_used", "dc", "reason", "evidence")
_PLACES = 4  # carries and shares are shown to two places: four keep them exact enough to check


def _utf16(text: str, index: int) -> int:
    """``index`` (a code-point offset into ``text``) as the page's script counts: UTF-16 units."""
    return len(text[:index].encode("utf-16-le")) // 2


def _spans(message: str, sentences: Sequence[str]) -> list[Any]:
    """Where each quoted sentence sits in the (redacted) reply the file carries: ``[start, end]`` in
    UTF-16 units, so the words are not stored twice; a sentence not found verbatim is kept as text."""
    out: list[Any] = []
    for sentence in sentences:
        quoted = redact(sentence)
        at = message.find(quoted)
        out.append([_utf16(message, at), _utf16(message, at + len(quoted))] if at >= 0 else quoted)
    return out


def stories(run: RunRecord, replies: dict[int, str]) -> dict[str, Any]:
    """Every IU's story (:func:`knowsim_core.evaluation.iu_story.iu_stories`) per turn, as rows of
    :data:`STORY_COLUMNS` beside what the turns already carry (state, mode and why): its load part,
    carry, ceilings, DC part, the reader's reason (when it taught or attempted the IU) and the
    reply's words — spans of ``replies`` (each turn's redacted reply), free text redacted."""
    out = {}
    for v, story in iu_stories(run).items():
        rows = []
        for t in story.turns:
            told = t.mentions or t.attempt != "none"
            rows.append([t.turn, t.teaching, t.attempt, t.mentions, round(t.load, _PLACES), round(t.carry, _PLACES),
                         round(t.prior_carry, _PLACES),
                         None if t.step_share is None else round(t.step_share, _PLACES), int(t.ceiling),
                         int(t.ceiling_used), t.dc, redact(t.reason) if told else "",
                         _spans(replies.get(t.turn, ""), t.evidence)])
        out[v] = {"note": story.evidence_note(), "prerequisites": list(story.prerequisites), "rows": rows}
    return out


def run_data(run: RunRecord, *, run_id: str | None = None, fork_of: tuple[str, int] | None = None,
             parent_words: str = "") -> dict[str, Any]:
    """One run's replay: its header, graph (with fixed positions), start state, every turn and
    every IU's story; ``parent_words``: how a fork names its parent when it is not stored
    (:meth:`knowsim_core.services.fork.Parent.words`: "deleted run …")."""
    run = replace(run, adapters=tuple((role, redact_urls(agent)) for role, agent in run.adapters))
    label_of = run.graph.index.label_of
    start = {v: int(run.initial_state.state_of(label_of[v])) for v in run.graph.index.ids}
    whys = dict(explain_run(run))
    turns = []
    for rec in run.turns:
        q = rec.quantities
        ius = []
        for w, node in zip(whys[rec.turn], rec.nodes):
            d = w.to_data()  # the label holds the IU's name: free text, redacted like the graph's
            ius.append({**d, "label": redact(d["label"]), "pre": int(node.pre), "post": int(node.post)})
        turns.append({
            "turn": rec.turn,
            "user": redact(rec.user_message),
            "assistant": redact(rec.assistant_message),
            "load": q.effective_load, "tau": q.overload_threshold, "overload": q.overload,
            "efficiency": q.efficiency, "ius": ius,
        })
    m = run.metrics()
    return {
        "run_id": run_id or run.run_id or "",
        "question_id": run.question_id,
        "question": redact(run.question),
        "domain": run.domain,
        "level": run.level,
        "tau": run.tau,
        "seed": run.seed,
        "preset": run.params.preset,
        "agents": [[role, agent] for role, agent in run.adapters],
        "stop_reason": run.stop_reason or "",
        "fork_of": list(fork_of) if fork_of else None,
        "parent_words": parent_words if fork_of else "",
        "metrics": {"KG": m.knowledge_gain, "DC": m.delivery_calibration, "CO": m.cognitive_overload},
        "gauge_top": gauge_top(run),
        "graph": _graph(run),
        "start": start,
        "turns": turns,
        "stories": stories(run, {t["turn"]: t["assistant"] for t in turns}),
    }


def replay_payload(runs: Sequence[dict[str, Any]], *, title: str = "") -> dict[str, Any]:
    """The whole file's data: one run or a pair (from :func:`run_data`), with the Studio's palette
    and the mode definitions, so the page needs nothing but itself."""
    return {
        "format": "knowsim-replay",
        "version": FORMAT_VERSION,
        "title": title or " vs ".join(r["run_id"] for r in runs),
        "runs": list(runs),
        "states": [{"name": vocab.STATE_WORDS[s], "colour": vocab.STATE_COLOURS[s],
                    "font": vocab.STATE_FONTS[s], "glyph": vocab.STATE_GLYPHS[s]} for s in IUState],
        "metric_words": dict(METRIC_GLOSSARY),
        "story_columns": list(STORY_COLUMNS),
        "modes": [{"name": m.title, "letter": m.letter, "colour": vocab.MODE_COLOURS[m], "font": vocab.MODE_FONTS[m],
                   "meaning": vocab.MODE_MEANING[m]} for m in FAILURE_ORDER],
        "colours": {"changed": vocab.CHANGED_COLOUR, "edge": vocab.EDGE_COLOUR, "border": vocab.BORDER_COLOUR,
                    "ok": vocab.GAUGE_OK, "near": vocab.GAUGE_NEAR, "over": vocab.GAUGE_OVER,
                    "bar": vocab.GAUGE_BAR, "threshold": vocab.GAUGE_THRESHOLD, "near_share": vocab.NEAR_SHARE},
    }


def replay_html(store: Any, run_ids: Sequence[str]) -> str:
    """The single-file replay of one stored run, or of two side by side (a run and its fork, two
    levels, two assistants) — what ``export RUN --format html [--pair RUN_B]`` writes and the
    Studio's "Export replay" buttons download.

    Raises:
        StorageError: an unknown run id.
        FormatError: no run id given.
    """
    if not run_ids:
        raise FormatError("name a run to export")
    runs = []
    for rid in run_ids:
        run = store.runs.load(rid)
        parent = parent_of(store, run)
        runs.append(run_data(run, run_id=rid, fork_of=fork_link(run),
                             parent_words=parent.words() if parent is not None and not parent.stored else ""))
    return render(replay_payload(runs))
