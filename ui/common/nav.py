"""Every page of the Studio: its script, its route and its query parameters, and the moves between pages.

:data:`PAGES` is the navigation (``app.py`` builds ``st.navigation`` from :func:`navigation`); each
page script names itself by its entry here when it starts (``ensure_frame(nav.SIMULATE)``), so a
page knows whether it was just entered (:func:`entered`). Every link or switch to a page goes
through a function of this module (:func:`open_in_simulate`, :func:`failures`, :func:`link` …), and
every query parameter a page reads is a constant here; the run filters' parameters are
:class:`~knowsim_core.storage.run_filter.RunFilter`'s (``?batch=``, ``?tag=``, ``?gv=`` …), which
:func:`failures` and :func:`runs_params` take as a filter.

Opening a run hands over to the Simulate page through its deep link (``?run=…&turn=…``), so the
player shows exactly that view. A page that cannot switch (run on its own, as in a test) says where
it would go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from knowsim_core.storage.run_filter import RunFilter
from ui.common import keys


@dataclass(frozen=True)
class Page:
    """One page: its script, its title and icon in the navigation, its URL path and its section."""

    script: str
    title: str
    icon: str
    url_path: str
    section: str
    default: bool = False


_SIM, _ANALYSE = "Simulate", "Correct & analyse"
HOME = Page("pages/home.py", "Home", ":material/home:", "home", "Start", default=True)
QUESTIONS = Page("pages/questions.py", "Questions", ":material/quiz:", "questions", _SIM)
SIMULATE = Page("pages/simulate.py", "Simulate", ":material/play_circle:", "simulate", _SIM)
BATCH = Page("pages/batch.py", "Batch", ":material/dynamic_feed:", "batch", _SIM)
GRAPH = Page("pages/graph.py", "Graph editor", ":material/account_tree:", "graph", _ANALYSE)
FAILURES = Page("pages/failures.py", "Failure modes", ":material/troubleshoot:", "failures", _ANALYSE)
RUNS = Page("pages/runs.py", "Saved runs", ":material/history:", "runs", _ANALYSE)
REALISM = Page("pages/realism.py", "Realism", ":material/groups:", "realism", _ANALYSE)
AGREEMENT = Page("pages/agreement.py", "Agreement", ":material/thumbs_up_down:", "agreement", _ANALYSE)
PAGES = (HOME, QUESTIONS, SIMULATE, BATCH, GRAPH, FAILURES, RUNS, REALISM, AGREEMENT)

# the query parameters beside the run filters' (RunFilter.param)
RUN, PAIR, TURN = "run", "pair", "turn"  # Simulate: the run, the run beside it, the turn; Failure modes: one run
IU = "iu"  # Simulate: the IU whose story is open
QUESTION, VERSION = "question", "version"  # Simulate's setup, the Graph editor, the filter bars: a question's graph version
WATCHED = "tag"  # Batch: the batch watched
STATUS = "status"  # Failure modes across runs: which runs count
BEFORE, AFTER = "before", "after"  # Failure modes, before / after: a batch or tag, and a what-if tag of it
BAD_ONLY, GROUP, ORDER = "bad", "group", "order"  # Saved runs: failed / interrupted only, one line per batch, order
SIMULATE_PARAMS = (RUN, PAIR, TURN, IU)


def navigation() -> dict[str, list]:
    """The pages by section, in order, as ``st.navigation`` takes them."""
    sections: dict[str, list] = {}
    for p in PAGES:
        sections.setdefault(p.section, []).append(
            st.Page(p.script, title=p.title, icon=p.icon, url_path=p.url_path, default=p.default))
    return sections


# ---------------------------------------------------------------------- which page this run shows
def arrive(page: Page) -> None:
    """Note that this script run shows ``page`` (:func:`ui.common.frame.ensure_frame` calls it first
    thing in every page; a fragment's rerun is not a run of the page and notes nothing)."""
    st.session_state[keys.PAGE_BEFORE] = st.session_state.get(keys.PAGE_NOW)
    st.session_state[keys.PAGE_NOW] = page.url_path


def entered(page: Page) -> bool:
    """Whether ``page`` was just entered — from another page, a link or a new session — rather than
    rerun by one of its own widgets."""
    return st.session_state.get(keys.PAGE_BEFORE) != page.url_path


# ---------------------------------------------------------------------- parameters
def simulate_params(run_ids: Sequence[str], turn: int | None = None, iu: str | None = None) -> dict[str, str]:
    """Simulate's deep link to one run or a pair (``?run=A&turn=3&pair=B``), with an IU's story
    open (``&iu=IU3``)."""
    params = {RUN: run_ids[0]}
    if turn is not None:
        params[TURN] = str(int(turn))
    if len(run_ids) > 1:
        params[PAIR] = run_ids[1]
    if iu:
        params[IU] = iu
    return params


def runs_params(run_filter: RunFilter) -> dict[str, str]:
    """Saved runs' deep link to the runs a filter selects (``?batch=TAG``)."""
    return run_filter.to_params()


# ---------------------------------------------------------------------- moves
def _switch(page: Page, params: Mapping[str, str], where: str) -> None:
    try:
        st.switch_page(page.script, query_params=dict(params))
    except st.errors.StreamlitAPIException:
        st.info(f"{where} on the {page.title} page (it is not registered in this view).")


def link(container, page: Page, label: str, *, icon: str | None = None,
         params: Mapping[str, str] | None = None) -> None:
    """A link to ``page`` (with ``params``) drawn in ``container`` (``st`` or a container of it); a page
    run on its own, without the app's navigation, shows the label as text instead."""
    try:
        container.page_link(page.script, label=label, icon=icon, query_params=dict(params) if params else None)
    except st.errors.StreamlitAPIException:
        container.caption(f"{label} (on the {page.title} page, not registered in this view)")


def open_in_simulate(run_id: str, turn: int, iu: str | None = None) -> None:
    """Switch to the Simulate page at ``run_id``, turn ``turn`` (0 = the initial state), with the
    story of ``iu`` open when one is named."""
    where = f"Open run {run_id} at turn {turn}" + (f" with the story of {iu}" if iu else "")
    _switch(SIMULATE, simulate_params((run_id,), turn, iu), where)


def show_in_simulate(run_ids: Sequence[str], turn: int) -> None:
    """Switch to the Simulate page showing ``run_ids`` (one run or a pair) at ``turn``."""
    _switch(SIMULATE, simulate_params(run_ids, turn), f"Open run {', '.join(run_ids)} at turn {turn}")


def simulate_question(question_id: str, version: int | None = None) -> None:
    """Switch to Simulate's setup with ``question_id`` chosen, on its graph version number ``version``
    (its newest when None)."""
    params = {QUESTION: question_id, **({VERSION: str(int(version))} if version is not None else {})}
    where = f"Set up a run of {question_id}" + (f" on graph v{version}" if version is not None else "")
    _switch(SIMULATE, params, where)


def edit_graph(question_id: str) -> None:
    """Switch to the Graph editor on ``question_id``'s graph."""
    _switch(GRAPH, {QUESTION: question_id}, f"Open the graph of {question_id}")


def failures(run_filter: RunFilter) -> None:
    """Switch to Failure modes across the runs ``run_filter`` selects (e.g. one batch's)."""
    _switch(FAILURES, run_filter.to_params(), "Choose these filters under Across runs")
