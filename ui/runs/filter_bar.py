"""The run filters as widgets: the bar Saved runs and Failure modes share, each filter a deep link.

One :class:`RunFilter` comes out; its fields' URL parameters, their parsing and the SQL are the
filter's own (:mod:`knowsim_core.storage.run_filter`). Each page's bar hands out its widget keys
(:class:`FilterKeys`, declared in :mod:`ui.runs.keys`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from knowsim_core.engine.config import LEVELS
from knowsim_core.storage.questions import KIND_LABELS, QUESTION_KINDS
from knowsim_core.storage.run_filter import NO_BATCH_URL, RunFilter
from ui.common import links, nav
from ui.common.questions import question_label

ALL = None  # the "all" choice of every dropdown
NO_BATCH = ""  # the group of runs made one by one (no batch tag), as "Group by batch" lists it


def _pick(col, label: str, options: list, *, key: str, help: str | None = None, labels: dict | None = None):
    return col.selectbox(label, [ALL, *options], key=key, help=help,
                         format_func=lambda v: "all" if v is None else (labels or {}).get(v, str(v)))


ORIGIN_LABELS = {"forked": "forks of a run", "typed": "a side typed by a person", "recorded": "recorded conversations",
                 "agents": "agents only"}
RATED_LABELS = {"rated": "rated by a person", "unrated": "no rating"}


def _linked(col, label: str, options: list, *, key: str, param: str, cast=str, help: str | None = None,
            labels: dict | None = None, url=None):
    """A dropdown filter whose value is also ``?param=`` in the URL (a deep link that survives a reload);
    ``url`` writes a value as the URL text that ``cast`` reads back (when ``str`` of it would not do)."""
    links.from_url(key, param, [ALL, *options], cast=cast)
    value = _pick(col, label, options, key=key, help=help, labels=labels)
    links.to_url(key, param, url(value) if url and value is not ALL else value)
    return value


def _linked_text(col, label: str, *, key: str, param: str, placeholder: str, help: str) -> str:
    links.from_url(key, param)
    value = col.text_input(label, key=key, placeholder=placeholder, help=help)
    links.to_url(key, param, value.strip())
    return value


def linked_toggle(col, label: str, *, key: str, param: str, help: str | None = None) -> bool:
    """A toggle whose value is also ``?param=1`` in the URL."""
    links.from_url(key, param, cast=links.flag)
    value = col.toggle(label, key=key, help=help)
    links.to_url(key, param, value, default=False)
    return value


# The filters a bar can show, in this order, with their widget key suffix and label: the widget key is
# handed out by FilterKeys (runs_q, fm_q …) and the URL parameter is RunFilter's (one owner: run_filter.py).
BAR_FIELDS = {
    "question_id": ("q", "Question"), "level": ("level", "Level"), "assistant": ("asst", "Assistant"),
    "user": ("user", "User"), "extractor": ("extractor", "Extractor"), "preset": ("preset", "Preset"),
    "batch_tag": ("batch", "Batch"), "seed": ("seed", "Seed"), "find": ("find", "Find in ids"),
    "text": ("text", "Search transcripts"), "tag": ("tag", "Tag"), "kind": ("kind", "Source"),
    "origin": ("origin", "Origin"), "graph_version": ("gv", "Graph version"), "rated": ("rated", "Rating"),
    "correctness": ("correctness", "Person's answer"),
}
_HELP = {
    "batch_tag": "runs made by `python -m knowsim_core batch --tag NAME`; (no batch): runs made one by one",
    "find": "part of a run id, or of an assistant, user, extractor, preset, batch or question id",
    "text": "every word must occur in the run's messages",
    "tag": "your tags (add them below, or `run --tag`); a batch's tag works too",
    "kind": "the kind of question: samples, the paper's set, real conversations, yours",
    "origin": "forks of another run, runs where a person typed one side, or agents only",
    "rated": "the rating a run's metadata holds (a person's rating of a real conversation)",
    "correctness": "the correctness of the person's final answer, as their conversation file states it",
}


@dataclass(frozen=True)
class FilterKeys:
    """The widget keys of one page's filter bar: one per field, under the page's prefix (``runs_batch``,
    ``fm_batch``). The bar draws its widgets under these keys; code that reads or presets a filter
    asks for the key here (``keys.RUN_FILTERS.of("batch_tag")``) rather than spelling it."""

    prefix: str
    fields: tuple[str, ...] = tuple(BAR_FIELDS)

    def __post_init__(self) -> None:
        if unknown := [f for f in self.fields if f not in BAR_FIELDS]:
            raise ValueError(f"no such filter: {', '.join(unknown)}; expected some of {', '.join(BAR_FIELDS)}")

    def of(self, field: str) -> str:
        """The key of ``field``'s widget (a :class:`RunFilter` field name, e.g. ``batch_tag``)."""
        if field not in self.fields:
            raise KeyError(f"{field!r} is not on the {self.prefix!r} filter bar")
        return f"{self.prefix}_{BAR_FIELDS[field][0]}"

    @property
    def version(self) -> str:
        """The key of the per-question graph version picker (drawn instead of the version number
        across questions once one question is chosen)."""
        return f"{self.prefix}_graph_version"

    def all(self) -> tuple[str, ...]:
        """Every key the bar can draw."""
        return (*(self.of(f) for f in self.fields), *((self.version,) if "graph_version" in self.fields else ()))


