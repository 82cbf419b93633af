"""Download buttons that take a finding out of the Studio: a one-file run replay, a paper figure and table.

Each page adds one call (Simulate and Saved runs: :func:`replay_button`; Failure modes, and any page
with a per-level population of runs: :func:`paper_downloads`; any table, e.g. the Agreement page's:
:func:`latex_download`), so the pages stay thin and
the bytes are the command line's own — ``export RUN --format html [--pair RUN_B]`` and
``failures --figure PATH`` / ``--latex`` call the same core functions (:func:`replay_html`,
:func:`mode_figure`, :func:`latex_table`). Files are built only when a button is clicked
(Streamlit calls ``data`` then), so a page with buttons costs nothing until someone downloads.
"""

from __future__ import annotations

from typing import Sequence

import streamlit as st

from knowsim_core.engine.facts import RunFacts
from knowsim_core.evaluation.analysis import level_summary
from knowsim_core.evaluation.figures import latex_table, mode_figure, plain_table
from knowsim_core.evaluation.replay import replay_html

FIGURE_MIME = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}


def replay_file_name(run_ids: Sequence[str]) -> str:
    """``knowsim_replay_<id>.html``, or ``…_<a>_vs_<b>.html`` for a pair."""
    return "knowsim_replay_" + "_vs_".join(run_ids) + ".html"


def figure_bytes(facts: Sequence[RunFacts], fmt: str) -> bytes:
    """The figure ``failures --figure x.<fmt>`` writes for the same runs."""
    return mode_figure(level_summary(list(facts)), fmt)


def table_text(facts: Sequence[RunFacts]) -> str:
    """The table ``failures --latex`` prints for the same runs."""
    return latex_table(level_summary(list(facts)))


def replay_button(store, run_ids: Sequence[str], *, key: str, container=None) -> None:
    """"Export replay": the run (two ids: the pair side by side) as one HTML file that opens anywhere."""
    ids = [str(r) for r in run_ids][:2]
    if not ids:
        return
    where = container or st
    label = "Export replay" if len(ids) == 1 else "Export replay (side by side)"
    where.download_button(
        label, data=lambda: replay_html(store, ids), file_name=replay_file_name(ids), mime="text/html",
        on_click="ignore", key=key, icon=":material/movie:",
        help="One HTML file with the graph, the load gauge, both messages and each IU's mode and why, turn by "
             "turn (← / →, #turn=N in the address). It opens from disk in any browser, with no network; "
             "credentials are redacted.")


def paper_downloads(facts: Sequence[RunFacts], *, key: str, stem: str = "knowsim_failure_modes") -> None:
    """The per-level failure-mode figure (SVG, PDF, PNG) and the KG / DC / CO LaTeX table of ``facts`` —
    the same files as ``failures --figure`` / ``--latex`` for the same runs."""
    if not facts:
        return
    runs = list(facts)
    cols = st.columns(4)
    for col, fmt in zip(cols, ("svg", "pdf", "png")):
        col.download_button(f"Figure ({fmt.upper()})", data=lambda fmt=fmt: figure_bytes(runs, fmt),
                            file_name=f"{stem}.{fmt}", mime=FIGURE_MIME[fmt], on_click="ignore", key=f"{key}_fig_{fmt}",
                            help="Failure-mode shares per knowledge level (paper Fig. 6 style), one column wide")
    cols[3].download_button("LaTeX table", data=lambda: table_text(runs), file_name=f"{stem}.tex",
                            mime="text/x-tex", on_click="ignore", key=f"{key}_tex",
                            help="KG / DC / CO per level with n and the interquartile range (needs booktabs)")


def latex_download(header: Sequence[str], rows: Sequence[Sequence], *, key: str, file_name: str, caption: str = "",
                   label: str = "LaTeX table") -> None:
    """Any table as a booktabs LaTeX file (:func:`knowsim_core.evaluation.figures.plain_table`: text
    escaped, floats to three places, a (q1, q3) pair as ``[q1, q3]``, None as a dash)."""
    head, body = list(header), [list(r) for r in rows]
    st.download_button(label, data=lambda: plain_table(head, body, caption=caption), file_name=file_name,
                       mime="text/x-tex", on_click="ignore", key=key, help="booktabs table (needs \\usepackage{booktabs})")
