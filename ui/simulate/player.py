"""The Simulate view's model: one run (or a pair side by side) and the turn being shown (no streamlit).

Stepping forward past the last stored turn plays a new turn through :class:`runner.LiveRun`
(which stores it before returning); stepping back or scrubbing only moves the cursor, because
every turn is stored. A run opened from a link in a fresh session is read from the store and,
if it is not finished, continued with :func:`runner.resume_run` the first time a new turn is
needed — so reloading the page or losing the connection resumes the run.

Runs played here are held under a lease (``store.runs.renew_lease``): each step renews it and the
page renews it while the run is open (:meth:`Player.hold_leases`), so a run whose browser session
went away is left ``open`` once the lease lapses (with its metrics so far) and plays on when opened again.
"""

from __future__ import annotations

from contextlib import nullcontext

from knowsim_core.agents.human import HUMAN_ID, AwaitingInput, next_user_turn
from knowsim_core.errors import KnowSimError
from knowsim_core.engine.records import Ending, RunRecord, TurnRecord
from knowsim_core.services.runner import resume_run
from knowsim_core.storage import LEASE_SECONDS


class Player:
    """Cursor over up to two stored runs; ``turn`` 0 shows the starting state."""

    def __init__(
        self, store, run_ids: tuple[str, ...], *, turn: int = 0, live: dict | None = None, settings: dict | None = None
    ):
        if not run_ids:
            raise ValueError("a player needs at least one run id")
        self.store = store
        self.run_ids = tuple(run_ids)
        self.live: dict = dict(live or {})
        self.settings = settings  # for rebuilding LLM agents on resume (keys stay in memory)
        self.runs: dict[str, RunRecord] = {rid: self._fresh(rid) for rid in self.run_ids}
        self.error: str = ""
        self.turn = max(0, min(int(turn), self.stored_turns))

    # ------------------------------------------------------------------ reading
    def _fresh(self, rid: str) -> RunRecord:
        live = self.live.get(rid)
        return live.run if live is not None else self.store.runs.load(rid)

    @property
    def primary(self) -> RunRecord:
        return self.runs[self.run_ids[0]]

    @property
    def stored_turns(self) -> int:
        """The furthest turn any of the runs has reached."""
        return max(len(r.turns) for r in self.runs.values())

    def finished(self, rid: str) -> bool:
        return self.runs[rid].stop_reason is not None

    @property
    def all_finished(self) -> bool:
        return all(self.finished(r) for r in self.run_ids)

    @property
    def can_forward(self) -> bool:
        """Something to show past this turn: a stored turn, or a run that can play on by itself."""
        return self.turn < self.stored_turns or not (self.all_finished or self.awaiting_input)

    # ------------------------------------------------------------------ typed turns
    def human_role(self, rid: str) -> str | None:
        """Which side of run ``rid`` the researcher types ("assistant" / "user"), if any."""
        adapters = self.runs[rid].adapter
        return next((role for role in ("assistant", "user") if adapters.get(role) == HUMAN_ID), None)

    def _typed_runs(self) -> list[str]:
        return [r for r in self.run_ids if self.human_role(r) and not self.finished(r)]

    @property
    def awaiting_input(self) -> bool:
        """At the newest turn of a run whose next message has to be typed."""
        return self.turn >= self.stored_turns and bool(self._typed_runs())

    def preview_user(self, rid: str) -> str:
        """The simulated learner's next message in a run where the assistant's reply is typed."""
        return next_user_turn(self._live(rid).sim).message

    def send(self, text: str, *, rid: str | None = None, **extra) -> bool:
        """Play the next turn with ``text`` as the typed side's message (of run ``rid``, default: every
        typed run); False when nothing moved."""
        self.error = ""
        for rid in [r for r in self._typed_runs() if rid in (None, r)]:
            try:
                live = self._live(rid)
                getattr(live.sim, self.human_role(rid)).put(text, **extra)
            except KnowSimError as exc:
                self.error = self._gone(rid) or str(exc)
                return False
        return self.forward()

    def record(self, rid: str, turn: int | None = None) -> TurnRecord | None:
        """The record of ``turn`` (default: the shown turn) for run ``rid``; None at turn 0 or past its end."""
        t = self.turn if turn is None else turn
        turns = self.runs[rid].turns
        return turns[t - 1] if 1 <= t <= len(turns) else None

    def states(self, rid: str, turn: int | None = None) -> dict:
        """``{IU id: IUState}`` after ``turn`` (the last state reached if the run ended earlier)."""
        run = self.runs[rid]
        t = self.turn if turn is None else turn
        turns = run.turns[: max(0, t)]
        state = turns[-1].state_after if turns else run.initial_state
        return {v: state.state_of(run.graph.index.label_of[v]) for v in run.graph.index.ids}

    def changed(self, rid: str) -> tuple[str, ...]:
        rec = self.record(rid)
        return tuple(i for i, _, _ in rec.transitions) if rec is not None else ()

    # ------------------------------------------------------------------ moving
    def _live(self, rid: str):
        """The run's LiveRun, claimed under a lease; a run whose lease lapsed while the page sat
        idle (and its hold was released) is claimed again rather than refused."""
        live = self.live.get(rid)
        if live is not None and not live.done and (live.closed or not live.hold(LEASE_SECONDS)):
            live = None  # failed, or its lease lapsed (closed so, with what it had billed): resume it
        if live is None:
            live = resume_run(self.store, rid, settings=self.settings, lease_seconds=LEASE_SECONDS)
            self.live[rid] = live
        live.leased = True
        return live

    def _gone(self, rid: str) -> str:
        """Why ``rid`` can no longer be played, when it was removed: a run with no turn whose lease
        lapsed while the page sat idle is deleted, not kept as an empty interrupted run."""
        if self.runs[rid].turns:
            return ""
        try:
            self.store.search.get_row(rid)
            return ""
        except KnowSimError:
            return (f"Run {rid} had no turn yet and was removed when this page sat idle past its lease; "
                    "start it again from New simulation.")

    def hold_leases(self) -> None:
        """Renew the lease of every run this session is playing and has not finished (the app's
        heartbeat while a run is open; a run whose lease lapsed is left for the next step to resume)."""
        for live in self.live.values():
            if not live.done and not live.closed:
                live.hold(LEASE_SECONDS)

    def forward(self) -> bool:
        """Show the next turn, playing it first where it is not stored yet. False when nothing moved."""
        # one connection for the step's lease renewals and its writes (opening one per call took
        # more than half of a step's ~10 ms); each write is still its own transaction
        pinned = getattr(self.store, "pinned", None)
        with pinned() if pinned is not None else nullcontext():
            return self._forward()

    def _forward(self) -> bool:
        target = self.turn + 1
        self.error = ""
        for rid in self.run_ids:
            if len(self.runs[rid].turns) >= target or self.finished(rid):
                continue
            try:
                live = self._live(rid)
                if not live.done:
                    result = live.step()
                    if isinstance(result, Ending) and not result.over:
                        self.error = self._gone(rid) or (f"{result.error} — the turns played so far are saved; "
                                                         "step again to retry.")
            except AwaitingInput:
                pass  # a typed run beside another one: it waits for its own reply
            except KnowSimError as exc:
                self.error = self._gone(rid) or f"{exc} — the turns played so far are saved; step again to retry."
            finally:
                live = self.live.get(rid)
                if live is not None:
                    self.runs[rid] = live.run
        if self.stored_turns >= target:
            self.turn = target
            return True
        return False

    def back(self) -> bool:
        if self.turn == 0:
            return False
        self.turn -= 1
        return True

    def goto(self, turn: int) -> None:
        self.turn = max(0, min(int(turn), self.stored_turns))

    def reload(self) -> None:
        """Re-read runs nobody is stepping here (another tab may have added turns)."""
        for rid in self.run_ids:
            if rid not in self.live:
                self.runs[rid] = self.store.runs.load(rid)
