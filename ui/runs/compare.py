"""Two runs side by side: why they differ, metric deltas, aligned turns, per-IU state diff, the two graphs.

Typical use: the same question and assistant for a novice and an advanced learner (the paper's
Figure 1), or two assistants, or the same run on two graph versions. The numbers come from pure
helpers (:func:`metric_deltas`, :func:`state_diff`, :func:`why_diff`, :func:`divergence_rows`) so tests
can check them. "Why they differ" — the first turn where the two runs' states part and the rule that
parted them, then per turn — is :func:`knowsim_core.evaluation.divergence.diff_runs`, as ``diff`` prints it.
States and modes are shown by name and in the colours of the graph and the failure charts
(ui.common.theme), never as raw keys; the two graphs are drawn compact so their labels stay readable
side by side, and they say "hover", not "click": they cannot be selected.
"""

from __future__ import annotations

import html
from typing import Any

import streamlit as st

from knowsim_core.evaluation.divergence import RunDiff, diff_runs
from knowsim_core.evaluation.explain import IUWhy, explain_turn, share
from knowsim_core.engine.failures import FAILURE_ORDER
from knowsim_core.engine.graph import natural_key
from knowsim_core.engine.records import RunRecord
from knowsim_core.engine.state import IUState
from ui.common.graph_view import render_graph
from ui.common.theme import BORDER_COLOUR, MODE_COLORS, MODE_FONT, STATE_STYLE, state_badge
from ui.common.safe_text import inline_markdown
from ui.common.tables import MISSING, styled

# cell text → (background, text colour), for the styled tables
_STATE_CELL = {state_badge(s): (v.colour, v.font) for s, v in STATE_STYLE.items()}
_MODE_CELL = {m.title: (MODE_COLORS[m], MODE_FONT[m]) for m in FAILURE_ORDER}


def metric_deltas(a: RunRecord, b: RunRecord) -> list[dict[str, Any]]:
    """One row per metric: A, B and B − A."""
    ma, mb = a.metrics(), b.metrics()
    rows = []
    for name, attr in (("KG", "knowledge_gain"), ("DC", "delivery_calibration"), ("CO", "cognitive_overload"), ("turns", "turns")):
        va, vb = getattr(ma, attr), getattr(mb, attr)
        rows.append({"metric": name, "A": round(va, 4), "B": round(vb, 4), "B − A": round(vb - va, 4)})
    return rows


def _state_at(run: RunRecord, turn: int) -> dict[str, IUState]:
    shown = min(turn, len(run.turns))  # a run that ended earlier (or has no turns) shows its last state
    state = run.turns[shown - 1].state_after if shown > 0 else run.initial_state
    return {v: state.state_of(run.graph.index.label_of[v]) for v in run.graph.index.ids}


def _all_ids(a: RunRecord, b: RunRecord) -> list[str]:
    """Every IU id of either run's graph, in natural order (IU2 before IU10)."""
    return sorted({*a.graph.index.ids, *b.graph.index.ids}, key=natural_key)


NOT_IN_GRAPH = "not in this graph"


def graph_mismatch(a: RunRecord, b: RunRecord) -> str | None:
    """A warning when A and B were simulated on different IU graphs (e.g. v1 and v3 of a question):
    their metrics count different IUs, so a difference is partly the graph's, not the run's."""
    if a.graph == b.graph:
        return None
    ia, ib = set(a.graph.index.ids), set(b.graph.index.ids)
    parts = []
    if ia - ib:
        parts.append(f"{len(ia - ib)} IU(s) only in A's ({', '.join(sorted(ia - ib, key=natural_key)[:5])})")
    if ib - ia:
        parts.append(f"{len(ib - ia)} IU(s) only in B's ({', '.join(sorted(ib - ia, key=natural_key)[:5])})")
    if not parts:
        parts.append("the same IUs, with other descriptions, levels or prerequisites")
    return ("A and B were simulated on different IU graphs — " + "; ".join(parts) + ". Their KG, DC and CO "
            "count different IUs, so part of any difference comes from the graph.")


