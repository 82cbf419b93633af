"""``run --question ID --level L --assistant ID …``: one stored simulation, printed turn by turn."""

from __future__ import annotations

import argparse
import sys

from typing import TYPE_CHECKING

from knowsim_core import services
from knowsim_core.engine.config import DEFAULT_EXTRACTOR, DEFAULT_PRESET, DEFAULT_USER, LEVELS, PRESETS
from knowsim_core.errors import ConfigError, ProviderError
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.engine.state import IUState

from knowsim_core.commands.runs import MAX_SEED, add_db_argument, int_in, open_store
from knowsim_core.text.tags import check_run_tag
from knowsim_core.vocab import MODE_LETTER_HEADER, EndReason

if TYPE_CHECKING:
    from knowsim_core.engine.records import RunRecord, TurnRecord
    from knowsim_core.storage import Store

# the counts column's letters are the failure modes' (the graph badge's, the replay's): R/P/E/O/U
STATE_LETTER_HEADER = "/".join(s.short for s in IUState)  # U/S/P/K: IUs per state after the turn
HEADER = (f"{'turn':>4}  {'load':>6}  {'tau':>3}  {'over':>4}  {'eta':>5}  {'up':>2}  {STATE_LETTER_HEADER:>9}  "
          f"{MODE_LETTER_HEADER:>9}  vote")
LEGEND = ", ".join(f"{m.letter} {m.title.lower()}" for m in FAILURE_ORDER)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = f"Columns: {STATE_LETTER_HEADER} IUs per state after the turn; {MODE_LETTER_HEADER} IUs per failure mode ({LEGEND})."
    p.add_argument("--question", metavar="ID", help="question id (a sample id such as sample_lava_lamps, or an imported one)")
    p.add_argument("--level", choices=LEVELS, help="the simulated learner's knowledge level")
    p.add_argument("--assistant", metavar="ID", help="assistant id, e.g. offline/adaptive or openai/gpt-4o-mini")
    p.add_argument("--user", default=DEFAULT_USER, metavar="ID", help=f"user simulator id (default {DEFAULT_USER})")
    p.add_argument("--extractor", default=DEFAULT_EXTRACTOR, metavar="ID", help=f"signal extractor id (default {DEFAULT_EXTRACTOR})")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=1, metavar="N", help="seed of the run (default 1)")
    p.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS), help="rule preset")
    p.add_argument("--max-turns", type=int_in(1, 1000), default=None, metavar="N", help="override the preset's max turns")
    p.add_argument("--stop-mode", choices=("virtual", "real"), default="virtual",
                   help="virtual: play all turns and record where the stop rule fired (paper); real: stop there")
    p.add_argument("--graph-version", type=int_in(1, 1_000_000), default=None, metavar="N",
                   help="simulate on version N of the question's IU graph (default: the newest)")
    p.add_argument("--tag", action="append", default=[], metavar="TAG",
                   help="file the run under TAG (repeat for more); Saved runs and `failures --tag TAG` filter by it")
    p.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted or failed run instead")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print the finished run as Studio JSON")


def format_turn(t: TurnRecord) -> str:
    q = t.quantities
    counts = t.state_after.counts()
    modes = t.mode_counts()
    mode_str = "/".join(str(modes.get(m, 0)) for m in FAILURE_ORDER)
    return (
        f"{t.turn:>4}  {q.effective_load:>6.2f}  {q.overload_threshold:>3}  {'yes' if q.overload else 'no':>4}  "
        f"{q.efficiency:>5.2f}  {q.n_upward_transitions:>2}  {'/'.join(str(counts[s]) for s in IUState):>9}  "
        f"{mode_str:>9}  {t.votes.fired or ''}"
    )


def format_summary(run: RunRecord, run_id: str, db: str) -> str:
    m = run.metrics()
    stop, reason = run.virtual_stop
    where = "none" if stop is None else f"after turn {stop + 1} ({reason})"
    return (
        f"stop: {run.stop_reason}; virtual early stop: {where}\n"
        f"KG {m.knowledge_gain}  DC {m.delivery_calibration:.4f}  CO {m.cognitive_overload:.4f}  ({m.turns} turns)\n"
        f"stored as run {run_id} in {db}"
    )


def graph_version_id(store: Store, question_id: str, number: int | None) -> int | None:
    """The id of version ``number`` of the question's graph (None: the newest, start_run's default)."""
    if number is None:
        return None
    versions = {v.version: v.id for v in store.questions.graph_versions(question_id)}
    if number not in versions:
        have = ", ".join(f"v{n}" for n in sorted(versions)) or "none"
        raise ConfigError(f"question {question_id} has no graph version {number} (it has {have}); "
                          "see the Graph editor's History")
    return versions[number]


def run(args: argparse.Namespace) -> int:
    runner = services.runner  # the runner, the agents and storage load here: `run --help` needs none of them
    for tag in args.tag:  # a bad tag is refused before anything is stored (no run left behind)
        check_run_tag(tag)
    store = open_store(args)
    if args.resume:
        live = runner.resume_run(store, args.resume, buffered=True)
    else:
        missing = [f"--{n}" for n in ("question", "level", "assistant") if not getattr(args, n)]
        if missing:
            raise ConfigError(f"run needs {', '.join(missing)} (or --resume RUN_ID)")
        runner.ensure_question(store, args.question)
        live = runner.start_run(
            store, question_id=args.question, level=args.level, assistant_id=args.assistant,
            user_id=args.user, extractor_id=args.extractor, seed=args.seed, preset=args.preset,
            max_turns=args.max_turns, stop_mode=args.stop_mode,
            graph_version_id=graph_version_id(store, args.question, args.graph_version), buffered=True,
        )
    if args.tag:
        store.runs.add_tags(live.run_id, args.tag)  # filed before it plays: an interrupted run is found too
    out = sys.stderr if args.json else sys.stdout
    r = live.run
    row = store.search.get_row(live.run_id)
    version = store.questions.graph_version_numbers([row.graph_version_id]).get(row.graph_version_id)
    tags = store.search.tags_of([live.run_id]).get(live.run_id, [])
    print(f"run {live.run_id}: {r.question_id} · graph v{version if version else '?'} · {r.level} · "
          f"{r.adapter.get('assistant')} · seed {r.seed}" + (f" · tags {', '.join(tags)}" if tags else ""), file=out)
    print(HEADER, file=out)
    for t in r.turns:  # already played (resume)
        print(format_turn(t), file=out)
    ending = services.play.play(live, on_turn=lambda t: print(format_turn(t), file=out, flush=True))
    if ending.reason == EndReason.PROVIDER_ERROR:  # stored failed, resumable: said in one line
        raise ProviderError(f"{ending.error} (run {live.run_id} is stored as failed; continue it with --resume "
                            f"{live.run_id})")
    final = live.run
    if args.json:
        print(final.to_json(indent=2))
    else:
        print(format_summary(final, live.run_id, str(store.path)))
    return 0
