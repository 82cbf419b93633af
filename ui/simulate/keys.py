"""The session-state keys of the Simulate page: the session's player and playback, the panels it opens,
and the widgets whose values are read apart from where they are drawn."""

from __future__ import annotations

PLAYER = "_ks_player"  # the session's Player (the runs shown and the turn)
PLAYBACK = "_ks_playback"  # auto-play: playing, speed, last step
COMPARE_OPEN = "_ks_compare_open"  # set after a fork: the pair opens with its Compare panel open
SPEED = "sim_speed"  # the speed box
SCRUB = "sim_scrub"  # the turn slider, one per drawn position (ui.simulate.view.scrub_key)
TYPED = "sim_typed"  # the typed message's box; a pair's second run adds "_1"


def graph(index: int) -> str:
    """The graph component of run ``index`` of the shown runs (0, or 1 for a pair's second)."""
    return f"sim_graph_{index}"


# the custom start of the setup form
CUSTOM_STATES = "_ks_custom_states"  # {graph scope: {IU id: starting state}}
CUSTOM_EPOCH = "_ks_custom_epoch"  # renews the states table after "Sample"
CUSTOM_GRAPH = "setup_custom_graph"


def custom_table(epoch: int) -> str:
    """The starting-states table, drawn anew when ``epoch`` changes."""
    return f"setup_custom_states_{epoch}"
