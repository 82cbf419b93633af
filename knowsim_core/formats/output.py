"""Write one output file (``export -o``, ``failures --figure``) without replacing what is not ours.

A regular file is written whole or not at all: the bytes go to ``NAME.part`` beside it and are renamed
over it, so a reader never sees half a replay and a full disk leaves no half file holding its space.
Renaming over anything else would destroy it: a FIFO's reader would get nothing, a
device such as ``/dev/full`` (run as root) would become a regular file, a symlink would be replaced
instead of its target written. So:

* a symlink is followed: its target is what gets written (atomically, if that is a regular file);
* an existing FIFO, character device or socket is written through in place, like a shell's ``>``
  (``/dev/full`` then gives the one-line disk-full error);
* a directory or block device is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from knowsim_core.errors import FormatError

_HINTS = {errno.ENOSPC: "; free some space (or write the output elsewhere)",
          errno.EDQUOT: "; free some space (or write the output elsewhere)"}


def _error(path: Path, exc: OSError) -> FormatError:
    return FormatError(f"cannot write {path}: {exc.strerror or exc}{_HINTS.get(exc.errno, '')}")


def write_output(path: str | Path, data: bytes) -> int:
    """Write ``data`` to ``path``; returns the number of bytes written.

    Raises:
        FormatError: the target cannot be written (full disk, no permission, a directory…); one line
            naming the path, and nothing half-written left behind for a regular file.
    """
    given = Path(path)
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise _error(given, exc) from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise FormatError(f"cannot write {given}: it is a folder; name a file inside it")
    if mode is not None and stat.S_ISBLK(mode):
        raise FormatError(f"cannot write {given}: it is a block device, not a file")
    if mode is not None and not stat.S_ISREG(mode):
        return _write_through(given, target, data)
    tmp = target.with_name(target.name + ".part")
    try:
        tmp.write_bytes(data)
        tmp.replace(target)
    except OSError as exc:
        try:  # a full disk keeps no half-written .part holding its space
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise _error(given, exc) from exc
    return len(data)


def _write_through(given: Path, target: Path, data: bytes) -> int:
    """Write into an existing FIFO or device in place (never rename over it)."""
    try:
        fd = os.open(target, os.O_WRONLY)
    except OSError as exc:
        raise _error(given, exc) from exc
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise _error(given, exc) from exc
    finally:
        os.close(fd)
    return len(data)
