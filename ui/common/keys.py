"""The session-state keys of the shared UI code: the frame, the page shown, deep links, model keys.

Each feature package names its own keys in its ``keys.py`` (``ui.simulate.keys``, ``ui.runs.keys``
…): a key that is read or written apart from the one widget that draws it is spelled there and only
there, and a key only its widget uses is written once, at the widget. ``tests/test_ui_owners.py``
holds every module of ``ui/``, ``pages/`` and ``app.py`` to that.
"""

from __future__ import annotations

FRAME_SEEN = "_knowsim_frame_seen"  # set by app.py on every run: this session has been through the frame
PAGE_NOW, PAGE_BEFORE = "_ks_page_now", "_ks_page_before"  # the page this script run shows, and the one before


def link_seen(widget_key: str) -> str:
    """The URL value a deep-linked widget last took from (or wrote to) the address."""
    return f"_ks_link_{widget_key}"


def llm_field(name: str) -> str:
    """The sidebar box holding one model setting (``openai_api_key`` …) for this browser session."""
    return f"_llm_{name}"


LLM_SETTINGS_ERROR = "_llm_settings_error"  # why the model settings of this session are invalid
