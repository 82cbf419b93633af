"""MkDocs hooks: the parts of the documentation site that are generated from the code at build time.

* ``<!-- cli-reference -->`` in a page becomes the command-line reference: every command's help,
  exactly as ``python -m knowsim_core COMMAND --help`` prints it at :data:`HELP_COLUMNS` columns,
  and a table of its options (flags, value, default), all read from the argument parsers that
  ``knowsim_core.cli.build_parser`` builds. Nothing in it is typed by hand, so it cannot drift from
  the command line (tests/test_docs.py compares the built page with ``--help`` run in a subprocess).
* ``assets/generated/turn-loads.svg`` is drawn from a seeded offline run (the explanation of the
  simulator shows it): the per-turn load against the capacity τ, η and the learner's states.
* ``assets/generated/fig6-samples.svg`` is what ``failures --figure`` draws for an offline batch of
  the sample questions (the how-to on the paper's figures shows it).

This module imports no MkDocs API: the hooks are plain functions MkDocs calls by name, and the
renderers below are plain functions the tests call too.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CLI_MARKER = "<!-- cli-reference -->"
HELP_COLUMNS = 100  # argparse wraps help at $COLUMNS - 2; the reference and its test both fix it
PROG = "python -m knowsim_core"
FIGURE_URI = "assets/generated/turn-loads.svg"
FIG6_URI = "assets/generated/fig6-samples.svg"
# the batch the Fig. 6 example draws: every sample question and level, the paper's simple strategy
FIG6_BATCH = ["--questions", "all", "--levels", "all", "--assistants", "offline/simple", "--seeds", "1", "--tag", "fig6"]
# the run the figure draws: the demo's situation on a sample that overloads a novice early
FIGURE_RUN = {"question_id": "sample_lava_lamps", "level": "novice", "assistant_id": "offline/comprehensive",
              "seed": 1}


# ---------------------------------------------------------------------- the command-line reference
@contextmanager
def help_width(columns: int = HELP_COLUMNS):
    """argparse reads the terminal width from $COLUMNS each time it formats help."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def command_names() -> list[str]:
    """Every command the top-level parser offers, in its order."""
    from knowsim_core.cli import build_parser

    return list(_subparsers(build_parser([])).choices)


def command_parser(name: str) -> argparse.ArgumentParser:
    """The real parser of one command: ``build_parser`` asked for that command's argv builds it whole."""
    from knowsim_core.cli import build_parser

    return _subparsers(build_parser([name])).choices[name]


def top_help() -> str:
    from knowsim_core.cli import build_parser

    with help_width():
        return build_parser([]).format_help()


def command_help(name: str) -> str:
    with help_width():
        return command_parser(name).format_help()


def _flags(action: argparse.Action) -> str:
    return ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "—"
    if action.choices is not None:
        return " \\| ".join(f"`{c}`" for c in action.choices)
    meta = action.metavar if action.metavar is not None else action.dest.upper()
    if isinstance(meta, tuple):
        meta = " ".join(meta)
    suffix = {"*": " …", "+": " …"}.get(action.nargs, "")
    return f"`{meta}`{suffix}" + (" (repeatable)" if isinstance(action, argparse._AppendAction) else "")


def _default(action: argparse.Action) -> str:
    d = action.default
    if action.nargs == 0 or d is None or d is argparse.SUPPRESS or d == [] or action.required:
        return "required" if action.required and action.option_strings else ""
    return f"`{d}`"


def _cell(text: str | None) -> str:
    return " ".join((text or "").replace("|", "\\|").split())


