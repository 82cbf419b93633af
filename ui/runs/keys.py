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
WHATIF_TAGS = "wi_save_tags"  # the what-if panel: the tags a saved what-if is filed under


def table(view: str) -> str:
    """The run table of one list shown (``view``: a digest of its filters, order, page and deletions)."""
    return f"runs_table_{view}"


# Failure modes
FAILURE_FILTERS = FilterKeys("fm", ("question_id", "level", "assistant", "preset", "batch_tag", "tag",
                                     "graph_version", "kind", "origin", "rated", "correctness"))
FAILURE_STATUS = "fm_status"  # which runs count across runs
FAILURE_BARS, FAILURE_HEAT = "fm_bars", "fm_heat"  # one run: modes per turn, IU × turn (a click opens that turn)
FAILURE_SHARES, FAILURE_TABLE = "fm_shares", "fm_table"  # across runs (a click opens a run)

# Failure modes: a batch what-if's before and after, side by side (and the form that makes one)
BEFORE, AFTER = "fm_before", "fm_after"  # the two populations: a batch or tag, and a what-if tag of it
BEFORE_AFTER_STATUS = "fm_ba_status"  # which runs the two sides count
BEFORE_AFTER_SHARES = ("fm_ba_before_shares", "fm_ba_after_shares")  # the two shares charts
BATCH_WHATIF = "fm_ba_new"  # the form's prefix: turn, IU, quality, attempt, tag
BEFORE_AFTER_FLASH = "fm_ba_flash"  # what the last batch what-if stored, for the next run of the page
BEFORE_AFTER_MADE = "fm_ba_made"  # its tag, chosen as "after" on the next run (the box is drawn by then)
