"""Variants of the offline reader's teaching-quality decisions, each scored on MathQA leave one
recording out and, as a check only, on ExpertQA out of domain.

Protocol (written into the log before the figures):

* every variant is a pair of class-balanced logistic regressions (mentioned?; if so, well
  explained?) over a named feature set, with a named rubric floor, refitted per fold; features are
  read from the reply, the user's message and the IU's own words only (none compares an IU with the
  graph's other IUs, so none moves the mentioned share with the graph's size); the context features
  (neighbour_mention, asked_by_user, the user's and the previous reply's words) weigh only in
  "well explained?";
* a variant is chosen on MathQA only: pooled leave-one-recording-out macro-F1 over math_003 /
  math_004 (fitted on the other recording's whole graphs); ExpertQA (expertqa_001's LLM labels,
  weights fitted on both MathQA recordings) is never used to fit or choose;
* a variant replaces the shipped reader only when its MathQA gain over the shipped reader has a
  paired bootstrap interval (2,000 resamples of held-out turns, numpy seed 0, 2.5-97.5 %) above 0.

The variants: the shipped reader; its rubric floor dropped or read from sentences that touch the
IU (two of its own stems or half its concept name) with explanation markers (a definition, a
reason, an example or worked number); extra features (the IU's description words used in its best
one or two sentences, sentences touching it, explanation markers there, the user's words, reply
length in words); and the rule that decides which sentences are *about* an IU (the rubric's cue
depth reads them) normalised by the description's length in several ways — a share (shipped),
a count, a count growing with the square root of the description's stems, a share capped at a
count, the concept name alone, the concept name and the description's first sentence. Each
about-rule is scored with the floor, without it, and with the mention threshold set in the
training fold so the training labels' mentioned share is read ("cal").

Usage: ``python benchmarks/reader_variants.py [--reference ../shared/reference]``; writes
``benchmarks/logs/reader_variants.json`` (deterministic; a few seconds).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.agents import lexical as lx  # noqa: E402
from knowsim_core.evaluation import extractor_eval as ev  # noqa: E402
from knowsim_core.text.profiles import content_stems, profiles_for, sentences  # noqa: E402

PROTOCOL = {
    "model": "two class-balanced L2 logistic regressions (mentioned?; well explained? among mentioned), "
             "refitted per fold, under a named rubric floor; features read from the reply, the user's "
             "message and the IU's own words only; context features weigh only in 'well explained?'",
    "choice": "on MathQA only: pooled leave-one-recording-out macro-F1 (math_003 / math_004)",
    "check": "ExpertQA (expertqa_001's LLM labels, whole graphs, weights fitted on both MathQA recordings): "
             "never used to fit or choose, shown beside every variant",
    "adoption": "a variant replaces the shipped reader only when its MathQA LORO gain over the shipped "
                "reader has a paired bootstrap interval (2,000 resamples of held-out turns, numpy seed 0, "
                "2.5-97.5 %) above 0",
}
RESAMPLES = 2000
SEED = 0

Features = dict[str, float]


def _flags(sentence: str) -> tuple[bool, bool, bool, bool]:
    """(defines, gives a reason, gives an example or formula, carries a number)."""
    low = sentence.lower()
    return (bool(lx._DEFINE.search(low)), bool(lx._REASON.search(low)),
            bool(lx._EXAMPLE.search(low) or lx._FORMULA.search(sentence)), bool(lx._NUMBER.search(sentence)))


def _about(d: frozenset, c: frozenset, key: frozenset, s: frozenset, rule: str) -> bool:
    """Whether a sentence with stems ``s`` is about an IU (description stems ``d``, concept ``c``,
    concept and first description sentence ``key``) under ``rule``."""
    concept = len(c & s) / max(1, len(c)) >= 0.5
    used = len(d & s)
    if rule == "share":  # the shipped rule (lexical.ABOUT_COVER)
        return concept or used / max(1, len(d)) >= lx.ABOUT_COVER
    if rule == "count3":
        return concept or used >= 3
    if rule == "capped4":
        return concept or used >= min(lx.ABOUT_COVER * len(d), 4)
    if rule.startswith("sqrt"):
        return concept or used >= float(rule[4:]) * math.sqrt(len(d))
    if rule == "concept":
        return concept
    if rule == "concept34":
        return len(c & s) / max(1, len(c)) >= 0.34
    if rule.startswith("key"):
        return concept or len(key & s) / max(1, len(key)) >= int(rule[3:]) / 100
    raise ValueError(rule)


ABOUT_RULES = ("share", "count3", "capped4", "sqrt0.9", "sqrt1.0", "sqrt1.1", "sqrt1.2", "sqrt1.3",
               "concept", "concept34", "key25", "key34")
_MEMO: dict[tuple[int, str], dict[str, Features]] = {}


def features(t: ev.Turn, rule: str = "share") -> dict[str, Features]:
    """Every candidate feature of every IU of one turn (the shipped reader's among them)."""
    key = (id(t), rule)
    if key in _MEMO:
        return _MEMO[key]
    sents = sentences(t.assistant) or [""]
    stems = [frozenset(content_stems(s)) for s in sents]
    cues = [lx._cue_score(s) for s in sents]
    flags = [_flags(s) for s in sents]
    every = frozenset().union(*stems)
    user, prev = frozenset(content_stems(t.user)), frozenset(content_stems(t.prev_assistant))
    shipped = lx.tq_features(profiles_for(t.graph), t.assistant, t.user)
    out = {}
    for n in t.graph.nodes:
        c = frozenset(content_stems(n.concept))
        d = c | frozenset(content_stems(n.description))
        first = sentences(n.description)
        k = c | (frozenset(content_stems(first[0])) if first else frozenset())
        per = [len(d & s) for s in stems]
        best = sorted(range(len(stems)), key=lambda i: -per[i])
        best2 = frozenset().union(*(stems[i] for i in best[:2]))
        touch = [i for i, s in enumerate(stems) if per[i] >= 2 or len(c & s) / max(1, len(c)) >= 0.5]
        about = [i for i, s in enumerate(stems) if _about(d, c, k, s, rule)]
        f = dict(zip(lx.TQ_FEATURES, shipped[n.id]))
        f.update(
            description_share=len(d & every) / max(1, len(d)),
            best_sentence_words=min(1.0, max(per) / 4), best_two_sentences_words=min(1.0, len(d & best2) / 6),
            touching_sentences=min(1.0, len(touch) / 3), touching_cues=min(1.0, sum(cues[i] for i in touch) / 3),
            touching_markers=sum(any(flags[i][j] for i in touch) for j in range(3)) / 3,
            touching_define=float(any(flags[i][0] for i in touch)), touching_reason=float(any(flags[i][1] for i in touch)),
            touching_example=float(any(flags[i][2] for i in touch)), touching_number=float(any(flags[i][3] for i in touch)),
            user_words=min(1.0, len(d & user) / 6), previous_reply_words=min(1.0, len(d & prev) / 6),
            reply_words=min(1.0, len(t.assistant.split()) / 200), concept_words=min(1.0, len(c & every) / 3),
            about_share=len(about) / len(sents), about_depth=min(1.0, sum(cues[i] for i in about) / 3),
        )
        out[n.id] = f
    _MEMO[key] = out
    return out


FLOORS: dict[str, Callable[[Features], bool]] = {
    "none": lambda f: True,
    "shipped": lambda f: f["cue_depth"] >= lx.MIN_DEPTH and f["reply_length"] > 0.1,
    "touching cues": lambda f: f["touching_cues"] >= lx.MIN_DEPTH and f["reply_length"] > 0.1,
    "touching markers": lambda f: f["touching_markers"] > 0 and f["reply_length"] > 0.1,
    "about depth": lambda f: f["about_depth"] >= lx.MIN_DEPTH and f["reply_length"] > 0.1,
}


def _p(w: Sequence[float], x: Sequence[float]) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, sum(a * b for a, b in zip(w, x))))))