def options_table(parser: argparse.ArgumentParser) -> str:
    rows = ["| option | value | default | meaning |", "|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help is argparse.SUPPRESS:
            continue
        help_text = _cell(action.help % {"default": action.default, "prog": parser.prog}
                          if action.help and "%(" in action.help else action.help)
        rows.append(f"| {_flags(action)} | {_value(action)} | {_default(action)} | {help_text} |")
    return "\n".join(rows)


def cli_reference() -> str:
    """The Markdown of the whole reference: the command list, then each command's help and options."""
    out = io.StringIO()
    names = command_names()
    out.write(f"`{PROG} --help`:\n\n```text\n{top_help()}```\n\n")
    for name in names:
        parser = command_parser(name)
        out.write(f"## {name}\n\n{_cell(parser.description)}\n\n")
        out.write(f"```text\n{command_help(name)}```\n\n")
        out.write(options_table(parser) + "\n\n")
    return out.getvalue()


# ---------------------------------------------------------------------- the simulator's figure
def figure_run() -> dict:
    """:data:`FIGURE_RUN` played by the command line into a throw-away database, as its Studio JSON
    (the command's public output: the figure does not depend on the package's inner API)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "knowsim_core", "run", "--db", str(Path(tmp) / "figure.db"), "--json"]
        for key, value in FIGURE_RUN.items():
            argv += [f"--{key.removesuffix('_id')}", str(value)]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def turn_loads_svg() -> str:
    """The per-turn load of :data:`FIGURE_RUN` against τ, η under it, and the learner's states: SVG
    text (matplotlib, no browser; the same bytes on every build)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from knowsim_core.engine.state import IUState
    from knowsim_core.vocab import STATE_STYLE, state_word

    run = figure_run()
    turns = [t["turn"] for t in run["turns"]]
    q = [t["quantities"] for t in run["turns"]]
    tau = run["tau"]
    matplotlib.rcParams.update({"svg.hashsalt": "knowsim", "font.size": 8, "svg.fonttype": "none"})
    fig, (top, mid, low) = plt.subplots(3, 1, figsize=(6.4, 5.6), sharex=True,
                                        gridspec_kw={"height_ratios": [3, 1.2, 2]})
    top.bar(turns, [x["comprehension_load"] for x in q], color="#4C72B0", label="comprehension load C")
    top.bar(turns, [x["attempt_load"] for x in q], bottom=[x["comprehension_load"] for x in q], color="#DD8452",
            label="attempt load A")
    top.axhline(tau, color="black", linestyle="--", linewidth=1)
    top.text(turns[0] - 0.4, tau + 0.4, f"capacity τ = {tau}", va="bottom", ha="left")
    top.set_ylabel("load L = C + A")
    top.legend(loc="upper right", frameon=False)
    mid.plot(turns, [x["efficiency"] for x in q], marker="o", color="black", markersize=3)
    mid.set_ylim(0, 1.05)
    mid.set_ylabel("η")
    bottom = [0] * len(turns)
    for state in IUState:
        counts = [sum(1 for entry in t["state_after"] if entry[1] == int(state)) for t in run["turns"]]
        low.bar(turns, counts, bottom=bottom, color=STATE_STYLE[state].colour, label=state_word(state))
        bottom = [b + c for b, c in zip(bottom, counts)]
    low.set_ylabel("IUs after the turn")
    low.set_xlabel("turn")
    low.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, frameon=False)
    low.set_xticks(turns)
    low.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buf.getvalue()


def fig6_svg() -> str:
    """``failures --figure`` over :data:`FIG6_BATCH`, played into a throw-away database."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cli = [sys.executable, "-m", "knowsim_core"]
        db = ["--db", str(Path(tmp) / "fig6.db")]
        subprocess.run([*cli, "batch", *FIG6_BATCH, *db], cwd=ROOT, capture_output=True, check=True)
        out = Path(tmp) / "fig6.svg"
        subprocess.run([*cli, "failures", "--batch", "fig6", "--figure", str(out), *db], cwd=ROOT,
                       capture_output=True, check=True)
        return out.read_text(encoding="utf-8")


# ---------------------------------------------------------------------- MkDocs' hooks
def on_config(config):
    # The hooks import knowsim_core. `python -m mkdocs` run in the checkout has it on the path; the
    # `mkdocs` script, or a build run from elsewhere with -f, does not — and MkDocs restores sys.path
    # after loading this module, so the checkout is put on it here, before any hook needs it.
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, FIGURE_URI, content=turn_loads_svg()))
    files.append(File.generated(config, FIG6_URI, content=fig6_svg()))
    return files


def on_page_markdown(markdown, page, config, files):
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown
