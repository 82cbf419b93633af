"""The command line's commands, declared: :data:`COMMANDS` names each one, its help and its module.

Each command lives in ``knowsim_core/commands/<module>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``; :mod:`knowsim_core.cli` imports a command's module only when that command
runs (or when :func:`knowsim_core.cli.full_parser` is asked for every command's options), because
each imports what its command needs — storage, the agents, evaluation, plotting. Listing the
commands, ``--help`` and refusing an unknown one read this table alone.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """One command: its ``name`` on the command line, its one-line ``help`` and the ``module`` under
    ``knowsim_core.commands`` that implements it. ``raw_output``: it writes data (not messages), kept
    byte for byte when stdout is a file or a pipe."""

    name: str
    help: str
    module: str
    raw_output: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("agreement", "agreement of KnowSim's readings with people's judgments (thumbs, ratings, correctness)",
            "agreement"),
    Command("batch", "run a matrix of questions × levels × assistants × seeds, storing every run (many at once)",
            "batch"),
    Command("diff", "why two stored runs differ: the first turn where their states part and the rule that parted "
            "them, then per turn", "diff"),
    Command("explain", "show each IU's failure mode and why it moved (or not), per turn of a stored run", "explain"),
    Command("export", "print a stored run as Studio JSON, reference run-record JSON, CSV of turns or a one-file "
            "HTML replay", "export", raw_output=True),
    Command("extract-graph", "extract an IU graph for a stored question with an LLM and save it as a new graph "
            "version", "extract_graph"),
    Command("failures", "failure-mode shares and mean KG / DC / CO per knowledge level across stored runs",
            "failures"),
    Command("import", "import runs (Studio or reference JSON), reference items JSONL + IU caches, the reference data "
            "folder, or real conversations (SimulatorArena annotations, conversations JSONL)", "import_"),
    Command("judge", "rate the interaction quality (IQ 1-10) of stored runs with an LLM judge and store the score",
            "judge"),
    Command("realism", "turn-level realism of user simulators against the stored human conversations", "realism"),
    Command("relabel", "label every recorded turn of a reference run file with an extractor and compare with the "
            "recorded labels", "relabel"),
    Command("replay", "replay every structured record of a reference run file from its recorded labels (chained)",
            "replay"),
    Command("run", "run one simulation, store it and print it turn by turn (or resume a stored run)", "run"),
    Command("runs", "list the runs stored in the database", "runs"),
    Command("whatif", "change labels of a stored run (or of every run of a batch or tag) and recompute with the rules; "
            "store the result as runs linked to their sources", "whatif"),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}

__all__ = ["BY_NAME", "COMMANDS", "Command"]
