"""The Studio's vocabulary: every word and colour shown for a simulator fact, written once.

The engine records *keys* — a failure mode (``prereq_blocked``), a stop reason
(``cognitive_overload``), an IU state (0–3) — and every reader above it shows them: the app
(``ui/``, ``pages/``), the command line, the graph and replay exports, the paper figures and the
plain-words explanations. Each reader spelling them itself lets them drift apart (a mode's letter
on the graph badge and in the ``run`` command, an edge's or a state's colour in the app and in the
export, a stop reason in the engine and in the paper check), so they live here, in the lowest
layer of the package — below the engine, which writes the keys, and importing nothing of ours —
and ``tests/test_vocabulary.py`` fails when one of them is written anywhere else.

**Statuses** (a stored run's, a batch cell's, a cell claim's) and the reasons a conversation's play
ends are ``StrEnum``s: they compare equal to the strings the database keeps, and
``tests/test_statuses.py`` fails on a status word written as a string outside this module.

**Failure modes** have one spelling, :attr:`FailureMode.title` (``PREREQ-BLOCKED``): the graph
badge's legend, the charts, the command line, the replay and — in lower case at the head of a
reason — the why text. A mode's letter (on the graph badge, in the replay, in the ``run`` command's
counts column) is the first letter of that spelling: R P E O U.

**States** are keyed by :class:`knowsim_core.engine.state.IUState`'s value (an ``IntEnum``, so
``STATE_STYLE[IUState.PARTIAL]`` and ``STATE_STYLE[2]`` are the same entry): Okabe–Ito colours
(safe for the common colour-vision deficiencies), and each state also has its own glyph (drawn in
the node label) and border, so it reads without colour at all (greyscale print, achromatopsia).
Failure modes take five colours of Paul Tol's "muted" scheme, none of them a state colour (a failure
chart must not say "green" for EFFECTIVE where the graph says "green" for knows well).

Pure data: no I/O, no imports from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


# ---------------------------------------------------------------------- failure modes (spec §7)
class FailureMode(StrEnum):
    """The five failure modes of an explained IU, in the paper's order (the value is the stored key)."""

    REDUNDANT = "redundant"
    PREREQ_BLOCKED = "prereq_blocked"
    EFFECTIVE = "effective"
    OVERLOAD_WASTED = "overload_wasted"
    UNDER_ABSORBED = "under_absorbed"

    @property
    def title(self) -> str:
        """The mode's one spelling, as the paper writes it: ``PREREQ-BLOCKED``."""
        return self.value.replace("_", "-").upper()

    @property
    def letter(self) -> str:
        """The mode's letter (graph badge, replay, ``run`` counts): the first of :attr:`title`."""
        return self.title[0]


FAILURE_ORDER: tuple[FailureMode, ...] = tuple(FailureMode)
MODE_LETTERS: dict[FailureMode, str] = {m: m.letter for m in FAILURE_ORDER}
assert len(set(MODE_LETTERS.values())) == len(FAILURE_ORDER), "two failure modes share a letter"
MODE_LETTER_HEADER = "/".join(MODE_LETTERS.values())  # "R/P/E/O/U": a column of counts in FAILURE_ORDER

MODE_COLOURS: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#DDCC77",  # sand: effort spent on what was already known
    FailureMode.PREREQ_BLOCKED: "#882255",  # wine: stopped by a prerequisite
    FailureMode.EFFECTIVE: "#332288",  # indigo: the turn worked for this IU
    FailureMode.OVERLOAD_WASTED: "#CC6677",  # rose: lost to overload
    FailureMode.UNDER_ABSORBED: "#999933",  # olive: teachable, not overloaded, still not absorbed
}
MODE_FONTS: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "#000000",
    FailureMode.PREREQ_BLOCKED: "#FFFFFF",
    FailureMode.EFFECTIVE: "#FFFFFF",
    FailureMode.OVERLOAD_WASTED: "#000000",
    FailureMode.UNDER_ABSORBED: "#000000",
}
# What each mode means in general (a chart's hover, the replay's legend); a turn's own reason is
# built by knowsim_core.evaluation.explain.why_of from the turn's record.
MODE_MEANING: dict[FailureMode, str] = {
    FailureMode.REDUNDANT: "already known well before this turn",
    FailureMode.PREREQ_BLOCKED: "a prerequisite was not yet partially understood, so it could not advance",
    FailureMode.EFFECTIVE: "it advanced this turn",
    FailureMode.OVERLOAD_WASTED: "teachable, but the turn was overloaded and it did not advance",
    FailureMode.UNDER_ABSORBED: "teachable and not overloaded, yet it did not advance (e.g. shallow teaching)",
}


