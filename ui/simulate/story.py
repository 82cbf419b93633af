"""One IU's story, under the Simulate player: per turn its state, its part of the turn's load,
carry, ceiling, failure mode, its part in DC and the words of the reply that taught it — the
figures of :mod:`knowsim_core.evaluation.iu_story` (the mode and why are ``explain``'s).

A click on an IU in the graph opens its story; the IU box in the panel picks any IU; ``?iu=IU3``
(:data:`ui.common.nav.IU`) links to it, from Failure modes' heatmap for one. A click on a row moves
the player to that turn. A pair shows the IU's story in both runs side by side (a fork beside its
original: where the IU's stories part). The panel draws its tables only while it is open, so a
closed panel adds nothing to a step.
"""

from __future__ import annotations

import streamlit as st

from knowsim_core.evaluation.explain import share
from knowsim_core.evaluation.iu_story import DC_PARTS, NONE_KNOWN, IUStory, StoryTurn, iu_story
from knowsim_core.engine.records import RunRecord
from ui.common import links, nav
from ui.common.graph_view import selected_iu
from ui.common.safe_text import inline_markdown
from ui.common.selection import selected_rows
from ui.common.tables import MISSING
from ui.common.theme import glossary_help, state_badge
from ui.simulate import keys, state
from ui.simulate.player import Player
from ui.simulate.turn_card import WHY_COLUMNS, WHY_ROW_HEIGHT

WORDS_CHARS = 140  # the words column shows the first sentence this long; the shown turn's are in full below

STORY_COLUMNS = {
    **WHY_COLUMNS,
    "": st.column_config.TextColumn("", width=24, help="the turn the player shows"),
    "words": st.column_config.TextColumn("words of the reply", width="large"),
    "load": st.column_config.TextColumn("load", help=glossary_help("load")),
    "carry": st.column_config.TextColumn("carry", help=glossary_help("carry")),
    "ceiling": st.column_config.TextColumn("ceiling", help=glossary_help("ceiling")),
    "DC": st.column_config.TextColumn("DC", help=glossary_help("DC")),
}


def _clicked(p: Player) -> str | None:
    """The IU newly clicked in one of the shown graphs (None when no graph's selection changed)."""
    seen = st.session_state.get(keys.STORY_CLICKS) or {}
    now = {i: selected_iu(keys.graph(i)) for i in range(len(p.run_ids))}
    st.session_state[keys.STORY_CLICKS] = now
    new = [v for i, v in now.items() if v is not None and v != seen.get(i)]
    return new[-1] if new else None


def story_iu(p: Player) -> str | None:
    """The IU whose story is open: the last one clicked in a graph or picked in the box, or the
    link's ``?iu=`` when the page is entered with one; None for an IU the shown run does not have."""
    ids = list(p.primary.graph.index.ids)
    if st.session_state.get(keys.STORY_RUNS) != p.run_ids:  # other runs: no story carried over from the last ones
        st.session_state[keys.STORY_RUNS] = p.run_ids
        st.session_state.pop(keys.STORY_IU, None)  # gone, not None: a link's ?iu= applies again (links.from_url)
    clicked = _clicked(p)
    if clicked in ids:
        st.session_state[keys.STORY_IU] = clicked
    links.from_url(keys.STORY_IU, nav.IU, ids)
    iu = st.session_state.get(keys.STORY_IU)
    if iu not in ids:
        iu = st.session_state[keys.STORY_IU] = None
    links.to_url(keys.STORY_IU, nav.IU, iu)
    return iu


def _picked() -> None:
    st.session_state[keys.STORY_IU] = st.session_state.get(keys.STORY_PICK)


def _jump(p: Player, key: str, turns: list[int]) -> None:
    """A row of the story was clicked: show that turn (auto-play stops). The table's key names the
    turn it was drawn at, so the moved player draws a new table with no row selected."""
    rows = selected_rows(key)
    if rows and rows[0] < len(turns) and turns[rows[0]] != p.turn:
        p.goto(turns[rows[0]])
        state.playback().playing = False
        st.rerun(scope="app")  # the graph, the turn and Play's state are drawn above this table


def _words(t: StoryTurn) -> str:
    if t.evidence:
        first = " ".join(t.evidence[0].split())
        more = f" (+{len(t.evidence) - 1} more)" if len(t.evidence) > 1 else ""
        return (first if len(first) <= WORDS_CHARS else first[: WORDS_CHARS - 1] + "…") + more
    return NONE_KNOWN if t.mentions else ""


def _carry(t: StoryTurn) -> str:
    if not (t.carry or t.prior_carry):
        return ""
    return f"{share(t.carry)} (was {share(t.prior_carry)})"


def _load(t: StoryTurn) -> str:
    if not t.load:
        return ""
    part = f"{t.load:.2f} of {t.turn_load:.1f}"
    return part + (f" ({t.share:.0%})" if t.share is not None else "") + (" · OVERLOADED" if t.overloaded else "")


