"""Size of the one-file run replay (``export RUN --format html``) for every sample question.

Usage: ``.venv/bin/python benchmarks/replay_size.py [--turns N]``. Plays each sample with the
offline agents (novice learner, offline/comprehensive assistant, seed 1, up to ``--turns`` turns,
default the preset's 15) into a temporary database, exports the replay and prints its bytes, its
gzip size (what a mail attachment or web server would send) and the fixed part (script + style,
the same for every run); then one pair (novice vs advanced of the largest graph). Deterministic:
the same figures every time.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.evaluation.replay import replay_html  # noqa: E402
from knowsim_core.formats.replay_html import ASSETS  # noqa: E402
from knowsim_core.services.runner import start_run  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=None, help="turns per run (default: the preset's maximum)")
    args = ap.parse_args()
    fixed = sum(len((ASSETS / n).read_bytes()) for n in ("replay.html", "replay.css", "replay.js"))
    print(f"fixed part (template + script + style): {fixed:,} bytes")
    print(f"{'question':<34} {'IUs':>4} {'turns':>5} {'bytes':>9} {'gzip':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "size.db")
        store.questions.seed_samples()
        largest = (0, "")
        sizes: dict[str, dict[str, int]] = {}
        for q in store.questions.list():
            live = start_run(store, question_id=q.id, level="novice", assistant_id="offline/comprehensive", seed=1,
                             max_turns=args.turns)
            live.run_to_end()
            run = store.runs.load(live.run_id)
            page = replay_html(store, [live.run_id]).encode("utf-8")
            largest = max(largest, (len(run.graph.nodes), q.id))
            sizes[q.id] = {"ius": len(run.graph.nodes), "turns": len(run.turns), "bytes": len(page),
                           "gzip": len(gzip.compress(page))}
            print(f"{q.id:<34} {len(run.graph.nodes):>4} {len(run.turns):>5} {len(page):>9,} {len(gzip.compress(page)):>8,}")
        ids = []
        for level in ("novice", "advanced"):
            live = start_run(store, question_id=largest[1], level=level, assistant_id="offline/comprehensive", seed=1,
                             max_turns=args.turns)
            live.run_to_end()
            ids.append(live.run_id)
        page = replay_html(store, ids).encode("utf-8")
        print(f"pair novice vs advanced of {largest[1]}: {len(page):,} bytes, gzip {len(gzip.compress(page)):,}")
    kb = [v["bytes"] / 1000 for v in sizes.values()]
    gz = [v["gzip"] / 1000 for v in sizes.values()]
    write_log("replay_size", {
        "fixed_bytes": fixed, "per_question": sizes,
        "kb_min": min(kb), "kb_max": max(kb), "gzip_kb_min": min(gz), "gzip_kb_max": max(gz),
        "pair": {"question": largest[1], "kb": len(page) / 1000, "gzip_kb": len(gzip.compress(page)) / 1000},
    }, seeds=[1], split="every sample question; novice learner, offline/comprehensive, seed 1",
        extra={"turns": args.turns})
    return 0


if __name__ == "__main__":
    sys.exit(main())
