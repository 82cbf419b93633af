"""Running the shell commands of the documentation's pages (tests/test_docs.py).

The convention, for anyone writing a page:

* Every fenced block whose language is ``bash`` is run. A page's blocks run in order in one
  ``bash`` process (``set -euo pipefail``), so a variable set in one block is there in the next,
  from a fresh directory that looks like the repository's root (its top-level entries linked in,
  ``.venv`` the Python running the tests) with a fresh database (``KNOWSIM_DB``) and ``HOME``.
* A block that cannot run here is marked on the line just above it with
  ``<!-- not tested: REASON -->`` — REASON says what it needs (an API key, a model server, a
  cluster) or why it cannot run in a test (it serves until Ctrl-C).
* A ``text`` block titled ``Output`` (```` ```text title="Output" ````) that follows a bash block
  (prose may stand between them, no other code block) is checked: each of its lines must appear, as
  written (runs of spaces aside), in what that bash block printed. Show the lines that matter, not
  whole outputs with run ids or paths.
* Two folder names stand for data this repository does not ship, and are linked in when
  ``../shared`` has them (the page is skipped otherwise, and fails under CI): ``knowsim/data`` — the
  paper's ``data/`` folder — and ``simulatorarena_math/`` — the SimulatorArena maths release.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = {
    "knowsim/data": SHARED / "reference",
    "simulatorarena_math": SHARED / "realworld" / "simulatorarena_math",
}
NOT_LINKED = {".git", "site", "test-artifacts", ".venv", ".pytest_cache", ".hypothesis"}
SKIP = re.compile(r"^<!--\s*not tested:\s*(?P<reason>.*?)\s*-->$")
MARK = "@@docs-block@@"
TIMEOUT_S = 900


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    code: str
    skipped: str | None = None  # the reason, for a block marked not tested
    expected: list[str] = field(default_factory=list)  # the lines of its Output block
    expected_line: int = 0


def blocks(page: Path) -> list[Block]:
    """The page's bash blocks, each with its skip reason and its Output block's lines."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    last_bash_end = None  # set after a bash block, until the next fenced block
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped.startswith("```"):
            i += 1
            continue
        fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        info = stripped[len(fence):].strip()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence)
        body = "\n".join(lines[i + 1:end])
        if info == "bash":
            above = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            m = SKIP.match(above)
            out.append(Block(line=i + 1, code=body, skipped=m["reason"] if m else None))
            last_bash_end = end + 1
        elif info.startswith("text") and 'title="Output"' in info and last_bash_end is not None and out:
            out[-1].expected = [ln for ln in body.splitlines() if ln.strip()]
            out[-1].expected_line = i + 1
            last_bash_end = None
        else:
            last_bash_end = None
        i = end + 1
    return out


def fixtures_needed(page: Path) -> set[str]:
    text = "\n".join(b.code for b in blocks(page) if b.skipped is None)
    return {name for name in FIXTURES if name in text}


def quiet_env() -> dict[str, str]:
    """The test's environment without what would change a page's output (and without the theme's
    notice about MkDocs 2)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWSIM_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def workdir(tmp: Path) -> Path:
    """A directory that looks like the repository's root, with no database in it."""
    tmp.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (tmp / entry.name).symlink_to(entry)
    (tmp / ".venv").symlink_to(Path(sys.prefix))
    for name, target in FIXTURES.items():
        if target.exists():
            link = tmp / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
    return tmp


@dataclass
class Result:
    page: Path
    runnable: list[Block]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def outputs(self) -> list[str]:
        return self.stdout.split(MARK + "\n")[1:]

    def report(self) -> str:
        done = self.outputs()
        block = self.runnable[len(done) - 1] if done else None
        where = f"the block at line {block.line}" if block else "before the first block"
        return (f"{self.page.name}: {where} failed (exit {self.returncode})\n--- its code:\n"
                f"{block.code if block else ''}\n--- stdout (tail):\n{self.stdout[-3000:]}\n--- stderr (tail):\n{self.stderr[-3000:]}")

    def output_mismatches(self) -> list[str]:
        problems = []
        squash = lambda s: " ".join(s.split())  # noqa: E731
        for block, printed in zip(self.runnable, self.outputs()):
            seen = squash(printed)
            for line in block.expected:
                if squash(line) not in seen:
                    problems.append(f"{self.page.name} line {block.expected_line}: `{line.strip()}` is not in the output "
                                    f"of the block at line {block.line}:\n{printed.strip()[-3000:]}")
        return problems


# The set-up's own commands install into the environment and serve or test until stopped: a page
# must mark them, never run them from a test.
SETUP_COMMAND = re.compile(r"(^|[;&|(\s])(make\s|scripts/bootstrap\.sh)", flags=re.M)


def run_page(page: Path, tmp: Path) -> Result:
    """Run the page's bash blocks (those not marked) in one shell, in a fresh working directory."""
    runnable = [b for b in blocks(page) if b.skipped is None]
    for b in runnable:
        if SETUP_COMMAND.search(b.code):
            raise ValueError(f"{page.name} line {b.line}: `make` and scripts/bootstrap.sh set up this machine "
                             "and run until stopped; mark the block <!-- not tested: REASON -->")
    cwd = workdir(tmp)
    script = "set -euo pipefail\n" + "".join(f"echo '{MARK}'\n{b.code}\n" for b in runnable)
    env = {**quiet_env(), "KNOWSIM_DB": str(cwd / "studio.db"), "HOME": str(cwd / "home"),
           "KNOWSIM_LOCAL_MODEL_FILE": str(cwd / "home" / "local-model.json")}
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    return Result(page, runnable, done.returncode, done.stdout, done.stderr)
