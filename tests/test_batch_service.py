"""The batch service and the one scheduler loop (issue 32, "Batch orchestration lives in a command").

* One loop, two kinds of lanes: the same matrix played by :func:`run_loop` on threads and on worker
  processes stores the same runs (same cells, same turns, same scores), leaves no claim behind and
  plays no cell twice; a budget stops both at the same conversation. (On the old code there was no
  ``run_loop``: ``run_threads`` and ``run_processes`` were two copies of the loop.)
* One request: what the Batch page launches is the request it previewed — ``BatchRequest.argv()``
  read back by the command's own parser is the same request (the page used to build a second copy
  of the arguments and parse it back by hand, ``_spec_args``).
* One owner of batch tags: the command line, the page and the plan share one rule and one generator.
"""

from __future__ import annotations

import argparse

import pytest

from knowsim_core.batch import plan as batch_plan
from knowsim_core.batch.schedule import Budget, Control, Outcome, Tally, ThreadLanes, run_loop
from knowsim_core.batch.service import BatchJob, BatchRequest, prepare, preview
from knowsim_core.batch.workers import ProcessLanes
from knowsim_core.commands import batch as batch_command
from knowsim_core.errors import ConfigError, StorageError
from knowsim_core.storage import Store
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.text.tags import check_batch_tag, new_batch_tag
from ui.batch import launcher as bv

QUESTIONS = "sample_lava_lamps,sample_herd_immunity"
MATRIX = BatchRequest(questions=QUESTIONS, levels="novice,advanced", assistants="offline/simple,offline/adaptive",
                      max_turns=3)


def _lanes(kind: str, store: Store, tag: str, control: Control, tally: Tally):
    if kind == "threads":
        return ThreadLanes(store, tag=tag, control=control, tally=tally, llm=None)
    return ProcessLanes(store, workers=2, tag=tag, llm=None)


def _play(db, kind: str, *, budget: Budget | None = None):
    store = Store(db)
    store.questions.seed_samples()
    prep = prepare(store, MATRIX)
    store.search.save_batch(prep.tag, prep.spec.to_data())
    control, tally = Control(), Tally(len(prep.todo))
    outcomes, forced = run_loop(_lanes(kind, store, prep.tag, control, tally), prep.todo, limit=2, control=control,
                                tally=tally, budget=budget or Budget(None, 0.0))
    return store, prep, control, tally, outcomes, forced


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_the_one_loop_plays_every_cell_once_and_releases_every_claim(kind, tmp_path):
    store, prep, control, tally, outcomes, forced = _play(tmp_path / "s.db", kind)
    assert not forced and not control.budget_hit
    assert sorted(o.index for o in outcomes) == [c.index for c, _ in prep.todo]  # each cell once
    assert {o.status for o in outcomes} == {"finished"}
    assert tally.done == len(prep.todo) == 8 and tally.failed == 0 and not tally.in_flight
    rows = store.search.list(RunFilter(batch_tag=prep.tag), limit=100)
    assert len(rows) == 8 and len({batch_plan.row_key(r) for r in rows}) == 8  # no cell stored twice
    assert store.cells.holders(prep.tag) == {}  # every claim released


def test_threads_and_processes_store_the_same_runs(tmp_path):
    """The lanes differ, the loop and so the results do not: cell by cell, the same turns and scores."""
    def stored(kind):
        store, prep, *_ = _play(tmp_path / f"{kind}.db", kind)
        return {batch_plan.row_key(r): (r.status, r.turns, r.kg, r.dc, r.co)
                for r in store.search.list(RunFilter(batch_tag=prep.tag), limit=100)}

    threads, processes = stored("threads"), stored("processes")
    assert len(threads) == 8 and threads == processes


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_a_budget_stops_both_lanes_at_the_same_conversation(kind, tmp_path):
    """$1 per conversation (the prior), $1.50 allowed: the first starts; the second would pass the
    budget counting the first's remaining estimate, so nothing else starts and the batch says why."""
    store, prep, control, tally, outcomes, forced = _play(tmp_path / "s.db", kind, budget=Budget(1.5, 1.0))
    assert control.budget_hit and not forced
    assert [o.status for o in outcomes] == ["finished"] and outcomes[0].index == prep.todo[0][0].index
    assert store.search.count(RunFilter(batch_tag=prep.tag)) == 1 and store.cells.holders(prep.tag) == {}


