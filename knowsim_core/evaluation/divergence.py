"""Why two runs differ: the first turn where their states part and the rule that parted them.

The update of one IU in one turn (spec §4.6–§4.10) is a chain: its teaching-quality label and its
prerequisite ceiling give the proposed state (§4.7–§4.8); the turn's load and η — with the hinge
share — scale the step (§4.4, §4.5, §4.9); the fraction carried in from the last turn is added.
For an IU whose result differs between runs A and B in a turn they entered in the same state,
:func:`diff_runs` walks that chain and names the first link that differs (:class:`Rule`): the
label, the ceiling, overload (η or the IU's hinge share; the labels that changed the load are the
turn's :attr:`TurnDiff.labels`), or the carry. Per turn it also lists which messages and which
labels differ, so a fork (another reply), a what-if (another label) and two levels (another start)
each read as what they are.

IUs are matched by id. Two runs of different questions share ids but not concepts: they are not
compared turn by turn (:attr:`RunDiff.notes` says so). Runs on two versions of one graph are
compared on the IUs both have; an IU only one has, a changed prerequisite list, another τ or other
rule parameters are named in the notes, since any of them can part the runs without a label.

Pure: reads two :class:`RunRecord`\\ s (their graphs, starting states, parameters and turn records).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Sequence

from knowsim_core.engine.graph import natural_key
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.engine.rules import NodeTurn
from knowsim_core.evaluation.explain import share
from knowsim_core.vocab import state_word


class Rule(StrEnum):
    """What made an IU's result differ in a turn, in the order the update applies them."""

    START = "start"  # the runs started with another state of the IU (level, seed, sampler)
    QUALITY = "teaching quality"  # its own label, so another proposed step (§4.8)
    CEILING = "prerequisite ceiling"  # its prerequisites stood apart, so another ceiling (§4.7)
    OVERLOAD = "overload"  # another η or hinge share: another dropoff (§4.4, §4.5, §4.9)
    CARRY = "carry"  # it entered with another carried fraction (§4.9)
    RULES = "rule parameters"  # the same inputs, other parameters
    APART = "already apart"  # it entered the turn in different states (a consequence, not a cause)


PRIORITY = (Rule.QUALITY, Rule.CEILING, Rule.OVERLOAD, Rule.CARRY, Rule.RULES)  # a turn's rule: the first present


@dataclass(frozen=True, slots=True)
class LabelDiff:
    """One label of one IU that differs in a turn: ``field`` is "teaching quality" or "user attempt"."""

    id: str
    field: str
    a: str
    b: str

    def text(self) -> str:
        return f"{self.id} {self.field} {self.a} in A, {self.b} in B"


@dataclass(frozen=True, slots=True)
class IUDivergence:
    """One IU whose state (``level``) or carried fraction differs after a turn, and why."""

    id: str
    rule: Rule
    pre: tuple[int, int]  # state entering the turn in A, B
    post: tuple[int, int]  # state after the turn in A, B
    carry: tuple[float, float]  # carry after the turn in A, B
    why: str
    since: int | None = None  # for a carry: the turn the carries first differed

    @property
    def level(self) -> bool:
        return self.post[0] != self.post[1]

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "rule": self.rule.value, "pre": list(self.pre), "post": list(self.post),
                "carry": [round(c, 4) for c in self.carry], "level": self.level, "why": self.why,
                **({"since": self.since} if self.since is not None else {})}


