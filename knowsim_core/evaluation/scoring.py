"""One scoring module for every agreement the Studio reports (extractor labels, dialogue acts, …).

The arithmetic is scikit-learn's (the field's reference implementation); this module only fixes the
conventions the Studio's tables use and returns plain dicts that print and serialise as they are:
per-class F1 is 0 where a class is never predicted nor true (``zero_division=0``), and macro-F1 is
the unweighted mean over the classes asked for, whether or not they occur.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence


def classification(gold: Sequence[str], pred: Sequence[str], labels: Iterable[str]) -> dict[str, Any]:
    """Accuracy, macro-F1, per-class F1 and the confusion matrix (rows gold, columns predicted).

    Every pair counts toward accuracy and F1 (a prediction outside ``labels`` is a miss for its gold
    class); the matrix shows only the ``labels`` rows and columns.
    """
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score  # lazy: ~0.5 s to import

    labels = list(labels)
    gold, pred = list(gold), list(pred)
    if len(gold) != len(pred):
        raise ValueError(f"gold and predicted labels differ in length: {len(gold)} vs {len(pred)}")
    if not gold:
        return {"n": 0, "accuracy": 0.0, "macro_f1": 0.0, "f1": {c: 0.0 for c in labels},
                "matrix": {g: {p: 0 for p in labels} for g in labels}}
    if not labels:
        raise ValueError("at least one label is needed to score against")
    f1 = f1_score(gold, pred, labels=labels, average=None, zero_division=0)
    cm = confusion_matrix(gold, pred, labels=labels)
    return {
        "n": len(gold),
        "accuracy": float(accuracy_score(gold, pred)),
        "macro_f1": float(sum(f1) / len(labels)),
        "f1": {c: float(v) for c, v in zip(labels, f1)},
        "matrix": {g: {p: int(cm[i][j]) for j, p in enumerate(labels)} for i, g in enumerate(labels)},
    }


def agreement(pairs: Iterable[tuple[str, str]], classes: Sequence[str]) -> dict[str, Any]:
    """:func:`classification` of (recorded, predicted) pairs, over the pairs whose two labels are
    both among ``classes`` (recordings may hold values outside the rubric, spec §3.1: not scored)."""
    kept = [(g, p) for g, p in pairs if g in classes and p in classes]
    return classification([g for g, _ in kept], [p for _, p in kept], classes)
