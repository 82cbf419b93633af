"""Every page route, query parameter and session-state key of the UI has one owner, as executable checks.

Routes: ``ui/common/nav.py`` holds the table of pages and every move between them; nothing else
names a page's script or URL path, calls ``st.switch_page`` / ``page_link`` / ``st.Page``, or reads
or writes a query parameter by a literal name (the run filters' names are ``RunFilter.param``'s).
Every script in ``pages/`` is in the table and starts with ``ensure_frame(nav.<its entry>)``.

Keys (issue 44, item 4): each feature's ``keys.py`` names the keys read or written apart from the
widget that draws them, so ``st.session_state`` is never indexed by a literal or an f-string
outside those modules; a key a ``keys.py`` declares (the filter bars' keys included, which
``FilterKeys`` hands out) is written nowhere else; no two ``keys.py`` declare one key; and a key
only its widget uses (``key="batch_user"``) is written once in the whole UI. Each rule is shown to
fail on a planted copy. Docstrings are prose and are not read.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ui.common import nav
from ui.runs.filter_bar import FilterKeys

ROOT = Path(__file__).resolve().parent.parent
NAV = Path("ui/common/nav.py")
PAGE_SCRIPT = re.compile(r"(^|/)pages/\w+\.py$")
MOVES = {"switch_page", "page_link", "Page", "navigation"}  # the Streamlit calls that name a page
KEY_READERS = {"from_url", "to_url", "selected_rows", "selected_point"}  # helpers that read a widget by its key


def ui_files(root: Path = ROOT) -> list[Path]:
    return sorted([*(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py"), root / "app.py"])


def is_keys_module(path: Path, root: Path = ROOT) -> bool:
    return path.name == "keys.py" and path.relative_to(root).parts[0] == "ui"


def docstrings(tree: ast.AST) -> set[int]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return {id(n.body[0].value) for n in nodes
            if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal in the code (f-strings' literal parts too), docstrings left out."""
    skip = docstrings(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def _is_st(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
        and node.value.id == "st"


def _spelled(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def literal_uses(tree: ast.AST, attr: str) -> list[int]:
    """Lines where ``st.<attr>`` (session_state, query_params) is indexed, looked up, popped, tested or
    read as an attribute by a literal or an f-string."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and _is_st(n.value, attr) and _spelled(n.slice):
            lines.append(n.lineno)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _is_st(n.func.value, attr) \
                and n.func.attr in ("get", "pop", "setdefault") \
                and n.args and _spelled(n.args[0]):
            lines.append(n.lineno)
        elif isinstance(n, ast.Compare) and _spelled(n.left) and any(_is_st(c, attr) for c in n.comparators):
            lines.append(n.lineno)
        elif isinstance(n, ast.Attribute) and _is_st(n.value, attr) and not n.attr.startswith("_") \
                and n.attr not in ("get", "pop", "setdefault", "clear", "keys", "items", "values", "update",
                                   "to_dict", "from_dict", "get_all"):
            lines.append(n.lineno)
    return lines


# ---------------------------------------------------------------------- keys
def declared_keys(root: Path = ROOT) -> dict[str, str]:
    """``{key: the keys module declaring it}`` over every ``ui/**/keys.py`` (constants, tuples of them
    and the filter bars' handed-out keys; keys built by a function are patterns, not listed)."""
    owners: dict[str, str] = {}
    for path in sorted((root / "ui").rglob("keys.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("_"):
                continue
            values = (value,) if isinstance(value, str) else value if isinstance(value, tuple) else \
                value.all() if isinstance(value, FilterKeys) else ()
            for key in values:
                if isinstance(key, str):
                    assert key not in owners or owners[key] == name, f"{key!r} is declared by {owners[key]} and {name}"
                    owners[key] = name
    return owners


def key_offences(root: Path = ROOT, declared: dict[str, str] | None = None) -> list[str]:
    declared = declared_keys() if declared is None else declared
    found, written = [], Counter()
    for path in ui_files(root):
        rel, tree = path.relative_to(root), ast.parse(path.read_text())
        if is_keys_module(path, root):
            continue
        found += [f"{rel}:{line}: st.session_state by a literal key" for line in literal_uses(tree, "session_state")]
        found += [f"{rel}:{line}: {text!r} is {declared[text]}'s key" for line, text in strings(tree) if text in declared]
        written.update(literal_keys(tree))
    found += [f"widget key {k!r} is written {n} times (name it in the feature's keys.py)"
              for k, n in sorted(written.items()) if n > 1]
    return found


def literal_keys(tree: ast.AST) -> list[str]:
    """The keys written as literals where a key goes: ``key=`` of a call, and the key a helper reads
    a widget's value by (``links.from_url("runs_order", …)``, ``selected_point("fm_table")``)."""
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        out += [kw.value.value for kw in n.keywords
                if kw.arg == "key" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)]
        name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        if name in KEY_READERS and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
            out.append(n.args[0].value)
    return out


def test_every_session_state_key_has_one_owner():
    assert key_offences() == []


def test_the_keys_modules_declare_the_keys_that_travel():
    declared = declared_keys()
    assert {"runs_batch", "fm_batch", "runs_group", "runs_flash", "batch_questions", "graph_version_pick",
            "_llm_settings_error", "_ks_player", "judge_name", "realism_turns"} <= set(declared)
    assert declared["fm_batch"] == "ui.runs.keys" and declared["_ks_player"] == "ui.simulate.keys"


def test_the_filter_bar_hands_out_its_keys():
    from ui.runs import keys

    assert keys.RUN_FILTERS.of("batch_tag") == "runs_batch" and keys.FAILURE_FILTERS.of("batch_tag") == "fm_batch"
    with pytest.raises(KeyError):
        keys.FAILURE_FILTERS.of("text")  # not on the Failure modes bar
    with pytest.raises(ValueError):
        FilterKeys("x", ("no_such_field",))


def _planted_tree(tmp_path: Path, target: str, line: str) -> Path:
    for name in ("ui", "pages"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "app.py", tmp_path / "app.py")
    with open(tmp_path / target, "a") as f:
        f.write("\n" + line)
    return tmp_path


@pytest.mark.parametrize("target, line, why", [
    ("pages/home.py", 'st.session_state["runs_flash"] = "x"\n', "st.session_state by a literal key"),
    ("ui/simulate/view.py", 'x = st.session_state.get(f"sim_typed_{1}")\n', "st.session_state by a literal key"),
    ("ui/common/links.py", 'x = "_ks_player" in st.session_state\n', "st.session_state by a literal key"),
    ("pages/batch.py", 'x = "fm_batch"  # the other page\'s filter\n', "'fm_batch' is ui.runs.keys's key"),
    ("ui/runs/run_list.py", 'x = "runs_group"\n', "'runs_group' is ui.runs.keys's key"),
    ("ui/people/agreement_view.py", 'st.text_input("n", key="batch_user")\n', "widget key 'batch_user' is written 2"),
    ("pages/failures.py", 'x = selected_point("fm_run")\n', "widget key 'fm_run' is written 2"),
])
def test_a_planted_copy_of_a_key_is_found(tmp_path, target, line, why):
    root = _planted_tree(tmp_path, target, line)
    assert any(why in offence for offence in key_offences(root))


# ---------------------------------------------------------------------- routes
def route_offences(root: Path = ROOT) -> list[str]:
    paths = {p.url_path for p in nav.PAGES}
    found = []
    for path in ui_files(root):
        rel = path.relative_to(root)
        if rel == NAV:
            continue
        tree = ast.parse(path.read_text())
        for line, text in strings(tree):
            if PAGE_SCRIPT.search(text) or text.lstrip("/").partition("?")[0] in paths and text.startswith("/"):
                found.append(f"{rel}:{line}: the route {text!r} (ask ui.common.nav)")
        found += [f"{rel}:{n.lineno}: {ast.unparse(n.func)}(…) (a move between pages belongs to ui.common.nav)"
                  for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in MOVES and not (rel == Path("app.py") and n.func.attr == "navigation")]
        found += [f"{rel}:{line}: st.query_params by a literal name (a constant of ui.common.nav)"
                  for line in literal_uses(tree, "query_params")]
    return found


def test_every_route_and_query_parameter_is_nav_s():
    assert route_offences() == []


def test_every_page_script_is_in_nav_and_names_itself():
    scripts = {p.script: name for name, p in vars(nav).items() if isinstance(p, nav.Page)}
    assert sorted(scripts) == sorted(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py") if p.name != "__init__.py")
    assert {p.script for p in nav.PAGES} == set(scripts) and len({p.url_path for p in nav.PAGES}) == len(nav.PAGES)
    for script, name in scripts.items():
        first = [n for n in ast.parse((ROOT / script).read_text()).body
                 if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)][0]
        assert ast.unparse(first.value) == f"ensure_frame(nav.{name})", script


@pytest.mark.parametrize("target, line, why", [
    ("pages/batch.py", 'st.switch_page("pages/failures.py", query_params={"batch": "t"})\n', "the route 'pages/failures.py'"),
    ("ui/runs/run_list.py", "st.page_link(nav.RUNS.script, label='runs')\n", "st.page_link(…)"),
    ("pages/home.py", 'x = "/simulate?run=abc"\n', "the route '/simulate?run=abc'"),
    ("pages/batch.py", 'x = st.query_params.get("tag")\n', "st.query_params by a literal name"),
    ("ui/simulate/state.py", 'del st.query_params["turn"]\n', "st.query_params by a literal name"),
])
def test_a_planted_route_is_found(tmp_path, target, line, why):
    root = _planted_tree(tmp_path, target, line)
    assert any(why in offence for offence in route_offences(root))