@dataclass(frozen=True, slots=True)
class TurnDiff:
    """One aligned turn of A and B: what differs in its inputs and which IUs came out apart."""

    turn: int
    messages: tuple[str, ...]  # "user" / "assistant": the messages that differ
    labels: tuple[LabelDiff, ...]
    load: tuple[float, float]
    eta: tuple[float, float]
    tau: tuple[int, int]
    ius: tuple[IUDivergence, ...]  # natural id order

    @property
    def new(self) -> tuple[IUDivergence, ...]:
        """The IUs parted in this turn (not those that entered it apart)."""
        return tuple(d for d in self.ius if d.rule is not Rule.APART)

    @property
    def parted(self) -> bool:
        """Some IU's state (not only its carry) came apart in this turn."""
        return any(d.level for d in self.new)

    @property
    def rule(self) -> Rule | None:
        """The turn's rule: the earliest in the update's chain among the IUs it parted."""
        rules = {d.rule for d in self.new if d.level} or {d.rule for d in self.new}
        return next((r for r in PRIORITY if r in rules), None)

    def summary(self) -> str:
        """One line: what differed going in and what came apart."""
        parts = []
        if self.messages:
            parts.append(" and ".join(self.messages) + " message differ" + ("" if len(self.messages) > 1 else "s"))
        if self.labels:
            shown = "; ".join(d.text() for d in self.labels[:3])
            parts.append(f"labels: {shown}" + (f" (+{len(self.labels) - 3} more)" if len(self.labels) > 3 else ""))
        if self.eta[0] != self.eta[1]:
            parts.append(f"η {share(self.eta[0])} in A, {share(self.eta[1])} in B (load {self.load[0]:.1f} / "
                         f"{self.load[1]:.1f}, τ {_pair(self.tau)})")
        new = self.new
        if new:
            parts.append("parted: " + ", ".join(f"{d.id} ({d.rule.value}{'' if d.level else ', carry only'})"
                                                for d in new))
        apart = len(self.ius) - len(new)
        if apart:
            parts.append(f"{apart} IU(s) already apart")
        return "; ".join(parts) or "no difference"

    def to_data(self) -> dict[str, Any]:
        return {"turn": self.turn, "rule": self.rule.value if self.rule else None, "messages": list(self.messages),
                "labels": [{"id": d.id, "field": d.field, "a": d.a, "b": d.b} for d in self.labels],
                "load": [round(x, 4) for x in self.load], "eta": [round(x, 4) for x in self.eta],
                "tau": list(self.tau), "ius": [d.to_data() for d in self.ius]}


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Why A and B differ: where they start apart, the first turn a state parts, and every turn."""

    a_id: str
    b_id: str
    comparable: bool
    notes: tuple[str, ...]  # what cannot be compared, or can part the runs without a label
    start: tuple[str, ...]  # IUs whose starting state differs
    turns: tuple[TurnDiff, ...]  # the aligned turns (1 .. the shorter run's length)
    extra: tuple[str, int]  # ("A" / "B", turns it has beyond the other); ("", 0) for equal lengths

    @property
    def first(self) -> TurnDiff | None:
        """The first turn where some IU's state came apart (not one that entered it apart)."""
        return next((t for t in self.turns if t.parted), None)

    @property
    def first_label(self) -> TurnDiff | None:
        return next((t for t in self.turns if t.labels), None)

    def headline(self) -> str:
        """The answer in one or two sentences."""
        if not self.comparable:
            return "Not compared turn by turn: " + "; ".join(self.notes)
        out = []
        if self.start:
            out.append(f"They start apart: {len(self.start)} IU(s) have another starting state "
                       f"({', '.join(self.start[:4])}{'…' if len(self.start) > 4 else ''}).")
        first = self.first
        if first is None:
            if self.turns and not self.start:
                tail = (" (labels differ from turn " + str(self.first_label.turn) + ", without moving a state)"
                        if self.first_label else "")
                out.append(f"Their states never part in the {len(self.turns)} turn(s) both have{tail}.")
            elif self.turns:
                out.append("Every IU that started alike stays alike.")
            said = next((t for t in self.turns if t.messages), None)
            if said is not None:
                out.append(f"The messages differ from turn {said.turn}.")
        else:
            rule = first.rule
            parted = [d for d in first.new if d.level]
            lead = next((d for d in parted if d.rule is rule), parted[0])
            more = f" ({len(parted) - 1} more IU(s) parted there)" if len(parted) > 1 else ""
            out.append(f"First divergence: turn {first.turn}, {rule.value if rule else '?'} — {lead.why}{more}.")
            if first.messages:
                out.append(f"The {' and '.join(first.messages)} "
                           f"{'messages differ' if len(first.messages) > 1 else 'message differs'} there.")
            early = self.first_label
            if early is not None and early.turn < first.turn:
                out.append(f"Labels first differ at turn {early.turn}.")
            if rule is Rule.OVERLOAD and first.labels:
                out.append("The load differs because of the labels: " + "; ".join(d.text() for d in first.labels[:3]) + ".")
        if self.extra[1]:
            out.append(f"{self.extra[0]} has {self.extra[1]} more turn(s).")
        return " ".join(out)

    def to_data(self) -> dict[str, Any]:
        first = self.first
        return {"a": self.a_id, "b": self.b_id, "comparable": self.comparable, "notes": list(self.notes),
                "start": list(self.start), "first_turn": first.turn if first else None,
                "first_rule": first.rule.value if first and first.rule else None,
                "headline": self.headline(), "extra": {"run": self.extra[0], "turns": self.extra[1]},
                "turns": [t.to_data() for t in self.turns]}


