"""Tags: the one owner of what a batch tag and a run tag may be, and of how a batch tag is made.

A **batch tag** names a batch in the database and, on the Batch page, its launch record and its
log file — so it is a plain file-name-safe word (letters, digits, ``-_.``, starting with a letter
or digit, at most :data:`MAX_BATCH_TAG` characters), never a path, a control character or 100 KB
of text. A bad one is the caller's input: :class:`~knowsim_core.errors.ConfigError`.

A **run tag** is another thing: a researcher's free-text label on one run (``run --tag``, Saved
runs; at most :data:`MAX_RUN_TAG` characters, no comma or control character), checked by
:func:`check_run_tag` before the ``run`` command stores anything and again where storage files a
run. The two rules differ on purpose (a batch tag becomes a file name, a run tag never does); both
live here, named apart, so each has one limit and one error class in every layer: a bad tag of
either kind is the caller's input, :class:`~knowsim_core.errors.ConfigError`.

:func:`new_batch_tag` is the only place a batch tag is generated (the command line and the Batch
page both call it).
"""

from __future__ import annotations

import os
import re
import time

from knowsim_core.errors import ConfigError

MAX_BATCH_TAG = 64
MAX_RUN_TAG = 40
_BATCH_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_batch_tag(tag: str, *, what: str = "--tag") -> str:
    """``tag`` if it is a valid batch tag.

    Raises:
        ConfigError: one line naming the rule (and a short, printable quote of the bad value).
    """
    if isinstance(tag, str) and len(tag) <= MAX_BATCH_TAG and _BATCH_TAG.fullmatch(tag):
        return tag
    shown = repr(tag[:40]) + ("…" if len(tag) > 40 else "") if isinstance(tag, str) else repr(tag)
    raise ConfigError(f"{what}: {shown} is not a batch tag; use 1–{MAX_BATCH_TAG} letters, digits, '-', '_' or '.', "
                      "starting with a letter or digit")


def check_run_tag(tag: str) -> str:
    """A researcher's run tag, stripped.

    Raises:
        ConfigError: one line when it is empty, too long or holds a comma or a control character.
    """
    t = (tag or "").strip()
    if not t:
        raise ConfigError("a tag cannot be empty; type a word such as 'baseline' or 'ablation-2'")
    if len(t) > MAX_RUN_TAG:
        raise ConfigError(f"tag {t[:20]!r}… is {len(t)} characters; at most {MAX_RUN_TAG}")
    if any(ord(c) < 32 or c == "," for c in t):
        raise ConfigError(f"tag {t!r} holds a comma or a control character; use letters, digits, - or _")
    return t


def new_batch_tag() -> str:
    """A fresh batch tag: ``b<date>-<time>-<4 hex>`` (local time; the hex keeps two batches started
    in the same second apart). Always passes :func:`check_batch_tag`."""
    return f"b{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(2).hex()}"


__all__ = ["MAX_BATCH_TAG", "MAX_RUN_TAG", "check_batch_tag", "check_run_tag", "new_batch_tag"]
