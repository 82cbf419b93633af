"""Honest evaluation of a signal extractor against recorded labels: in-sample *and* out of sample.

The only labelled conversations are the paper's recorded ones, and a labeller developed on them
scores better on them than on anything else. So every method here is a ``fit(train turns) ->
labeller`` and is scored two ways:

* **in-sample**: fitted on all recordings, scored on the same recordings (optimistic);
* **leave-one-recording-out (LORO)**: for each recording, fitted on the *other* recordings and
  scored on the held-out one; the held-out predictions of every fold are pooled into one
  confusion matrix (the honest estimate), and each fold is also reported on its own.

Baselines sit beside the extractor: the majority class of the training labels, and a plain
keyword-overlap rule (concept-name words in the reply => mentioned; a good share of the
description's words too => well explained; the user using the concept's words => an attempt).
Teaching quality *and* attempt type are reported, per class. Out of domain, :func:`out_of_domain`
scores methods fitted on one domain against hand-labelled turns of another (teaching quality only;
``benchmarks/extractor_eval.py --expert-labels tests/data/expert_tq_labels.json``). ``python -m knowsim_core relabel
RUNS --graphs CACHE --protocol loro`` and ``benchmarks/extractor_eval.py`` print these tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from knowsim_core.agents.lexical import (
    COEFFICIENTS, CONTEXT_FEATURES, RUBRIC_FEATURES, TQ_FEATURES, LexicalModel, label_turn, tq_features,
)
from knowsim_core.evaluation import statlibs
from knowsim_core.evaluation.scoring import agreement
from knowsim_core.formats.jsonio import read_json
from knowsim_core.formats.reference import iter_structured, load_iu_cache, load_run_file
from knowsim_core.errors import ConfigError, FormatError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.signals import AttemptType, TeachingQuality, normalize_entries
from knowsim_core.text.profiles import DEFAULT_RULES, content_stems, profiles_for, rules_applied

QUALITIES = tuple(q.value for q in TeachingQuality)
ATTEMPTS = tuple(a.value for a in AttemptType)

Labels = dict[str, tuple[str, str]]  # iu -> (teaching quality, attempt type)


@dataclass(frozen=True)
class Turn:
    """One recorded turn: the two messages the recorded extractor saw and its labels."""

    record: str
    turn: int
    graph: IUGraph
    user: str
    assistant: str
    prev_assistant: str
    recorded: tuple[tuple[str, str, str], ...]  # (iu, quality, attempt) in the recorded order


def load_turns(runs_path: str, graphs_path: str) -> list[Turn]:
    """Every labelled turn of a reference run file (baseline records carry no labels: skipped)."""
    graphs = load_iu_cache(graphs_path)
    out: list[Turn] = []
    for rec in iter_structured(load_run_file(runs_path)):
        pid = rec["problem_id"]
        if pid not in graphs:
            raise FormatError(f"{graphs_path} has no graph for {pid}; pass the IU cache of this run file")
        convo = rec.get("conversation") or []
        prev = ""
        for i, raw in enumerate(rec["iu_analysis_history"]):
            if 2 * i + 1 >= len(convo):
                break
            user, assistant = convo[2 * i][1], convo[2 * i + 1][1]
            recorded = tuple((s.id, s.teaching_quality, s.attempt.value) for s in normalize_entries(raw or []) if s.id)
            out.append(Turn(pid, i + 1, graphs[pid], user, assistant, prev, recorded))
            prev = assistant
    return out


def load_hand_labelled(labels_path: str, runs_path: str, graphs_path: str) -> list[Turn]:
    """The turns named in a hand-label file, their messages read from a run file of any kind.

    The file (e.g. ``tests/data/expert_tq_labels.json``) holds only ids and labels:
    ``{"labels": [[problem_id, turn, iu, teaching_quality], ...]}``, turn 1-based; the messages come
    from ``runs_path`` (baseline records too), the graphs from ``graphs_path``. Attempt types are not
    hand-labelled: they are ``None`` in :attr:`Turn.recorded` (use :func:`out_of_domain`).
    """
    data = read_json(labels_path)
    rows = data.get("labels") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise FormatError(f"{labels_path} is not a hand-label file "
                          f"(expected {{\"labels\": [[problem_id, turn, iu, label], ...]}})")
    graphs = load_iu_cache(graphs_path)
    convos = {r["problem_id"]: r.get("conversation") or [] for r in load_run_file(runs_path)}
    by_turn: dict[tuple[str, int], list[tuple[str, str, None]]] = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[1], int) and row[3] in QUALITIES):
            raise FormatError(f"{labels_path}: expected [problem_id, turn, iu, one of {QUALITIES}], got {row!r}")
        pid, turn, iu, quality = row
        if pid not in graphs or pid not in convos or iu not in graphs[pid].index.ids:
            raise FormatError(f"{labels_path}: {pid!r} / {iu!r} is not in {runs_path} and {graphs_path}")
        if turn < 1 or 2 * turn > len(convos[pid]):
            raise FormatError(f"{labels_path}: {pid} has no assistant reply at turn {turn}")
        by_turn.setdefault((pid, turn), []).append((iu, quality, None))
    out = []
    for (pid, turn), recorded in by_turn.items():
        convo = convos[pid]
        prev = convo[2 * turn - 3][1] if turn > 1 else ""
        out.append(Turn(pid, turn, graphs[pid], convo[2 * turn - 2][1], convo[2 * turn - 1][1], prev, tuple(recorded)))
    return out


Labeller = Callable[[Turn], Labels]
Method = Callable[[Sequence[Turn]], Labeller]  # fit on training turns -> labeller


def score(turns: Iterable[Turn], labeller: Labeller) -> dict[str, dict[str, Any]]:
    """Agreement (confusion, accuracy, per-class and macro F1) of ``labeller`` with the records."""
    tq, at = [], []
    for t in turns:
        got = labeller(t)
        for iu, q, a in t.recorded:
            pq, pa = got.get(iu, ("not_mentioned", "none"))
            tq.append((q, pq))
            at.append((a, pa))
    return {"teaching_quality": agreement(tq, QUALITIES), "user_attempt_type": agreement(at, ATTEMPTS)}


def records(turns: Sequence[Turn]) -> list[str]:
    return list(dict.fromkeys(t.record for t in turns))


def protocol(turns: Sequence[Turn], method: Method) -> dict[str, Any]:
    """``{"in_sample": stats, "loro": pooled held-out stats, "folds": {record: held-out stats}}``."""
    result: dict[str, Any] = {"in_sample": score(turns, method(turns)), "folds": {}}
    held_out: list[tuple[Turn, Labels]] = []
    for r in records(turns):
        train = [t for t in turns if t.record != r]
        test = [t for t in turns if t.record == r]
        if not train:
            continue
        labeller = method(train)
        preds = [(t, labeller(t)) for t in test]
        held_out += preds
        result["folds"][r] = score(test, _lookup(preds))
    result["loro"] = score([t for t, _ in held_out], _lookup(held_out)) if held_out else None
    return result


def _lookup(preds: list[tuple[Turn, Labels]]) -> Labeller:
    table = {id(t): labels for t, labels in preds}
    return lambda t: table[id(t)]


# --- baselines ---------------------------------------------------------------------------------

def majority(train: Sequence[Turn]) -> Labeller:
    """The most frequent training label of each kind, for every IU."""
    cq: dict[str, int] = {}
    ca: dict[str, int] = {}
    for t in train:
        for _, q, a in t.recorded:
            cq[q] = cq.get(q, 0) + 1
            ca[a] = ca.get(a, 0) + 1
    q, a = max(cq, key=cq.get), max(ca, key=ca.get)
    return lambda t: {n.id: (q, a) for n in t.graph.nodes}


KEYWORD_CONCEPT = 0.5  # share of the concept name's words that must appear (fixed, not fitted)
KEYWORD_DESCRIPTION = 0.3  # share of the description's words for "well explained"


def keyword(train: Sequence[Turn]) -> Labeller:
    """Keyword overlap with fixed shares (the training turns are not used), over the words the
    lexical labeller reads (:func:`~knowsim_core.text.profiles.content_stems`), so only the rule differs."""
    def label(t: Turn) -> Labels:
        reply, user = set(content_stems(t.assistant)), set(content_stems(t.user))
        out = {}
        for n in t.graph.nodes:
            concept, desc = set(content_stems(n.concept)), set(content_stems(n.description))
            share = len(concept & reply) / max(1, len(concept))
            q = "not_mentioned"
            if share >= KEYWORD_CONCEPT:
                q = "well_explained" if len(desc & reply) / max(1, len(desc)) >= KEYWORD_DESCRIPTION else "shallow"
            a = "none"
            if len(concept & user) / max(1, len(concept)) >= KEYWORD_CONCEPT:
                a = "articulation" if concept & user <= set(content_stems(t.prev_assistant)) else "reasoning"
            out[n.id] = (q, a)
        return out

    return label


# --- a small logistic regression (scikit-learn) ---------------------------------------------

def fit_logistic(rows: Sequence[Sequence[float]], ys: Sequence[int], *, l2: float = 1.0,
                 balanced: bool = True) -> tuple[float, ...]:
    """Weights (bias first) of an L2-penalised logistic regression; ``rows[i][0]`` is the constant
    1 of the bias, which is fitted as sklearn's intercept and not penalised.

    The objective is ``sum_i c_i · logloss_i + l2/2 · |w|²`` (sklearn's ``C = 1 / l2``);
    ``balanced`` weighs each class by ``n / (2 n_class)``: the target is macro-F1, where the rare
    class counts as much as the common one. Newton–Cholesky is sklearn's exact second-order solver
    for a few features; the tolerance makes the 4-decimal weights independent of the solver.

    A training set with one class (a leave-one-out fold can have no ``well_explained`` example)
    has no finite optimum — the unpenalised bias runs to ±∞ — and sklearn refuses it. It gets
    bias-only weights: every feature weight 0 and the bias the log-odds of the class rate with half
    a pseudo-count on each side, ``log((n₁ + ½) / (n₀ + ½))`` (all 10 positive: log 21 ≈ 3.04),
    so the model predicts that class everywhere with finite confidence.

    Raises:
        ConfigError: ``l2`` is not a positive finite number (``C = 1 / l2`` needs one).
    """
    if not 0.0 < l2 < math.inf:
        raise ConfigError(f"l2 must be a positive number (the penalty of C = 1/l2), got {l2!r}")
    ys = [int(y) for y in ys]
    if len(set(ys)) < 2:
        n1 = sum(1 for y in ys if y)
        bias = math.log((n1 + 0.5) / (len(ys) - n1 + 0.5))
        width = len(rows[0]) if rows else 1
        return (round(bias, 4) + 0.0, *([0.0] * (width - 1)))
    x = [list(r[1:]) for r in rows]
    model = statlibs.sklearn_linear_model.LogisticRegression(
        C=1.0 / l2, class_weight="balanced" if balanced else None, solver="newton-cholesky", tol=1e-10, max_iter=100)
    model.fit(x, list(ys))
    return tuple(round(float(v), 4) + 0.0 for v in (model.intercept_[0], *model.coef_[0]))


# --- the lexical labeller's logistic model ------------------------------------------------------

def _examples(turns: Sequence[Turn]):
    """Per recorded (turn, IU): the teaching-quality feature vector and the recorded quality."""
    for t in turns:
        ftq = tq_features(profiles_for(t.graph), t.assistant, t.user)
        for iu, q, _ in t.recorded:
            if iu in ftq:
                yield ftq[iu], q


def fit_model(turns: Sequence[Turn], *, drop: Iterable[str] = (), l2: float = 1.0):
    """A :class:`LexicalModel` fitted on ``turns``; features named in ``drop`` get weight 0, and so
    do the :data:`~knowsim_core.agents.lexical.CONTEXT_FEATURES` in the "mentioned?" model (an IU is
    mentioned on its own evidence, never because a neighbour is discussed) and the
    :data:`~knowsim_core.agents.lexical.RUBRIC_FEATURES` in both (read by the rubric's floor only)."""
    drop = set(drop) | set(RUBRIC_FEATURES)
    ex = list(_examples(turns))

    def fit(xs, ys, left_out=frozenset()):
        keep = [i for i, f in enumerate(TQ_FEATURES) if f not in drop and f not in left_out]
        w = fit_logistic([[x[i] for i in keep] for x in xs], ys, l2=l2)
        full = [0.0] * len(TQ_FEATURES)
        for i, v in zip(keep, w):
            full[i] = v
        return tuple(full)

    mentioned = [e for e in ex if e[1] != "not_mentioned"]
    return LexicalModel(
        mentioned=fit([e[0] for e in ex], [int(e[1] != "not_mentioned") for e in ex], frozenset(CONTEXT_FEATURES)),
        well=fit([e[0] for e in mentioned], [int(e[1] == "well_explained") for e in mentioned]),
    )


def model_labeller(model) -> Labeller:
    def label(t: Turn) -> Labels:
        return {s.id: (s.teaching_quality, s.attempt.value)
                for s in label_turn(t.graph, t.user, t.assistant, t.prev_assistant, model)}
    return label


def lexical(**options) -> Method:
    """The lexical labeller's model family: refitted on each training set (``options`` as in
    :func:`fit_model`)."""
    return lambda train: model_labeller(fit_model(train, **options))


def shipped(train: Sequence[Turn]) -> Labeller:
    """The shipped coefficients, whatever the training set (its LORO figure is not honest: the
    coefficients saw every recording; use :func:`lexical` for that)."""
    return model_labeller(COEFFICIENTS)


METHODS: dict[str, Method] = {"majority": majority, "keyword": keyword, "lexical": lexical()}


def out_of_domain(train: Sequence[Turn], test: Sequence[Turn],
                  methods: dict[str, Method] = METHODS) -> dict[str, dict[str, Any]]:
    """``{method: teaching-quality agreement}``: each method fitted on ``train`` (every recording of
    one domain) and scored on ``test`` (hand-labelled turns of another, e.g. :func:`load_hand_labelled`).
    The majority baseline predicts the training domain's majority class; "lexical" fitted on every
    MathQA recording is the shipped :data:`~knowsim_core.agents.lexical.COEFFICIENTS`."""
    return {name: score(test, method(train))["teaching_quality"] for name, method in methods.items()}


# --- ablation of the text rules of offline_text -------------------------------------------------

# Each entry flips one rule of offline_text relative to what ships: the first four put back the
# settings that had been fitted to the two recordings (and were removed), the last two drop the
# general rules that stayed. ``benchmarks/extractor_eval.py --ablation`` scores each flip.
OLD_MATH_FRAMING = frozenset("""mean means compute computing computed calculate calculating calculation evaluate
    evaluation form forming formula final result value values""".split())
OLD_SYNONYMS = {"pick": "choos", "select": "choos", "chos": "choos", "chosen": "choos", "product": "multipl",
                "multiply": "multipl", "times": "multipl", "sum": "add", "addition": "add", "plus": "add",
                "total": "add", "subtract": "minus", "differenc": "minus", "ratio": "divid", "division": "divid",
                "quotient": "divid", "chanc": "probabil", "likelihood": "probabil", "likely": "probabil"}
TEXT_RULES = ("+ on/off/exactly as content words", "+ fix -> constrain synonyms", "+ fraction -> decimal",
              "+ math framing words in META_WORDS", "- META_WORDS", "+ math SYNONYMS")


def flipped_rules(name: str) -> Any:
    """The shipped :class:`~knowsim_core.text.profiles.TextRules` with one of :data:`TEXT_RULES` flipped."""
    base = DEFAULT_RULES
    if name not in TEXT_RULES:
        raise ValueError(f"expected one of {TEXT_RULES}, got {name!r}")
    return [
        lambda: replace(base, stopwords=base.stopwords - {"on", "off", "exactly"}),
        lambda: replace(base, synonyms={**base.synonyms, "fix": "constrain", "forc": "constrain",
                                        "constraint": "constrain", "restrict": "constrain"}),
        lambda: replace(base, fractions_as_decimals=not base.fractions_as_decimals),
        lambda: replace(base, meta_words=base.meta_words | OLD_MATH_FRAMING),
        lambda: replace(base, meta_words=frozenset()),
        lambda: replace(base, synonyms={**base.synonyms, **OLD_SYNONYMS}),
    ][TEXT_RULES.index(name)]()


class text_rule_flipped:
    """Context manager: read text with one of :data:`TEXT_RULES` flipped (:func:`flipped_rules` under
    ``profiles.rules_applied``: no module global changes, and the caches are keyed by the rules)."""

    def __init__(self, name: str):
        self.rules = flipped_rules(name)
        self.name = name

    def __enter__(self):
        self._applied = rules_applied(self.rules)
        self._applied.__enter__()
        return self

    def __exit__(self, *exc):
        return self._applied.__exit__(*exc)
