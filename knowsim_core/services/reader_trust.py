"""How far a reading of real conversations can be trusted: the reader's validation by domain and graph size.

A reading of real conversations (people with LLM tutors) rests on the reader that labelled every
turn. The only reader checked against the paper's own LLM labels is ``offline/lexical``, and it was
checked on the paper's recordings with whole graphs (14–19 IUs) and with sub-graphs of 3–6 IUs
(``benchmarks/reader_sizes.py``, protocol in its log). :data:`VALIDATION` is that log's table: per
domain and graph size, the share of (turn, IU) pairs the reader called mentioned on the recordings,
the share the LLM's labels did, and the teaching-quality macro-F1 (MathQA leave one recording out;
ExpertQA out of domain). A test checks it equals ``benchmarks/logs/reader_sizes.json``.

:func:`validation` answers for a domain and a graph size; :func:`reading_note` turns a reading's
own mentioned share into one sentence set beside the validated range; :func:`verdict_basis` is the
sentence an agreement verdict carries about the reader it rests on. The validated range is the
LLM's mentioned share at that size ± :data:`MENTIONED_TOLERANCE` — the band within which the reader
met the LLM on the recordings; a reading outside it is outside what was checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

VALIDATED_READER = "offline/lexical"
MENTIONED_TOLERANCE = 0.10  # the stated target: within 10 points of the LLM's mentioned share
QUALITY_TARGET = 0.50  # teaching-quality macro-F1 the reader must reach to be validated for it
DOMAIN_NAMES = {"math": "MathQA", "expert": "ExpertQA"}
WHOLE = "whole"  # the recordings' whole graphs
WHOLE_SIZES = (14, 19)  # the recordings' graph sizes

# domain -> size key -> (reader's mentioned share, LLM's mentioned share, teaching-quality macro-F1)
# on the paper's recordings, from benchmarks/logs/reader_sizes.json (cells.lexical)
VALIDATION: dict[str, dict[str, tuple[float, float, float]]] = {
    "math": {"3": (0.509, 0.604, 0.472), "4": (0.503, 0.591, 0.458), "5": (0.513, 0.598, 0.456),
             "6": (0.498, 0.594, 0.446), "whole": (0.517, 0.595, 0.451)},
    "expert": {"3": (0.336, 0.316, 0.396), "4": (0.39, 0.315, 0.372), "5": (0.329, 0.312, 0.379),
               "6": (0.341, 0.321, 0.377), "whole": (0.347, 0.33, 0.392)},
}


@dataclass(frozen=True, slots=True)
class Validation:
    """The reader's check for one (domain, graph size), or why there is none."""

    reader: str
    domain: str
    size: str  # "3" … "6", "whole", or "" when not checked
    reader_share: float | None = None  # mentioned share the reader read on the recordings
    llm_share: float | None = None  # ... and the LLM's labels
    macro_f1: float | None = None
    why_not: str = ""  # non-empty: no check applies

    @property
    def checked(self) -> bool:
        return not self.why_not

    @property
    def range(self) -> tuple[float, float] | None:
        """The validated range of mentioned shares (the LLM's share ± the tolerance), None if unchecked."""
        if self.llm_share is None:
            return None
        return max(0.0, self.llm_share - MENTIONED_TOLERANCE), min(1.0, self.llm_share + MENTIONED_TOLERANCE)

    @property
    def mentioned_validated(self) -> bool:
        return (self.checked and self.reader_share is not None and self.llm_share is not None
                and abs(self.reader_share - self.llm_share) <= MENTIONED_TOLERANCE)

    @property
    def quality_validated(self) -> bool:
        return self.checked and self.macro_f1 is not None and self.macro_f1 >= QUALITY_TARGET

    def to_json(self) -> dict:
        return {"reader": self.reader, "domain": self.domain, "size": self.size, "checked": self.checked,
                "reader_share_on_recordings": self.reader_share, "llm_share_on_recordings": self.llm_share,
                "macro_f1": self.macro_f1, "validated_range": list(self.range) if self.range else None,
                "mentioned_validated": self.mentioned_validated, "quality_validated": self.quality_validated,
                "why_not": self.why_not}


def size_key(n_ius: int) -> str:
    """The checked size nearest a graph of ``n_ius`` IUs: 3–6 as such (smaller graphs as 3), the
    recordings' whole graphs for 14 IUs or more; "" for 7–13 (between what was checked)."""
    if n_ius <= 6:
        return str(max(3, n_ius))
    return WHOLE if n_ius >= WHOLE_SIZES[0] else ""


