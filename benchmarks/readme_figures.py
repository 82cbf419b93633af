"""Every deterministic figure the README quotes, regenerated as JSON: the extractor table (in-sample
and leave-one-recording-out), the dialogue-act tagger table and the turn-level realism table —
printed and written to ``benchmarks/logs/readme_figures.json`` (``benchmarks/_log.py``).

Every figure the README and the documentation pages (``docs/**/*.md``) quote from a benchmark comes
through a marker placed just before the number: ``<!--fig:LOG:KEY-->0.63`` is figure ``KEY``
(dotted path) of ``benchmarks/logs/LOG.json``, printed with the decimals (and thousands commas)
written in the page. ``--write-readme`` rewrites every marked number of every page from the logs;
tests/test_readme_figures.py fails on any marked number that differs from its log, on a marker whose
log or key does not exist, and on this script's log when it differs from what the script computes
now (so a change that moves a figure fails until the log and the pages say so).

Usage: ``python benchmarks/readme_figures.py [--only extractor,acts,realism] [--no-log]``
(needs ../shared); ``python benchmarks/readme_figures.py --write-readme`` (no computing: the
marked numbers from the logs as they are).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks._log import LOG_DIR, figure, read_log, write_log  # noqa: E402

SHARED = ROOT.parent / "shared"
REFERENCE = SHARED / "reference"
ANNOTATIONS = SHARED / "realworld" / "simulatorarena_math" / "math_tutoring_annotations_redacted_for_benchmarking.json"
ACT_LABELS = ROOT / "tests" / "data" / "act_labels.json"
KINDS = ("teaching_quality", "user_attempt_type")


def _f1s(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: {"macro_f1": round(stats[k]["macro_f1"], 3),
                "per_class": {c: round(v, 3) for c, v in stats[k]["f1"].items()}} for k in KINDS}


def extractor() -> dict[str, Any]:
    """Macro-F1 of teaching quality and attempt type, in-sample and leave-one-recording-out (pooled
    and per held-out recording), for the lexical extractor refitted per fold and its baselines."""
    from knowsim_core.evaluation import extractor_eval as ev

    turns = ev.load_turns(str(REFERENCE / "examples" / "mathqa_structured_adaptive_novice.json"),
                          str(REFERENCE / "iu_cache" / "math.json"))
    out = {}
    for name, method in ev.METHODS.items():
        res = ev.protocol(turns, method)
        out[name] = {"in_sample": _f1s(res["in_sample"]), "loro": _f1s(res["loro"]),
                     "folds": {r: _f1s(s) for r, s in res["folds"].items()}}
    return out


def acts() -> dict[str, Any]:
    """The offline act tagger on our hand labels: macro-F1, accuracy and the majority baseline."""
    from knowsim_core.evaluation import acts as a

    parts = a.labelled_parts(json.loads(ACT_LABELS.read_text()), json.loads(ANNOTATIONS.read_text()))
    return {part: {"turns": len(gold), "macro_f1": round(a.macro_f1(gold, pred), 3),
                   "accuracy": round(a.accuracy(gold, pred), 3),
                   "majority_macro_f1": round(a.macro_f1(gold, [a.MATH_ANSWER] * len(gold)), 3)}
            for part, (gold, pred) in parts.items()}


def realism() -> dict[str, Any]:
    """The realism headline (sampled start: summary, by level and by half) of the default users on
    the 25 shared conversations, and the hindsight (file start) summary and halves beside it."""
    from knowsim_core.agents import registry
    from knowsim_core.evaluation.realism import DEFAULT_USERS, headline
    from knowsim_core.services.importing import import_path
    from knowsim_core.storage import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "figures.db")
        report = import_path(store, ANNOTATIONS)
        runs = [store.runs.load(rid) for rid in report.runs]
    result = headline(runs, {uid: registry.resolve("user", uid) for uid in DEFAULT_USERS})
    return {"summary": result["summary"], "by_level": result["by_level"], "by_split": result["by_split"],
            "attempts": {u: {"agreement": a["agreement"], "recall": a["recall"]} for u, a in result["attempts"].items()},
            "hindsight": {k: result["hindsight"][k] for k in ("summary", "by_split")}}


SECTIONS = {"extractor": extractor, "acts": acts, "realism": realism}


def figures(only: tuple[str, ...] = tuple(SECTIONS)) -> dict[str, Any]:
    return {name: SECTIONS[name]() for name in only}


# ---------------------------------------------------------------------- README and docs markers
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> list[Path]:
    """Every page whose marked figures are kept equal to the logs: the README and the docs' pages."""
    return [README, *sorted(DOCS.rglob("*.md"))]
