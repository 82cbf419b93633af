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


# one IU's story under the player (ui.simulate.story)
STORY_IU = "_ks_story_iu"  # the IU whose story is open (mirrored in ?iu=, see ui.common.nav.IU)
STORY_PICK = "sim_story_pick"  # the IU box in the story's panel (set from STORY_IU before it is drawn)
STORY_RUNS = "_ks_story_runs"  # the runs STORY_IU belongs to (another run starts with no story open)
STORY_CLICKS = "_ks_story_clicks"  # the graph selections last seen, so only a new click opens a story


def story_table(index: int, iu: str, turn: int) -> str:
    """The story table of run ``index``'s IU ``iu`` as drawn at ``turn`` (a row click moves the
    player; a new table per drawn turn keeps an old row selection from moving it back)."""
    return f"sim_story_table_{index}_{iu}_{turn}"
