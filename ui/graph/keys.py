"""The session-state keys of the Graph editor."""

from __future__ import annotations

VERSION = "graph_version_pick"  # the version shown
NEXT_VERSION = "graph_version_next"  # a version just saved: picked before the selectbox on the next run
FLASH = "graph_flash"  # one message for the next run of the page (saved)
NONCE = "graph_editor_nonce"  # bumped by a save, so the edit tables start again from the new version


def editor_tables(version_id: int, nonce: int) -> tuple[str, str]:
    """The node and edge tables editing one version."""
    return f"nodes_{version_id}_{nonce}", f"edges_{version_id}_{nonce}"
