"""The Simulate page's player: transport controls, graph(s), IU panel, gauge and turn card.

Layout for a wide screen (usable at 1280 px, readable at 1920): the graph and the selected IU's
panel sit side by side, so a click on a node shows its explanation at once; the gauge and the
load strip sit directly under the graph; the turn's messages and signals follow below. A pair of
runs gets one column each (graph, then its IU panel, then its gauge).

Everything that changes on a step lives in one fragment, so a step (or an auto-play tick)
redraws only this part of the page. Auto-play uses ``st.fragment(run_every=…)`` and steps on
elapsed time (:meth:`Playback.due`), so a full rerun in the middle never plays an extra turn.
Play/Pause and the speed sit in a fragment of their own that does not tick: a button the ticking
fragment redraws every second can swallow a click that lands while it is being replaced.
"""

from __future__ import annotations

import streamlit as st

from knowsim_core.errors import KnowSimError
from knowsim_core.services.fork import fork_run, parent_of
from knowsim_core.services.reader_trust import runs_note
from knowsim_core.services.reading import is_human_reading
from knowsim_core.engine.failures import FailureMode
from knowsim_core.engine.records import RunRecord, TurnRecord
from knowsim_core.evaluation.explain import explain_turn

from ui.simulate import keys, state
from ui.simulate.gauge import gauge_top, render_gauge, render_load_chart
from ui.common.graph_view import render_graph, render_legend
from ui.simulate.player import Player
from ui.common.safe_text import inline_markdown
from ui.common.theme import GLOSSARY, glossary_help
from ui.people.agreement_view import render_turn_judgments
from ui.runs.compare import render_compare
from ui.simulate.story import render_story
from ui.simulate.turn_card import render_iu_panel, render_metrics, render_turn_card

# one screen at 1400×900: graph + compact charts on the left, messages + IU panel on the right
# the graph leaves room for a status of two lines (a virtual stop and the run's end named): at 310 px
# such a status pushes the gauge's ▲/▼ and its lower ticks below 900 px
GRAPH_HEIGHT, PAIR_GRAPH_HEIGHT = 288, 400
MIN_GRAPH_HEIGHT = 200  # what the graph keeps when a caption above the turn takes room
# whole labels down to 9 px (a row of four concepts in the half-page canvas draws at ~9.4 px); a graph
# whose whole labels would be smaller is drawn with ids only, so that all of it fits
WHOLE_LABEL_PX = 9
COMPACT_CHART_HEIGHT = 150
# The right column of one run has a fixed height that the compose box (typed runs), the turn's two
# messages, their judgments and the IU panel share (PAGE_STYLE): the assistant's reply is drawn whole,
# the learner's message scrolls inside a few lines of its own, and the IU panel takes what is left
# (never less than a few lines; it scrolls inside). With fixed heights a long learner message pushed
# the reply out of its box.
TURN_HEIGHT = 515
IU_OPEN_HEIGHT = 190  # the IU panel once an IU is clicked: its name, state and why (it scrolls inside)
PAIR_IU_PANEL_HEIGHT = 260
PAGE_STYLE = """<style>
[data-testid='stMainBlockContainer'] { padding-top: 3.6rem; }
[data-testid='stMainBlockContainer'] [data-testid='stVerticalBlock'] { gap: 0.55rem; }
.st-key-sim_title h1 { font-size: 1.6rem; padding: 0; }
.st-key-sim_title [data-testid='stMarkdownContainer'] { margin-bottom: 0; }
.st-key-sim_turn { overflow: hidden; }
.st-key-sim_turn > * { flex-shrink: 0; }
.st-key-sim_turn > :has(> .st-key-sim_messages) { flex: 0 1 auto; min-height: 5rem; display: flex; }
.st-key-sim_turn .st-key-sim_messages { overflow-y: auto; flex: 1 1 auto; }
.st-key-sim_messages > * { flex-shrink: 0; }
.st-key-sim_messages [data-testid='stMarkdownContainer'] { font-size: 0.92rem; line-height: 1.45; }
.st-key-sim_messages p { margin-bottom: 0.25rem; }
.st-key-sim_learner { max-height: calc(3 * 1.45 * 0.92rem); overflow-y: auto; flex: 0 0 auto; }
.st-key-sim_learner p { margin-bottom: 0; }
.st-key-sim_learner [data-testid='stMarkdownContainer'], .st-key-sim_reply [data-testid='stMarkdownContainer'] {
  margin-bottom: 0; }
.st-key-sim_turn > :has(> .st-key-sim_iu_box_0) { flex-grow: 1; }
[class*='st-key-sim_preview'] { max-height: calc(8 * 1.45 * 0.92rem + 0.5rem); overflow-y: auto; }
[class*='st-key-sim_preview'] [data-testid='stMarkdownContainer'] { font-size: 0.92rem; line-height: 1.45; }
</style>"""


