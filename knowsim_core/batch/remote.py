"""What a Dask cluster's workers run for ``batch --cluster``: play part of a conversation and send it back.

A task gets plain data — where each conversation stands (a new run's
:class:`~knowsim_core.services.runner.RunSetup`, or the run as stored so far), the agents' ids inside it,
and :class:`~knowsim_core.batch.schedule.LLMSetup` (which pickles without settings) — and returns
:class:`Played` records. The worker builds the agents itself, with the keys and endpoints of its own
environment; it opens no database and writes nothing: the Studio's process that sent the task (the
driver) stores what comes back. So a task holds no secret and repeating it is harmless: Dask runs a
task again when its worker dies, and the repeat starts from the same stored point.

A conversation that calls a model plays one turn per task (:data:`ONE_TURN`): its turns reach the
driver, and the database, as they are played, and a lost worker costs at most the turn in flight.
Such a task leaves the worker's thread pool while it waits on the model (``secede``), so the
conversations in flight are the batch's ``--concurrency``, not the workers' threads. Offline
conversations play to their end (:data:`TO_THE_END`), several per task: nothing is billed, and a
repeat plays the very same turns from the seed.

This module imports nothing from Dask at import time (the driver's tests and tools read it without the
extra); :func:`play` does, on the worker, through :func:`~knowsim_core.batch.cluster.on_worker`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from knowsim_core import batch
from knowsim_core.agents import registry
from knowsim_core.engine.metrics import Metrics
from knowsim_core.engine.records import Ending, RunRecord, TurnRecord
from knowsim_core.engine.session import Simulation
from knowsim_core.errors import KnowSimError, ProviderError
from knowsim_core.services.runner import AGENT_KINDS, RunSetup, build_agents
from knowsim_core.storage.runs import StoredTurn
from knowsim_core.vocab import EndReason

ONE_TURN = 1
TO_THE_END = None


@dataclass(frozen=True, slots=True)
class Part:
    """One conversation of a task: the batch cell's ``index`` and where it stands — a new run's
    setup or the run as stored so far."""

    index: int
    start: RunSetup | RunRecord

    def agent_ids(self) -> dict[str, str]:
        ids = dict(self.start.agent_ids) if isinstance(self.start, RunSetup) else self.start.adapter
        return {kind: ids[kind] for kind in AGENT_KINDS}


@dataclass(frozen=True, slots=True)
class Played:
    """What a task played of one conversation: the new run as set up (``header``: no turns; None when
    the run was already stored), the turns played as the database stores them (``stored``: packed
    here, so that the one process storing for the whole cluster neither unpickles nor packs them),
    how the conversation ended (None: it goes on) and, once ended, the run's metrics. The turns
    themselves (``turns``) come back only from a one-turn task: the conversation's next task
    continues from them. ``worker``: the address of the worker that played it."""

    index: int
    header: RunRecord | None
    stored: tuple[StoredTurn, ...]
    ending: Ending | None
    worker: str
    turns: tuple[TurnRecord, ...] = ()
    metrics: Metrics | None = None


def model_bound(agent_ids: dict[str, str] | Any) -> bool:
    """Whether any of these agents calls a model (then a task plays one turn)."""
    return any(registry.spec_of(a).needs_model for a in agent_ids)


_SETTINGS: dict[int, Any] = {}  # per worker process: one LLMSetup per batch concurrency, read from its env once


def play(parts: tuple[Part, ...], *, turns: int | None, llm: Any) -> tuple[Played, ...]:
    """Play each part for ``turns`` turns (None: to the conversation's end), one after the other."""
    address = batch.cluster.on_worker(waits=turns is not None)
    if llm is not None:
        llm = _SETTINGS.setdefault(llm.concurrency, llm)
    return tuple(play_part(p, turns=turns, llm=llm, worker=address) for p in parts)


def play_part(part: Part, *, turns: int | None, llm: Any, worker: str = "") -> Played:
    """Build the part's agents here and play it (see :func:`play`); never raises for what a
    conversation does: a failure is its :class:`Ending`."""
    ids = part.agent_ids()
    try:
        settings = llm(None, part.index) if llm is not None and model_bound(ids.values()) else None
        agents = build_agents(None, ids, settings)
        if isinstance(part.start, RunSetup):
            sim = part.start.simulation(agents)
        else:
            sim = Simulation.resume(part.start, **agents)
    except KnowSimError as exc:  # no key or endpoint on this worker, an unknown id, a broken graph
        where = f" (on worker {worker})" if worker else ""
        reason = EndReason.PROVIDER_ERROR if isinstance(exc, ProviderError) else EndReason.AGENT_ERROR
        return Played(part.index, None, (), Ending(reason, error=f"{exc}{where}"), worker)
    header = sim.run if isinstance(part.start, RunSetup) else None
    played: list[TurnRecord] = []
    ending: Ending | None = None
    try:
        while ending is None and (turns is None or len(played) < turns):
            result = sim.step()
            if isinstance(result, Ending):
                ending = result
            else:
                played.append(result)
                ending = sim.ending  # set once the conversation is over
    except Exception as exc:  # noqa: BLE001 — a bug in an agent: the run fails with what the turn billed
        ending = Ending(EndReason.AGENT_ERROR, error=f"{type(exc).__name__}: {exc}", spent=sim.ledger.take())
    return Played(part.index, header, tuple(StoredTurn.of(t) for t in played), ending, worker,
                  turns=tuple(played) if turns is not None else (),
                  metrics=sim.run.metrics() if ending is not None and sim.run.turns else None)


def dask_setup(worker: Any) -> None:
    """Dask's preload hook (``dask worker ... --preload knowsim_core.batch.remote``): load the offline
    agents when the worker starts rather than in its first task, as worker processes forked from a
    batch that has loaded them start with them."""
    for agent_id in ("offline/adaptive", "offline/knowsim", "offline/lexical"):
        registry.spec_of(agent_id)


@lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of this package's source: the driver and every worker must play the same code (a
    worker with other rules would store other runs under the same cell)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


__all__ = ["ONE_TURN", "Part", "Played", "TO_THE_END", "code_version", "dask_setup", "model_bound", "play", "play_part"]
