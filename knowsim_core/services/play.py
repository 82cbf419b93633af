"""A run's life in one loop: :func:`play` steps a run until it ends and returns how it ended.

The command line (``run``), the app (one :meth:`~knowsim_core.services.runner.LiveRun.step` per
click, the same step this loop takes) and a batch (one loop per cell) all play a run through here.
A step returns data — a turn's record, or an :class:`~knowsim_core.engine.records.Ending` — and
:func:`status_of` is the one mapping from an ending to the stored run's status:

==================  ============  ==========================================================
ending              run status    when
==================  ============  ==========================================================
``STOPPED``         finished      a stop rule, the turn limit, an empty message, the user done
``PROVIDER_ERROR``  failed        a model call failed (resumable from the last stored turn)
``AGENT_ERROR``     failed        an agent raised: a bug, which then propagates
``STOP_REQUESTED``  interrupted   Ctrl-C, or a batch's stop request (resumable)
``LEASE_LAPSED``    (as stored)   the app's hold lapsed; the run was left open where it lapsed
==================  ============  ==========================================================

Every model call is recorded in the run's usage ledger when it is made, and each call is counted
once: by the turn record that holds it, or by the ending of the turn it was cut short in.

Playing a turn (``Simulation.step``: the agents, no database) and storing it
(:class:`~knowsim_core.services.runner.RunWriter`) are separate objects; a
:class:`~knowsim_core.services.runner.LiveRun` joins them in one process. A lane that plays
elsewhere sends back each step's result, and the driver hands it to the run's writer.
"""

from __future__ import annotations

from typing import Callable, Protocol

from knowsim_core.engine.records import Ending, TurnRecord
from knowsim_core.vocab import EndReason, RunStatus

STOPPED_BY_USER = "stopped by the user"  # the error of a run ended by Ctrl-C


def status_of(ending: Ending) -> RunStatus:
    """The stored status of a run whose play ended so (the table in the module docstring)."""
    if ending.reason == EndReason.STOPPED:
        return RunStatus.FINISHED
    if ending.reason in (EndReason.PROVIDER_ERROR, EndReason.AGENT_ERROR):
        return RunStatus.FAILED
    return RunStatus.INTERRUPTED


class Playable(Protocol):
    """What :func:`play` steps: a :class:`~knowsim_core.services.runner.LiveRun`, or any run that plays
    its turns somewhere and stores what they report."""

    @property
    def ending(self) -> Ending | None: ...  # how the run was closed (None while it is open)

    def step(self) -> TurnRecord | Ending: ...  # play and store one turn (an ending is stored too)
    def interrupt(self, error: str) -> Ending: ...  # close it before the next turn
    def end(self, ending: Ending) -> Ending: ...  # close it so, with what its ledger still holds
    def flush(self) -> None: ...  # write what is still buffered


def play(live: Playable, *, stop: Callable[[], str] | None = None,
         on_turn: Callable[[TurnRecord], None] | None = None) -> Ending:
    """Step ``live`` until it ends; returns its ending (already stored).

    ``stop()``: a reason to stop before the next turn ("" to go on) — a batch's stop request; the
    run is then closed ``interrupted`` with that reason. ``on_turn``: called with each
    turn's record once it is stored (or buffered). A bug in an agent and Ctrl-C close the run and
    propagate (see :meth:`~knowsim_core.services.runner.LiveRun.step`).
    """
    try:
        while True:
            if live.ending is not None:
                return live.ending
            why = stop() if stop is not None else ""
            if why:
                return live.interrupt(why)
            result = live.step()
            if isinstance(result, Ending):
                return result
            if on_turn is not None:
                on_turn(result)
    except KeyboardInterrupt:  # between two steps (a step closes the run itself)
        if live.ending is None:
            live.end(Ending(EndReason.STOP_REQUESTED, error=STOPPED_BY_USER))
        raise
    except BaseException:  # the caller's own failure (on_turn): what was played is kept
        if live.ending is None:
            live.flush()
        raise


__all__ = ["Playable", "STOPPED_BY_USER", "play", "status_of"]