def variant(mention: Sequence[str], well: Sequence[str], floor: str, rule: str = "share",
            calibrate: bool = False) -> ev.Method:
    """A fit(train turns) -> labeller of one variant."""
    def rows(turns, names, keep=lambda q: True):
        for t in turns:
            fs = features(t, rule)
            for iu, q, _ in t.recorded:
                if keep(q):
                    yield [1.0] + [fs[iu][k] for k in names], q

    def fit(train: Sequence[ev.Turn]) -> ev.Labeller:
        m = list(rows(train, mention))
        w = list(rows(train, well, lambda q: q != "not_mentioned"))
        wm = ev.fit_logistic([x for x, _ in m], [q != "not_mentioned" for _, q in m])
        ww = ev.fit_logistic([x for x, _ in w], [q == "well_explained" for _, q in w])
        threshold = 0.5
        if calibrate:  # read the training labels' mentioned share
            ps = sorted((_p(wm, x) for x, _ in m), reverse=True)
            k = max(1, min(len(ps) - 1, round(sum(q != "not_mentioned" for _, q in m) / len(m) * len(ps))))
            threshold = (ps[k - 1] + ps[k]) / 2

        def label(t: ev.Turn) -> ev.Labels:
            out = {}
            for iu, f in features(t, rule).items():
                if _p(wm, [1.0] + [f[k] for k in mention]) < threshold:
                    out[iu] = ("not_mentioned", "none")
                elif _p(ww, [1.0] + [f[k] for k in well]) >= 0.5 and FLOORS[floor](f):
                    out[iu] = ("well_explained", "none")
                else:
                    out[iu] = ("shallow", "none")
            return out
        return label
    return fit


