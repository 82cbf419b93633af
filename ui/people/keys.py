"""The session-state keys of the people's pages: a turn's judgments, Agreement and Realism."""

from __future__ import annotations

JUDGE_NAME = "judge_name"  # the researcher's name, remembered for their next judgment
AGREEMENT_TURNS, AGREEMENT_SCATTER = "agr_turns", "agr_scatter"  # Agreement's charts a click opens a run from
REALISM_REPORT = "realism_report"  # the last scoring: (report, {conversation: run id})
REALISM_TURNS = "realism_turns"  # Realism's turns table (a row opens the real and simulated messages)
