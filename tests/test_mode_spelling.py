"""Issue 34 item 18 / issue 32: one spelling and one letter per failure mode in every view.

Old: the graph badge said R/P/E/O/U, the ``run`` command's counts column R/B/E/W/A (B blocked,
W wasted, A absorbed) and the replay took the first character of whatever name it was sent."""

from __future__ import annotations

import argparse

from knowsim_core.commands import run as run_command
from knowsim_core.evaluation.replay import replay_payload
from knowsim_core.vocab import FAILURE_ORDER, MODE_LETTERS
from ui.common.theme import MODE_BADGE


def test_the_run_command_counts_modes_under_the_badges_letters():
    badge = "/".join(MODE_BADGE[m] for m in FAILURE_ORDER)
    assert badge == "R/P/E/O/U"
    assert run_command.HEADER.split()[-2] == badge  # the column before "vote"
    p = argparse.ArgumentParser()
    run_command.add_arguments(p)
    assert "R redundant, P prereq-blocked, E effective, O overload-wasted, U under-absorbed" in p.epilog


def test_the_replay_is_sent_each_modes_letter_and_spelling():
    modes = replay_payload([], title="t")["modes"]
    assert [(d["name"], d["letter"]) for d in modes] == [(m.title, MODE_LETTERS[m]) for m in FAILURE_ORDER]