# ---------------------------------------------------------------------- stop reasons (spec §5)
# A run's ``stop_reason`` (and a turn's fired vote: mastery or cognitive_overload) is one of these.
STOP_MAX_TURNS = "max_turns"  # played every turn the preset allows
STOP_MASTERY = "mastery"  # the stop rule's "goal reached" vote
STOP_OVERLOAD = "cognitive_overload"  # the stop rule's "persistent overload" vote
STOP_EMPTY_USER = "empty_user_message"  # the user simulator wrote nothing
STOP_EMPTY_ASSISTANT = "empty_assistant"  # the assistant wrote nothing
STOP_EXTRACTOR = "phase_b_empty"  # the extractor's reading came back empty
STOP_USER_DONE = "user_done"  # the simulated user declared the conversation over (a judged end, not a rule vote)
STOP_END_OF_RECORDING = "end_of_recording"  # a human conversation read to its last turn
STOP_REASONS: tuple[str, ...] = (
    STOP_MAX_TURNS, STOP_MASTERY, STOP_OVERLOAD, STOP_EMPTY_USER, STOP_EMPTY_ASSISTANT, STOP_EXTRACTOR,
    STOP_USER_DONE, STOP_END_OF_RECORDING,
)
RULE_STOPS: tuple[str, ...] = (STOP_MASTERY, STOP_OVERLOAD)  # what a turn's termination vote can fire


# ---------------------------------------------------------------------- a run's life
class RunStatus(StrEnum):
    """A stored run's status (the ``runs.status`` column keeps these strings)."""

    RUNNING = "running"  # a live process (the command line, a batch worker) is writing it
    FINISHED = "finished"  # it ended: its ``stop_reason`` says how
    FAILED = "failed"  # a model call or an agent failed; resumable from its last stored turn
    INTERRUPTED = "interrupted"  # stopped (Ctrl-C, a batch's stop, its writing process gone); resumable
    # a conversation played in the app (under a lease) that has not ended: open in a tab, or left open
    # when the tab closed; its metrics are those of its turns so far, and Simulate plays on from its
    # last turn. A pause, not a failure: it is not "interrupted" (migration 0010)
    OPEN = "open"


RUN_STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)
FINAL_STATUSES: tuple[RunStatus, ...] = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.INTERRUPTED)
UNFINISHED_STATUSES: tuple[RunStatus, ...] = (RunStatus.FAILED, RunStatus.INTERRUPTED)  # shown as needing a resume
LIVE_STATUSES: tuple[RunStatus, ...] = (RunStatus.RUNNING, RunStatus.OPEN)  # a writer may add turns


class Population(StrEnum):
    """Which runs a cross-run view pools (Failure modes, the paper check): by status, as a choice."""

    FINISHED = "finished"  # runs that ended (the default: a run stopped early would bias every rate)
    ALL = "all"
    UNFINISHED = "unfinished"  # every run that has not finished (failed, interrupted, open, running)


POPULATIONS: tuple[Population, ...] = tuple(Population)


class EndReason(StrEnum):
    """How a conversation's play ended (an :class:`~knowsim_core.engine.records.Ending`'s reason);
    ``knowsim_core.services.play.status_of`` maps each to the run's :class:`RunStatus`."""

    STOPPED = "stopped"  # the conversation is over: a rule, the turn limit, an empty message, the user
    PROVIDER_ERROR = "provider_error"  # a model call failed (key, limit, server): play on after a resume
    AGENT_ERROR = "agent_error"  # an agent raised (a bug): the evidence is kept with the run
    STOP_REQUESTED = "stop_requested"  # Ctrl-C, or a batch's stop request: nothing more is played
    LEASE_LAPSED = "lease_lapsed"  # the app's hold on the run lapsed (it was left open elsewhere)