OWN = ("concept_cover", "concept_sentence_cover", "share_of_sentences_about", "reply_length", "description_words_used")
CONTEXT = ("neighbour_mention", "asked_by_user")
TOUCH = ("best_sentence_words", "best_two_sentences_words", "touching_sentences", "touching_cues", "touching_markers")
MENTION_LEAN = ("concept_cover", "concept_sentence_cover", "description_words_used", "best_sentence_words",
                "touching_sentences", "concept_words")
WELL_TOUCH = ("concept_cover", "concept_sentence_cover", "reply_length", "description_words_used", *CONTEXT, *TOUCH)
WELL_MARKERS = (*WELL_TOUCH, "user_words", "reply_words", "touching_define", "touching_reason", "touching_example",
                "touching_number")
ABOUT_OWN = ("concept_cover", "concept_sentence_cover", "about_share", "reply_length", "description_words_used")


def variants() -> dict[str, ev.Method]:
    out = {
        "shipped": variant(OWN, (*OWN, *CONTEXT), "shipped"),
        "no rubric floor": variant(OWN, (*OWN, *CONTEXT), "none"),
        "floor: cues of touching sentences": variant(OWN, (*OWN, *CONTEXT), "touching cues"),
        "floor: markers in touching sentences": variant(OWN, (*OWN, *CONTEXT), "touching markers"),
        "well: + best-sentence and touching features": variant(OWN, WELL_TOUCH, "touching cues"),
        "well: + best-sentence and touching features, no floor": variant(OWN, WELL_TOUCH, "none"),
        "mention: + description share, best sentence, touching": variant(
            (*OWN, "description_share", "best_sentence_words", "touching_sentences"), WELL_TOUCH, "touching cues"),
        "mention: lean; well: touching": variant(MENTION_LEAN, WELL_TOUCH, "touching cues"),
        "mention: lean; well: touching + markers, user words, length": variant(MENTION_LEAN, WELL_MARKERS, "touching cues"),
        "mention: lean; well: touching + markers, no floor": variant(MENTION_LEAN, WELL_MARKERS, "none"),
        "mention: + description share": variant((*OWN, "description_share"), (*OWN, *CONTEXT), "shipped"),
        "mention: + best one and two sentences": variant(
            (*OWN, "best_sentence_words", "best_two_sentences_words"), (*OWN, *CONTEXT), "shipped"),
    }
    for rule in ABOUT_RULES:
        out[f"about={rule}"] = variant(ABOUT_OWN, (*ABOUT_OWN, *CONTEXT), "about depth", rule)
        out[f"about={rule}, no floor, depth weighed"] = variant(ABOUT_OWN, (*ABOUT_OWN, *CONTEXT, "about_depth"),
                                                                "none", rule)
        out[f"about={rule}, cal"] = variant(ABOUT_OWN, (*ABOUT_OWN, *CONTEXT), "about depth", rule, calibrate=True)
    return out


def _macro(pairs: list[tuple[str, str]]) -> float:
    return ev.agreement(pairs, ev.QUALITIES)["macro_f1"]


