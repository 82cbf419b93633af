"""What-if: a run's labels edited, or the run re-played on another version of its IU graph.

**Label edits** (:class:`LabelEdit`, written ``turn=1,iu=IU10,quality=well_explained``, the syntax
of ``whatif --set`` and of a saved what-if's meta): :func:`apply_edits` changes the stored labels
and recomputes every turn from the first one changed with the rules; the messages stay as recorded.

**Another graph version.** Why this needs more than swapping the graph: states are stored by *label* (``"IU3: concept"``),
so matching the old state to a new version by label resets every reworded concept to unaware and
leaves its old label behind as a foreign entry, which then blocks the reference mastery rule
(spec §5.1 counts every entry of the state); and τ depends on the node count (§4.2). Here IUs are
matched by **id**, τ is recomputed and the researcher gets a :class:`RemapReport` saying what
happened to every IU. Pure: no I/O, no model call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from knowsim_core.errors import ConfigError, SessionError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import replay
from knowsim_core.engine.signals import AttemptType, IUSignal, TeachingQuality
from knowsim_core.engine.state import IUState, KnowledgeState, LabelState, initial_state

NEW_IU_START = (
    "IUs new in this version start as the level's initial-state sampler gives them on the new graph, "
    "seeded with the run's recorded seed (the same what-if always starts the same way); the recorded "
    "conversation never labelled them, so they are not mentioned in any turn"
)
REMOVED_IU_RULE = "removed IUs are dropped from every state, and their recorded labels from every turn"


@dataclass(frozen=True, slots=True)
class RemapReport:
    """What the what-if did to each IU of the run's graph (ids in the new graph's order)."""

    kept: tuple[str, ...]  # same id, same label
    reworded: tuple[tuple[str, str, str], ...]  # (id, old label, new label): state carried over
    added: tuple[tuple[str, IUState], ...]  # (id, starting state from the sampler)
    removed: tuple[tuple[str, str], ...]  # (id, old label); a leftover label not of the graph: (label, label)
    tau_before: int
    tau_after: int

    def lines(self) -> list[str]:
        """One plain sentence per fact, for the what-if view."""
        out = [f"τ {self.tau_before} → {self.tau_after} ({len(self.kept) + len(self.reworded) + len(self.added)} IUs)"]
        if self.kept:
            out.append(f"kept with their state: {', '.join(self.kept)}")
        out += [f"reworded, state kept: {i} ({old!r} → {new!r})" for i, old, new in self.reworded]
        out += [f"added, starts {st.key}: {i}" for i, st in self.added]
        out += [f"removed: {i}" for i, _ in self.removed]
        return out

    def to_data(self) -> dict[str, Any]:
        return {
            "kept": list(self.kept),
            "reworded": [{"id": i, "old": old, "new": new} for i, old, new in self.reworded],
            "added": [{"id": i, "state": st.key} for i, st in self.added],
            "removed": [{"id": i, "label": lab} for i, lab in self.removed],
            "tau": [self.tau_before, self.tau_after],
        }


@dataclass(frozen=True, slots=True)
class VersionWhatIf:
    """The re-played run and what was remapped to get it."""

    run: RunRecord
    remap: RemapReport


def remap_state(
    state: KnowledgeState, old: IUGraph, new: IUGraph, *, tau: tuple[int, int], start: KnowledgeState | None = None
) -> tuple[KnowledgeState, RemapReport]:
    """``state`` (keyed by ``old``'s labels) re-keyed by id onto ``new``'s labels, in ``new``'s order.

    An IU of both graphs keeps its entry (state, carry, evidence; absent reads as unaware, spec
    §1.1) whatever its label; an IU only ``new`` has takes its state from ``start`` (unaware if
    None); every other label is dropped. ``tau`` is (before, after), for the report.
    """
    id_of = {lab: v for v, lab in old.index.label_of.items()}
    by_id = {id_of[lab]: e for lab, e in state.items() if lab in id_of}
    items: dict[str, LabelState] = {}
    kept, reworded, added = [], [], []
    for v, lab in zip(new.index.ids, new.index.labels):
        old_lab = old.index.label_of.get(v)
        if old_lab is None:
            entry = start.get(lab) if start is not None else None
            items[lab] = LabelState(entry.state if entry is not None else IUState.UNAWARE)
            added.append((v, items[lab].state))
            continue
        items[lab] = by_id.get(v, LabelState(IUState.UNAWARE))
        if old_lab == lab:
            kept.append(v)
        else:
            reworded.append((v, old_lab, lab))
    gone = [lab for lab in state if id_of.get(lab) not in new.index.label_of]
    removed = tuple((id_of.get(lab, lab), lab) for lab in gone)
    report = RemapReport(tuple(kept), tuple(reworded), tuple(added), removed, *tau)
    return KnowledgeState(items), report


def _drop_removed(signals: Sequence[IUSignal], removed_ids: set[str]) -> tuple[IUSignal, ...]:
    return tuple(s for s in signals if s.id not in removed_ids)


def what_if_version(
    run: RunRecord,
    graph: IUGraph,
    *,
    turn: int = 1,
    signals: Sequence[IUSignal] | None = None,
) -> VersionWhatIf:
    """``run`` re-played on another version of its graph (optionally with turn ``turn`` relabelled).

    A graph version holds for the whole conversation, so every turn is recomputed from turn 1 (the
    recorded states of earlier turns were computed on the other graph) from the stored labels —
    no model call. The choices, also shown on screen:

    * states are carried by IU **id**: a reworded concept keeps its state, carry and evidence;
    * τ is recomputed for the new node count (spec §4.2);
    * IUs new in the version start as the level's sampler gives them on the new graph, seeded with
      the run's recorded seed (deterministic); the recorded labels never mention them;
    * removed IUs are dropped from every state and their labels from every turn, so no leftover
      entry can block the mastery rule.

    Raises:
        GraphError: the version cannot be run (e.g. an empty graph), or the sampler cannot place a
            new IU (a graph without roots).
        SessionError: ``turn`` is not a turn of the run.
    """
    graph.require_runnable()
    if signals is not None and not 1 <= turn <= len(run.turns):
        raise SessionError(f"turn must be between 1 and {len(run.turns)}, got {turn}")
    new_ids = set(graph.index.ids) - set(run.graph.index.ids)
    start = initial_state(graph, run.level, run.params, seed=run.seed) if new_ids else None
    tau = run.params.capacity(len(graph.nodes))
    s0, report = remap_state(run.initial_state, run.graph, graph, tau=(run.tau, tau), start=start)
    removed_ids = set(run.graph.index.ids) - set(graph.index.ids)
    edits: Mapping[int, Sequence[IUSignal]] = {
        t.turn: _drop_removed(signals if signals is not None and t.turn == turn else t.signals, removed_ids)
        for t in run.turns
    }
    base = replace(run, graph=graph, initial_state=s0, tau=tau)
    alt = replay(base, edits=edits, from_turn=1)
    return VersionWhatIf(alt, report)


def what_if(
    run: RunRecord,
    turn: int,
    *,
    signals: Sequence[IUSignal] | None = None,
    graph: IUGraph | None = None,
) -> RunRecord:
    """The run with turn ``turn``'s labels edited and every later turn recomputed.

    With ``graph`` (another version of the run's graph) the whole run is re-played on it, states
    matched by IU id and τ recomputed: see :func:`what_if_version`, which also
    says what was remapped.
    """
    if graph is not None:
        return what_if_version(run, graph, turn=turn, signals=signals).run
    edits = {turn: tuple(signals)} if signals is not None else {}
    return replay(run, edits=edits, from_turn=turn)


# ---------------------------------------------------------------------- label edits
WHATIF_KEY = "whatif"  # a saved what-if's meta: its edits, each in the --set syntax, joined by "; "
EDIT_KEYS = ("turn", "iu", "quality", "attempt")
EVERY_TURN = "all"
QUALITY_VALUES: tuple[str, ...] = tuple(q.value for q in TeachingQuality)
ATTEMPT_VALUES: tuple[str, ...] = tuple(a.value for a in AttemptType)


@dataclass(frozen=True, slots=True)
class LabelEdit:
    """One label changed: IU ``iu``'s teaching quality and/or user attempt at turn ``turn``
    (None: every turn). Written and read as ``turn=1,iu=IU10,quality=well_explained``."""

    turn: int | None
    iu: str
    quality: str | None = None
    attempt: str | None = None

    def spec(self) -> str:
        parts = [f"turn={EVERY_TURN if self.turn is None else self.turn}", f"iu={self.iu}"]
        parts += [f"{k}={v}" for k, v in (("quality", self.quality), ("attempt", self.attempt)) if v is not None]
        return ",".join(parts)


def parse_edit(text: str) -> LabelEdit:
    """A :class:`LabelEdit` from ``turn=N|all,iu=ID,quality=Q,attempt=A`` (quality, attempt or both).

    Raises:
        ConfigError: one line naming the part that is wrong and what it may be.
    """
    where = f"what-if edit {text.strip()[:80]!r}"
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not value or "=" in value:
            raise ConfigError(f"{where}: {part!r} is not key=value; write e.g. turn=1,iu=IU10,quality=well_explained")
        if key not in EDIT_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; expected {', '.join(EDIT_KEYS)}")
        if key in fields:
            raise ConfigError(f"{where}: {key} is given twice")
        fields[key] = value
    missing = [k for k in ("turn", "iu") if k not in fields]
    if missing:
        raise ConfigError(f"{where}: {' and '.join(missing)} missing; write e.g. turn=1,iu=IU10,quality=well_explained")
    if "quality" not in fields and "attempt" not in fields:
        raise ConfigError(f"{where}: say what to change: quality=… ({', '.join(QUALITY_VALUES)}) "
                          f"or attempt=… ({', '.join(ATTEMPT_VALUES)})")
    for key, allowed in (("quality", QUALITY_VALUES), ("attempt", ATTEMPT_VALUES)):
        if key in fields and fields[key] not in allowed:
            raise ConfigError(f"{where}: {key} {fields[key]!r} is not one of {', '.join(allowed)}")
    raw_turn = fields["turn"]
    if raw_turn.lower() == EVERY_TURN:
        turn = None
    elif raw_turn.isdigit() and 1 <= int(raw_turn) <= 10_000:
        turn = int(raw_turn)
    else:
        raise ConfigError(f"{where}: turn {raw_turn!r} is not a turn number (1, 2, …) or {EVERY_TURN!r}")
    return LabelEdit(turn, fields["iu"], fields.get("quality"), fields.get("attempt"))


def parse_edits(text: str) -> tuple[LabelEdit, ...]:
    """The edits of a saved what-if's ``"; "``-joined spec (:data:`WHATIF_KEY`)."""
    return tuple(parse_edit(p) for p in text.split(";") if p.strip())


def edits_spec(edits: Sequence[LabelEdit]) -> str:
    return "; ".join(e.spec() for e in edits)


@dataclass(frozen=True, slots=True)
class LabelWhatIf:
    """A run with labels edited: the recomputed run, the first turn an edit changed (None: no edit
    changed a label) and what could not be applied (a turn the run lacks, an IU not in its graph)."""

    run: RunRecord
    first_turn: int | None
    skipped: tuple[str, ...]


def _edited(signals: Sequence[IUSignal], edit: LabelEdit) -> tuple[IUSignal, ...]:
    out, found = [], False
    for s in signals:
        if s.id == edit.iu:
            found = True
            quality = edit.quality if edit.quality is not None else s.teaching_quality
            attempt = AttemptType(edit.attempt) if edit.attempt is not None else s.attempt
            reasoning = f"what-if: set to {quality}" if quality != s.teaching_quality else s.reasoning
            s = replace(s, teaching_quality=quality, attempt=attempt, reasoning=reasoning)
        out.append(s)
    if not found:  # the extractor gave the IU no entry: it read as not mentioned, with no attempt
        out.append(IUSignal.make(edit.iu, edit.quality or TeachingQuality.NOT_MENTIONED.value,
                                 edit.attempt or AttemptType.NONE.value, reasoning="what-if: entry added"))
    return tuple(out)


def apply_edits(run: RunRecord, edits: Sequence[LabelEdit]) -> LabelWhatIf:
    """``run`` with every edit applied to its stored labels (in order; a later edit of the same
    label wins) and the turns from the first changed one recomputed by the rules. No model call;
    the messages stay as recorded."""
    signals = {t.turn: t.signals for t in run.turns}
    ids = set(run.graph.index.ids)
    skipped: list[str] = []
    for e in edits:
        if e.iu not in ids:
            skipped.append(f"{e.spec()}: {e.iu} is not an IU of this run's graph")
            continue
        turns = list(signals) if e.turn is None else [e.turn]
        if e.turn is not None and e.turn not in signals:
            skipped.append(f"{e.spec()}: the run has {len(run.turns)} turn(s)")
            continue
        for t in turns:
            signals[t] = _edited(signals[t], e)
    changed = {t.turn: signals[t.turn] for t in run.turns if signals[t.turn] != t.signals}
    if not changed:
        return LabelWhatIf(run, None, tuple(skipped))
    first = min(changed)
    return LabelWhatIf(replay(run, edits=changed, from_turn=first), first, tuple(skipped))
