"""The session-state keys of the people's pages: a turn's judgments, Agreement and Realism."""

from __future__ import annotations

JUDGE_NAME = "judge_name"  # the researcher's name, remembered for their next judgment
AGREEMENT_TURNS, AGREEMENT_SCATTER = "agr_turns", "agr_scatter"  # Agreement's charts a click opens a run from
REALISM_REPORT = "realism_report"  # the last scoring: (report, {conversation: run id})
REALISM_TURNS = "realism_turns"  # Realism's turns table (a row opens the real and simulated messages)

# Agreement's disagreement view (ui.people.disagreement_view)
DISAGREE_KIND = "agr_dis_kind"  # which judged turns the table lists
DISAGREE_METRIC = "agr_dis_metric"  # the metric set against the answers


def disagree_table(name: str, view: str) -> str:
    """A table of the disagreement view (``name``: turns, ius, answers) as drawn for ``view`` (its
    choice): a new table per choice, so a row selected in one list never picks a row of another."""
    return f"agr_dis_{name}_{view}"
