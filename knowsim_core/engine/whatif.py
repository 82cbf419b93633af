"""What-if against another version of a run's IU graph: the run re-played on that version.

Why this needs more than swapping the graph: states are stored by *label* (``"IU3: concept"``),
so matching the old state to a new version by label resets every reworded concept to unaware and
leaves its old label behind as a foreign entry, which then blocks the reference mastery rule
(spec §5.1 counts every entry of the state); and τ depends on the node count (§4.2). Here IUs are
matched by **id**, τ is recomputed and the researcher gets a :class:`RemapReport` saying what
happened to every IU. Pure: no I/O, no model call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from knowsim_core.errors import SessionError
from knowsim_core.engine.graph import IUGraph
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.session import replay
from knowsim_core.engine.signals import IUSignal
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
