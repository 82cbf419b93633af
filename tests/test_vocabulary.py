"""The vocabulary has one owner (issue 32), as an executable check in the style of test_boundaries.

``knowsim_core/vocab.py`` owns the words and colours every view shows for a simulator fact: the
failure modes' keys, spelling and letters, the stop reasons, the state and graph colours. Before it,
the mode letters existed in three versions (the graph badge R/P/E/O/U, the ``run`` command's
R/B/E/W/A, the replay's first letter of the name), the stop reasons were spelled in the engine
twice and as raw strings in the paper check, and the graph export drew edges #777777 where the app
drew #8C8C8C. This scanner reads the package, ``ui/``, ``pages/``, ``app.py`` and the JavaScript
assets and fails on any of these literals written outside the owner:

* a failure mode's key or name as a string (``"prereq_blocked"``, ``"PREREQ-BLOCKED"``), a table of
  strings keyed by ``FailureMode.X`` (letters, colours, words), or a run of five mode letters
  (``"R/B/E/W/A"``); in JavaScript also a letter taken from a mode's name (``name.charAt(0)``);
* a stop reason's key: the ones no other fact shares (``"mastery"``, ``"phase_b_empty"`` …)
  anywhere, and ``"max_turns"`` / ``"cognitive_overload"`` / ``"user_done"`` (which are also a
  preset field, a metric and a record field) where they stand for a stop — compared with,
  passed as or assigned to something named stop / reason, or defined as a constant;
* a colour written as a hex code anywhere in the core (Python or JavaScript), ``pages/`` or
  ``app.py``; in ``ui/assets/*.js``, any colour the vocabulary names (black and white excepted).

Docstrings and comments are prose and are not read. ``ui/*.py`` is scanned for the words, not for
colour codes: its chart colours (agreement, realism) are series colours of the same Okabe–Ito
palette, not vocabulary, and are left to their views.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from knowsim_core import vocab
from knowsim_core.vocab import FailureMode

ROOT = Path(__file__).resolve().parent.parent
OWNER = Path("knowsim_core/vocab.py")

MODE_WORDS = {w for m in FailureMode for w in (m.value, m.title, m.title.lower(), m.value.upper())}
SHARED_STOPS = {vocab.STOP_MAX_TURNS, vocab.STOP_OVERLOAD, vocab.STOP_USER_DONE}  # also a field / metric name
OWN_STOPS = set(vocab.STOP_REASONS) - SHARED_STOPS  # words that only ever mean a stop
assert len(vocab.STOP_REASONS) == len(set(vocab.STOP_REASONS))
LETTER_RUN = re.compile(r"\b[A-Z](?:/[A-Z]){4}\b")  # five slash-separated capitals: a counts header
HEX = re.compile(r"#[0-9A-Fa-f]{6}\b|^#[0-9A-Fa-f]{3}$")
BLACK_WHITE = {"#000000", "#FFFFFF"}
OWNED_COLOURS = {
    value.upper()
    for name, value in vars(vocab).items()
    if name.isupper() and isinstance(value, str) and HEX.fullmatch(value)
} | {c.upper() for table in (vocab.STATE_COLOURS, vocab.STATE_FONTS, vocab.MODE_COLOURS, vocab.MODE_FONTS)
     for c in table.values()}
OWNED_COLOURS -= BLACK_WHITE
STOPPISH = re.compile(r"stop|reason|fired", re.IGNORECASE)
JS_STRING = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'")


# ---------------------------------------------------------------------- the scanner
def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string statements (docstrings and bare string expressions): prose, not literals."""
    out = set()
    for node in ast.walk(tree):
        for stmt in getattr(node, "body", []) if isinstance(getattr(node, "body", None), list) else []:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                out.add(id(stmt.value))
    return out


def _strings(node: ast.AST, skip: set[int]) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def _values(node: ast.AST, skip: set[int]) -> list[ast.Constant]:
    """The string constants of an expression that are values (a nested dict's keys are names)."""
    keys = {id(k) for n in ast.walk(node) if isinstance(n, ast.Dict) for k in n.keys if k is not None}
    return [c for c in _strings(node, skip) if id(c) not in keys]


