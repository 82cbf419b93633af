"""``agreement [--db PATH] [--extractor ID] [--split PATH] [--simulated TAG[,TAG…]] [--json]``: how far
KnowSim's reading agrees with people, and whether that replicates.

Per judged turn (the people's 👍/👎; researchers' as their own series), pooled and within
conversations, each score in its stated direction beside the baselines; per rated conversation
(rating, correctness); across tutor-model pairs (the paper's sign agreement) — on the whole and on
two fixed parts, with the words "replicates" / "does not replicate". ``--simulated`` compares a
batch with the people cell by cell (the paper's validation). See
:mod:`knowsim_core.evaluation.agreement` and :mod:`knowsim_core.evaluation.simulated_agreement`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from knowsim_core import evaluation
from knowsim_core.commands.runs import add_db_argument, open_store
from knowsim_core.errors import ConfigError, StorageError
from knowsim_core.text.tags import check_batch_tag


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--extractor", metavar="ID", help="only readings made by this extractor (e.g. offline/lexical)")
    p.add_argument("--reading", choices=("stored", "learner-evidence"), default="stored",
                   help="stored: the readings as imported (default); learner-evidence: human conversations read "
                        "again with the learner's-own-words rules (offline extractors only)")
    p.add_argument("--part", choices=("A", "B"),
                   help="only the human conversations of this part (A: rules written on it, B: held out)")
    p.add_argument("--split", metavar="PATH",
                   help="name the two parts yourself: a text file listing part A's conversation keys "
                        "(problem_id:workerId) or run ids, one a line; every other conversation is part B "
                        "(default: the stated hash split)")
    p.add_argument("--simulated", metavar="TAG[,TAG…]",
                   help="compare these batches' simulated runs with the people, cell by cell (arm, level, tutor): "
                        "the paper's validation; the batch must play the people's questions, levels and tutors")
    p.add_argument("--cliffs-delta", type=float, metavar="D",
                   help="with --simulated: the least |Cliff's delta| of the people's ratings for a pair of conditions "
                        "to count (default 0.15, the paper's; 0.33 was the Studio's earlier 'medium' choice); the "
                        "result over 0.10-0.20 is shown beside it")
    add_db_argument(p)
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON (votes, conversations, pairs, parts, replication, plus the judged "
                        "turns and runs; simulated with --simulated)")


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    start = time.perf_counter()
    try:
        split = evaluation.agreement.load_split(args.split) if args.split else None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--split: {exc}") from exc
    tags = [t.strip() for t in (args.simulated or "").split(",") if t.strip()]
    if args.simulated is not None:
        if not tags:
            raise ConfigError("--simulated needs one or more batch tags (TAG[,TAG…]); `runs --batch TAG` lists them")
        for t in tags:  # before the bootstrap: a typo costs nothing
            check_batch_tag(t, what="--simulated")
    a = evaluation.agreement.collect(store, extractor=args.extractor, reading=args.reading, part=args.part,
                                     split=split)
    if not a.turns and not a.conversations and not a.unread:
        raise StorageError("nothing to compare: no judged turns and no rated human conversations in the database; "
                           "import some (python -m knowsim_core import ANNOTATIONS.json) or judge turns in Simulate")
    report = evaluation.agreement.to_json(a)
    if tags:
        simulated = evaluation.simulated_agreement
        if args.cliffs_delta is not None and not 0.0 <= args.cliffs_delta <= 1.0:
            raise ConfigError(f"--cliffs-delta must be between 0 and 1 (|Cliff's delta|), got {args.cliffs_delta}")
        report["simulated"] = simulated.validate(
            store, a, tags, simulated.PAPER_CLIFFS_MIN if args.cliffs_delta is None else args.cliffs_delta)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(render(report, elapsed))
    sys.stdout.flush()
    return 0


def _f(v: Any, digits: int = 2) -> str:
    return "-" if v is None else format(v, f".{digits}f")


def _ci(ci: list[float] | None) -> str:
    return "[-]" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _auc(e: dict[str, Any]) -> str:
    return f"{_f(e.get('auc')):>5} {_ci(e.get('ci')):<13}"


def render(s: dict[str, Any], elapsed: float) -> str:
    v, c, p, rep = s["votes"], s["conversations"], s["pairs"], s["replication"]
    pa, pb = s["parts"]["A"], s["parts"]["B"]
    out = [f"Judged turns: {v['n']} ({v['up']} 👍, {v['down']} 👎) by the people, in {v['conversations']} run(s); "
           f"the 👎 come from {v['down_from']['conversations']} conversation(s) and "
           f"{v['down_from']['tutors']} tutor(s)"
           + (f" ({', '.join(f'{k} {n}' for k, n in v['down_from']['by_tutor'].items())})" if v["down"] else ""),
           *([f"  not scored: {s['unread']['up']} 👍 / {s['unread']['down']} 👎 on {s['unread']['n']} conversation(s) "
              "without a reading (see below)"] if s["unread"]["n"] else []),
           f"  parts: {s['split']['note']}",
           "  score (stated direction)                     whole AUC  95% CI     | part A              "
           "| part B              | both parts"]
    for name, sc in v["scores"].items():
        label = f"{name} ({sc['direction']})"
        out.append(f"  {label:<44} {_auc(sc)} | {_auc(pa['votes']['scores'][name])} | "
                   f"{_auc(pb['votes']['scores'][name])} | {rep['scores'][name]['verdict']}")
    out.append("  within one conversation (👍/👎 pairs of the same conversation):")
    for name, w in s["within_conversation"].items():
        out.append(f"  {name:<44} {_auc(w)} | {_auc(pa['within_conversation'][name])} | "
                   f"{_auc(pb['within_conversation'][name])} | {rep['within_conversation'][name]['verdict']} "
                   f"({w['pairs']} pairs in {w['conversations']} conversations)")
    for b, where in rep["versus_baselines"].items():
        out.append(f"  knowsim vs {b}: whole {where['whole']}; A {where['A']}; B {where['B']}")
    out.append(f"  reading: {v['scores']['knowsim']['reading']}")
    r = v["researcher"]
    if r["n"]:
        out.append(f"Researchers' own thumbs (their own series, not in the figures above): {r['n']} ({r['up']} 👍, "
                   f"{r['down']} 👎); knowsim AUC {_auc(r['scores']['knowsim'])}")
    out.append("  failure mode rate     among 👍  among 👎")
    for mode, rr in v["modes"].items():
        out.append(f"  {mode:<20} {_f(rr['up']):>8}  {_f(rr['down']):>8}")
    out += render_disagreement(s.get("disagreement"))
    out.append(f"Conversations: {c['n']} with a reading ({c['rated']} rated)")
    out.append("  metric  vs rating: Spearman  Kendall  95% CI (rho)     n   vs correct: AUC  95% CI          n"
               "   both parts (rating / correct)")
    for m, rr in c["rating"].items():
        k = c["correctness"].get(m, {})
        out.append(f"  {m:<6}  {_f(rr['spearman']):>18}  {_f(rr['kendall']):>7}  {_ci(rr['ci']):<15}  {rr['n']:>3}"
                   f"   {_f(k.get('auc')):>15}  {_ci(k.get('ci')):<14}  {k.get('n', 0):>2}"
                   f"   {rep['rating'][m]['verdict']} / {rep['correctness'].get(m, {}).get('verdict', '-')}")
        out.append(f"          {rr['reading']}; correct: {k.get('reading', '-')}")
    u = s["unread"]
    out.append(f"Without a reading: {u['n']} conversation(s), {u['up']} 👍 / {u['down']} 👎, {u['rated']} "
               f"rated — {u['note']}")
    for x in u["conversations"]:
        out.append(f"  {x['conversation']} (part {x['part']}): {x['up']} 👍, {x['down']} 👎, rating "
                   f"{_f(x['rating'], 0)} — {x['reason']}")
    out.append(f"Tutor-model pairs within a level ({p['metric']}, |Cliff's δ| of ratings ≥ {p['cliffs_delta_min']}, "
               f"≥ {p['min_cell']} conversations per cell): {p['note']}; binomial p = {_f(p['p'], 3)}")
    out.append("  n per cell: " + ", ".join(f"{k} {n}" for k, n in p["cells"].items())
               + (f"; {p['unread_rated']} rated conversation(s) without a reading are in no cell (no KG)"
                  if p.get("unread_rated") else ""))
    if s["excluded"]:
        out.append("Left out: " + ", ".join(f"{n} {k}" for k, n in s["excluded"].items()))
    if "simulated" in s:
        out += render_simulated(s["simulated"])
    for r in s.get("reader", {}).values():
        out.append(r["text"])
        out.append(r["verdicts_rest_on"])
    out.append(f"(reading: {s['reading']}, conversations: {s['part']}; {s['notes']['ci']}; {s['notes']['chance']}; "
               f"computed in {elapsed:.1f} s)")
    return "\n".join(out)


def render_disagreement(d: dict[str, Any] | None) -> list[str]:
    """Where the reading and the people disagree: the call × thumb counts, and the pairs of a correct
    and a wrong answer that run against each metric's stated direction (the Agreement page's view)."""
    if not d:
        return []
    GOOD_DOWN, POOR_UP = evaluation.disagreement.GOOD_DOWN, evaluation.disagreement.POOR_UP
    t = d["turns"]
    out = [f"Where the reading and the people disagree ({t['n']} turns judged by the people; {d['note']}):",
           "  reading's call      👍     👎"]
    out += [f"  {call:<16} {row['up']:>4}   {row['down']:>4}" for call, row in t["table"].items()]
    out.append(f"  {t[GOOD_DOWN]} turn(s) called good got 👎; {t[POOR_UP]} called poor got 👍 "
               "(one row per turn and per IU under disagreement in --json)")
    pairs = [f"{m.upper()} {e['against']:g} of {e['pairs']}" for m, e in d["answers"].items()]
    if pairs:
        out.append("  pairs of a correct and a wrong answer against the metric's stated direction: " + ", ".join(pairs))
    return out


def render_simulated(sim: dict[str, Any]) -> list[str]:
    t = sim["threshold"]
    out = [f"Simulated batches {', '.join(sim['tags'])} against the people, {sim['people_cells']} cell(s) "
           f"(arm, level, tutor): sign agreement over condition pairs with |Cliff's δ| ≥ {t['cliffs_delta_min']} "
           f"({t.get('choice', '')}; ≥ {t['min_cell']} rated people per cell; one-sided binomial, conclusive with "
           f"≥ {t['min_pairs']} pairs and p < {t['alpha']}); Spearman over cell means z-normalised within each "
           f"(arm, level), pooled per task ({sim.get('spearman_note', '')})"]
    for user, e in sim["simulators"].items():
        head = f"  user simulator {user}: {e['matched_runs']} of {e['runs']} run(s) match a person"
        if "refused" in e:
            out.append(f"{head} — not compared: {e['refused']}")
            continue
        out.append(f"{head}; {e['people_without_a_run']} person(s) without a run, "
                   f"{e['people_without_concepts']} without concepts (cannot be played)")
        out.append("    cell                                         people  rating  correct  sim runs  "
                   + "  ".join(f"{m:>5}" for m in e["sign"]))
        for c in e["cells"]:
            name = f"{c['arm']} / {c['level']} / {c['condition']}"
            out.append(f"    {name:<44} {c['n_people']:>6}  {_f(c['rating']):>6}  {_f(c['correct']):>7}  {c['n_sim']:>8}  "
                       + "  ".join(f"{_f(c['sim'][m]):>5}" for m in e["sign"]))
        for m, sg in e["sign"].items():
            rho = e["spearman"][m]
            out.append(f"    {m} ({sim['directions'][m]}): sign {sg['note']}; Spearman vs rating "
                       f"{_f(rho['rating']['rho'])} (n = {rho['rating']['cells']} cells), vs correct "
                       f"{_f(rho['correct']['rho'])} (n = {rho['correct']['cells']})")
            sweep = e.get("sweep", {}).get(m, [])
            if sweep:
                out.append("      over |δ| " + ", ".join(
                    f"≥ {w['cliffs_delta_min']:g}: {w['agree']}/{w['n']} (p = {_f(w['p'], 3)})" for w in sweep))
    return out