def state_diff(a: RunRecord, b: RunRecord, turn: int) -> list[dict[str, Any]]:
    """Every IU of either graph with its state after ``turn`` in A and in B (turn 0: s_0); an IU one
    graph lacks says so, and has no difference."""
    sa, sb = _state_at(a, turn), _state_at(b, turn)
    ids = _all_ids(a, b)
    rows = []
    for v in ids:
        x, y = sa.get(v), sb.get(v)
        rows.append({
            "IU": v,
            "A": state_badge(x) if x is not None else NOT_IN_GRAPH,
            "B": state_badge(y) if y is not None else NOT_IN_GRAPH,
            "B − A": (int(y) - int(x)) if x is not None and y is not None else None,
        })
    return rows


def _whys_at(run: RunRecord, turn: int) -> dict[str, IUWhy]:
    if not 1 <= turn <= len(run.turns):
        return {}
    rec = run.turns[turn - 1]
    return {w.id: w for w in explain_turn(rec, run.graph, ceiling_source=run.params.ceiling_source)}


def why_diff(a: RunRecord, b: RunRecord, turn: int) -> list[dict[str, Any]]:
    """Every IU of either graph with its failure mode and why in ``turn`` for A and for B.

    The same explanation as the Simulate page and ``python -m knowsim_core explain`` (one source).
    """
    wa, wb = _whys_at(a, turn), _whys_at(b, turn)
    ids = _all_ids(a, b)
    rows = []
    for v in ids:
        x, y = wa.get(v), wb.get(v)
        rows.append({
            "IU": v,
            "A mode": (x.mode_name or "") if x else "", "A why": x.why if x else (
                NOT_IN_GRAPH if v not in a.graph.index.label_of else ""),
            "B mode": (y.mode_name or "") if y else "", "B why": y.why if y else (
                NOT_IN_GRAPH if v not in b.graph.index.label_of else ""),
        })
    return rows


def aligned_turns(a: RunRecord, b: RunRecord) -> list[dict[str, Any]]:
    """Turn by turn: load, η, transitions and the assistant's first words, for A and B."""
    out = []
    for t in range(1, max(len(a.turns), len(b.turns)) + 1):
        row: dict[str, Any] = {"turn": t}
        for side, run in (("A", a), ("B", b)):
            rec = run.turns[t - 1] if t <= len(run.turns) else None
            row[f"{side} load"] = round(rec.quantities.effective_load, 2) if rec else None
            row[f"{side} η"] = round(rec.quantities.efficiency, 2) if rec else None
            row[f"{side} moved"] = ", ".join(v for v, _, _ in rec.transitions) if rec else ""
            row[f"{side} assistant"] = (rec.assistant_message[:80] if rec else "")
        out.append(row)
    return out


def divergence_rows(d: RunDiff) -> list[dict[str, Any]]:
    """Per aligned turn: η in A and B, the rule of the IUs it parted, and what differed (``diff``'s line)."""
    return [{"turn": t.turn, "A η": share(t.eta[0]), "B η": share(t.eta[1]),
             "rule": t.rule.value if t.rule else "", "what differs": t.summary()} for t in d.turns]


def first_divergence_rows(d: RunDiff) -> list[dict[str, Any]]:
    """Every IU the first divergent turn parted (or left apart), with its rule and why."""
    first = d.first
    if first is None:
        return []
    return [{"IU": x.id, "rule": x.rule.value, "why": x.why} for x in first.ius]


def render_divergence(a: RunRecord, b: RunRecord, *, key: str) -> RunDiff:
    """The answer first (one or two sentences), what cannot be compared, then turn by turn."""
    d = diff_runs(a, b)
    st.markdown("**Why they differ**")
    st.info(inline_markdown(d.headline()), icon=":material/call_split:")
    if d.comparable:
        for note in d.notes:
            st.caption(inline_markdown(note))
    if d.turns:
        with st.expander("Turn by turn: what differed going in, and which IUs parted"):
            rows = divergence_rows(d)
            st.dataframe(rows, hide_index=True, key=f"{key}_diff", placeholder=MISSING,
                         column_config={"what differs": st.column_config.TextColumn(width="large")})
            if d.first is not None:
                st.markdown(f"**Turn {d.first.turn}, IU by IU**")
                st.dataframe(first_divergence_rows(d), hide_index=True, key=f"{key}_diff_first", placeholder=MISSING,
                             column_config={"why": st.column_config.TextColumn(width="large")})
    return d