def _is_mode_key(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in FailureMode.__members__ and (
        (isinstance(node.value, ast.Name) and node.value.id == "FailureMode")
        or (isinstance(node.value, ast.Attribute) and node.value.attr == "FailureMode"))


def _stop_context(tree: ast.AST, skip: set[int]) -> list[ast.Constant]:
    """String constants that stand for a stop: compared with, passed as or assigned to a stop or a
    reason, a ``"stop_reason"`` entry's value, or any string defined as an ALL_CAPS constant."""
    out: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(STOPPISH.search(ast.unparse(o)) for o in operands if not isinstance(o, ast.Constant)):
                out += [o for o in operands if isinstance(o, ast.Constant)]
        elif isinstance(node, ast.keyword) and node.arg and STOPPISH.search(node.arg):
            out += _values(node.value, skip)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [ast.unparse(t) for t in targets]
            if node.value is not None and any(STOPPISH.search(n) for n in names):
                out += _values(node.value, skip)
            elif isinstance(node.value, ast.Constant) and any(n.isupper() for n in names):
                out.append(node.value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and STOPPISH.search(k.value):
                    out += _values(v, skip)
    return out


def scan_python(text: str, where: str, *, colours: bool) -> list[str]:
    """Every vocabulary literal written in this Python source, as ``where:line: what``."""
    tree = ast.parse(text)
    skip = _docstrings(tree)
    hits: list[str] = []
    for c in _strings(tree, skip):
        if c.value in MODE_WORDS:
            hits.append(f"{where}:{c.lineno}: failure mode {c.value!r} (use FailureMode / vocab)")
        if LETTER_RUN.search(c.value):
            hits.append(f"{where}:{c.lineno}: mode letters {c.value!r} (use vocab.MODE_LETTERS)")
        if c.value in OWN_STOPS:
            hits.append(f"{where}:{c.lineno}: stop reason {c.value!r} (use vocab.STOP_*)")
        if colours and HEX.search(c.value):
            hits.append(f"{where}:{c.lineno}: colour {HEX.search(c.value).group()} (use a vocab colour)")
    hits += [f"{where}:{c.lineno}: stop reason {c.value!r} (use vocab.STOP_*)"
             for c in _stop_context(tree, skip) if c.value in SHARED_STOPS]
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and sum(_is_mode_key(k) for k in node.keys) >= 2 and all(
                isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.values):
            hits.append(f"{where}:{node.lineno}: a table of words keyed by failure mode (belongs in vocab)")
    return hits


def scan_js(text: str, where: str, *, any_colour: bool) -> list[str]:
    """The same for a JavaScript asset (its string literals, read with a regular expression)."""
    hits: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0] if not line.lstrip().startswith("*") else ""
        for m in JS_STRING.finditer(code):
            s = m.group(1) if m.group(1) is not None else m.group(2)
            if s in MODE_WORDS:
                hits.append(f"{where}:{lineno}: failure mode {s!r}")
            if LETTER_RUN.search(s):
                hits.append(f"{where}:{lineno}: mode letters {s!r}")
            if s in OWN_STOPS or s in SHARED_STOPS:
                hits.append(f"{where}:{lineno}: stop reason {s!r}")
            found = HEX.search(s)
            if found and (any_colour or found.group().upper() in OWNED_COLOURS):
                hits.append(f"{where}:{lineno}: colour {found.group()}")
        if re.search(r"\.name\.charAt\(0\)|\.name\[0\]", code):
            hits.append(f"{where}:{lineno}: a mode letter taken from its name (send the vocabulary's letter)")
    return hits


def scan_tree(root: Path) -> list[str]:
    hits: list[str] = []
    for path in sorted((root / "knowsim_core").rglob("*.py")):
        rel = path.relative_to(root)
        if rel != OWNER:
            hits += scan_python(path.read_text(), str(rel), colours=True)
    for path in [*sorted((root / "pages").glob("*.py")), root / "app.py"]:
        if path.exists():
            hits += scan_python(path.read_text(), str(path.relative_to(root)), colours=True)
    for path in sorted((root / "ui").rglob("*.py")):
        hits += scan_python(path.read_text(), str(path.relative_to(root)), colours=False)
    for path in sorted((root / "knowsim_core").rglob("*.js")):
        hits += scan_js(path.read_text(), str(path.relative_to(root)), any_colour=True)
    for path in sorted((root / "ui").rglob("*.js")):
        hits += scan_js(path.read_text(), str(path.relative_to(root)), any_colour=False)
    return hits


# ---------------------------------------------------------------------- the checks
def test_no_vocabulary_literal_outside_its_owner():
    assert scan_tree(ROOT) == []


@pytest.mark.parametrize("planted,what", [
    # the three old spellings of the letters and the old export colour, as they were written
    ('MODE_BADGE = {FailureMode.REDUNDANT: "R", FailureMode.PREREQ_BLOCKED: "P"}\n', "keyed by failure mode"),
    ("HEADER = f\"{'U/S/P/K':>9}  {'R/B/E/W/A':>9}  vote\"\n", "mode letters"),
    ('EDGES = {"color": {"color": "#777777"}}\n', "colour #777777"),
    # the paper check's raw stop reasons and a second definition of them
    ('n = sum(1 for r in runs if r.stop_reason == "cognitive_overload")\n', "stop reason 'cognitive_overload'"),
    ('out = make(stop_reason=None if stop is None else "cognitive_overload")\n', "stop reason 'cognitive_overload'"),
    ('STOP_MAX_TURNS = "max_turns"\n', "stop reason 'max_turns'"),
    ('MASTERY = "mastery"\n', "stop reason 'mastery'"),
    ('COLUMNS = ("redundant", "prereq_blocked", "effective")\n', "failure mode 'prereq_blocked'"),
    ('label = "PREREQ-BLOCKED"\n', "failure mode 'PREREQ-BLOCKED'"),
])
def test_a_planted_python_duplicate_is_found(planted, what):
    assert any(what in hit for hit in scan_python(planted, "planted.py", colours=True)), planted


@pytest.mark.parametrize("planted,what", [
    ("s.modeText.textContent = m.name.charAt(0);\n", "taken from its name"),
    ('var LETTERS = { "REDUNDANT": "R", "OVERLOAD-WASTED": "O" };\n', "failure mode 'OVERLOAD-WASTED'"),
    ('ctx.strokeStyle = "#8C8C8C";\n', "colour #8C8C8C"),
    ("if (run.stop_reason === 'max_turns') {}\n", "stop reason 'max_turns'"),
])
def test_a_planted_javascript_duplicate_is_found(planted, what):
    assert any(what in hit for hit in scan_js(planted, "planted.js", any_colour=False)), planted


def test_what_is_not_vocabulary_passes():
    """Prose, other facts that share a word, and the vocabulary's own use read clean."""
    clean = (
        '"""The modes: REDUNDANT, PREREQ-BLOCKED … and the edge colour #8C8C8C."""\n'
        "from knowsim_core.vocab import STOP_OVERLOAD, MODE_LETTER_HEADER\n"
        'params = {"max_turns": 15, "cognitive_overload": 0.2}\n'  # a preset field and a metric
        'record = {"user_done": True}\n'
        "n = sum(1 for r in runs if r.stop_reason == STOP_OVERLOAD)\n"
        'PAPER = {FailureMode.REDUNDANT: 20.0, FailureMode.EFFECTIVE: 11.0}\n'  # numbers, not words
        "HEADER = f\"{'U/S/P/K':>9}  {MODE_LETTER_HEADER:>9}\"\n"
    )
    assert scan_python(clean, "clean.py", colours=True) == []


def test_a_planted_file_in_a_copy_of_the_tree_fails_the_whole_scan(tmp_path):
    """End to end: the same tree with one module that spells the run table's letters again."""
    for name in ("knowsim_core", "ui", "pages"):
        (tmp_path / name).mkdir()
    (tmp_path / "knowsim_core" / "vocab.py").write_text((ROOT / OWNER).read_text())
    (tmp_path / "knowsim_core" / "fine.py").write_text("from knowsim_core.vocab import MODE_LETTERS\n")
    assert scan_tree(tmp_path) == []
    (tmp_path / "pages" / "planted.py").write_text('LEGEND = "R/B/E/W/A: redundant, blocked, …"\n')
    assert scan_tree(tmp_path) == ["pages/planted.py:1: mode letters 'R/B/E/W/A: redundant, blocked, …' "
                                   "(use vocab.MODE_LETTERS)"]


def test_the_letters_are_the_spelling_s_initials_and_distinct():
    """One spelling per mode: the badge, the replay and the run command all print these."""
    assert vocab.MODE_LETTER_HEADER == "R/P/E/O/U"
    assert [m.letter for m in vocab.FAILURE_ORDER] == [m.title[0] for m in vocab.FAILURE_ORDER]
