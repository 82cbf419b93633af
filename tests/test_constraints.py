"""constraints.txt pins, to the version, every package the README's figures were measured with, and
``make app`` / ``make test`` install under it (README "Tests and benchmarks": "Pinned versions")."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_dependencies import declared

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
    for name, req in declared(ROOT / "requirements-dev.txt").items():
        key = canonicalize_name(name)
        assert key in pinned, f"{name} is declared but not pinned in constraints.txt"
        assert req.specifier.contains(pinned[key], prereleases=True), f"{name}=={pinned[key]} is outside {req.specifier}"


def test_the_environment_running_the_tests_is_the_pinned_one():
    """What make test installed is what constraints.txt says (a package installed at another version
    means the pins were not used, or not updated after an upgrade). Planted fault: numpy==2.4.5."""
    pinned = pins((ROOT / "constraints.txt").read_text())
    for name in declared(ROOT / "requirements-dev.txt"):
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