def test_the_service_job_stores_the_matrix_and_a_resume_runs_only_what_is_left(tmp_path):
    store = Store(tmp_path / "s.db")
    store.questions.seed_samples()
    req = BatchRequest(**{**MATRIX.__dict__, "tag": "svc-1", "concurrency": 2})
    job = BatchJob.start(store, prepare(store, req))
    assert store.search.get_batch("svc-1") is not None  # resumable from the start
    assert {o.status for o in job.play()} == {"finished"} and not job.threads_left_behind()
    again = prepare(store, BatchRequest(resume="svc-1"))
    assert again.todo == [] and again.skipped == 8 and again.resumed
    with pytest.raises(StorageError, match="exists; continue it with --resume svc-1"):
        prepare(store, req)  # a new batch never reuses a tag


REQUESTS = [
    MATRIX,
    BatchRequest(questions="all", levels="all", assistants="offline", seeds=3, preset="paper-text", workers=2, tag="x.1"),
    BatchRequest(questions="q1,q2", levels="novice", assistants="openai/gpt-4o-mini", concurrency=8, max_cost=2.5,
                 user="offline/knowsim", extractor="offline/lexical", max_turns=12, graph_version=2),
    BatchRequest(resume="night-1", workers=3),
    BatchRequest(resume="night-2", concurrency=4),
]


@pytest.mark.parametrize("req", REQUESTS, ids=range(len(REQUESTS)))
def test_a_request_spelled_as_a_command_line_reads_back_as_the_same_request(req):
    parser = argparse.ArgumentParser()
    batch_command.add_arguments(parser)
    argv = req.argv()
    assert argv[0] == "batch"
    assert batch_command.request(parser.parse_args(argv[1:])) == req


def test_the_page_builds_a_request_and_previews_what_the_command_will_run(seeded_store):
    req = bv.request(questions=QUESTIONS.split(","), levels=["novice"], assistants=["offline/adaptive"],
                     user="offline/knowsim", extractor="offline/lexical", seeds=2, max_turns=0, concurrency=0,
                     tag="page-1")
    assert req.max_turns is None and req.concurrency is None and req.tag == "page-1"
    spec, est = bv.preview(seeded_store, req)
    prep = prepare(seeded_store, req)
    assert spec == prep.spec and len(spec.cells()) == 4 and est.lines() == prep.estimate.lines()
    assert seeded_store.search.list_batches() == []  # previews write nothing


def test_batch_tags_have_one_rule_and_one_generator():
    assert not hasattr(batch_plan, "check_tag")  # the old second spelling (≤ 64) beside storage's (≤ 40)
    assert bv.new_tag is new_batch_tag
    tags = {new_batch_tag() for _ in range(20)}
    assert all(check_batch_tag(t) == t for t in tags)
    with pytest.raises(ConfigError, match="Tag: '../x' is not a batch tag"):
        check_batch_tag("../x", what="Tag")


class _ScriptedLanes:
    """Lanes whose conversations end only when the test says so (the loop's own rules under test)."""

    counted_turns = True

    def __init__(self):
        self.running, self.ready, self.stopped, self.closed = {}, [], False, None

    def in_flight(self):
        return len(self.running)

    def submit(self, cell, resume_id):
        self.running[cell.index] = cell

    def outcomes(self, timeout):
        out, self.ready = self.ready, []
        for o in out:
            self.running.pop(o.index)
        return out

    def stop(self):
        self.stopped = True

    def force(self):
        abandoned = [Outcome(i, "interrupted") for i in self.running]
        self.running.clear()
        return abandoned

    def close(self, forced):
        self.closed = forced


def test_a_forced_stop_keeps_the_outcome_of_a_conversation_that_ended_meanwhile(tmp_path):
    """Second Ctrl-C while cell 0 has just finished and cell 1 is still playing: cell 0 stays
    finished (and counted), cell 1 is abandoned as interrupted, the rest never start."""
    store = Store(tmp_path / "s.db")
    store.questions.seed_samples()
    todo = prepare(store, MATRIX).todo
    lanes, control, tally = _ScriptedLanes(), Control(), Tally(len(todo))

    def tick():
        if not lanes.ready:
            lanes.ready.append(Outcome(todo[0][0].index, "finished"))
            control.request()
            control.request()  # the second one: at once

    outcomes, forced = run_loop(lanes, todo, limit=2, control=control, tally=tally, budget=Budget(None, 0.0),
                                tick=tick)
    assert forced and lanes.stopped and lanes.closed is True
    assert [(o.index, o.status) for o in outcomes] == [(todo[0][0].index, "finished"), (todo[1][0].index, "interrupted")]
    assert tally.done == 1 and tally.finished_costs == [0.0]
