"""constraints.txt pins, to the version, every package the README's figures were measured with, and
``make app`` / ``make test`` install under it (README "Tests and benchmarks": "Pinned versions")."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_dependencies import with_extras

ROOT = Path(__file__).resolve().parent.parent


def pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            spec = list(req.specifier)
            assert len(spec) == 1 and spec[0].operator == "==", f"not an exact pin: {line!r}"
            out[canonicalize_name(req.name)] = spec[0].version
    return out


def test_every_declared_package_is_pinned_inside_its_bounds():
    """Planted faults: a requirement missing from constraints.txt, or a pin outside the declared
    bounds (numpy==1.26.4 against numpy>=2.0,<3), each fail here."""
    pinned = pins((ROOT / "constraints.txt").read_text())
    for name, req in with_extras(ROOT / "requirements-dev.txt").items():
        key = canonicalize_name(name)
        assert key in pinned, f"{name} is declared but not pinned in constraints.txt"
        assert req.specifier.contains(pinned[key], prereleases=True), f"{name}=={pinned[key]} is outside {req.specifier}"


def test_the_environment_running_the_tests_is_the_pinned_one():
    """What make test installed is what constraints.txt says (a package installed at another version
    means the pins were not used, or not updated after an upgrade). Planted fault: numpy==2.4.5."""
    pinned = pins((ROOT / "constraints.txt").read_text())
    for name in with_extras(ROOT / "requirements-dev.txt"):
        key = canonicalize_name(name)
        assert md.version(name) == pinned[key], f"{name} {md.version(name)} installed, {pinned[key]} pinned"


def test_bootstrap_installs_under_the_constraints():
    script = (ROOT / "scripts" / "bootstrap.sh").read_text()
    install = [ln for ln in script.splitlines() if "pip install" in ln]
    assert install and all("-c constraints.txt" in ln for ln in install), install


def test_a_pin_outside_the_bounds_is_seen():
    """The check above on a planted constraints text: it must notice."""
    req = Requirement("numpy>=2.0,<3")
    assert not req.specifier.contains(pins("numpy==1.26.4\n")["numpy"])


def test_bootstrap_writes_the_packages_bytecode_before_it_starts_anything(tmp_path):
    """With PYTHONDONTWRITEBYTECODE set, Python compiled every module from source at each start
    (~40 ms of a command's start-up): the set-up's compileall line, run as written on a copy of the
    tree, leaves a current .pyc for every module of the package, the pages and app.py, which the
    interpreter then loads without compiling. Planted faults: the line removed, or naming a folder
    that is not there, fail here."""
    import shutil
    import subprocess
    import sys

    script = (ROOT / "scripts" / "bootstrap.sh").read_text()
    lines = [ln.strip() for ln in script.splitlines() if "-m compileall" in ln and not ln.lstrip().startswith("#")]
    assert len(lines) == 1, lines
    cut = script.index("\ncase \"$want\" in")
    assert script.index(lines[0]) < cut, "the bytecode is written after the command starts"
    args = lines[0].split("-m compileall", 1)[1].split()
    for name in ("knowsim_core", "pages", "app.py"):
        assert name in args, f"bootstrap's compileall leaves out {name}"
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(
            src, tmp_path / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if src.is_dir() else {}))
    subprocess.run([sys.executable, "-m", "compileall", *args], cwd=tmp_path, check=True, capture_output=True)
    import importlib.util

    for py in [*(tmp_path / "knowsim_core").rglob("*.py"), *(tmp_path / "pages").rglob("*.py"), tmp_path / "app.py"]:
        pyc = Path(importlib.util.cache_from_source(str(py)))
        assert pyc.exists(), f"no bytecode for {py.relative_to(tmp_path)}"
    import os

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-v", "-c", "import knowsim_core.cli"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    cli_pyc = importlib.util.cache_from_source(str(tmp_path / "knowsim_core" / "cli.py"))
    assert f"code object from '{cli_pyc}'" in done.stderr, "knowsim_core.cli was compiled from source, not loaded"


def test_the_set_up_installs_a_requirements_file_once_whichever_command_asks(tmp_path):
    """The install stamp names what was installed, not the command: ``make app`` then ``make
    local-model`` install requirements.txt once (the stamp was per command, so the second ran pip over
    the same file again); ``make test`` installs requirements-dev.txt, and again only after a pin
    changes. Runs the set-up's own lines, with a stand-in interpreter that logs what pip is asked."""
    import shutil
    import subprocess

    script = (ROOT / "scripts" / "bootstrap.sh").read_text()
    start = script.index("reqs=requirements.txt")
    end = script.index('touch "$stamp"', start)
    block = script[start:script.index("fi\n", end) + 3]
    for name in ("requirements.txt", "requirements-dev.txt", "constraints.txt"):
        shutil.copy2(ROOT / name, tmp_path / name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    fake = tmp_path / ".venv" / "bin" / "python"
    fake.write_text('#!/bin/sh\necho "$*" >> pip.log\n')
    fake.chmod(0o755)

    def set_up(want: str) -> None:
        subprocess.run(["bash", "-c", f'set -euo pipefail\nVENV=.venv\nwant={want}\n{block}'], cwd=tmp_path,
                       check=True, capture_output=True)

    def installs() -> list[str]:
        log = tmp_path / "pip.log"
        return [ln.split("-r ")[-1] for ln in log.read_text().splitlines()] if log.exists() else []

    set_up("app")
    set_up("local-model")
    set_up("app")
    assert installs() == ["requirements.txt"]
    set_up("test")
    set_up("test")
    assert installs() == ["requirements.txt", "requirements-dev.txt"]
    with (tmp_path / "constraints.txt").open("a") as f:
        f.write("# a pin changed\n")
    set_up("local-model")
    assert installs() == ["requirements.txt", "requirements-dev.txt", "requirements.txt"]