def held_out(math: Sequence[ev.Turn], method: ev.Method) -> list[list[tuple[str, str]]]:
    """Per held-out MathQA turn (turn order), its (gold, predicted) teaching-quality pairs."""
    out = []
    for r in ev.records(math):
        labeller = method([t for t in math if t.record != r])
        for t in (t for t in math if t.record == r):
            got = labeller(t)
            out.append([(q, got.get(iu, ("not_mentioned", ""))[0]) for iu, q, _ in t.recorded])
    return out


def _confusions(turns: list[list[tuple[str, str]]]) -> np.ndarray:
    """One 3x3 confusion matrix (gold x predicted, :data:`QUALITIES` order) per turn."""
    at = {q: i for i, q in enumerate(ev.QUALITIES)}
    out = np.zeros((len(turns), 3, 3))
    for k, pairs in enumerate(turns):
        for g, p in pairs:
            out[k, at[g], at[p]] += 1
    return out


def _macro_of(conf: np.ndarray) -> np.ndarray:
    """Macro-F1 of confusion matrices (..., 3, 3); a class with no gold and no prediction scores 0."""
    tp = np.diagonal(conf, axis1=-2, axis2=-1)
    denom = conf.sum(-1) + conf.sum(-2)
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return f1.mean(-1)


def paired_interval(a: list[list[tuple[str, str]]], b: list[list[tuple[str, str]]]) -> tuple[float, float]:
    """2.5-97.5 % of macro-F1(a) - macro-F1(b) over resamples of turns (the same turns for both)."""
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, len(a), (RESAMPLES, len(a)))
    ca, cb = _confusions(a), _confusions(b)
    diffs = _macro_of(ca[idx].sum(1)) - _macro_of(cb[idx].sum(1))
    return round(float(np.percentile(diffs, 2.5)), 3), round(float(np.percentile(diffs, 97.5)), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    ref = ap.parse_args().reference
    print("protocol (fixed before measuring):")
    for k, v in PROTOCOL.items():
        print(f"  {k}: {v}")
    math_turns = ev.load_turns(str(ref / "examples" / "mathqa_structured_adaptive_novice.json"),
                               str(ref / "iu_cache" / "math.json"))
    expert = ev.load_turns(str(ref / "examples" / "expertqa_structured_adaptive_novice_001.json"),
                           str(ref / "iu_cache" / "expertqa.json"))
    rows: dict[str, dict] = {}
    base = None
    print(f"\n{'variant':<66} {'MathQA LORO':>11} {'gain [95 %]':>22} {'ExpertQA':>9} {'(well F1)':>9}")
    for name, method in variants().items():
        turns = held_out(math_turns, method)
        base = base or turns
        math_f1 = _macro([p for t in turns for p in t])
        tq = ev.score(expert, method(math_turns))["teaching_quality"]
        lo, hi = paired_interval(turns, base)
        rows[name] = {"math_loro": round(math_f1, 3), "gain": round(math_f1 - _macro([p for t in base for p in t]), 3),
                      "gain_interval": [lo, hi], "expert_check": round(tq["macro_f1"], 3),
                      "expert_well_explained_f1": round(tq["f1"]["well_explained"], 3)}
        r = rows[name]
        print(f"{name:<66} {r['math_loro']:>11.3f} {r['gain']:>+7.3f} [{lo:+.3f}, {hi:+.3f}] "
              f"{r['expert_check']:>9.3f} {r['expert_well_explained_f1']:>9.3f}")
    adopted = [n for n, r in rows.items() if n != "shipped" and r["gain_interval"][0] > 0]
    best = max(rows, key=lambda n: rows[n]["math_loro"])
    print(f"\nbest on MathQA LORO: {best} ({rows[best]['math_loro']:.3f}); adopted by the rule: {adopted or 'none'}")
    write_log("reader_variants", {"protocol": PROTOCOL, "variants": rows, "best_on_mathqa": best, "adopted": adopted},
              seeds=[SEED], split="MathQA: leave one recording out (math_003 / math_004), the choice; ExpertQA: "
                                  "expertqa_001 out of domain, a check only",
              extra={"resamples": RESAMPLES, "reference": "../shared/reference"})


if __name__ == "__main__":
    main()
