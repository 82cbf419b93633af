"""How real LLM tutors' replies are shaped: how much of the graph one reply touches, how much of
that it explains, and how long it is — measured, not chosen.

The scripted strategies decide *what* to teach (their plan over the graph); this module decides how
much else a reply carries around it, the way an LLM tutor's reply does: a recap of earlier steps,
pointers to later ones, the whole solution path sketched in passing. In the paper's recorded
conversations the tutor touches about 60 % of the graph's IUs per turn (0.596, the mean over the
30 recorded turns of :data:`RECORDED_TURNS`) and explains about 42 % of what it touches (0.418); a scripted tutor that mentions only its one planned IU is far gentler than
the LLMs the paper measured (it gives about half their novice overload and little of their
redundancy).

The two tables are measured by
:func:`knowsim_core.evaluation.paper_matrix.measure_reply_shapes` (``python benchmarks/paper_check.py
--shapes`` prints them; a test checks these constants equal the measurement):

* :data:`RECORDED_TURNS` — per recorded tutor turn of the paper's two MathQA structured
  conversations (``../shared/reference/examples``; 30 turns, the paper's own LLM labels): (share of
  the graph's IUs the labels call mentioned, share of those called well explained), sorted.
* :data:`REPLY_SENTENCES` — the 20-quantiles (5 %, 10 %, …, 95 %) of the number of sentences per
  tutor reply over those 30 replies and the 246 replies of the nine LLM tutors in
  ``../shared/realworld`` (276 replies).

* :data:`EXPERT_TURNS` — the same pairs for the ExpertQA domain, from the paper's LLM labels of
  its ExpertQA recording (expertqa_001, 15 turns, mean coverage 0.330), and
  :data:`EXPERT_REPLY_SENTENCES`, that recording's reply lengths (the paper's ExpertQA runs are
  length-controlled: 4–5 sentences).

How many IUs a reply *names* is the drawn coverage times the domain's mention scale
(:data:`MENTION_SCALE`, :data:`EXPERT_MENTION_SCALE`; see there). :func:`draw_shape` takes the
question's domain (``math`` / ``expert``; any other domain is drawn as ``math``, the larger table).

A strategy draws one position ``u`` in its :data:`band` of these distributions per reply (seeded
by the turn), so its replies vary like real ones; the bands are the only per-strategy choice and
are stated on general grounds in :mod:`offline_assistants`, not fitted to the paper's figures.
Nothing here is per question.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

RECORDED_TURNS: tuple[tuple[float, float], ...] = (
    (0.143, 0.5), (0.2, 0.667), (0.267, 0.25), (0.286, 0.25), (0.333, 0.4), (0.357, 0.2), (0.4, 0.5),
    (0.467, 0.571), (0.467, 0.571), (0.5, 0.571), (0.5, 0.714), (0.571, 0.375), (0.571, 0.75), (0.6, 0.444),
    (0.643, 0.333), (0.667, 0.2), (0.667, 0.3), (0.667, 0.3), (0.667, 0.4), (0.714, 0.3), (0.714, 0.4),
    (0.714, 0.6), (0.733, 0.455), (0.786, 0.091), (0.857, 0.417), (0.857, 0.5), (0.857, 0.583),
    (0.867, 0.231), (0.867, 0.308), (0.933, 0.357),
)
# The recorded coverages are the paper's LLM labeller's reading; the offline labeller reads more
# IUs as mentioned than a reply names (an IU sharing the named ones' words often counts too). So
# a reply names MENTION_SCALE × the drawn coverage, chosen so that the offline labeller's reading of
# the adaptive tutor's novice replies — the cell the recordings are of — has the recorded mean
# coverage (0.596): on the tuning half's MathQA questions (evaluation.paper_matrix.split_halves),
# with the learner offline/knowsim. Under the size-independent reader (it reads each IU from its
# own words, so a templated reply built from description sentences touches more of the graph):
# 0.58 reads 0.812, 0.40 reads 0.738, 0.30 reads 0.689, 0.20 reads 0.597; 0.20 is the closest. Set
# against the recorded reply shapes, not the paper's results (`python benchmarks/paper_check.py
# --shapes` re-measures it). The explained count is not scaled.
MENTION_SCALE = 0.20
EXPERT_TURNS: tuple[tuple[float, float], ...] = (
    (0.158, 1.0), (0.211, 0.5), (0.211, 0.5), (0.211, 0.5), (0.263, 0.2), (0.316, 0.333), (0.316, 0.333),
    (0.316, 0.5), (0.316, 0.667), (0.368, 0.286), (0.368, 0.429), (0.421, 0.5), (0.421, 0.5), (0.474, 0.556),
    (0.579, 0.455),
)
# As MENTION_SCALE, for ExpertQA, against EXPERT_TURNS' mean coverage (0.330, expertqa_001's LLM
# labels): 0.80 reads 0.793, 0.50 reads 0.678, 0.30 reads 0.559, 0.15 reads 0.466, and no scale
# reads less (0.05 reads 0.472: a reply names at least one IU, and the reader reads one templated
# ExpertQA reply as touching about half the graph — its concept names share the question's topic
# words). 0.15 is the closest; the offline ExpertQA tutor still reads as mentioning more than the
# recording's (reported in benchmarks/logs/learner_rates.json, not hidden by another lever).
EXPERT_MENTION_SCALE = 0.15
TURNS = {"math": RECORDED_TURNS, "expert": EXPERT_TURNS}
SCALES = {"math": MENTION_SCALE, "expert": EXPERT_MENTION_SCALE}
REPLY_SENTENCES: tuple[float, ...] = (
    4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 13.2, 14.0, 15.0, 16.0, 17.0, 19.4, 22.0, 26.0,
)


# The paper's ExpertQA runs control the tutor's length (the recordings' ``length_control``): the 15
# replies of expertqa_001 have 4 or 5 sentences, so an offline ExpertQA reply is as long; the
# 20-quantiles of those 15 replies' sentence counts.
EXPERT_REPLY_SENTENCES: tuple[float, ...] = (
    4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.6, 5.0, 5.0,
)
LENGTHS = {"math": REPLY_SENTENCES, "expert": EXPERT_REPLY_SENTENCES}


@dataclass(frozen=True, slots=True)
class ReplyShape:
    """One reply's shape: IUs to touch (of the graph), how many of them to explain, sentences."""

    mentions: int
    explained: int
    sentences: int


def draw_shape(rng: random.Random, band: tuple[float, float], n_ius: int, domain: str = "math") -> ReplyShape:
    """A shape from position ``u`` drawn uniformly in ``band`` (a sub-range of [0, 1]) of the
    measured distributions of ``domain``: coverage and its well-explained share come as a
    recorded pair (the two are measured together), the length from the same ``u`` (longer
    replies cover more)."""
    lo, hi = band
    u = lo + (hi - lo) * rng.random()
    turns = TURNS.get(domain, RECORDED_TURNS)
    cov, well = turns[min(len(turns) - 1, int(u * len(turns)))]
    mentions = max(1, round(SCALES.get(domain, MENTION_SCALE) * cov * n_ius))
    lengths = LENGTHS.get(domain, REPLY_SENTENCES)
    q = min(len(lengths) - 1, int(u * (len(lengths) + 1)))
    return ReplyShape(mentions, min(mentions, round(well * cov * n_ius)), round(lengths[q]))