def state_key_html() -> str:
    """Swatches naming the four state colours of the two graphs (our constants, escaped anyway)."""
    chip = ('<span style="display:inline-flex;align-items:center;gap:4px;margin-right:14px;white-space:nowrap">'
            '<span style="display:inline-block;width:14px;height:14px;border-radius:3px;background:{bg};'
            'border:1px {ls} {bc}"></span>{text}</span>')
    parts = [chip.format(bg=v.colour, ls="dashed" if v.dashed else "solid", bc=BORDER_COLOUR,
                         text=html.escape(f"{v.glyph} {v.name}")) for v in STATE_STYLE.values()]
    return f'<div class="ks-legend" style="font-size:0.85rem;line-height:1.8">{"".join(parts)}</div>'


def side_caption(side: str, run: RunRecord, turn: int) -> str:
    """What one side's graph shows: the state after ``turn``, or after its last turn when it ended earlier."""
    if not run.turns:  # not "state after turn 0 (it ended after turn 0)"
        return f"{side}: starting state, it has no turns yet · hover an IU for its concept; drag to pan"
    shown = min(turn, len(run.turns))
    ended = f" (it ended after turn {shown})" if shown < turn else ""
    return f"{side}: state after turn {shown}{ended} · hover an IU for its concept; drag to pan"


def render_compare(a: RunRecord, b: RunRecord, *, key: str = "cmp", turn: int | None = None) -> None:
    """The comparison of ``a`` and ``b``; ``turn`` pins the turn shown (Simulate passes its own
    cursor, so the panel follows every step), otherwise a slider picks it (Saved runs)."""
    st.markdown(inline_markdown(f"**A** {a.run_id} · {a.level} · {a.adapter.get('assistant')} — "
                                f"**B** {b.run_id} · {b.level} · {b.adapter.get('assistant')}"))
    if warning := graph_mismatch(a, b):
        st.warning(warning, icon=":material/account_tree:")
    st.dataframe(metric_deltas(a, b), hide_index=True, key=f"{key}_metrics", placeholder=MISSING)
    render_divergence(a, b, key=key)
    longest = max(len(a.turns), len(b.turns))
    if turn is None:
        turn = st.slider("Turn", 0, max(longest, 1), longest, key=f"{key}_turn") if longest else 0
    else:
        turn = max(0, min(int(turn), longest))
    st.html(state_key_html())
    ca, cb = st.columns(2)
    for col, side, run in ((ca, "A", a), (cb, "B", b)):
        with col:
            st.caption(side_caption(side, run, turn))
            render_graph(run.graph, states=_state_at(run, turn), key=f"{key}_graph_{side}", height=360,
                         selectable=False, compact=True)
    st.markdown("**Per-IU states** (B − A > 0: B knows more)")
    # a whole-number difference; blank (not "None" or "0.000000") where one graph lacks the IU
    st.dataframe(styled(state_diff(a, b, turn), ("A", "B"), _STATE_CELL), hide_index=True, key=f"{key}_states",
                 column_config={"B − A": st.column_config.NumberColumn("B − A", format="%d")}, placeholder=MISSING)
    st.markdown("**Aligned turns**")
    st.dataframe(aligned_turns(a, b), hide_index=True, key=f"{key}_turns", placeholder=MISSING)
    if turn:
        st.markdown(f"**Failure modes and why, turn {turn}**")
        st.dataframe(styled(why_diff(a, b, turn), ("A mode", "B mode"), _MODE_CELL), hide_index=True,
                     key=f"{key}_whys", column_config={"A why": st.column_config.TextColumn(width="large"),
                                                       "B why": st.column_config.TextColumn(width="large")}, placeholder=MISSING)
