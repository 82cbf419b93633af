"""Paper outputs of ``failures`` (issue 25): ``--figure PATH`` (SVG / PDF / PNG by suffix) and ``--latex``.

Both must be the computation ``failures --json`` prints: the test reads the JSON and checks the
figure's segment labels and the table's cells against it. The SVG is parsed as XML and keeps its
text as text (the five mode names searchable); the PDF and PNG are checked by their signatures and
the PNG's pixel width (one column, 3.3 in at 300 dpi); the LaTeX table is balanced and carries n.
"""

from __future__ import annotations

import json
import re
import struct
import xml.etree.ElementTree as ET

import pytest

from knowsim_core.cli import main
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.errors import ConfigError
from knowsim_core.evaluation.figures import (
    COLUMN_WIDTH_IN, MIN_LABEL_SHARE, PNG_DPI, latex_table, mode_figure, plain_table, tex_escape,
)
from knowsim_core.services.runner import start_run

MODE_NAMES = ["REDUNDANT", "PREREQ-BLOCKED", "EFFECTIVE", "OVERLOAD-WASTED", "UNDER-ABSORBED"]
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Two short offline runs per level (two assistants), stored like any run."""
    from knowsim_core.storage import Store

    path = tmp_path_factory.mktemp("fig") / "studio.db"
    store = Store(path)
    store.questions.seed_samples()
    for level in ("novice", "intermediate", "advanced"):
        for assistant in ("offline/comprehensive", "offline/simple"):
            start_run(store, question_id="sample_lava_lamps", level=level, assistant_id=assistant, seed=2,
                      max_turns=4).run_to_end()
    return path


def failures(db, *args: str) -> int:
    return main(["failures", "--db", str(db), *args])


def summary_json(db, capsys) -> dict:
    capsys.readouterr()
    assert failures(db, "--json") == 0
    return json.loads(capsys.readouterr().out)


def svg_texts(path) -> list[str]:
    root = ET.parse(path).getroot()  # valid XML, or this raises
    assert root.tag == f"{SVG_NS}svg"
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG_NS}text")]


def test_svg_figure_is_valid_xml_with_the_modes_and_the_json_shares(db, tmp_path, capsys):
    summary = summary_json(db, capsys)
    out = tmp_path / "fig6.svg"
    assert failures(db, "--figure", str(out)) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    texts = svg_texts(out)
    for name in MODE_NAMES:
        assert name in texts
    root = ET.parse(out).getroot()
    legend = [(round(float(t.get("y"))), float(t.get("x")), t.text) for t in root.iter(f"{SVG_NS}text")
              if t.text in MODE_NAMES]
    assert [name for *_, name in sorted(legend)] == MODE_NAMES  # read row by row: the paper's order
    labels = []
    joined = "\n".join(texts)
    for level, row in summary["by_level"].items():
        assert level in joined and f"n = {row['runs']}" in joined
        labels += [f"{row['modes'][m]:.0%}" for m in MODE_NAMES if row["modes"][m] >= MIN_LABEL_SHARE]
    assert labels
    shown = [t for t in texts if re.fullmatch(r"\d+%", t)]
    for label in labels:  # every segment wide enough carries the share --json gives
        assert label in shown


def test_pdf_and_png_by_suffix_and_deterministic_bytes(db, tmp_path, capsys):
    pdf, png = tmp_path / "f.pdf", tmp_path / "f.PNG"
    assert failures(db, "--figure", str(pdf)) == 0 and failures(db, "--figure", str(png)) == 0
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width = struct.unpack(">I", head[16:20])[0]
    assert width == round(COLUMN_WIDTH_IN * PNG_DPI)  # one column wide
    summary = summary_json(db, capsys)
    assert mode_figure(summary, "svg") == mode_figure(summary, "svg")
    assert mode_figure(summary, "pdf") == data


def test_bad_suffix_and_no_runs_are_one_line_and_write_nothing(db, tmp_path, capsys):
    capsys.readouterr()
    assert failures(db, "--figure", str(tmp_path / "fig.jpg")) == 2
    assert capsys.readouterr().err.strip() == "error: cannot tell the figure format of 'fig.jpg': use a .svg, .pdf or .png name"
    assert failures(db, "--question", "no_such_question", "--figure", str(tmp_path / "f.svg")) == 2
    assert capsys.readouterr().err.strip() == "error: no runs match these filters: nothing to draw"
    assert failures(db, "--figure", str(tmp_path / "missing" / "f.svg")) == 2
    assert capsys.readouterr().err.startswith("error: cannot write")
    assert not list(tmp_path.rglob("*.svg*"))


def _balanced(tex: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}%&$#_]", "", tex):
        depth += ch == "{"
        depth -= ch == "}"
        if depth < 0:
            return False
    return depth == 0


def test_latex_table_is_balanced_and_carries_n_and_the_json_figures(db, capsys):
    summary = summary_json(db, capsys)
    assert failures(db, "--latex") == 0
    tex = capsys.readouterr().out
    assert tex == latex_table(summary)
    assert _balanced(tex)
    envs = re.findall(r"\\(begin|end)\{(\w+)\}", tex)
    assert envs == [("begin", "table"), ("begin", "tabular"), ("end", "tabular"), ("end", "table")]
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    cols = len(re.search(r"\\begin\{tabular\}\{(\w+)\}", tex).group(1))
    rows = [ln for ln in tex.splitlines() if ln.endswith(r"\\")]
    assert rows[0] == r"Level & $n$ & KG & DC & CO \\"
    assert len(rows) == 1 + len(summary["by_level"])
    for line, (level, row) in zip(rows[1:], summary["by_level"].items()):
        cells = [c.strip() for c in line[:-2].split(" & ")]
        assert len(cells) == cols
        assert cells[0] == level and cells[1] == str(row["runs"])  # n present
        assert cells[2].startswith(f"{row['knowledge_gain']:.2f}")
        assert cells[3].startswith(f"{row['delivery_calibration']:.3f}")
        q1, q3 = row["spread"]["cognitive_overload"]
        assert cells[4] == f"{row['cognitive_overload']:.3f} {{\\scriptsize [{q1:.3f}, {q3:.3f}]}}"


def test_latex_escapes_level_names_and_drops_the_spread_of_a_single_run():
    row = {"runs": 1, "iu_turns": 3, "modes": {m.title: 0.2 for m in FAILURE_ORDER}, "knowledge_gain": 2.0,
           "delivery_calibration": 0.5, "cognitive_overload": 0.25,
           "spread": {"method": "IQR", "knowledge_gain": None, "delivery_calibration": None, "cognitive_overload": None}}
    tex = latex_table({"runs": 1, "by_level": {"my_level & 100%": row}}, caption="50% of {runs}")
    assert r"my\_level \& 100\% & 1 & 2.00 & 0.500 & 0.250 \\" in tex
    assert r"\caption{50\% of \{runs\}}" in tex and _balanced(tex)
    assert tex_escape("a\\b~^$#") == r"a\textbackslash{}b\textasciitilde{}\textasciicircum{}\$\#"


def test_plain_table_for_any_page_escapes_text_and_aligns_numbers():
    tex = plain_table(["signal", "n", "AUC", "IQR"], [["thumbs_up & 👍", 12, 0.61234, (0.5, 0.7)], ["rating_%", 3, None, None]],
                      caption="agreement with people's judgments")
    assert r"\begin{tabular}{lrrl}" in tex and _balanced(tex)
    assert r"thumbs\_up \& 👍 & 12 & 0.612 & [0.500, 0.700] \\" in tex
    assert r"rating\_\% & 3 & -- & -- \\" in tex
    with pytest.raises(ConfigError, match="4 columns"):
        plain_table(["a", "b", "c", "d"], [[1, 2]])