def story_rows(story: IUStory, *, current: int) -> list[dict[str, str | int]]:
    """The story's table: the start, then one row per turn (``current``: the turn marked ▶)."""
    rows: list[dict[str, str | int]] = [{"": "▶" if current == 0 else "", "turn": 0, "state": state_badge(story.start),
                                         "teaching": "", "attempt": "", "load": "", "carry": "", "ceiling": "",
                                         "mode": "", "DC": "", "words": "", "why": "starting state"}]
    for t in story.turns:
        moved = f"{state_badge(t.before)} → {state_badge(t.after)}" if t.after != t.before else state_badge(t.after)
        ceiling = state_badge(t.ceiling) + (f" (live {state_badge(t.ceiling_used)})" if t.ceiling_used != t.ceiling else "")
        rows.append({"": "▶" if t.turn == current else "", "turn": t.turn, "state": moved, "teaching": t.teaching,
                     "attempt": t.attempt, "load": _load(t), "carry": _carry(t), "ceiling": ceiling,
                     "mode": t.mode.title if t.mode else "", "DC": t.dc, "words": _words(t), "why": t.why})
    return rows


def _shown_turn(story: IUStory, turn: int) -> None:
    """The shown turn's words in full: the reply's sentences and the reader's reason."""
    t = next((x for x in story.turns if x.turn == turn), None)
    if t is None:
        return
    if not t.mentions:
        st.caption(f"Turn {t.turn}: the reply did not teach {story.iu} ({t.teaching}).")
    elif t.evidence:
        whose = "the reader's evidence" if story.reader_words else "found by word match"
        st.markdown(f"**Turn {t.turn}** — taught *{t.teaching}*; the reply's words about {story.iu} ({whose}):")
        for sentence in t.evidence:
            st.markdown("> " + inline_markdown(" ".join(sentence.split())))  # model text: nothing fetched
    else:
        st.markdown(f"**Turn {t.turn}** — taught *{t.teaching}*; the words the reply used of {story.iu}: "
                    f"{NONE_KNOWN}.")
    if t.reason:
        st.caption(inline_markdown(f"The reader's reason: {' '.join(t.reason.split())}"))


def _story(p: Player, index: int, run: RunRecord, iu: str) -> None:
    try:
        story = iu_story(run, iu)
    except KeyError:
        st.caption(f"{iu} is not an IU of run {run.run_id}.")
        return
    prereqs = ", ".join(story.prerequisites) or "none (a root IU)"
    st.markdown(inline_markdown(f"**{story.iu} — {story.concept}** · prerequisites: {prereqs} · "
                                f"start: {state_badge(story.start)}"))
    turns = [0, *(t.turn for t in story.turns)]
    key = keys.story_table(index, iu, p.turn)
    st.dataframe(story_rows(story, current=p.turn), hide_index=True, key=key, on_select="rerun",
                 selection_mode="single-row", column_config=STORY_COLUMNS, row_height=WHY_ROW_HEIGHT,
                 placeholder=MISSING)
    _jump(p, key, turns)
    counts = story.dc_counts()
    st.caption(f"In DC (eq. 2) over {len(story.turns)} turn(s): "
               + ", ".join(f"{part} {counts[part]}" for part in DC_PARTS)
               + ". Click a row to show that turn.", help=glossary_help("DC"))
    _shown_turn(story, p.turn)
    st.caption(story.evidence_note())


def render_story(p: Player) -> None:
    """The story panel (a function of its own: the page's layout around it is the player's)."""
    run = p.primary
    ids = list(run.graph.index.ids)
    if not ids:
        return
    iu = story_iu(p)
    concept = {n.id: n.concept for n in run.graph.nodes}
    title = f"Story of {iu} over the run — {concept[iu]}" if iu else "Story of one IU over the run"
    # keyed by the IU: a click on another IU opens a new panel, drawn open
    panel = st.expander(inline_markdown(title), expanded=iu is not None, key=f"sim_story_{iu or 'none'}",
                        on_change="rerun", icon=":material/timeline:")
    if not panel.open:
        return
    with panel:
        st.session_state[keys.STORY_PICK] = iu
        st.selectbox("IU", ids, key=keys.STORY_PICK, on_change=_picked, placeholder="Pick an IU, or click one in the graph",
                     format_func=lambda v: f"{v} — {concept[v]}", width=420)
        if iu is None:
            return
        if len(p.run_ids) == 1:
            _story(p, 0, run, iu)
            return
        for i, (col, rid) in enumerate(zip(st.columns(len(p.run_ids)), p.run_ids)):
            with col:
                st.markdown(f"**{'AB'[i]}** · run `{rid[:8]}`")
                _story(p, i, p.runs[rid], iu)
