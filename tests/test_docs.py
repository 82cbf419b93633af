"""The documentation site is tested like code.

* ``mkdocs build --strict`` succeeds: no broken link, anchor, image or snippet, no page left out.
* The command-line reference in the built site equals ``python -m knowsim_core COMMAND --help``
  run in a subprocess, for every command the command line offers, and lists every option.
* Every ``bash`` block of every page runs (see :mod:`tests.docs_commands` for the convention):
  each page's blocks in order, in one shell, in a fresh directory with a fresh database; a block
  marked ``<!-- not tested: REASON -->`` is skipped and must say why.
* Every ``KNOWSIM_…`` environment variable the code reads is listed in the configuration reference,
  every screenshot in ``docs/`` is shown by a page, and the docs' packages are pinned.

The marked figures of the README and the docs pages are checked against their logs in
tests/test_readme_figures.py.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import docs_commands as dc
from tests.conftest import REFERENCE_DIR, load_script, require_shared

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hooks():
    """scripts/mkdocs_hooks.py, loaded by path (it is not a package module)."""
    return load_script("scripts/mkdocs_hooks.py")


mkdocs_hooks = _hooks()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with --strict (a warning fails the build), from outside the checkout: as the
    ``mkdocs`` script does, nothing puts the checkout on the path but the hooks themselves."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(out)], cwd=out.parent, capture_output=True, text=True,
                          env=dc.quiet_env())
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_site_builds_strictly_with_every_page_in_its_navigation(site):
    pages = sorted(p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md"))
    for page in pages:
        built = site / ("index.html" if str(page) == "index" else f"{page}/index.html")
        assert built.exists(), f"{page}.md was not built"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f"{p}.md" in nav for p in pages), "a page is missing from mkdocs.yml's nav"


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """Planted fault: a copy of the docs with one link to a page that does not exist."""
    import shutil

    for name in ("docs", "scripts", "mkdocs.yml", "knowsim_core", "assets"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp_path / name)
    page = tmp_path / "docs" / "how-to" / "batches.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=tmp_path, capture_output=True, text=True, env=dc.quiet_env())
    assert done.returncode != 0 and "no-such-page.md" in done.stdout + done.stderr


# ---------------------------------------------------------------------- the command-line reference
def _help(*argv: str) -> str:
    env = {**dc.quiet_env(), "COLUMNS": str(mkdocs_hooks.HELP_COLUMNS)}
    done = subprocess.run([sys.executable, "-m", "knowsim_core", *argv, "--help"], cwd=ROOT, capture_output=True,
                          text=True, env=env, check=True)
    return done.stdout


def _code_blocks(page_html: str) -> list[str]:
    """The text of every code block of a built page (Pygments' spans removed)."""
    blocks = re.findall(r"<pre[^>]*>(.*?)</pre>", page_html, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks]


def test_the_command_reference_is_what_help_prints(site):
    """Every command the command line lists has a section whose help block is exactly its --help
    output, and the top-level help too. Planted fault: a help text edited in the built page."""
    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    blocks = [b.rstrip("\n") for b in _code_blocks(page)]
    top = _help()
    assert top.rstrip("\n") in blocks
    commands = re.findall(r"^    (\S+)(?:\s{2,}|\n)", top.split("positional arguments:")[1].split("options:")[0], flags=re.M)
    assert len(commands) >= 13, commands
    for name in commands:
        assert _help(name).rstrip("\n") in blocks, f"the reference's `{name}` differs from `{name} --help`"
        assert f'id="{name}"' in page, f"no section for {name}"
    assert commands == mkdocs_hooks.command_names()
    planted = [b.replace("--seed N", "--seed NUMBER") for b in blocks]
    assert _help("run").rstrip("\n") not in planted


def test_every_option_of_every_command_is_in_its_table(site):
    page = html.unescape((site / "reference" / "cli" / "index.html").read_text(encoding="utf-8"))
    for name in mkdocs_hooks.command_names():
        section = page.split(f'id="{name}"', 1)[1].split("<h2", 1)[0]
        table = section.split("<table", 1)[1]
        for action in mkdocs_hooks.command_parser(name)._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"<code>{flag}</code>" in table, f"{name} {flag} is not in the reference's table"


# ---------------------------------------------------------------------- the pages' commands
PAGES = sorted(p for p in DOCS.rglob("*.md") if dc.blocks(p))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_every_command_of_the_page_runs_on_a_fresh_database(page, tmp_path):
    needs = dc.fixtures_needed(page)
    if "knowsim/data" in needs:
        require_shared(REFERENCE_DIR)
    if "simulatorarena_math" in needs:
        from tests.conftest import ARENA_ANNOTATIONS

        require_shared(ARENA_ANNOTATIONS)
    result = dc.run_page(page, tmp_path)
    assert result.ok, result.report()
    for problem in result.output_mismatches():
        pytest.fail(problem)


def test_every_skipped_block_says_why():
    for page in DOCS.rglob("*.md"):
        for block in dc.blocks(page):
            if block.skipped is not None:
                assert len(block.skipped.split()) >= 2, f"{page.name}: `not tested:` needs a reason ({block.line})"


def test_the_convention_runs_what_it_should(tmp_path):
    """Planted page: a failing command fails the page; a marked one is skipped; an output block that
    the command does not print is reported; variables carry from one block to the next."""
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nX=hello\necho \"$X world\"\n```\n\n```text title=\"Output\"\nhello world\n```\n\n"
        "<!-- not tested: needs a cluster -->\n```bash\nexit 1\n```\n\n"
        "```bash\necho \"$X\"\n```\n\n```text title=\"Output\"\ngoodbye\n```\n")
    result = dc.run_page(page, tmp_path / "run")
    assert result.ok, result.report()
    assert [b.skipped for b in dc.blocks(page)] == [None, "needs a cluster", None]
    assert result.output_mismatches() == [f"page.md line 19: `goodbye` is not in the output of the block at line 15:\nhello"]
    page.write_text("```bash\ntrue\nfalse\necho never\n```\n")
    failed = dc.run_page(page, tmp_path / "run2")
    assert not failed.ok and "never" not in failed.stdout
    page.write_text("```bash\nmake app\n```\n")
    with pytest.raises(ValueError, match="mark the block"):
        dc.run_page(page, tmp_path / "run3")