PLAYER_FRAGMENT, PLAY_FRAGMENT = "sim_player", "sim_play_controls"


def _redraw_both() -> None:
    """Rerun the ticking fragment *and* Play/Pause's after a move made in the ticking one.

    Play's enabled state depends on the turn (nothing to play at the last turn of a finished run).
    A click in the ticking fragment reruns only that fragment, so Play would keep the state it was
    drawn with: disabled after Start rewinds a run Play has finished, enabled but inert after Step
    reaches the last turn. A keyed rerun redraws the two fragments, not the page."""
    st.rerun([PLAYER_FRAGMENT, PLAY_FRAGMENT])


def _forward(p: Player) -> None:
    p.forward()
    state.playback().mark()
    _redraw_both()


def _pause() -> None:
    """Stop auto-play; a full rerun when it was playing, so Play/Pause (another fragment) shows
    "Play" again and the ticking fragment is redefined without its timer."""
    pb = state.playback()
    if pb.playing:
        pb.playing = False
        st.rerun(scope="app")
    _redraw_both()


def _back(p: Player) -> None:
    p.back()
    _pause()


def _rewind(p: Player) -> None:
    p.goto(0)
    _pause()


def scrub_key(p: Player) -> str:
    """The scrubber's key names the turn it was drawn at (and how many turns are stored).

    The page moves the scrubber on every step. With one key for all turns, a timer rerun that the
    browser sent before it had drawn the last step carries the scrubber's previous value, which
    Streamlit reads as the user dragging it: playback would pause silently (Play stalled with the
    button still reading "Pause"). With a key per drawn position a stale value
    belongs to an older scrubber and equals the turn it was drawn at, which :func:`_scrub` ignores:
    only a real drag moves the cursor.
    """
    return f"{keys.SCRUB}_{p.turn}_{p.stored_turns}"


def _scrub(p: Player, key: str, drawn: int) -> None:
    value = st.session_state.get(key)
    if value is None or value == drawn:
        return  # the browser echoing a scrubber the page moved, not a drag
    p.goto(value)
    _pause()


@st.fragment(key=PLAY_FRAGMENT)
def _play_controls(p: Player) -> None:
    """Play/Pause (space) and the speed: any change restarts the page so the timer is re-read."""
    pb = state.playback()
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    label, icon = ("Pause", ":material/pause:") if pb.playing else ("Play", ":material/play_arrow:")
    if row.button(label, key="sim_play", icon=icon, help=f"{label} the run, one turn per tick (shortcut: Space)",
                  shortcut="Space", disabled=not pb.playing and not p.can_forward):
        pb.playing = not pb.playing
        pb.mark()
        st.rerun(scope="app")  # run_every is read when the ticking fragment is defined
    names = list(state.SPEEDS)
    current = next((n for n, v in state.SPEEDS.items() if v == pb.speed), state.DEFAULT_SPEED)
    choice = row.selectbox("speed", names, index=names.index(current), key=keys.SPEED,
                           label_visibility="collapsed", width=160)
    if state.SPEEDS[choice] != pb.speed:
        pb.speed = state.SPEEDS[choice]
        if pb.playing:
            st.rerun(scope="app")
    with row.popover("Glossary", icon=":material/help:", help="What τ, load, η, ceiling, carry, step and the metrics KG, DC and CO mean"):
        for term, text in GLOSSARY.items():
            st.markdown(f"**{term}** — {text}")
    with row:
        render_legend(modes=True)  # static: it sits in this row rather than in the ticking fragment


