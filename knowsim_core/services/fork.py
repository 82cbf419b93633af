"""Fork a stored run at a turn: keep what came before, replace that turn's reply with your own.

The child is a new stored run: the parent's setup and its first ``turn - 1`` turn records, then
turn ``turn`` played again with the parent's user message and the typed assistant reply (through
the same extractor and rules), then the parent's own agents carry on when it is stepped. The
link to the parent lives in the child's ``meta`` (``forked_from``, ``forked_at_turn``), which is
part of the stored setup, so exports carry it; storage also copies ``forked_from`` into the runs
table's column of that name (migration 0008) for the origin filters. A deleted parent is
remembered by id (migration 0010), so :func:`parent_of` names it as a deleted run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from knowsim_core.agents.human import HumanAssistant, HumanUser
from knowsim_core.errors import ProviderError, SessionError
from knowsim_core.engine.records import Ending
from knowsim_core.services.runner import LiveRun, build_agents
from knowsim_core.engine.session import Simulation
from knowsim_core.storage import Store

FORKED_FROM = "forked_from"
FORKED_AT = "forked_at_turn"


def fork_link(run) -> tuple[str, int] | None:
    """``(parent run id, turn)`` of a forked run, None for any other run."""
    meta = dict(run.meta)
    if FORKED_FROM not in meta:
        return None
    return str(meta[FORKED_FROM]), int(meta.get(FORKED_AT, 0))


@dataclass(frozen=True, slots=True)
class Parent:
    """Where a fork came from, as this database knows it: the parent run and turn, whether the
    parent is stored, and when it was deleted if it was (:meth:`Runs.delete` remembers it)."""

    run_id: str
    turn: int
    stored: bool
    deleted: str | None = None  # the deletion's time stamp

    def words(self) -> str:
        """``run 3f2a…``, ``deleted run 3f2a… (deleted 2026-12-05)`` or ``run 3f2a… (not in this database)``
        (an imported fork whose parent was never here)."""
        if self.stored:
            return f"run {self.run_id}"
        if self.deleted:
            return f"deleted run {self.run_id} (deleted {self.deleted[:10]})"
        return f"run {self.run_id} (not in this database)"


def parent_of(store: Store, run) -> Parent | None:
    """The parent of ``run`` if it is a fork (None for any other run)."""
    link = fork_link(run)
    if link is None:
        return None
    parent, turn = link
    if store.runs.exists(parent):
        return Parent(parent, turn, True)
    return Parent(parent, turn, False, store.runs.deleted_on(parent))


def fork_run(
    store: Store, parent_id: str, turn: int, reply: str, *, settings: Mapping[str, Any] | None = None
) -> LiveRun:
    """Create the child run and play its turn ``turn`` with ``reply`` as the assistant's message.

    Returns the child as a :class:`LiveRun` (its later turns come from the parent's agents).

    Raises:
        SessionError: ``turn`` is not one of the parent's stored turns, or ``reply`` is empty.
        StorageError: unknown parent, or a parent imported from a recording (no agents to go on with).
    """
    parent = store.runs.load(parent_id)
    if not 1 <= turn <= len(parent.turns):
        raise SessionError(f"run {parent_id} has turns 1–{len(parent.turns)}; cannot fork at turn {turn}")
    if not reply.strip():
        raise SessionError("type the assistant's reply for the forked turn first")
    original = parent.turns[turn - 1]
    agents = build_agents(store, {k: parent.adapter[k] for k in ("assistant", "user", "extractor")}, settings)
    meta = tuple((k, v) for k, v in parent.meta if k not in (FORKED_FROM, FORKED_AT))
    child = replace(
        parent, turns=parent.turns[: turn - 1], run_id=None, stop_reason=None,
        meta=(*meta, (FORKED_FROM, parent_id), (FORKED_AT, turn)),
    )
    row = store.search.get_row(parent_id)
    child_id = store.runs.create(child, graph_version_id=row.graph_version_id)
    user = HumanUser(fallback=agents["user"])
    user.put(original.user_message, attempt=bool(original.user_attempt), thought=original.user_thought)
    assistant = HumanAssistant(fallback=agents["assistant"])
    assistant.put(reply)
    sim = Simulation.resume(replace(child, run_id=child_id), assistant=assistant, user=user,
                            extractor=agents["extractor"])
    live = LiveRun(store, sim, child_id)
    result = live.step()
    if isinstance(result, Ending) and not result.over:  # stored failed: say why, in one line
        raise ProviderError(f"{result.error} (the fork is stored as run {child_id}, failed; resume it to go on)")
    return live


__all__ = ["FORKED_AT", "FORKED_FROM", "Parent", "fork_link", "fork_run", "parent_of"]