class CellOutcome(StrEnum):
    """What became of one cell of a batch."""

    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    NOT_STARTED = "not started"
    SKIPPED = "skipped"  # another process finished it or holds it (it claimed it first)
    LOST = "lost"  # the worker process playing it died: the cell is played again (a scheduler's word only)


CELL_ENDED: tuple[CellOutcome, ...] = (CellOutcome.FINISHED, CellOutcome.FAILED, CellOutcome.INTERRUPTED,
                                       CellOutcome.SKIPPED)


class ClaimOutcome(StrEnum):
    """What claiming a batch cell decided (``store.cells.claim``)."""

    MINE = "mine"  # play it (continuing the run the claim names, if any)
    DONE = "done"  # a finished run exists
    TAKEN = "taken"  # a live process plays it


# ---------------------------------------------------------------------- knowledge states
# keyed by IUState's value: 0 unaware, 1 struggling, 2 partial, 3 knows well
STATE_COLOURS: dict[int, str] = {0: "#D9D9D9", 1: "#E69F00", 2: "#56B4E9", 3: "#009E73"}
STATE_FONTS: dict[int, str] = {0: "#000000", 1: "#000000", 2: "#000000", 3: "#FFFFFF"}
STATE_GLYPHS: dict[int, str] = {0: "○", 1: "◔", 2: "◑", 3: "●"}
# shown to people ("knows well"; the stored key is IUState.key, "knows_well")
STATE_WORDS: dict[int, str] = {0: "unaware", 1: "struggling", 2: "partial", 3: "knows well"}
_BORDERS: dict[int, tuple[int, bool]] = {0: (1, True), 1: (2, False), 2: (2, False), 3: (4, False)}
UNSTATED_COLOUR = "#9ECAE1"  # an IU drawn with no state (a bare graph)


@dataclass(frozen=True, slots=True)
class StateStyle:
    name: str  # shown to people ("knows well")
    colour: str  # node fill
    font: str  # label colour readable on the fill
    glyph: str  # non-colour cue in the label
    border_width: int  # non-colour cue on the node
    dashed: bool  # non-colour cue on the node


STATE_STYLE: dict[int, StateStyle] = {
    s: StateStyle(STATE_WORDS[s], STATE_COLOURS[s], STATE_FONTS[s], STATE_GLYPHS[s], *_BORDERS[s]) for s in range(4)
}


def state_word(state: int) -> str:
    """The state's name for people: ``partial``, ``knows well`` (an ``IUState`` or its value)."""
    return STATE_WORDS[int(state)]


def iu_name(node_id: object) -> str:
    """How a sentence names an IU: ``IU3`` as it is (the usual ids carry the prefix), a bare ``3`` or
    ``lava`` as ``IU 3`` / ``IU lava`` — never ``IU IU3``."""
    text = str(node_id)
    return text if text[:2].upper() == "IU" else f"IU {text}"


# ---------------------------------------------------------------------- the graph and the gauge
BORDER_COLOUR = "#333333"
CHANGED_COLOUR = "#CC79A7"  # Okabe–Ito reddish purple: the ring around IUs that moved this turn
SELECTED_COLOUR = "#0072B2"  # Okabe–Ito blue
EDGE_COLOUR = "#8C8C8C"  # a prerequisite edge, in the app, the graph export and the replay

# Load gauge bands, as shares of the capacity τ
GAUGE_OK = "#E8F4EC"
GAUGE_NEAR = "#FCEFD2"
GAUGE_OVER = "#F8D9CC"
GAUGE_BAR = "#0072B2"
GAUGE_THRESHOLD = "#D55E00"  # vermillion line at τ (and a load rise)
GAUGE_BETTER = "#009E73"  # bluish green: a load fall
NEAR_SHARE = 0.75


# ---------------------------------------------------------------------- metrics in the cross-run views
METRIC_NAMES: tuple[str, ...] = ("KG", "DC", "CO")
METRIC_KEYS: dict[str, str] = {"KG": "knowledge_gain", "DC": "delivery_calibration", "CO": "cognitive_overload"}
SPREAD = "IQR"
SPREAD_TEXT = "spread = interquartile range (25th–75th percentile) of the runs in the cell, shown where n > 1"
