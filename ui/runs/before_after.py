"""Failure modes before and after a batch what-if, side by side, and the form that makes one.

"Before" is the runs of a batch or tag; "after" the batch what-if filed under another tag
(:func:`knowsim_core.services.whatif.save_batch`: every source run with the same label edits,
recomputed by the rules and stored). Both sides are read as the Across runs tab reads any runs
(``store.search.facts`` and the same shares chart), and the table beside them is
:func:`knowsim_core.evaluation.before_after.before_after` — what ``whatif --batch`` prints.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from knowsim_core.engine.whatif import ATTEMPT_VALUES, QUALITY_VALUES, parse_edit
from knowsim_core.errors import KnowSimError
from knowsim_core.evaluation.analysis import STATUS_CHOICES
from knowsim_core.evaluation.before_after import before_after, cell
from knowsim_core.services import whatif as whatif_service
from knowsim_core.storage.run_filter import RunFilter
from knowsim_core.vocab import Population
from ui.common import links, nav
from ui.common.safe_text import inline_markdown
from ui.common.tables import MISSING
from ui.runs import failure_views as fv
from ui.runs import keys

KEEP = "(keep)"
STATUS_WORDS = {Population.FINISHED: "Finished runs", Population.ALL: "All runs",
                Population.UNFINISHED: "Unfinished runs"}


def table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The before / after rows as the page shows them: one line per measure, before · after · change
    per level beside each other (shares in per cent, their change in points)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        line = out.setdefault(r["measure"], {"measure": r["measure"]})
        line[f"{r['level']} before"] = cell(r["before"], r["kind"])
        line[f"{r['level']} after"] = cell(r["after"], r["kind"])
        line[f"{r['level']} change"] = cell(r["change"], r["kind"], signed=True)
    return list(out.values())


def _pick(col, label: str, options: list[str], *, key: str, param: str, **kw) -> str | None:
    links.from_url(key, param, options)
    if st.session_state.get(key) not in options:  # another "before" offers other what-ifs
        st.session_state.pop(key, None)
    value = col.selectbox(label, options, key=key, index=0 if options else None, **kw)
    links.to_url(key, param, value)
    return value


def before_after_tab(store) -> None:
    """The tab: choose the runs, make or choose a what-if of them, read both sides."""
    if flash := st.session_state.pop(keys.BEFORE_AFTER_FLASH, None):
        st.success(flash)
    if made := st.session_state.pop(keys.BEFORE_AFTER_MADE, None):
        st.session_state[keys.AFTER] = made
    sources = whatif_service.source_tags(store)
    if not sources:
        st.info("No batch or tagged runs yet: `python -m knowsim_core batch --tag NAME` or `run --tag NAME` makes some.")
        return
    c1, c2, c3 = st.columns([2, 2, 1])
    before = _pick(c1, "Before: the runs of batch or tag", sources, key=keys.BEFORE, param=nav.BEFORE)
    afters = whatif_service.whatif_tags(store, before)
    after = _pick(c2, "After: a what-if of those runs", afters, key=keys.AFTER, param=nav.AFTER,
                  placeholder="none yet: make one below")
    status = c3.selectbox("Runs", STATUS_CHOICES, key=keys.BEFORE_AFTER_STATUS, format_func=STATUS_WORDS.get,
                          help="which runs both sides count (a what-if takes its source's finished or not)")
    _new_whatif(store, before)
    if not after:
        st.info(f"No what-if of {before!r} yet: set an edit above, or `python -m knowsim_core whatif --batch "
                f"{before!r} --set turn=1,iu=IU1,quality=well_explained`.")
        return
    spec = whatif_service.batch_spec(store, after) or "?"
    fb = store.search.facts(RunFilter(tag=before), status=status)
    fa = store.search.facts(RunFilter(tag=after), status=status)
    st.caption(inline_markdown(f"After: every run of {before} with the labels edited ({spec}) and every later turn "
                               "recomputed by the rules — same messages, no model call; both sides hold the same runs."))
    left, right = st.columns(2)
    for col, side, tag, facts, chart in ((left, "Before", before, fb, keys.BEFORE_AFTER_SHARES[0]),
                                         (right, "After", after, fa, keys.BEFORE_AFTER_SHARES[1])):
        with col:
            st.markdown(inline_markdown(f"**{side}** · {tag} · {len(facts)} run(s)"))
            if facts:
                st.plotly_chart(fv.shares_figure(facts), key=chart)
            else:
                st.caption("No runs with turns in this population.")
    st.dataframe(table_rows(before_after(fb, fa)), hide_index=True, key="fm_ba_table", placeholder=MISSING)
    st.caption("Shares are of explained IU-turns (change in points); KG / DC / CO are means per run. The same figures: "
               "`failures --tag` of each tag.")


def _new_whatif(store, before: str) -> None:
    """A form making a batch what-if of ``before``'s runs (``whatif --batch`` on the page)."""
    with st.expander(f"Make a what-if of every run of {before}"):
        with st.form(keys.BATCH_WHATIF, border=False):
            c = st.columns([1, 1, 2, 2, 2], vertical_alignment="bottom")
            turn = c[0].text_input("Turn", "1", key=f"{keys.BATCH_WHATIF}_turn", help="a turn number, or all")
            iu = c[1].text_input("IU", "IU1", key=f"{keys.BATCH_WHATIF}_iu")
            quality = c[2].selectbox("Teaching quality", [KEEP, *QUALITY_VALUES], key=f"{keys.BATCH_WHATIF}_quality")
            attempt = c[3].selectbox("User attempt", [KEEP, *ATTEMPT_VALUES], key=f"{keys.BATCH_WHATIF}_attempt")
            tag = c[4].text_input("Tag of the what-if runs", key=f"{keys.BATCH_WHATIF}_tag",
                                  placeholder="default: what-if <hash>")
            go = st.form_submit_button("Store the what-if of every run", icon=":material/call_split:")
        if not go:
            return
        parts = [f"turn={turn.strip()}", f"iu={iu.strip()}"]
        parts += [f"{k}={v}" for k, v in (("quality", quality), ("attempt", attempt)) if v != KEEP]
        try:
            report = whatif_service.save_batch(store, before, [parse_edit(",".join(parts))], tag=tag.strip() or None)
        except KnowSimError as exc:
            st.error(str(exc))
            return
    st.session_state[keys.BEFORE_AFTER_MADE] = report.tag
    st.session_state[keys.BEFORE_AFTER_FLASH] = report.summary()
    st.rerun()