def filter_bar(store, keys: FilterKeys, *, per_row: int = 5) -> RunFilter:
    """The run filters as widgets, each a deep link, five to a row; returns the :class:`RunFilter`.

    Used by Saved runs (every field) and Failure modes, each with its :class:`FilterKeys`. The URL
    parameters, their parsing (``?batch=-``: the runs of no batch) and the SQL are
    :class:`RunFilter`'s. Each dropdown offers the values the database holds (``SELECT DISTINCT``);
    "Find in ids" is a contains-search over the run id and the agent, preset, batch and question ids.
    With one question chosen, Graph version picks among that question's versions by name
    (``question=Q&version=2``); otherwise it is a version number across questions (``gv=2``).
    The Person's answer filter shows only when some run holds one.
    """
    values: dict[str, Any] = {}
    shown = [f for f in keys.fields if f != "correctness" or store.search.values("correctness")]
    cols: list = []
    for name in shown:
        if not cols:
            cols = list(st.columns(per_row))
        col = cols.pop(0)
        values[name] = _bar_widget(store, col, name, keys, values)
    version_id = values.pop("graph_version_id", None)
    batch = values.pop("batch_tag", None)
    text_values = {k: (v.strip() or None) if isinstance(v, str) else v for k, v in values.items()}
    return RunFilter(**text_values, batch_tag=batch if batch not in (None, NO_BATCH) else None,
                     no_batch=batch == NO_BATCH, graph_version_id=version_id)


def _bar_widget(store, col, name: str, keys: FilterKeys, values: dict[str, Any]) -> Any:
    label = BAR_FIELDS[name][1]
    key, param, help_text = keys.of(name), RunFilter.param(name), _HELP.get(name)

    def cast(raw: str) -> Any:
        return RunFilter.parse_param(name, raw)

    if name in ("find", "text"):
        return _linked_text(col, label, key=key, param=param, help=help_text,
                            placeholder="e.g. 938e or comprehensive" if name == "find" else "words in any message")
    if name == "question_id":
        questions = store.questions.list()  # grouped by kind, samples first
        return _linked(col, label, [q.id for q in questions], key=key, param=param,
                       labels={q.id: question_label(q) for q in questions})
    if name == "batch_tag":
        return _linked(col, label, [NO_BATCH, *store.search.values("batch_tag")], key=key, param=param,
                       labels={NO_BATCH: "(no batch)"}, help=help_text,
                       cast=lambda raw: NO_BATCH if raw.strip() == NO_BATCH_URL else raw,
                       url=lambda v: NO_BATCH_URL if v == NO_BATCH else v)
    if name == "graph_version" and values.get("question_id") is not None:
        found = {v.version: v for v in store.questions.graph_versions(values["question_id"])}
        picked = _linked(col, label, list(found), key=keys.version, param=nav.VERSION, cast=int,
                         labels={n: f"v{n}" + (f" · {v.note}" if v.note else "") for n, v in found.items()},
                         help="only runs simulated on this version of the question's IU graph")
        values["graph_version_id"] = found[picked].id if picked in found else None
        return None
    if name == "graph_version":
        if nav.VERSION in st.query_params:  # the per-question choice leaves with its question
            del st.query_params[nav.VERSION]
        numbers = store.search.graph_version_numbers()
        return _linked(col, label, numbers, key=key, param=param, cast=cast, labels={n: f"v{n}" for n in numbers},
                       help="the version number of each run's question graph: do not pool v1 with v3")
    options, labels = {
        "level": (list(LEVELS), None), "kind": (list(QUESTION_KINDS), KIND_LABELS),
        "origin": (list(ORIGIN_LABELS), ORIGIN_LABELS), "rated": (list(RATED_LABELS), RATED_LABELS),
        "tag": (store.search.all_tags(), None),
    }.get(name) or (store.search.values(name), None)
    return _linked(col, label, options, key=key, param=param, cast=cast, labels=labels, help=help_text)
