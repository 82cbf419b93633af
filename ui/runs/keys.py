"""The session-state keys of Saved runs and Failure modes: the two filter bars (their widget keys
handed out by :class:`~ui.runs.filter_bar.FilterKeys`), the list's own choices, its table and
dialogs, and the charts a click is read from."""

from __future__ import annotations

from ui.runs.filter_bar import FilterKeys

# Saved runs
RUN_FILTERS = FilterKeys("runs")  # every filter
BAD_ONLY, GROUP, ORDER = "runs_bad", "runs_group", "runs_order"  # the list's own choices
FLASH = "runs_flash"  # one message for the next run of the page (deleted, resumed, tagged)
IMPORTED = "runs_imported"  # the upload already imported (a rerun must not import it twice)
CONFIRM_DELETE = "runs_confirm_delete"  # the runs the delete dialog asks about
TABLE_GEN = "runs_table_gen"  # bumped when rows vanish, so no old selection carries over
BATCHES = "runs_batches"  # the batch groups' table


def table(view: str) -> str:
    """The run table of one list shown (``view``: a digest of its filters, order, page and deletions)."""
    return f"runs_table_{view}"


# Failure modes
FAILURE_FILTERS = FilterKeys("fm", ("question_id", "level", "assistant", "preset", "batch_tag", "tag",
                                     "graph_version", "kind", "origin", "rated", "correctness"))
FAILURE_STATUS = "fm_status"  # which runs count across runs
FAILURE_BARS, FAILURE_HEAT = "fm_bars", "fm_heat"  # one run: modes per turn, IU × turn (a click opens that turn)
FAILURE_SHARES, FAILURE_TABLE = "fm_shares", "fm_table"  # across runs (a click opens a run)