# ---------------------------------------------------------------------- the diff
def diff_runs(a: RunRecord, b: RunRecord) -> RunDiff:
    """Compare ``a`` and ``b`` turn by turn (see the module docstring)."""
    ids = (a.run_id or "A", b.run_id or "B")
    la, lb = len(a.turns), len(b.turns)
    extra = ("A", la - lb) if la > lb else ("B", lb - la) if lb > la else ("", 0)
    if a.question_id != b.question_id:
        note = (f"A is question {a.question_id}, B is question {b.question_id}: the same IU ids name other "
                "concepts, so only their metrics compare")
        return RunDiff(*ids, False, (note,), (), (), extra)
    common = [v for v in a.graph.index.ids if v in b.graph.index.label_of]
    notes = _notes(a, b, common)
    if not common:
        return RunDiff(*ids, False, notes or ("their graphs share no IU",), (), (), extra)
    start = tuple(v for v in sorted(common, key=natural_key)
                  if a.initial_state.state_of(a.graph.index.label_of[v]) != b.initial_state.state_of(b.graph.index.label_of[v]))
    turns, since = [], {}
    for ta, tb in zip(a.turns, b.turns):
        turn = _turn_diff(a, b, ta, tb, common, since)
        turns.append(turn)
    return RunDiff(*ids, True, notes, start, tuple(turns), extra)


def _notes(a: RunRecord, b: RunRecord, common: Sequence[str]) -> tuple[str, ...]:
    notes = []
    only_a = sorted(set(a.graph.index.ids) - set(common), key=natural_key)
    only_b = sorted(set(b.graph.index.ids) - set(common), key=natural_key)
    for side, only in (("A", only_a), ("B", only_b)):
        if only:
            notes.append(f"IUs only in {side}'s graph, not compared: {', '.join(only[:6])}{'…' if len(only) > 6 else ''}")
    pa, pb = a.graph.index.prereqs, b.graph.index.prereqs
    moved = [v for v in common if set(pa.get(v, ())) != set(pb.get(v, ()))]
    if moved:
        notes.append(f"prerequisites differ between the two graphs for {', '.join(sorted(moved, key=natural_key)[:6])}: "
                     "a ceiling can differ there without any label")
    if a.tau != b.tau:
        notes.append(f"capacity τ {a.tau} in A, {b.tau} in B (graphs of {len(a.graph.nodes)} and {len(b.graph.nodes)} "
                     "IUs): the same load overloads one and not the other")
    if a.params != b.params:
        notes.append(f"rule parameters differ (preset {a.params.preset} in A, {b.params.preset} in B): "
                     "a difference may come from the rules themselves")
    return tuple(notes)


def _pair(x: tuple[Any, Any]) -> str:
    return str(x[0]) if x[0] == x[1] else f"{x[0]} / {x[1]}"


def _labels(na: dict[str, NodeTurn], nb: dict[str, NodeTurn], common: Sequence[str]) -> tuple[LabelDiff, ...]:
    out = []
    for v in sorted(common, key=natural_key):
        x, y = na[v], nb[v]
        if (x.quality or "not_mentioned") != (y.quality or "not_mentioned"):
            out.append(LabelDiff(v, Rule.QUALITY.value, str(x.quality), str(y.quality)))
        if x.attempt != y.attempt:
            out.append(LabelDiff(v, "user attempt", x.attempt.value, y.attempt.value))
    return tuple(out)


def _moves(x: NodeTurn, y: NodeTurn) -> str:
    def one(n: NodeTurn) -> str:
        return f"{state_word(n.pre)} → {state_word(n.post)}" if n.post != n.pre else f"stayed {state_word(n.post)}"
    text = f"A {one(x)}, B {one(y)}"
    if x.post == y.post:
        text += f" (carry {share(x.carry)} in A, {share(y.carry)} in B)"
    return text


