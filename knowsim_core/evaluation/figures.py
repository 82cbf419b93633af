"""Paper-ready outputs of the failure analysis: the per-level mode figure and the KG / DC / CO table.

Both take :func:`knowsim_core.evaluation.analysis.level_summary`'s dict — what ``failures --json``
prints and the Failure modes page's "Across runs" tab shows — so a figure in a paper is the same
computation as the number quoted beside it.

The figure is the paper's Fig. 6 style: one 100 % stacked bar per knowledge level, segments in the
paper's mode order (REDUNDANT, PREREQ-BLOCKED, EFFECTIVE, OVERLOAD-WASTED, UNDER-ABSORBED), in the
Studio's colour-blind-safe mode palette (:mod:`knowsim_core.vocab`), with n (runs) under each
level and the share written on every segment wide enough to hold it, so it reads in greyscale too.
Sized for one column (3.3 in) with 8 pt text. matplotlib draws it without a browser or display
(the Agg canvas; SVG and PDF are vector). SVG text stays text (``svg.fonttype = 'none'``), so the
mode names can be searched and edited; PDF embeds TrueType (Type 42) fonts, which journals accept.
Output is deterministic (no dates, a fixed SVG id salt): the same data gives the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Mapping, Sequence

from knowsim_core import vocab
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.errors import ConfigError
from knowsim_core.formats.output import write_output

FIGURE_FORMATS = ("svg", "pdf", "png")
COLUMN_WIDTH_IN = 3.3
FONT_PT = 8
PNG_DPI = 300
MIN_LABEL_SHARE = 0.08  # segments narrower than this carry no percentage (it would not fit)
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}, "png": {"Software": None}}


def figure_format(path: str | Path) -> str:
    """The figure format named by ``path``'s suffix.

    Raises:
        ConfigError: any other suffix.
    """
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise ConfigError(f"cannot tell the figure format of {Path(path).name!r}: use a .svg, .pdf or .png name")
    return fmt


def _levels(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    levels = list(summary.get("by_level", {}).items())
    if not levels:
        raise ConfigError("no runs match these filters: nothing to draw")
    return levels


def mode_figure(summary: Mapping[str, Any], fmt: str) -> bytes:
    """Fig. 6: the failure-mode shares per knowledge level as ``fmt`` (svg, pdf or png) bytes.

    Raises:
        ConfigError: no levels in ``summary``, or an unknown ``fmt``.
    """
    # matplotlib (~0.4 s) is imported here, the module's one use of it: a page or command that
    # imports this module for its tables draws no figure
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if fmt not in FIGURE_FORMATS:
        raise ConfigError(f"unknown figure format {fmt!r}; expected one of {', '.join(FIGURE_FORMATS)}")
    levels = _levels(summary)
    rc = {"svg.fonttype": "none", "svg.hashsalt": "knowsim", "pdf.fonttype": 42, "font.size": FONT_PT,
          "font.family": "DejaVu Sans", "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=(COLUMN_WIDTH_IN, 0.8 + 0.42 * len(levels)), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        names = [f"{lv}\nn = {row['runs']}" for lv, row in levels]
        y = list(range(len(levels)))[::-1]  # the paper's level order, top to bottom
        left = [0.0] * len(levels)
        for mode in FAILURE_ORDER:
            shares = [float(row["modes"].get(mode.title, 0.0)) for _, row in levels]
            ax.barh(y, shares, left=left, height=0.62, color=vocab.MODE_COLOURS[mode], edgecolor="white",
                    linewidth=0.5, label=mode.title)
            for yi, x0, s in zip(y, left, shares):
                if s >= MIN_LABEL_SHARE:
                    ax.text(x0 + s / 2, yi, f"{s:.0%}", ha="center", va="center", fontsize=FONT_PT - 1.5,
                            color=vocab.MODE_FONTS[mode])
            left = [a + b for a, b in zip(left, shares)]
        ax.set_yticks(y, names)
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
        ax.set_xlabel("share of explained IU-turns")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.tick_params(axis="y", length=0)
        handles, labels = ax.get_legend_handles_labels()
        order = [0, 3, 1, 4, 2]  # legend columns fill top-down: this reads row by row in the paper's order
        fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside upper center", ncols=3,
                   frameon=False, fontsize=FONT_PT - 1.5, handlelength=1.0, handleheight=0.8, columnspacing=0.8,
                   handletextpad=0.4)
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=PNG_DPI if fmt == "png" else "figure", metadata=_METADATA[fmt])
    return buf.getvalue()


def write_mode_figure(summary: Mapping[str, Any], path: str | Path) -> int:
    """Write :func:`mode_figure` to ``path`` in the format of its suffix; returns the bytes written.

    Raises:
        ConfigError: an unknown suffix or nothing to draw.
        FormatError: the file cannot be written (:func:`knowsim_core.formats.output.write_output`:
            a FIFO, device or symlink is written through, never replaced).
    """
    data = mode_figure(summary, figure_format(path))
    return write_output(path, data)


# ---------------------------------------------------------------------- the LaTeX table
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_PLACES = {"KG": 2, "DC": 3, "CO": 3}


def tex_escape(text: str) -> str:
    """``text`` safe in LaTeX running text (level names are user data)."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def _cell(mean: float, spread: list[float] | None, places: int) -> str:
    body = f"{mean:.{places}f}"
    if spread is not None:
        body += f" {{\\scriptsize [{spread[0]:.{places}f}, {spread[1]:.{places}f}]}}"
    return body


