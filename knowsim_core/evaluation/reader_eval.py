"""The offline reader by graph size and domain, against the paper's LLM labels.

A reader labels every IU of a graph from a tutor reply. Real conversations come with small graphs
(3–6 IUs), the paper's recordings with whole graphs (14–19 IUs), so a reader validated on the
recordings is only validated where the graph is as large, unless its reading does not depend on
how many other IUs the graph holds. This module measures that: the recorded turns are read with
the whole graph and with random sub-graphs of each size in :data:`SIZES` (the recorded labels
restricted to the sub-graph's IUs; the edges among them kept), and per (domain, size) it reports
teaching-quality macro-F1 and the share of (turn, IU) pairs read as mentioned beside the LLM's.

The protocol (:data:`PROTOCOL`) is fixed before measuring: sizes 3, 4, 5, 6 and the whole graph;
:data:`DRAWS` sub-graphs per turn and size, each drawn by ``random.Random`` seeded with the text
``"<SEED>:<record>:<turn>:<size>:<draw>"`` (the same sub-graphs for every reader); anything fitted
is fitted on whole MathQA graphs only — scored on MathQA leave one recording out (fitted on the
other recording) and on ExpertQA out of domain (fitted on both MathQA recordings). No ExpertQA
turn is ever used for fitting.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Callable, Iterable, Sequence

from knowsim_core.engine.graph import IUGraph
from knowsim_core.evaluation.extractor_eval import QUALITIES, Labeller, Method, Turn, records, score

SIZES: tuple[int | None, ...] = (3, 4, 5, 6, None)  # None: the whole graph
DRAWS = 10
SEED = 0
PROTOCOL = {
    "sizes": "3, 4, 5, 6 IUs (random sub-graphs: IUs drawn uniformly without replacement, the edges "
             "among them kept) and the whole graph",
    "draws": f"{DRAWS} sub-graphs per recorded turn and size",
    "seeds": f"random.Random('{SEED}:<record>:<turn>:<size>:<draw>') per sub-graph: the same sub-graphs "
             "for every reader",
    "fitting": "fitted on whole MathQA graphs only; MathQA scored leave one recording out (fitted on the "
               "other recording), ExpertQA scored out of domain (fitted on both MathQA recordings); no "
               "ExpertQA turn is used for fitting",
    "labels": "the paper's LLM extractor labels of the recordings (teaching quality of every IU of every "
              "turn); hand labels, where shown, are labelled as such",
    "targets": "mentioned share within 10 points of the LLM's with the whole graph and with 4-IU "
               "sub-graphs on each domain; teaching-quality macro-F1 >= 0.50 on ExpertQA (out of domain) "
               "and on MathQA leave one recording out",
}


def subgraph(graph: IUGraph, ids: Iterable[str]) -> IUGraph:
    """The sub-graph on ``ids`` (graph order) with the edges among them."""
    keep = set(ids)
    return IUGraph(knowledge_areas=graph.knowledge_areas,
                   nodes=tuple(n for n in graph.nodes if n.id in keep),
                   edges=tuple(e for e in graph.edges if e.from_ in keep and e.to in keep))


def sized(turns: Sequence[Turn], size: int | None, draws: int = DRAWS, seed: int = SEED) -> list[Turn]:
    """``turns`` with whole graphs (``size`` None), or ``draws`` sub-graphs of ``size`` IUs per turn
    (a turn whose graph has no more IUs than ``size`` stays whole, once)."""
    if size is None:
        return list(turns)
    out: list[Turn] = []
    subs: dict[tuple[str, tuple[str, ...]], IUGraph] = {}  # one graph object per IU set (the profiles cache)
    for t in turns:
        labelled = [iu for iu, _, _ in t.recorded if iu in t.graph.index.ids]
        if len(labelled) <= size:
            out.append(t)
            continue
        for d in range(draws):
            rng = random.Random(f"{seed}:{t.record}:{t.turn}:{size}:{d}")
            ids = tuple(sorted(rng.sample(labelled, size)))
            g = subs.get((t.record, ids))
            if g is None:
                g = subs[(t.record, ids)] = subgraph(t.graph, ids)
            keep = set(ids)
            out.append(replace(t, graph=g, recorded=tuple(r for r in t.recorded if r[0] in keep)))
    return out


def mentioned_shares(turns: Sequence[Turn], labeller: Labeller) -> tuple[float, float]:
    """(share of labelled (turn, IU) pairs the reader calls mentioned, the same share in the labels)."""
    said = gold = n = 0
    for t in turns:
        got = labeller(t)
        for iu, q, _ in t.recorded:
            n += 1
            gold += q != "not_mentioned"
            said += got.get(iu, ("not_mentioned", ""))[0] != "not_mentioned"
    return (said / n, gold / n) if n else (0.0, 0.0)


def cell(turns: Sequence[Turn], labeller: Labeller) -> dict[str, Any]:
    """One (domain, size) cell: pairs, macro-F1, per-class F1, the reader's and the labels' mentioned shares."""
    tq = score(turns, labeller)["teaching_quality"]
    said, gold = mentioned_shares(turns, labeller)
    return {"pairs": tq["n"], "macro_f1": round(tq["macro_f1"], 3),
            "f1": {c: round(tq["f1"][c], 3) for c in QUALITIES},
            "mentioned": round(said, 3), "llm_mentioned": round(gold, 3), "gap": round(said - gold, 3)}


def by_size(math_turns: Sequence[Turn], expert_turns: Sequence[Turn], method: Method,
            sizes: Sequence[int | None] = SIZES, draws: int = DRAWS, seed: int = SEED,
            ) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"math" | "expert": {size key: cell}}`` under :data:`PROTOCOL`: MathQA leave one recording
    out (``method`` fitted on the other recording's whole graphs), ExpertQA with ``method`` fitted
    on every MathQA turn. Size keys: ``"3"`` … ``"6"``, ``"whole"``."""
    folds = {r: method([t for t in math_turns if t.record != r]) for r in records(math_turns)}
    every = method(list(math_turns))

    def loro(t: Turn) -> dict[str, tuple[str, str]]:
        return folds[t.record](t)

    out: dict[str, dict[str, dict[str, Any]]] = {"math": {}, "expert": {}}
    for size in sizes:
        key = "whole" if size is None else str(size)
        out["math"][key] = cell(sized(math_turns, size, draws, seed), loro)
        if expert_turns:
            out["expert"][key] = cell(sized(expert_turns, size, draws, seed), every)
    return out


def fixed(labeller_of: Callable[[], Labeller]) -> Method:
    """A reader that is not fitted (the same labeller for any training set)."""
    return lambda train: labeller_of()