def _iu(v: str, x: NodeTurn, y: NodeTurn, ta: TurnRecord, tb: TurnRecord, same_params: bool) -> tuple[Rule, str]:
    """The first link of the update's chain that differs for IU ``v`` (entering in the same state)."""
    moves = _moves(x, y)
    if x.proposed != y.proposed:
        if (x.quality or "") != (y.quality or ""):
            cap = (f"; its prerequisites also capped it at {state_word(x.ceiling)} in A, {state_word(y.ceiling)} in B"
                   if x.ceiling != y.ceiling else "")
            return Rule.QUALITY, f"{v} was labelled {x.quality} in A, {y.quality} in B{cap}: {moves}"
        if x.ceiling != y.ceiling:
            return Rule.CEILING, (f"{v}'s prerequisites capped it at {state_word(x.ceiling)} in A, "
                                  f"{state_word(y.ceiling)} in B (same label {x.quality}): {moves}")
    if x.efficiency != y.efficiency or x.prior_carry != y.prior_carry:
        qa, qb = ta.quantities, tb.quantities
        ea = x.efficiency if x.efficiency is not None else qa.efficiency
        eb = y.efficiency if y.efficiency is not None else qb.efficiency
        loads = (f"load {qa.effective_load:.1f} vs τ {qa.overload_threshold} in A, {qb.effective_load:.1f} vs τ "
                 f"{qb.overload_threshold} in B")
        carried = f"{share(x.prior_carry)} of a step carried in A, {share(y.prior_carry)} in B"
        if _dropoff_rule(x, y) is Rule.CARRY:
            also = f" (η gave it {share(ea)} and {share(eb)})" if ea != eb else ""
            return Rule.CARRY, f"{v} entered with {carried}{also}: {moves}"
        also = f"; it also entered with {carried}" if x.prior_carry != y.prior_carry else ""
        return Rule.OVERLOAD, f"{v} got {share(ea)} of a step in A, {share(eb)} in B ({loads}){also}: {moves}"
    if not same_params:
        return Rule.RULES, f"{v}: same label, ceiling, η and carry, other rule parameters: {moves}"
    return Rule.RULES, f"{v}: {moves}"


def _dropoff_rule(x: NodeTurn, y: NodeTurn) -> Rule:
    """Overload or carry, for an IU proposed the same step in A and B whose dropoff came out apart
    (§4.9: total = carry in + step × share; it rises by the whole part of the total).

    Where both the share and the carry differ, the one that alone changes A's rise is named (the
    carry when only it does; overload otherwise)."""
    if x.efficiency is None or y.efficiency is None or x.prior_carry == y.prior_carry:
        return Rule.OVERLOAD  # η 1 on one side (no dropoff), or the same carry: the share decided
    if x.efficiency == y.efficiency:
        return Rule.CARRY
    step = int(x.proposed) - int(x.pre)
    rise = int(x.prior_carry + step * x.efficiency)
    carry_alone = int(y.prior_carry + step * x.efficiency) != rise
    share_alone = int(x.prior_carry + step * y.efficiency) != rise
    return Rule.CARRY if carry_alone and not share_alone else Rule.OVERLOAD


def _turn_diff(a: RunRecord, b: RunRecord, ta: TurnRecord, tb: TurnRecord, common: Sequence[str],
               since: dict[str, tuple[int, Rule]]) -> TurnDiff:
    """One aligned turn; ``since`` (IU → (turn, rule)) remembers where a carry-only difference began."""
    na, nb = {n.id: n for n in ta.nodes}, {n.id: n for n in tb.nodes}
    out = []
    for v in sorted(common, key=natural_key):
        x, y = na.get(v), nb.get(v)
        if x is None or y is None:
            continue
        if x.post == y.post and x.carry == y.carry:
            since.pop(v, None)
            continue
        if x.pre != y.pre:
            why = f"{v} entered turn {ta.turn} {state_word(x.pre)} in A, {state_word(y.pre)} in B: {_moves(x, y)}"
            out.append(IUDivergence(v, Rule.APART, (int(x.pre), int(y.pre)), (int(x.post), int(y.post)),
                                    (x.carry, y.carry), why))
            since.pop(v, None)
            continue
        rule, why = _iu(v, x, y, ta, tb, a.params == b.params)
        origin = since.get(v) if rule is Rule.CARRY else None
        if origin is not None and origin[0] < ta.turn:
            why += f" — the carries have differed since turn {origin[0]} ({origin[1].value} there)"
        out.append(IUDivergence(v, rule, (int(x.pre), int(y.pre)), (int(x.post), int(y.post)), (x.carry, y.carry),
                                why, since=origin[0] if origin else None))
        if x.post == y.post:
            since.setdefault(v, (ta.turn, rule))  # only the carry differs: remember where that began
        else:
            since.pop(v, None)
    messages = tuple(side for side, p, q in (("user", ta.user_message, tb.user_message),
                                             ("assistant", ta.assistant_message, tb.assistant_message)) if p != q)
    qa, qb = ta.quantities, tb.quantities
    return TurnDiff(ta.turn, messages, _labels(na, nb, [v for v in common if v in na and v in nb]),
                    (qa.effective_load, qb.effective_load), (qa.efficiency, qb.efficiency),
                    (qa.overload_threshold, qb.overload_threshold), tuple(out))