def _transport(p: Player) -> None:
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.button("Start", key="sim_rewind", icon=":material/first_page:", help="Back to the starting state (turn 0)",
               on_click=_rewind, args=(p,), disabled=p.turn == 0)
    row.button("Back", key="sim_back", icon=":material/chevron_left:", help="Step back one turn (shortcut: ←)",
               on_click=_back, args=(p,), shortcut="Left", disabled=p.turn == 0)
    row.button("Step", key="sim_step", icon=":material/chevron_right:",
               help="Step forward one turn, playing it if it is new (shortcut: →)", on_click=_forward,
               args=(p,), shortcut="Right", disabled=not p.can_forward, type="primary")
    if p.stored_turns > 0:
        key = scrub_key(p)
        row.slider("turn", 0, p.stored_turns, p.turn, key=key, on_change=_scrub, args=(p, key, p.turn),
                   label_visibility="collapsed", width="stretch")
    else:
        row.caption("No turn played yet.")


def _status(p: Player) -> str:
    run = p.primary
    parts = [f"Turn **{p.turn}** of {p.stored_turns} played (max {run.params.max_turns})"]
    first, reason = run.virtual_stop
    if first is not None and p.turn > first and dict(run.meta).get("stop_mode", "virtual") != "real":
        # the paper's virtual stop: the run plays on, and only records where it would have stopped
        parts.append(f"virtual stop after turn {first + 1} ({reason}); the run plays on to max turns")
    if p.all_finished:
        reasons = {p.runs[r].stop_reason for r in p.run_ids}
        parts.append("finished: " + ", ".join(sorted(str(x) for x in reasons)))
    return " · ".join(parts)


def side_label(p: Player, index: int) -> str:
    """"A" / "B", and for a fork which run and turn it forked from (side by side, the two headers
    otherwise read alike)."""
    side = "AB"[index]
    parent = parent_of(p.store, p.runs[p.run_ids[index]])
    if parent is not None:
        other = next((("AB"[i]) for i, r in enumerate(p.run_ids) if r == parent.run_id),
                     f"run {parent.run_id[:8]}" if parent.stored else
                     ("deleted run " if parent.deleted else "absent run ") + parent.run_id[:8])
        return f"{side} (fork of {other} at turn {parent.turn})"
    return side


def graph_version_label(p: Player, rid: str) -> str:
    """"graph v3" — which version of its question's graph the run is on (two versions are two graphs,
    so the header names the one); "" for a run stored without one."""
    try:
        vid = p.store.search.get_row(rid).graph_version_id
    except KnowSimError:
        return ""
    number = p.store.questions.graph_version_numbers([vid]).get(vid) if vid is not None else None
    return f"graph v{number}" if number is not None else ""


CAPTION_CHARS_PER_LINE, CAPTION_LINE_PX = 140, 22  # a caption across the page at 1400 px (0.875rem)