# A negative figure may be written with the typographic minus (U+2212) as prose does, or with "-".
MINUS = "\u2212"
MARKER = re.compile(r"<!--fig:(?P<log>[\w-]+):(?P<key>[\w.\-/]+)-->(?P<value>[-\u2212]?\d+(?:,\d{3})*(?:\.\d+)?)")


def formatted(value: Any, like: str) -> str:
    """``value`` printed as ``like`` is: its decimals, with thousands commas if it has any, and a
    negative value with the minus sign ``like`` uses (U+2212 when ``like`` has it, else "-")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"not a number: {value!r}")
    decimals = len(like.partition(".")[2])
    text = f"{value:,.{decimals}f}" if "," in like else f"{value:.{decimals}f}"
    return text.replace("-", MINUS) if like.startswith(MINUS) else text


def marked(text: str, log_dir: Path = LOG_DIR) -> list[tuple[str, str, str, str | None]]:
    """Each marker of ``text``: (log, key, the number written, the number its log gives — or None
    with the reason in the key's place when the log or the key is missing)."""
    logs: dict[str, Any] = {}
    out = []
    for m in MARKER.finditer(text):
        name, key, written = m["log"], m["key"], m["value"]
        try:
            if name not in logs:
                logs[name] = read_log(name, log_dir)
            out.append((name, key, written, formatted(figure(logs[name], key), written)))
        except (FileNotFoundError, KeyError, IndexError, ValueError, TypeError):
            out.append((name, key, written, None))
    return out


def drifts(text: str, log_dir: Path = LOG_DIR) -> list[str]:
    """Every marked number that differs from its log, or whose log/key is missing (one line each)."""
    problems = []
    for name, key, written, logged in marked(text, log_dir):
        if logged is None:
            problems.append(f"{name}:{key}: README says {written}, but the log has no such figure")
        elif logged != written:
            problems.append(f"{name}:{key}: README says {written}, the log says {logged}")
    return problems


def rewrite(text: str, log_dir: Path = LOG_DIR) -> str:
    """``text`` with every marked number replaced by its log's (a missing figure is left as it is)."""
    logs: dict[str, Any] = {}

    def one(m: re.Match) -> str:
        try:
            if m["log"] not in logs:
                logs[m["log"]] = read_log(m["log"], log_dir)
            value = formatted(figure(logs[m["log"]], m["key"]), m["value"])
        except (FileNotFoundError, KeyError, IndexError, ValueError, TypeError):
            return m[0]
        return m[0][: m.start("value") - m.start()] + value

    return MARKER.sub(one, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    ap.add_argument("--no-log", action="store_true", help="print only; do not write benchmarks/logs/readme_figures.json")
    ap.add_argument("--write-readme", action="store_true",
                    help="rewrite the marked numbers of README.md and docs/**/*.md from the logs (computes nothing)")
    args = ap.parse_args()
    if args.write_readme:
        for page in documents():
            text = page.read_text(encoding="utf-8")
            new = rewrite(text)
            if new != text:
                page.write_text(new, encoding="utf-8")
            left = drifts(new)
            print(f"{page.relative_to(ROOT)}: {sum(a != b for a, b in zip(text.splitlines(), new.splitlines()))} lines "
                  f"rewritten; {len(MARKER.findall(new))} marked figures" + (f"; not in any log: {left}" if left else ""))
        return
    only = tuple(s for s in args.only.split(",") if s)
    result = figures(only)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if not args.no_log:
        if only != tuple(SECTIONS):
            raise SystemExit("--only prints a part; the log holds every section (use --no-log with --only)")
        write_log("readme_figures", result, seeds=None,
                  split="extractor: in-sample and leave-one-recording-out over the two shared MathQA recordings; "
                        "acts: even/odd/second-problem parts of tests/data/act_labels.json; "
                        "realism: development/held-out halves of the 25 shared conversations")


if __name__ == "__main__":
    main()
