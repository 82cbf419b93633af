"""``export -o`` and ``failures --figure`` never replace a file they were not asked to create (issue 35, item 1).

The old writers wrote ``NAME.part`` and renamed it over ``NAME`` whatever ``NAME`` was: a FIFO's reader got
0 bytes and the FIFO became a regular file, a symlink was replaced instead of its target written, and
``-o /dev/full`` as root replaced the device and printed "wrote … bytes", exit 0. Each test here fails on
that code: the FIFO is checked still a FIFO with the bytes read through it, the symlink still a symlink
with its target written, a full-device node (a copy of /dev/full made with mknod, never the real one)
still a device and the command failing with the one-line disk-full error.
"""

from __future__ import annotations

import os
import stat
import threading

import pytest

from knowsim_core.cli import main
from knowsim_core.errors import FormatError
from knowsim_core.formats.output import write_output
from knowsim_core.services.runner import start_run


@pytest.fixture()
def run_id(seeded_store):
    live = start_run(seeded_store, question_id="sample_lava_lamps", level="novice",
                     assistant_id="offline/comprehensive", seed=3, max_turns=2)
    live.run_to_end()
    return live.run_id


def export(store, *args: str) -> int:
    return main(["export", *args, "--db", str(store.path)])


def read_fifo(path, sink: list) -> threading.Thread:
    def reader():
        with open(path, "rb") as fh:
            sink.append(fh.read())
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t


def test_a_fifo_is_written_through_not_replaced(seeded_store, run_id, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = read_fifo(fifo, got)
    assert export(seeded_store, run_id, "--format", "csv", "-o", str(fifo)) == 0
    t.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    capsys.readouterr()
    assert export(seeded_store, run_id, "--format", "csv") == 0
    assert got and got[0] and got[0].decode("utf-8") == capsys.readouterr().out
    assert not (tmp_path / "pipe.part").exists()


def test_a_symlink_has_its_target_written(seeded_store, run_id, tmp_path, capsys):
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert export(seeded_store, run_id, "--format", "csv", "-o", str(link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    capsys.readouterr()
    assert export(seeded_store, run_id, "--format", "csv") == 0
    assert real.read_text(encoding="utf-8") == capsys.readouterr().out
    assert not list(tmp_path.glob("*.part"))


def test_a_full_device_gives_the_one_line_disk_full_error_and_stays_a_device(seeded_store, run_id, tmp_path, capsys):
    dev = tmp_path / "full"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # the same device as /dev/full
        os.close(os.open(dev, os.O_WRONLY))
    except OSError as exc:
        pytest.skip(f"cannot make a /dev/full node here (needs root and a dev-enabled mount): {exc}")
    capsys.readouterr()
    assert export(seeded_store, run_id, "--format", "html", "-o", str(dev)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cannot write {dev}: No space left on device") and "\n" not in err
    assert "wrote" not in err
    assert stat.S_ISCHR(os.lstat(dev).st_mode), "the device node was renamed over"


def test_a_folder_is_refused_in_one_line(tmp_path):
    with pytest.raises(FormatError, match="it is a folder"):
        write_output(tmp_path, b"x")


def test_failures_figure_into_a_fifo_and_through_a_symlink(seeded_store, run_id, tmp_path, capsys):
    fifo = tmp_path / "fig.svg"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = read_fifo(fifo, got)
    assert main(["failures", "--db", str(seeded_store.path), "--figure", str(fifo)]) == 0
    t.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got and got[0].startswith(b"<?xml")
    real = tmp_path / "real.svg"
    link = tmp_path / "link.svg"
    link.symlink_to(real)  # dangling: the target is created
    assert main(["failures", "--db", str(seeded_store.path), "--figure", str(link)]) == 0
    assert link.is_symlink() and real.read_bytes() == got[0]