def _header(run: RunRecord, status: str = "", label: str = "", version: str = "") -> int:
    """The run's header line (and, for a reading of a human conversation, what it is and how far
    its reader is trusted); the pixels that caption takes at 1400 px, which the turn below gives up."""
    adapters = run.adapter
    line = (f"**{run.level.capitalize()} learner** · assistant {adapters.get('assistant', '?')} · "
            f"user {adapters.get('user', '?')} · τ = {run.tau}" + (f" · {version}" if version else ""))
    if label:
        line = f"**{label}** · run `{run.run_id[:8]}` · " + line
    st.markdown(inline_markdown(f"{status} · {line}" if status else line), help=glossary_help("τ", "step"))
    if is_human_reading(run):
        notes = " ".join(n["text"] for n in runs_note([run]).values())
        caption = ("Reading of a human conversation: a real person and tutor wrote every message; the extractor "
                   "and the rules only read them. " + notes)
        st.caption(caption)
        return CAPTION_LINE_PX * -(-len(caption) // CAPTION_CHARS_PER_LINE)
    return 0


def _iu_panel(p: Player, index: int, rid: str, selected: str | None, *, height: int | str = "content") -> None:
    run = p.runs[rid]
    with st.container(border=True, height=height, key=f"sim_iu_box_{index}"):
        if selected:
            render_iu_panel(run, selected, turn=min(p.turn, len(run.turns)), key=f"sim_iu_{index}")
        else:
            st.caption("Click an IU in the graph to read why it did or did not advance, and its story over the run.")


def _gauges(p: Player, index: int, rid: str, *, height: int | None = None) -> None:
    run = p.runs[rid]
    top = gauge_top(run.turns, tau=run.tau)  # one scale for the whole run
    rec = p.record(rid)
    prev = p.record(rid, p.turn - 1) if p.turn > 1 else None
    g, c = st.columns([1, 1])  # the gauge keeps room for its title ("turn 12: OVERLOADED · η = 0.83")
    with g:
        render_gauge(rec, tau=run.tau, previous=prev, top=top, key=f"sim_gauge_{index}", height=height)
    with c:
        render_load_chart(run.turns[: max(p.turn, 0)], tau=run.tau, current=p.turn, top=top, key=f"sim_load_{index}",
                          height=height)
    st.caption("One scale for the whole run: 0 to the larger of 2τ and its highest load.",
               help=glossary_help("load", "τ", "η"))


def turn_modes(run: RunRecord, rec: TurnRecord | None) -> dict[str, FailureMode]:
    """The failure mode of each IU explained in ``rec`` — from :func:`explain_turn`, the one source
    the turn card, Failure modes and ``explain`` read too."""
    if rec is None:
        return {}
    whys = explain_turn(rec, run.graph, ceiling_source=run.params.ceiling_source)
    return {w.id: w.mode for w in whys if w.mode is not None}


def turn_judgment(p: Player, rid: str, rec: TurnRecord, *, key: str) -> None:
    """The person's or researchers' 👍/👎 on this turn, and the researcher's own, right under the
    assistant's message so it is seen with the turn (:mod:`ui.people.agreement_view`)."""
    render_turn_judgments(p.store, rid, rec.turn, key=key)


def _messages(p: Player, rid: str, *, key: str) -> None:
    """The shown turn's two messages: the learner's scrolls inside a few lines of its own, the
    assistant's reply is drawn whole (the box scrolls only when the reply alone outgrows the column)."""
    run, rec = p.runs[rid], p.record(rid)
    with st.container(border=True, key=key):
        if rec is None:  # the question is in the page's header (once); here only what comes next
            st.caption(first_turn_hint(p, run))
            return
        # plain blocks, not st.chat_message: a chat message in a fixed-height box scrolls the box
        # (and with it the page) to its bottom on every step
        st.markdown(f":material/person: **Learner** · turn {rec.turn}")
        with st.container(key="sim_learner"):
            st.markdown(inline_markdown(rec.user_message))  # stored text: nothing fetched, no raw layout
        st.markdown(":material/school: **Assistant**")
        with st.container(key="sim_reply"):
            st.markdown(inline_markdown(rec.assistant_message))
    # under the box, not inside it: inside, a long reply scrolls the turn's 👍/👎 out of sight
    turn_judgment(p, rid, rec, key="sim_judge_0")


def first_turn_hint(p: Player, run: RunRecord) -> str:
    """What plays the first turn: Step, or — where Step is disabled because the first message is
    the researcher's — the box to type it in (never "Step forward" under a disabled Step)."""
    if p.can_forward:
        return f"Starting level: {run.level}. Step forward to play the first turn."
    if p.awaiting_input:
        return f"Starting level: {run.level}. Type the first message and Send it to play the first turn."
    return f"Starting level: {run.level}. This run has no turns and cannot play on."


def _single(p: Player, rid: str) -> None:
    """One run, the whole turn in one screen (1400×900): the graph with the load gauge and chart
    under it on the left; the turn's two messages and the selected IU's why on the right."""
    run = p.runs[rid]
    taken = _header(run, _status(p), version=graph_version_label(p, rid))
    graph_height = max(MIN_GRAPH_HEIGHT, GRAPH_HEIGHT - taken)  # a reading's caption: the turn gives way
    left, right = st.columns(2, gap="medium")
    with left:
        selected = render_graph(run.graph, states=p.states(rid), changed=p.changed(rid), key=keys.graph(0),
                                height=graph_height, descriptions=False, modes=turn_modes(run, p.record(rid)),
                                min_label_px=WHOLE_LABEL_PX)  # the whole graph; ids only where labels would be tiny
        _gauges(p, 0, rid, height=COMPACT_CHART_HEIGHT)
    with right, st.container(height=TURN_HEIGHT - (GRAPH_HEIGHT - graph_height), border=False, key="sim_turn"):
        _compose(p, rid)
        _messages(p, rid, key="sim_messages")
        _iu_panel(p, 0, rid, selected, height=IU_OPEN_HEIGHT if selected else "content")
    if p.record(rid) is None and 0 < len(run.turns) < p.turn and p.finished(rid):
        st.caption(f"This run ended after turn {len(run.turns)}.")


def _pair(p: Player) -> None:
    st.markdown(_status(p))
    cols = st.columns(len(p.run_ids), gap="medium")
    for i, (col, rid) in enumerate(zip(cols, p.run_ids)):
        run = p.runs[rid]
        with col:
            _header(run, label=side_label(p, i), version=graph_version_label(p, rid))
            _compose(p, rid, i)  # e.g. the fork of a typed run goes on typed
            # compact: two graphs side by side keep labels of 11 px at least (glyph + id; the concept on hover)
            selected = render_graph(run.graph, states=p.states(rid), changed=p.changed(rid), key=keys.graph(i),
                                    height=PAIR_GRAPH_HEIGHT, descriptions=False, compact=True,
                                    modes=turn_modes(run, p.record(rid)))
            _iu_panel(p, i, rid, selected, height=PAIR_IU_PANEL_HEIGHT if selected else "content")
            if p.record(rid) is None and 0 < len(run.turns) < p.turn and p.finished(rid):
                st.caption(f"This run ended after turn {len(run.turns)}.")
            _gauges(p, i, rid)


def _compose(p: Player, rid: str, index: int = 0) -> bool:
    """The researcher's box for the next typed message (only at the newest turn of a typed run);
    True when it is drawn."""
    role = p.human_role(rid)
    if role is None or p.finished(rid) or p.turn < len(p.runs[rid].turns):
        return False
    suffix = f"_{index}" if index else ""  # the first (or only) run keeps the plain keys
    with st.container(border=True, key=f"sim_compose{suffix}"):
        if role == "assistant":
            try:
                # whole: the reply is written to it (PAGE_STYLE scrolls only one longer than eight lines,
                # ~500 characters; two lines in a fixed box cut it mid-sentence)
                with st.container(border=False, key=f"sim_preview{suffix}"):
                    st.markdown("**The learner says:** " + inline_markdown(p.preview_user(rid)))
            except KnowSimError as exc:
                st.error(f"The simulated learner could not write its message: {exc}")
                return True
        label = "Your reply as the assistant" if role == "assistant" else "Your message as the learner"
        st.text_area(label, key=keys.TYPED + suffix, height=68,
                     placeholder="It goes through the same extractor and rules as an agent's message.")
        attempt = role == "user" and st.checkbox("This message attempts an answer", key=f"sim_typed_attempt{suffix}")
        # never disabled: the box's text reaches the server when it loses focus, i.e. on this very click
        st.button("Send", key=f"sim_send{suffix}", icon=":material/send:", type="primary",
                  help="Play the next turn with this message", on_click=_send, args=(p, rid, suffix, bool(attempt)))
    return True


def _send(p: Player, rid: str, suffix: str, attempt: bool) -> None:
    """Send the typed message (a callback, so the new turn is drawn by the same rerun)."""
    key = keys.TYPED + suffix
    if p.send(st.session_state.get(key) or "", rid=rid, **({"attempt": True} if attempt else {})):
        st.session_state[key] = ""  # the box is empty for the next turn
        state.playback().mark()


def _fork(p: Player, index: int, rid: str) -> None:
    """Rewrite the shown turn's assistant reply as a new run linked to this one, then compare."""
    rec = p.record(rid)
    if rec is None:
        return
    # a toggle, not an expander: the reply box (a copy of the message) is only sent when asked for
    if not st.toggle(f"Fork at turn {rec.turn}: write your own assistant reply and continue as a new run",
                     key=f"sim_fork_open_{index}"):
        return
    with st.container(border=True):
        reply = st.text_area("Your reply for this turn", value=rec.assistant_message, height=140,
                             key=f"sim_fork_text_{rid}_{rec.turn}")
        if st.button("Fork and compare", key=f"sim_fork_{index}", icon=":material/call_split:",
                     help="Keeps turns before this one, plays this turn with your reply, then the run's own agents go on"):
            try:
                child = fork_run(p.store, rid, rec.turn, reply, settings=p.settings)
            except KnowSimError as exc:
                st.error(f"The fork could not be made: {exc}")
                return
            state.open_runs(p.store, (rid, child.run_id), turn=rec.turn, live={child.run_id: child})
            st.session_state[keys.COMPARE_OPEN] = True
            st.rerun(scope="app")


def _compare(p: Player) -> None:
    """The pair's Compare panel, inside the ticking fragment and drawn from the player's own records
    at the player's turn: drawn outside it, a step (a fragment rerun) would leave the panel on the
    turn it was first drawn at — "B − A KG −4" for a fork that ended +5."""
    # drawn only while open (on_change="rerun" makes the expander report it): a closed panel must
    # not add two graphs and four tables to every step of a playing pair
    panel = st.expander("Compare the two runs", expanded=bool(st.session_state.get(keys.COMPARE_OPEN)),
                        key="sim_compare_" + "_".join(p.run_ids), on_change="rerun")
    if panel.open:
        with panel:
            a, b = (at_turn(p.runs[r], p.turn) for r in p.run_ids)
            stored = [len(p.runs[r].turns) for r in p.run_ids]
            if max(stored) > p.turn:
                st.caption(f"Both runs as they stood after turn {p.turn}: A has {stored[0]} turn(s) stored, B "
                           f"{stored[1]}; step on to compare later turns (a run that ended earlier stays at its end).")
            render_compare(a, b, key="sim_cmp", turn=p.turn)


def at_turn(run: RunRecord, turn: int) -> RunRecord:
    """``run`` as it stood after ``turn`` (its stop only once its last turn is reached): Compare's
    KG, DC and CO of two runs at one turn. Right after a fork, A (15 turns) against B (3) whole
    would read "B − A KG −8" — a difference of length, not of the reply."""
    if turn >= len(run.turns):
        return run
    return run.with_turns(run.turns[: max(0, turn)])


@st.fragment(run_every=state.LEASE_RENEW_SECONDS)
def _hold_leases(p: Player) -> None:
    """While this page is open in a browser, keep the leases of the runs it plays; when the
    session goes away the timer stops and the runs are left open once the lease lapses."""
    p.hold_leases()


def render_player(p: Player) -> None:
    """The fragment with everything a step changes."""
    pb = state.playback()
    _play_controls(p)
    if any(not live.done for live in p.live.values()):
        _hold_leases(p)

    @st.fragment(run_every=pb.speed if pb.playing else None, key=PLAYER_FRAGMENT)
    def player_fragment() -> None:
        if pb.due():
            moved = p.forward()
            pb.mark()
            if not moved or not p.can_forward:
                pb.playing = False
                st.rerun(scope="app")  # stop the timer
        _transport(p)
        if p.error:
            st.error(p.error)
        if len(p.run_ids) == 1:
            _single(p, p.run_ids[0])
        else:
            _pair(p)
        labels = [f"{'AB'[i]} · {p.runs[r].level} learner · {r[:8]}" for i, r in enumerate(p.run_ids)]
        tabs = st.tabs(labels) if len(p.run_ids) > 1 else [st.container()]
        for i, (tab, rid) in enumerate(zip(tabs, p.run_ids)):
            with tab:
                run = p.runs[rid]
                render_metrics(run, min(p.turn, len(run.turns)))
                rec = p.record(rid)
                if rec is None:
                    if len(p.run_ids) > 1:  # a single run says it in its message box, above
                        st.caption(first_turn_hint(p, run))
                else:
                    # a single run shows the messages above, beside its graph (with the turn's judgments)
                    render_turn_card(run, rec, key=f"sim_card_{i}", messages=len(p.run_ids) > 1)
                    if len(p.run_ids) > 1:  # a pair: the person's / researchers' 👍/👎 under each side's card
                        render_turn_judgments(p.store, rid, rec.turn, key=f"sim_judge_{i}")
                    _fork(p, i, rid)
        render_story(p)  # one IU's story: its own panel under the turn
        if len(p.run_ids) == 2:
            _compare(p)
        state.sync_url(p)

    player_fragment()
