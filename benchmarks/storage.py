"""Storage speed: append one turn, save a 15-turn run, list, filter, group and search 10,000 runs,
claim a batch cell.

Every figure goes through the public :class:`Store` API with a fresh connection per call (as the
app uses it) on a real file in a temporary folder, with the Studio's own settings (WAL,
``synchronous=NORMAL``: a commit survives a crash of the process, not necessarily a power cut).

The 10,000-run database is built with ``save_run`` inside one ``Store.transaction()`` from a
pool of real offline runs (every sample question × every offline assistant), shortened to
``BULK_TURNS`` turns each so the build stays well under two minutes (a 15-turn run is
~140 KB of JSON, ~35 KB as stored; 10,000 of them would be ~350 MB).

Run: .venv/bin/python benchmarks/storage.py (writes ``benchmarks/logs/storage.json``)
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._log import write_log  # noqa: E402
from knowsim_core.agents import registry  # noqa: E402
from knowsim_core.services.runner import start_run  # noqa: E402
from knowsim_core.formats.samples import load_samples  # noqa: E402
from knowsim_core.storage import Store  # noqa: E402
from knowsim_core.storage.run_filter import RunFilter  # noqa: E402

N_RUNS = 10_000
BULK_TURNS = 2
CHUNK = 500  # runs per transaction while building (keeps the WAL small)
APPENDS = 60
SAVES = 20
REPEATS = 5


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def timed(fn, repeats: int = REPEATS) -> float:
    """Median wall time of ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    fig: dict = {}  # what the README may quote, in ms (medians) and KB; written to benchmarks/logs/storage.json
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        store.questions.seed_samples()
        full = start_run(store, question_id="sample_lava_lamps", level="novice", assistant_id="offline/adaptive").run_to_end()
        with closing(sqlite3.connect(store.path)) as conn:
            stored = conn.execute(
                "SELECT (SELECT length(setup_json) FROM runs WHERE id = ?) "
                "+ (SELECT sum(length(record_json)) FROM turns WHERE run_id = ?)", [full.run_id, full.run_id]
            ).fetchone()[0]
        print(f"one {len(full.turns)}-turn run: {len(full.to_json()) / 1024:.0f} KB of JSON, "
              f"stored in {stored / 1024:.0f} KB (compressed records)")
        json_bytes = len(full.to_json())
        fig["one_run"] = {"turns": len(full.turns), "json_kb": round(json_bytes / 1024, 1),
                          "stored_kb": round(stored / 1024, 1), "stored_share_pct": round(100 * stored / json_bytes, 1)}

        # append one turn: a run kept open, its turns appended one transaction each
        per_append = []
        for k in range(APPENDS // len(full.turns)):
            rid = store.runs.create(replace(full, turns=(), run_id=None, stop_reason=None))
            for turn in full.turns:
                t = time.perf_counter()
                store.runs.append_turn(rid, turn)
                per_append.append(time.perf_counter() - t)
        print(f"append one turn (own transaction)    {ms(statistics.median(per_append))}   "
              f"(p90 {ms(sorted(per_append)[int(0.9 * len(per_append))]).strip()}, n={len(per_append)})")

        fig["append_turn_ms"] = {"median": round(1000 * statistics.median(per_append), 2),
                                 "p90": round(1000 * sorted(per_append)[int(0.9 * len(per_append))], 2),
                                 "n": len(per_append)}
        saves = [timed(lambda: store.runs.save(replace(full, run_id=None)), 1) for _ in range(SAVES)]
        fig["save_run_ms"] = round(1000 * statistics.median(saves), 2)
        print(f"save a 15-turn run (one transaction) {ms(statistics.median(saves))}   (n={SAVES})")

        t = time.perf_counter()
        pool = [
            start_run(store, question_id=s.id, level="novice", assistant_id=a.id, max_turns=BULK_TURNS).run_to_end()
            for s in load_samples() for a in registry.available("assistant")
        ]
        missing = N_RUNS - store.search.count()
        for start in range(0, missing, CHUNK):
            with store.transaction():
                for i in range(start, min(missing, start + CHUNK)):
                    # every other run belongs to one of ten batches (what the batch views group by)
                    store.runs.save(replace(pool[i % len(pool)], run_id=None),
                                   batch_tag=f"sweep-{i % 10}" if i % 2 else None)
        build = time.perf_counter() - t
        size = (Path(tmp) / "bench.db").stat().st_size / 1e6
        print(f"built {store.search.count():,} runs ({BULK_TURNS} turns each, {size:.0f} MB) in {build:.1f} s")
        fig["bulk"] = {"runs": store.search.count(), "turns_each": BULK_TURNS, "mb": round(size, 1),
                       "build_s": round(build, 1)}
        q = fig["queries_ms"] = {}

        print(f"count all runs                       {ms(timed(lambda: store.search.count()))}")
        print(f"list first page (200 runs)           {ms(timed(lambda: store.search.list(limit=200)))}")
        rows = store.search.list(limit=N_RUNS + 100)
        assert len(rows) >= N_RUNS
        print(f"list all {len(rows):,} runs                 {ms(timed(lambda: store.search.list(limit=N_RUNS + 100)))}")
        print(f"filter (question+assistant), page    {ms(timed(lambda: store.search.list(RunFilter(question_id='sample_lava_lamps', assistant='offline/oracle'))))}")
        for word in ("guide", "lamps", "vaccinating herd", "zzyzx"):
            n = store.search.count(RunFilter(text=word))
            page = timed(lambda: store.search.list(RunFilter(text=word), limit=200))
            count = timed(lambda: store.search.count(RunFilter(text=word)))
            print(f"search {word!r:18} {n:>6,} runs  count {ms(count).strip():>9}, first page {ms(page).strip():>9}")
        for frag in ("comprehensive", "sweep-3", "zzyzx"):
            n = store.search.count(RunFilter(find=frag))
            page = timed(lambda: store.search.list(RunFilter(find=frag), limit=200))
            print(f"find in ids {frag!r:15} {n:>6,} runs  count {ms(timed(lambda: store.search.count(RunFilter(find=frag)))).strip():>9}, "
                  f"first page {ms(page).strip():>9}")
        print(f"distinct assistants (a dropdown)     {ms(timed(lambda: store.search.values('assistant')))}")
        print(f"batch groups (10 batches)            {ms(timed(lambda: store.search.batch_groups()))}")
        print(f"Home's recent entries (batches folded) {ms(timed(lambda: store.search.recent(8))).strip():>7}")
        print(f"load one 15-turn run                 {ms(timed(lambda: store.runs.load(full.run_id)))}")
        for name, fn in (("count_all", lambda: store.search.count()), ("first_page", lambda: store.search.list(limit=200)),
                         ("list_all", lambda: store.search.list(limit=N_RUNS + 100)),
                         ("filter_page", lambda: store.search.list(RunFilter(question_id="sample_lava_lamps", assistant="offline/oracle"))),
                         ("search_page_lamps", lambda: store.search.list(RunFilter(text="lamps"), limit=200)),
                         ("find_page_sweep", lambda: store.search.list(RunFilter(find="sweep-3"), limit=200)),
                         ("batch_groups", lambda: store.search.batch_groups()), ("recent_entries", lambda: store.search.recent(8)),
                         ("load_run", lambda: store.runs.load(full.run_id))):
            q[name] = round(1000 * timed(fn), 2)

        # claiming a batch cell (one per conversation, under the write lock) in a batch of 5,000
        # runs: with the cell index (migration 0009), then with it dropped (what it replaced)
        with closing(sqlite3.connect(store.path)) as conn, conn:
            conn.execute("UPDATE runs SET batch_tag = 'big' WHERE batch_tag IS NULL")
            big = conn.execute("SELECT COUNT(*) FROM runs WHERE batch_tag = 'big'").fetchone()[0]
        key = ["sample_lava_lamps", "novice", "offline/oracle", "offline/knowsim", "offline/knowsim", "paper-final", 999]

        def claim() -> None:
            store.cells.claim("big", 0, key)
            store.cells.release("big", 0)

        with_index = timed(claim, 20)
        with closing(sqlite3.connect(store.path)) as conn, conn:
            conn.execute("DROP INDEX runs_batch_cell")
        without = timed(claim, 20)
        print(f"claim + release a cell ({big:,}-run batch) {ms(with_index)}   (without the cell index {ms(without).strip()})")
        fig["claim_cell_ms"] = {"batch_runs": big, "with_index": round(1000 * with_index, 3),
                                "without_index": round(1000 * without, 3)}
    write_log("storage", fig, seeds=None,
              split=f"sample_lava_lamps x offline/adaptive x novice (one full run); {N_RUNS:,} runs built from every "
                    f"sample x offline assistant, {BULK_TURNS} turns each",
              extra={"appends": APPENDS, "saves": SAVES, "repeats": REPEATS, "timer": "time.perf_counter, medians"})


if __name__ == "__main__":
    main()
