"""One JSON log per benchmark: the figures and everything needed to say where they came from.

Every script in ``benchmarks/`` ends with :func:`write_log`, which writes
``benchmarks/logs/<name>.json``::

    {"name": ..., "timestamp": "2026-12-02T13:30:00+00:00",
     "revision": {"commit": "<git rev-parse HEAD>", "dirty": true|false},
     "python": "3.11.x", "packages": {"numpy": "2.4.6", ...},
     "machine": {"platform": ..., "cores": 2, "load_average": [1m, 5m, 15m]},
     "seeds": [...], "split": "...", "figures": {...}, "extra": {...}}

README figures are read from these logs (``tests/test_readme_figures.py`` checks every marked
figure against its log, and ``benchmarks/readme_figures.py --write-readme`` rewrites the marked
values), so a figure without a log cannot be written. A figure is a number or a nested dict/list
of numbers and strings; keys are joined with "." to address one (``figures.lexical.loro.tq``).
A reference time that is not measured in the same run is stored as ``{"value": 3.7, "quoted": "..."}``
so the log says it was quoted.

Usage from a script::

    from benchmarks._log import write_log   # or: from _log import write_log (run as a script)
    write_log("engine", {"per_turn_us": 72.1}, seeds=[1], split="all sample questions")
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "benchmarks" / "logs"

#: The distributions whose versions can move a figure (floats from numpy/scikit-learn/scipy,
#: page timings from streamlit, validation cost from pydantic, storage from sqlite-utils, ...).
PACKAGES = ("streamlit", "numpy", "scikit-learn", "scipy", "pandas", "pydantic", "pydantic-core",
            "sqlite-utils", "networkx", "plotly", "openai", "anthropic", "httpx")


def revision(root: Path = ROOT) -> dict[str, Any]:
    """The commit the figures were measured at and whether the work tree had changes (a figure
    measured on a dirty tree cannot be reproduced from the commit alone)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "HEAD") or None
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/logs")
    return {"commit": commit, "dirty": bool(status) if commit else None}


def packages(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None when it is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    """Cores and load: a timing from a busy 2-core machine is not one from an idle one."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"platform": platform.platform(), "processor": platform.machine(), "cores": os.cpu_count(),
            "load_average": load}


def compile_bytecode(*trees: Path) -> dict[str, Any]:
    """Write the bytecode of each tree's ``knowsim_core`` (and ``pages``, ``app.py``) as
    ``scripts/bootstrap.sh`` does before it starts anything, and say so in the log: with
    ``PYTHONDONTWRITEBYTECODE`` set, an uncompiled tree compiles every module from source on each
    start (~40 ms of a command's start-up here), so two trees compare like with like only when both
    are compiled — a baseline checkout made with ``git worktree add`` has no ``__pycache__``."""
    done = []
    for tree in trees or (ROOT,):
        targets = [str(Path(tree) / t) for t in ("knowsim_core", "pages", "app.py") if (Path(tree) / t).exists()]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *targets], capture_output=True, check=True)
        done.append(str(tree))
    return {"compiled": done, "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")}


def portable(value: Any) -> Any:
    """``value`` with this machine's paths made relative: the checkout as ``.``, its folder as ``..``
    (where ``../shared`` sits), the temporary folder as ``$TMPDIR``, so a committed log names no
    machine's layout and reads the same from any clone."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        return value
    for path, alias in ((str(ROOT), "."), (str(ROOT.parent), ".."), (tempfile.gettempdir(), "$TMPDIR")):
        if path != "/":
            value = re.sub(re.escape(path) + r"(?=/|$|[^\w.-])", alias, value)
    return value


def write_log(name: str, figures: dict[str, Any], *, seeds: Any = None, split: str | None = None,
              extra: dict[str, Any] | None = None, log_dir: Path | None = None) -> Path:
    """Write ``<log_dir>/<name>.json`` (default ``benchmarks/logs``) and return its path.

    ``figures`` are what the README may quote; ``seeds`` and ``split`` say what data they came from
    (``split`` e.g. "leave-one-recording-out over the 3 shared recordings"); ``extra`` holds anything
    else worth keeping (arguments, raw timings). The file is replaced whole, never appended to."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"a log name is a plain file stem, not {name!r}")
    folder = Path(log_dir) if log_dir is not None else LOG_DIR
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "name": name,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "revision": revision(),
        "python": platform.python_version(),
        "packages": packages(),
        "machine": machine(),
        "argv": sys.argv[1:],
        "seeds": seeds,
        "split": split,
        "figures": figures,
        "extra": extra or {},
    }
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(portable(record), indent=1, ensure_ascii=False, sort_keys=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(path)
    print(f"[log] {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return path


def read_log(name: str, log_dir: Path | None = None) -> dict[str, Any]:
    """The log ``name`` as written by :func:`write_log` (FileNotFoundError when absent)."""
    folder = Path(log_dir) if log_dir is not None else LOG_DIR
    return json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))


def figure(log: dict[str, Any], key: str) -> Any:
    """One figure of a log by its dotted key (``"lexical.loro.tq"``); KeyError names what is missing."""
    node: Any = log["figures"]
    for part in key.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"log {log.get('name')!r} has no figure {key!r} (stopped at {part!r})")
    if isinstance(node, dict) and "value" in node and "quoted" in node:
        node = node["value"]
    return node
