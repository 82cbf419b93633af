"""Time the Runs page with 10,000 stored runs and the Failure Modes page across 1,000 runs.

Timings are AppTest-timed: the wall time of ``AppTest.run()`` for the page script, i.e. the
server-side script run (queries, record loading, building the tables and plotly figures),
without the browser's drawing. Usage: ``.venv/bin/python benchmarks/pages.py [--runs 10000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.vocab import RunStatus  # noqa: E402
from tests.part2_support import make_run  # noqa: E402

LEVELS = ("novice", "intermediate", "advanced")
ASSISTANTS = ("offline/simple", "offline/adaptive", "offline/comprehensive", "offline/socratic")
QUESTIONS = ("sample_lava_lamps", "sample_follicular_lymphoma", "sample_herd_immunity", "sample_crispr_gene_editing")


def populate(store: Store, n: int) -> float:
    """n runs of 10 turns, varied over question × level × assistant (templates reused)."""
    templates = []
    for qi, q in enumerate(QUESTIONS):
        g = store.questions.latest_graph_version(q).graph
        for li, lv in enumerate(LEVELS):
            for ai, a in enumerate(ASSISTANTS):
                templates.append(make_run(g, question_id=q, level=lv, assistant_id=a, seed=qi * 100 + li * 10 + ai, max_turns=10))
    t0 = time.perf_counter()
    with store.transaction():
        for i in range(n):
            status = RunStatus.FAILED if i % 97 == 0 else RunStatus.FINISHED
            store.runs.save(templates[i % len(templates)], status=status)
    return time.perf_counter() - t0


def timed(at, repeat: int = 3) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        at.run()
        out.append(time.perf_counter() - t0)
        assert not at.exception, [e.value for e in at.exception]
    return out


def main() -> None:
    from streamlit.testing.v1 import AppTest

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--failure-runs", type=int, default=1_000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    big, small = tmp / "big.db", tmp / "small.db"
    for path, n in ((big, args.runs), (small, args.failure_runs)):
        s = Store(path)
        s.questions.seed_samples()
        print(f"stored {n} runs in {populate(s, n):.1f} s ({path.stat().st_size / 1e6:.0f} MB)")

    os.environ["KNOWSIM_DB"] = str(big)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=600)
    runs_first = timed(at, 1)[0]
    runs_warm = timed(at, 3)
    at.selectbox(key="runs_level").set_value("advanced")
    lvl = timed(at, 3)
    at.text_input(key="runs_text").set_value("answer 7")
    txt = timed(at, 3)
    at.toggle(key="runs_bad").set_value(True)
    bad = timed(at, 3)
    print(f"Runs page, {args.runs} runs: open (first script run) {runs_first * 1000:.0f} ms; rerun median "
          f"{statistics.median(runs_warm) * 1000:.0f} ms; level filter {statistics.median(lvl) * 1000:.0f} ms; "
          f"+ full-text search {statistics.median(txt) * 1000:.0f} ms; + failed/interrupted only "
          f"{statistics.median(bad) * 1000:.0f} ms")

    os.environ["KNOWSIM_DB"] = str(small)
    at = AppTest.from_file(str(ROOT / "pages" / "failures.py"), default_timeout=600)
    cold = timed(at, 1)[0]
    warm = timed(at, 3)
    print(f"Failure Modes page, {args.failure_runs} runs: first render (mode totals from the per-turn columns) {cold:.2f} s; "
          f"cached rerun median {statistics.median(warm) * 1000:.0f} ms")
    write_log("pages", {
        "runs_page": {"runs": args.runs, "open_ms": runs_first * 1000, "rerun_median_ms": statistics.median(runs_warm) * 1000,
                      "level_filter_ms": statistics.median(lvl) * 1000, "full_text_ms": statistics.median(txt) * 1000,
                      "failed_only_ms": statistics.median(bad) * 1000},
        "failures_page": {"runs": args.failure_runs, "first_render_s": cold, "cached_rerun_median_ms": statistics.median(warm) * 1000},
    }, split="synthetic runs: 48 templates (4 samples x 3 levels x 4 offline assistants), 10 turns each",
        extra={"timing": "AppTest.run() wall time (server-side script run, no browser drawing)"})


if __name__ == "__main__":
    main()