def booktabs(header: Sequence[str], rows: Sequence[Sequence[str]], *, align: str, caption: str, label: str,
             source: str = "") -> str:
    """A booktabs ``table`` from cells that are LaTeX already (escape text with :func:`tex_escape`).

    Raises:
        ConfigError: a row whose length is not the header's, or ``align`` of another length.
    """
    if len(align) != len(header) or any(len(r) != len(header) for r in rows):
        raise ConfigError(f"a table of {len(header)} columns needs {len(header)} cells per row and alignment letters")
    lines = [r"% needs \usepackage{booktabs}" + (f"; generated by {source}" if source else ""),
             r"\begin{table}[t]", r"\centering", r"\small", f"\\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(header) + r" \\", r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", f"\\caption{{{caption}}}", f"\\label{{{tex_escape(label)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def plain_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, caption: str = "", label: str = "tab:knowsim",
                places: int = 3) -> str:
    """A booktabs table of plain values (any page's table as LaTeX): text escaped, floats to ``places``
    places, None as an en dash; numbers right-aligned, text left-aligned."""
    def cell(v: Any) -> str:
        if v is None:
            return "--"
        if isinstance(v, float):
            return f"{v:.{places}f}"
        if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
            return f"[{v[0]:.{places}f}, {v[1]:.{places}f}]"  # a (q1, q3) spread
        return tex_escape(str(v))

    if any(len(r) != len(header) for r in rows):
        raise ConfigError(f"a table of {len(header)} columns needs {len(header)} cells per row")
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(header))]
    return booktabs([tex_escape(h) for h in header], [[cell(v) for v in r] for r in rows],
                    align="".join("r" if n else "l" for n in numeric), caption=tex_escape(caption), label=label)


def latex_table(summary: Mapping[str, Any], *, caption: str = "", label: str = "tab:knowsim-levels") -> str:
    """The per-level KG / DC / CO table (booktabs): n runs, each metric's mean and its spread.

    The spread is the interquartile range over the runs of the level (:data:`knowsim_core.vocab.SPREAD`), in brackets
    after the mean, and absent where a level has one run. Needs ``\\usepackage{booktabs}``.

    Raises:
        ConfigError: no levels in ``summary``.
    """
    levels = _levels(summary)
    caption = tex_escape(caption) if caption else (  # ours is LaTeX already; a caller's text is escaped
        f"Mean knowledge gain (KG), delivery calibration (DC) and cognitive overload (CO) per knowledge level "
        f"over {int(summary.get('runs', 0))} KnowSim runs; $n$ is the number of runs, brackets give the "
        f"interquartile range ({vocab.SPREAD}) where $n > 1$.")
    rows = [[tex_escape(lv), str(int(row["runs"])),
             *(_cell(float(row[vocab.METRIC_KEYS[m]]), row["spread"].get(vocab.METRIC_KEYS[m]), _PLACES[m])
               for m in vocab.METRIC_NAMES)]
            for lv, row in levels]
    return booktabs(["Level", "$n$", "KG", "DC", "CO"], rows, align="lrrrr", caption=caption, label=label,
                    source="`python -m knowsim_core failures --latex`")
