"""Worker processes keep to their own questions (issue 32, speed).

The offline agents remember per question what they have read; a worker that plays every question
builds that for each of them, and two workers playing one question at once both pay for it. So
``ProcessLanes.choose`` gives each worker a contiguous share of the plan (cut where the question
changes) and, once its share is done, the last cell of the largest share left.

Old behaviour these catch: the pool handed cells out in plan order to whichever worker was free,
so both workers played the first question, then both the second, … (there was no ``choose`` and
no ``shares``: the imports fail on the old code).
"""

from __future__ import annotations

from knowsim_core.batch.plan import Cell
from knowsim_core.batch.schedule import Budget, Control, Tally, admit
from knowsim_core.batch.workers import ProcessLanes, shares
from knowsim_core.storage import Store


def _cells(questions: str, per_question: int) -> list[Cell]:
    out = []
    for q in questions:
        for _ in range(per_question):
            out.append(Cell(len(out), q, "novice", "offline/simple", "offline/knowsim", "offline/lexical",
                            "paper-final", 1, 2))
    return out


def test_shares_are_contiguous_balanced_and_never_split_a_question():
    cells = _cells("abcdefghij", 12)
    assert shares(cells, 2) == [(0, 59), (60, 119)]
    three = shares(cells, 3)
    assert three[0][0] == 0 and three[-1][1] == 119
    assert all(a[1] + 1 == b[0] for a, b in zip(three, three[1:]))  # contiguous, nothing left out
    assert all(lo % 12 == 0 and (hi + 1) % 12 == 0 for lo, hi in three)  # cut only between questions
    assert shares(cells, 1) == [(0, 119)]
    # fewer questions than workers: a question is split rather than leaving a worker idle
    assert shares(_cells("a", 4), 2) == [(0, 1), (2, 3)]
    # more workers than cells: the extra ones get an empty share
    assert shares(_cells("a", 1), 3)[1:] == [(-1, -2), (-1, -2)]
    # not in plan order (no shares: plain order)
    assert shares(list(reversed(cells)), 2) == []


def test_each_worker_plays_its_own_share_then_takes_the_back_of_the_largest(tmp_path):
    """Two workers, questions a and b with 3 cells each: worker 0 plays a in order and worker 1 plays
    b in order; when worker 1 runs out it takes a's last cell, never one worker 0 is about to play."""
    lanes = ProcessLanes(Store(tmp_path / "s.db"), workers=2, tag="t", llm=None)
    try:
        cells = _cells("ab", 3)
        pending = [(c, "") for c in reversed(cells)]
        control, tally, budget = Control(), Tally(len(cells)), Budget(None, 0.0)
        played: list[tuple[int, int]] = []  # (worker, cell index)

        def start() -> None:  # what run_loop does, without the processes
            for cell, _ in admit(pending, lanes.in_flight, 2, control=control, tally=tally, budget=budget,
                                 choose=lanes.choose):
                lanes.running[object()] = (cell, lanes._next)
                played.append((lanes._next, cell.index))

        def end(worker: int) -> None:
            fut = next(f for f, (_, w) in lanes.running.items() if w == worker)
            del lanes.running[fut]

        start()
        assert played == [(0, 0), (1, 3)]
        end(1); start(); end(1); start()  # worker 1 is twice as fast
        assert played[2:] == [(1, 4), (1, 5)]
        end(1); start()  # its share is done: it takes the last cell of a, not the next one
        assert played[4] == (1, 2)
        end(0); start()
        assert played[5] == (0, 1)
        assert sorted(i for _, i in played) == list(range(6)) and not pending
    finally:
        lanes.close(forced=True)
