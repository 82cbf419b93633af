"""Which runs a list, a count or a cross-run view reads: one frozen :class:`RunFilter`, its SQL, its URL
and its command-line options.

The Saved runs and Failure modes pages and the ``runs`` and ``failures`` commands all filter the same
runs by the same fields. Each field is declared once here — its URL parameter, its option, how a
value is read and checked — so a page's deep link (``/runs?batch=-&gv=2``), a command's options
(``runs --batch - --graph-version 2``) and the SQL ``WHERE`` (:func:`where_clause`, applied before
any ``LIMIT``) cannot disagree. The run-search repository takes the filter itself
(``store.search.list(flt, limit=…)``, ``count``, ``facts``, ``population_mix``, ``mixed_versions``,
``batch_groups``): no view spells its conditions as loose keywords. Two bugs came from four hand-written copies: ``failures
--graph-version 99999999999999999999`` overflowed SQLite's integer (``runs`` refused it), and
``/failures?batch=-`` counted every run (``/runs?batch=-`` meant "runs of no batch").

What stays with each view: the status choice (the list's run statuses, the cross-run views'
finished / all / unfinished), the order, grouping, and the per-question graph version picker (it
needs the question's versions to turn a number into an id).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any, Callable, Mapping

from knowsim_core.engine.agent_id import HUMAN_ID, RECORDED_PREFIX
from knowsim_core.errors import StorageError
from knowsim_core.storage.questions import QUESTION_KINDS
from knowsim_core.storage.runs import STATUSES as RUN_STATUSES

EXACT = ("question_id", "level", "assistant", "user", "extractor", "preset", "seed", "status",
         "graph_version_id", "batch_tag", "correctness")
CONTAINS = ("question_id", "assistant", "user", "extractor", "preset", "batch_tag")  # contains-search
# a fork of another run / a side typed in the Studio by a person / a recorded conversation read (a real
# one's user is a person too, but nobody typed it here) / agents only
ORIGINS = ("forked", "typed", "recorded", "agents")
RATED = ("rated", "unrated")
NO_BATCH_URL = "-"  # ?batch=- / --batch -: the runs of no batch (a batch tag is never "-")
MAX_SEED = 2**63 - 1  # SQLite's largest integer
MAX_GRAPH_VERSION = 1_000_000


@cache
def recorded_sql() -> str:
    """A run with a side imported from a recording (a condition on the runs table ``r``)."""
    return f"(r.assistant LIKE '{RECORDED_PREFIX}%' OR r.user LIKE '{RECORDED_PREFIX}%')"


@cache
def typed_sql() -> str:
    """A run with a side a person typed in the Studio (not a recording)."""
    return f"((r.assistant = '{HUMAN_ID}' OR r.user = '{HUMAN_ID}') AND NOT {recorded_sql()})"


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """A whole number in ``[low, high]`` from text, else ``ValueError`` saying what was expected
    (never an OverflowError deep in SQLite: ``99999999999999999999`` is refused here)."""

    def parse(text: str) -> int:
        t = str(text).strip()
        try:
            value = int(t) if len(t) <= 40 else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise ValueError(f"expected a whole number from {low} to {high}, got {t[:40]!r}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def _one_of(name: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"unknown {name} {text!r}; expected one of {', '.join(choices)}")
        return text

    return parse


@dataclass(frozen=True, slots=True)
class _Field:
    name: str  # RunFilter attribute
    param: str | None  # URL parameter (None: not in links)
    option: str | None  # command-line option (None: not on the command line)
    parse: Callable[[str], Any]  # text (URL or option) → value; ValueError when invalid
    help: str = ""
    metavar: str | None = None


_SEED = bounded_int(0, MAX_SEED)
_GV = bounded_int(1, MAX_GRAPH_VERSION)
FIELDS: tuple[_Field, ...] = (
    _Field("question_id", "question", "--question", str, "only runs of this question", "ID"),
    _Field("level", "level", "--level", str, "only this knowledge level", "LEVEL"),
    _Field("assistant", "assistant", "--assistant", str, "only this assistant id", "ID"),
    _Field("user", "user", "--user", str, "only this user simulator id", "ID"),
    _Field("extractor", "extractor", "--extractor", str, "only this extractor id", "ID"),
    _Field("preset", "preset", "--preset", str, "only runs with this rule preset", "NAME"),
    _Field("seed", "seed", "--seed", _SEED, "only runs with this seed", "N"),
    _Field("batch_tag", "batch", "--batch", str,
           f"only the runs of `batch --tag TAG`; {NO_BATCH_URL!r}: the runs made one by one (no batch)", "TAG"),
    _Field("tag", "tag", "--tag", str, "only runs filed under TAG (`run --tag`, Saved runs) or of batch TAG", "TAG"),
    _Field("graph_version", "gv", "--graph-version", _GV,
           "only runs simulated on version N of their question's graph (do not pool v1 with v3)", "N"),
    _Field("kind", "source", "--source", _one_of("question kind", QUESTION_KINDS),
           f"only runs of one kind of question: {', '.join(QUESTION_KINDS)}", "KIND"),
    _Field("origin", "origin", "--origin", _one_of("run origin", ORIGINS),
           "forked: forks of another run; typed: a side typed by a person in the Studio; recorded: a recorded "
           "conversation read; agents: none of these", "ORIGIN"),
    _Field("rated", "rated", "--rated", _one_of("rating filter", RATED),
           "rated: runs a person rated (real conversations); unrated: the others", "WHICH"),
    _Field("correctness", "answer", "--answer", str,
           "only runs whose person's final answer has this correctness, as their conversation file states it",
           "VALUE"),
    _Field("find", "find", "--find", str, "part of a run id, or of an assistant, user, extractor, preset, "
                                          "batch or question id", "TEXT"),
    _Field("text", "search", "--search", str, "full-text search in the transcripts (all words)", "TEXT"),
    _Field("graph_version_id", None, None, bounded_int(1, MAX_SEED)),
    _Field("status", None, None, _one_of("run status", RUN_STATUSES)),
)
_BY_NAME = {f.name: f for f in FIELDS}


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Every condition must hold; None (or empty / False) is "no filter".

    ``graph_version`` is a version *number* across questions (v1, v3); ``graph_version_id`` one
    stored version (the per-question picker); ``no_batch``: only runs of no batch (URL and option
    value ``-`` for ``batch``); ``status``: any of these run statuses (the cross-run views choose
    finished / all / unfinished themselves); ``find``: a fragment of the run id or an agent,
    preset, batch or question id; ``text``: words that must all occur in the transcript.

    Raises:
        StorageError: a value out of range or not one of its choices ("expected …, got …").
    """

    question_id: str | None = None
    level: str | None = None
    assistant: str | None = None
    user: str | None = None
    extractor: str | None = None
    preset: str | None = None
    seed: int | None = None
    batch_tag: str | None = None
    no_batch: bool = False
    tag: str | None = None
    graph_version: int | None = None
    graph_version_id: int | None = None
    kind: str | None = None
    origin: str | None = None
    rated: str | None = None
    correctness: str | None = None
    find: str | None = None
    text: str | None = None
    status: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str):
                object.__setattr__(self, f.name, value.strip() or None)
        if isinstance(self.status, str):
            object.__setattr__(self, "status", (self.status,))
        object.__setattr__(self, "status", tuple(self.status or ()))
        if self.batch_tag == NO_BATCH_URL:
            object.__setattr__(self, "batch_tag", None)
            object.__setattr__(self, "no_batch", True)
        if self.no_batch and self.batch_tag:
            raise StorageError(f"runs of no batch cannot be of batch {self.batch_tag!r}; choose one")
        checks = [(name, getattr(self, name)) for name in ("seed", "graph_version", "graph_version_id", "kind",
                                                             "origin", "rated")]
        for name, value in [*checks, *(("status", s) for s in self.status)]:
            if value is None:
                continue
            try:
                _BY_NAME[name].parse(str(value))
            except ValueError as exc:
                raise StorageError(f"{_BY_NAME[name].option or name}: {exc}") from None

    # ------------------------------------------------------------------ SQL
    def keywords(self) -> dict[str, Any]:
        """The conditions set, as :func:`where_clause` keywords (what :meth:`where` passes it)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == () or value is False:
                continue
            out[f.name] = value if f.name != "status" else (value[0] if len(value) == 1 else value)
        return out

    def where(self) -> tuple[str, list[Any]]:
        """``WHERE`` over ``runs r`` and its arguments."""
        return where_clause(**self.keywords())

    # ------------------------------------------------------------------ URL
    def to_params(self) -> dict[str, str]:
        """The URL parameters of the conditions set (``status`` and ``graph_version_id`` are the pages')."""
        out = {f.param: str(getattr(self, f.name)) for f in FIELDS
               if f.param and getattr(self, f.name) is not None}
        if self.no_batch:
            out["batch"] = NO_BATCH_URL
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "RunFilter":
        """A filter from URL parameters; a value that does not parse is left out (a stale or edited
        link opens the page, without that filter)."""
        return cls(**{name: value for name, value in _read(params, lambda f: f.param).items()})

    @staticmethod
    def parse_param(name: str, text: str) -> Any:
        """One field's value from its URL text (``ValueError`` when it does not parse)."""
        if name == "batch_tag" and text.strip() == NO_BATCH_URL:
            return NO_BATCH_URL
        return _BY_NAME[name].parse(text)

    @staticmethod
    def param(name: str) -> str:
        """The URL parameter of a field."""
        param = _BY_NAME[name].param
        if param is None:
            raise KeyError(name)
        return param

    # ------------------------------------------------------------------ command line
    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
        """The filter options (``--question``, ``--batch``, ``--graph-version`` …), except the fields in ``skip``."""
        for f in FIELDS:
            if f.option and f.name not in skip:
                parser.add_argument(f.option, dest=f"filter_{f.name}", metavar=f.metavar, help=f.help,
                                    type=_arg_type(f))

    @classmethod
    def from_args(cls, args: argparse.Namespace, **more: Any) -> "RunFilter":
        """The filter the options named (``more``: fields the command sets itself, e.g. ``status``)."""
        values = {f.name: getattr(args, f"filter_{f.name}") for f in FIELDS
                  if getattr(args, f"filter_{f.name}", None) is not None}
        return cls(**values, **more)

    def replace(self, **changes: Any) -> "RunFilter":
        return replace(self, **changes)


NO_FILTER = RunFilter()  # every run: the repositories' default (frozen, so one shared instance is safe)


def _arg_type(f: _Field) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return RunFilter.parse_param(f.name, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(f.parse, "__name__", "value")
    return parse


def _read(params: Mapping[str, str], key: Callable[[_Field], str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in FIELDS:
        k = key(f)
        raw = params.get(k) if k else None
        if raw is None or not str(raw).strip():
            continue
        try:
            out[f.name] = RunFilter.parse_param(f.name, str(raw))
        except ValueError:
            continue
    return out


def _fts_query(text: str) -> str:
    """User text as an FTS5 query: every word quoted (no syntax errors), all must occur."""
    words = [w.replace('"', '""') for w in text.replace("\x00", " ").split()]
    return " ".join(f'"{w}"' for w in words if w)


def _like(fragment: str) -> str:
    return "%" + fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def where_clause(*, text: str | None = None, find: str | None = None, tag: str | None = None,
                 graph_version: int | None = None, kind: str | None = None, origin: str | None = None,
                 rated: str | None = None, no_batch: bool = False, **exact: Any) -> tuple[str, list[Any]]:
    """``WHERE`` over ``runs r``: every condition given must hold — the SQL of :meth:`RunFilter.where`.

    The repositories take a :class:`RunFilter` and reach this through it; it keeps keywords
    (``RunFilter.keywords()``) because one internal query needs a condition no filter holds: Home's
    recent entries summarise "any of these batch tags" (``batch_tag=[...]``).

    ``exact``: column values (a sequence means any of them; ``seed`` 0 is a value, None is "no
    filter"); ``find``: a fragment in any of the :data:`CONTAINS` id columns ("comprehensive"
    finds ``offline/comprehensive``); ``text``: words that must all occur in the run's transcript
    (FTS5). ``tag``: one of the researcher's tags (or the batch tag); ``graph_version``: the
    version *number* of the question's graph (v1, v3 — across questions); ``kind``: the
    question's kind (sample / paper / real / yours); ``origin``: one of :data:`ORIGINS`;
    ``rated``: whether a person rated the run (a real conversation); ``no_batch``: only runs of no
    batch. Numbers are checked as :class:`RunFilter` checks them (never an OverflowError in SQLite).
    """
    where, args = [], []
    if no_batch:  # the runs made one by one
        where.append("r.batch_tag IS NULL")
    if tag:
        where.append("(r.id IN (SELECT run_id FROM run_tags WHERE tag = ?) OR r.batch_tag = ?)")
        args += [tag, tag]
    if graph_version is not None:
        try:
            number = _GV(str(graph_version))
        except ValueError as exc:
            raise StorageError(f"graph version: {exc}") from None
        where.append("r.graph_version_id IN (SELECT id FROM graph_versions WHERE version = ?)")
        args.append(number)
    if kind:
        where.append("r.question_id IN (SELECT id FROM questions WHERE kind = ?)")
        args.append(kind)
    if origin:
        if origin not in ORIGINS:
            raise StorageError(f"unknown run origin {origin!r}; expected one of {', '.join(ORIGINS)}")
        where.append({"forked": "r.forked_from IS NOT NULL", "typed": typed_sql(), "recorded": recorded_sql(),
                      "agents": f"r.forked_from IS NULL AND NOT {typed_sql()} AND NOT {recorded_sql()}"}[origin])
    if rated:
        if rated not in RATED:
            raise StorageError(f"unknown rating filter {rated!r}; expected one of {', '.join(RATED)}")
        where.append("r.rating IS NOT NULL" if rated == "rated" else "r.rating IS NULL")
    for col, value in exact.items():
        if col not in EXACT:
            raise StorageError(f"runs cannot be filtered by {col!r}; expected one of {', '.join(EXACT)}")
        if isinstance(value, (tuple, list)):
            if value:
                where.append(f"r.{col} IN ({', '.join('?' * len(value))})")
                args += list(value)
        elif value is not None and value != "":
            if isinstance(value, int) and not -MAX_SEED - 1 <= value <= MAX_SEED:
                raise StorageError(f"{col}: expected a whole number up to {MAX_SEED}, got {value}")
            where.append(f"r.{col} = ?")
            args.append(value)
    if find and find.strip():  # the run's own id too: "938e" finds run 938e…
        where.append("(" + " OR ".join(f"r.{c} LIKE ? ESCAPE '\\'" for c in ("id", *CONTAINS)) + ")")
        args += [_like(find.strip())] * (len(CONTAINS) + 1)
    query = _fts_query(text or "")
    if query:
        # indexed turns through FTS5; turns of runs still open (not indexed until they close, see
        # migration 0005) by substring: every word in the user's or the assistant's message
        words = [w for w in (text or "").replace("\x00", " ").split() if w]
        pending = " AND ".join("(t.user_message LIKE ? ESCAPE '\\' OR t.assistant_message LIKE ? ESCAPE '\\')"
                               for _ in words)
        where.append(
            "(r.id IN (SELECT t.run_id FROM turns_fts f JOIN turns t ON t.rowid = f.rowid WHERE turns_fts MATCH ?)"
            f" OR r.id IN (SELECT t.run_id FROM turns_unindexed u JOIN turns t ON t.rowid = u.turn_rowid WHERE {pending}))"
        )
        args.append(query)
        for w in words:
            args += [_like(w)] * 2
    return (" WHERE " + " AND ".join(where) if where else ""), args