# ---------------------------------------------------------------------- what must be listed
def test_every_environment_variable_the_code_reads_is_documented():
    names = set()
    for folder in ("knowsim_core", "ui", "pages"):
        for f in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"\"(KNOWSIM_[A-Z_]+)\"", f.read_text(encoding="utf-8")))
    names |= set(re.findall(r"\"(KNOWSIM_[A-Z_]+)\"", (ROOT / "app.py").read_text(encoding="utf-8")))
    page = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert names, "no KNOWSIM_ variable found in the code"
    missing = sorted(n for n in names if f"`{n}`" not in page)
    assert not missing, f"not in docs/reference/configuration.md: {missing}"


def _named_pages(folders) -> set[str]:
    pattern = re.compile(r"\bdocs/[\w/.-]+\.md\b")
    return {m for f in folders for path in ([f] if f.is_file() else f.rglob("*.py"))
            for m in pattern.findall(path.read_text(encoding="utf-8"))}


def test_every_page_the_code_names_in_a_message_exists(tmp_path):
    """A message that sends its reader to the docs (the list of base URLs refused: docs/how-to/router.md)
    names a page that is there and in the navigation. Planted fault: a module naming a page that is not."""
    named = _named_pages([ROOT / "knowsim_core", ROOT / "ui", ROOT / "pages", ROOT / "app.py"])
    assert "docs/how-to/router.md" in named
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in sorted(named):
        assert (ROOT / name).is_file(), f"the code names {name}, which does not exist"
        assert name.removeprefix("docs/") in nav, f"{name} is not in mkdocs.yml's nav"
    planted = tmp_path / "planted.py"
    planted.write_text('HINT = "see docs/how-to/no-such-page.md"\n')
    assert not all((ROOT / n).is_file() for n in _named_pages([planted]))


def test_every_screenshot_is_shown_by_a_page():
    shown = " ".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    shown += (ROOT / "README.md").read_text(encoding="utf-8")
    for shot in (DOCS / "assets" / "screenshots").glob("*.png"):
        assert f"screenshots/{shot.name}" in shown, f"{shot.name} is shown by no page"


def test_the_docs_packages_are_pinned():
    from tests.test_constraints import pins
    from tests.test_dependencies import declared

    pinned = pins((ROOT / "constraints.txt").read_text())
    for name, req in declared(ROOT / "requirements-docs.txt").items():
        assert name in pinned and req.specifier.contains(pinned[name]), f"{name} is not pinned within {req.specifier}"
