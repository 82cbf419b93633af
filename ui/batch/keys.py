"""The session-state keys of the Batch page."""

from __future__ import annotations

QUESTIONS = "batch_questions"  # the new batch's questions (preset, and added to a group at a time)
JUST_LAUNCHED = "batch_watch"  # the batch launched by the last click: watched on the next run
WATCHED = "batch_pick"  # the batch watched