def validation(domain: str, n_ius: int, reader: str = VALIDATED_READER) -> Validation:
    """The check of ``reader`` on graphs of ``n_ius`` IUs of ``domain`` (``math`` / ``expert``)."""
    if reader != VALIDATED_READER:
        return Validation(reader, domain, "", why_not=f"{reader} was not checked against the paper's LLM labels")
    cells = VALIDATION.get(domain)
    if cells is None:
        return Validation(reader, domain, "", why_not=f"no recording of the {domain or 'unknown'} domain to check it on")
    key = size_key(n_ius)
    if not key:
        return Validation(reader, domain, "", why_not=f"checked on graphs of 3–6 and 14–19 IUs, not {n_ius}")
    r, llm, f1 = cells[key]
    return Validation(reader, domain, key, r, llm, f1)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _sizes(sizes: Iterable[int]) -> str:
    s = sorted(set(sizes))
    return "" if not s else str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}"


def typical_size(sizes: Iterable[int]) -> int:
    """The median graph size (the one a reading of several conversations is checked at)."""
    s = sorted(sizes)
    return s[len(s) // 2] if s else 0


def reading_note(reader: str, domain: str, sizes: Iterable[int], mentioned_share: float | None) -> dict:
    """``{"text": one sentence, "validation": Validation.to_json(), "mentioned_share", "inside_range"}``
    for a reading of real conversations: the reader's mentioned share there beside the range it was
    validated in for graphs of that size and domain."""
    sizes = list(sizes)
    v = validation(domain, typical_size(sizes), reader)
    where = f"{DOMAIN_NAMES.get(domain, domain or 'unknown domain')} graphs of {_sizes(sizes) or '?'} IUs"
    share = "no (turn, IU) pair read" if mentioned_share is None else f"{_pct(mentioned_share)} of (turn, IU) pairs read as mentioned"
    inside = None
    if not v.checked:
        text = f"Reader {reader}: {share} on {where}; not validated there ({v.why_not})."
    else:
        lo, hi = v.range  # type: ignore[misc]
        inside = mentioned_share is not None and lo <= mentioned_share <= hi
        size = "whole graphs (14–19 IUs)" if v.size == WHOLE else f"{v.size}-IU sub-graphs"
        text = (f"Reader {reader}: {share} on {where}. On the paper's {DOMAIN_NAMES[domain]} recordings cut to "
                f"{size} it read {_pct(v.reader_share)} where the paper's LLM read {_pct(v.llm_share)}: validated "
                f"range {_pct(lo)}–{_pct(hi)}, this reading is {'inside' if inside else 'outside'} it; "
                f"mentioned share {'validated' if v.mentioned_validated else 'not validated'}, teaching quality "
                f"{'validated' if v.quality_validated else 'not validated'} (macro-F1 {v.macro_f1:.2f}, "
                f"target {QUALITY_TARGET:.2f}).")
    return {"text": text, "validation": v.to_json(), "mentioned_share": mentioned_share, "inside_range": inside,
            "sizes": sorted(set(sizes))}


def verdict_basis(readers: Iterable[str], domain: str, sizes: Iterable[int]) -> str:
    """The sentence an agreement verdict carries: which reader it rests on and whether that reader is
    validated on graphs of that size and domain."""
    readers = sorted(set(readers)) or ["(none)"]
    sizes = list(sizes)
    parts = []
    for r in readers:
        v = validation(domain, typical_size(sizes), r)
        if not v.checked:
            parts.append(f"{r}, not validated there ({v.why_not})")
        elif v.mentioned_validated and v.quality_validated:
            parts.append(f"{r}, validated on {DOMAIN_NAMES[domain]} graphs of this size")
        else:
            what = ("its mentioned share is validated on graphs of this size, its teaching quality is not "
                    f"(macro-F1 {v.macro_f1:.2f} < {QUALITY_TARGET:.2f})" if v.mentioned_validated
                    else "not validated on graphs of this size")
            parts.append(f"{r}: {what}")
    return (f"These verdicts rest on the reader {'; '.join(parts)} — "
            f"{DOMAIN_NAMES.get(domain, domain or 'unknown domain')} graphs of {_sizes(sizes) or '?'} IUs.")


def runs_note(runs: Iterable) -> dict[str, dict]:
    """``{domain: reading_note(...)}`` over the read turns of ``runs`` (run records with a reading):
    per domain, the reader(s), the graphs' sizes and the share of (turn, IU) pairs read as mentioned."""
    by: dict[str, list] = {}
    for run in runs:
        by.setdefault(run.domain or "", []).append(run)
    out = {}
    for domain, rs in sorted(by.items()):
        pairs = sum(len(t.signals) for r in rs for t in r.turns)
        said = sum(1 for r in rs for t in r.turns for x in t.signals if x.mentioned)
        readers = sorted({r.adapter.get("extractor", "") for r in rs})
        note = reading_note(", ".join(readers), domain, [len(r.graph.nodes) for r in rs],
                            said / pairs if pairs else None)
        out[domain or "unknown"] = {**note, "readers": readers, "conversations": len(rs)}
    return out
