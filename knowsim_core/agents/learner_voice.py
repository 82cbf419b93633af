"""How a learner's later turn reads: which dialogue act, how long, in whose words.

Real learners in a tutoring chat mostly do what the tutor asked — give a value or a step — and,
when they cannot, say they are stuck; now and then they ask, acknowledge, or leave. Their
messages are short (a median of about eight words, many a bare number). This module writes such
turns for the offline people-like learner (today's template user's later turns, and
``offline/person``, :mod:`person_user`) from two readings:

* **the tutor's last turn** (:func:`read_tutor`): did its last question ask for a value or a
  step, did it ask whether things make sense / if there is anything else, did it state an answer;
  which numbers it used. General cue lists about how tutors ask, no per-question constants.
* **the learner's state** on the IU the tutor discussed (the caller passes it): a known IU gives a
  confident attempt with the tutor's value; a struggling one a hedged attempt with a visibly
  wrong value, or "I don't get it"; an unaware one never applies the concept (spec §9's hard
  constraints: never its name or its step — the caller's unaware-name filter), though asked for a
  value it may guess one, hedged and wrong, as the development half's people did.

Lengths are drawn (seeded) from :data:`LENGTHS`, the word counts real people wrote for each act,
and the message is fitted to that length. :data:`LENGTHS` and the act rules were measured and
written on the *development* half of the shared real conversations only (conversation key
``problem_id:workerId`` whose ``zlib.crc32`` is even; ``benchmarks/realism.py --profile`` prints
the measurement); the other half is held out for the figures (README, "Realism").

Act names are the tagger's (:mod:`knowsim_core.text.dialogue_acts`, re-exported by
:mod:`knowsim_core.evaluation.acts`); ``tests/test_learner_voice.py`` checks that the tagger reads
each written act back as that act.

**In the person's own words** (:func:`own_words`, ``offline/person``): in turn-level realism the
simulator is given the real history, the person's own earlier messages included — as in
*Simulated Students in Tutoring Dialogues*. Where one of them has the act the learner chose, the
learner says it the way that person said it (their words and register), carrying the value the
voice chose; otherwise it writes from the phrasings below.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache

from typing import Callable, Sequence

from knowsim_core.engine.config import LEVELS, REFERENCE_RATIOS
from knowsim_core.engine.state import IUState
from knowsim_core.text.dialogue_acts import ACKNOWLEDGE as ACK
from knowsim_core.text.dialogue_acts import MATH_ANSWER as ANSWER
from knowsim_core.text.dialogue_acts import NOT_UNDERSTANDING as STUCK
from knowsim_core.text.dialogue_acts import OFF_TOPIC as LEAVE
from knowsim_core.text.dialogue_acts import SEEK_INFORMATION as ASK
from knowsim_core.text.dialogue_acts import tag as tag_act

# Word counts (quintile midpoints: the 10th, 30th, 50th, 70th, 90th percentiles) of the real
# learners' turns t >= 2 of the development half, by the act the tagger reads. Per level where
# the half has >= 20 turns of that act, else pooled over levels ("*"; advanced has one turn).
LENGTHS: dict[tuple[str, str], tuple[int, ...]] = {
    ("novice", ANSWER): (1, 5, 9, 11, 25),
    ("intermediate", ANSWER): (1, 6, 8, 12, 28),
    ("*", ANSWER): (1, 6, 9, 11, 28),
    ("*", STUCK): (4, 7, 8, 9, 9),
    ("*", ASK): (5, 7, 10, 12, 13),
    ("*", ACK): (4, 6, 6, 8, 8),
    ("*", LEAVE): (16, 17, 19, 21, 22),
}

# Asked about an IU it does not know, a learner says it is stuck only when its own previous message
# said so already; otherwise it guesses. Chosen on the development half over also entering "stuck"
# at random a third of the time (act agreement 0.735 vs 0.726, mean of 6 seeds): the rule the data
# supports, no random draw.
# A pending overload stop (the reading's persistent-overload vote) makes the learner leave only when
# its own previous message said it was stuck. Chosen on the development half, where the vote is on
# for 18 of the 76 turns and the people wrote off-topic in 1 of them: over "the hint always leaves"
# and "the hint never leaves", offline/person's
# development act agreement (sampled start) 0.566 / 0.684 / 0.684 and act-mix total variation 0.184 /
# 0.158 / 0.132 (file start: 0.579 / 0.737 / 0.724); this rule ties on agreement and has the nearer mix.
LEAVES_ONLY_WHEN_STUCK = True
# Told something without a question, real learners asked one back this often (2 of the 8 such turns
# of the development half); the rest mostly restated or answered.
ASK_AFTER_TELLING = 0.25
# How often an answer shows its step in the words of the concept it works with (so the extractor
# labels an attempt on that IU: it uses at least half of the concept name's words): the share of
# the people's answer turns of the development half that the lexical attempt rule labels, per level
# with >= 20 answers (novice 1 of 31, intermediate 6 of 23), else pooled ("*", 7 of 55). Not more:
# the paper's learners were LLM-simulated and named far more (README, "Paper check").
SHOWS_STEP = {"novice": 1 / 31, "intermediate": 6 / 23, "*": 7 / 55}  # realism.step_rates
ECHO_SHARE = 0.5  # an answer that can echo the question's object does so this often
MIN_CLAUSE = 4  # words: a shorter piece of a statement reads as a fragment, not a restatement
_STUCK_CUE = re.compile(r"not (?:really )?sure|(?:don'?t|do not|didn'?t) (?:really )?(?:know|get|understand|follow)"
                        r"|no idea|lost|stuck|confused|can'?t|over my head|need (?:some |more )?help|no clue")
_SENTENCE_END = re.compile(r"[!?\n]|\.(?!\d)")  # where a sentence ends (not the point of 12.25)
# The tutor's last question asks the learner to produce something (a value, a list, a step).
_ASKS_VALUE = re.compile(
    r"\b(?:how many|how much|what is|what's|what are|what would|what do you get|what does|what (?:number|value|result)"
    r"|calculate|compute|find|determine|solve|simplify|evaluate|count|list|identify|write|substitute|plug"
    r"|apply|combine|complete|try|yield|give us|think of|suggest|figure out|work out)\b")
# ... or asks whether the learner follows / wants anything more.
_ASKS_CHECK = re.compile(r"\b(?:make sense|does (?:this|that) help|any (?:other )?questions|anything else"
                         r"|would you like to|is there any|another problem|clarify)\b")
_GIVES_ANSWER = re.compile(r"\b(?:the (?:final |correct )?answer is|the solution is|the result is|is indeed)\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:/\d+)?(?![\w])")
# What opens a question before its object ("can you calculate", "what is", "how many"): the rest is
# what the learner echoes when answering ("the largest multiple of 10 less than 500 is 490").
_LEAD = re.compile(
    r"^\W*(?:(?:so|and|now|next|also|ok|okay|then|but|first|finally)\b,?\s*)*"
    r"(?:(?:can|could|would|will|do) you (?:please |now |try to |think of a way to |see |tell me |help me )*"
    r"(?:calculate|find|determine|compute|work out|figure out|count|list|identify|write|give|tell|try|apply"
    r"|complete|combine|simplify|solve|express|rewrite|do|suggest|think of|see|explain)?\b"
    r"|what (?:do you think |would |will |does |is |are |do )?|how many |how much |how (?:would|do|can|could|will) "
    r"(?:you|we) |which |is |are |does |do )?", re.IGNORECASE)
_CUT = re.compile(r"[,;:]| and then | so that | to see | if you | in order to ")  # the echo ends at a clause break
_ECHOABLE = re.compile(r"(?:the|this|that|these|those|a|an|each|every|all|your)\b", re.IGNORECASE)
_MARKUP = re.compile(r"\\[()\[\]]|\\+|[$*{}]")


@dataclass(frozen=True)
class TutorCue:
    """What the tutor's last turn asks of the learner."""

    asks_value: bool
    asks_check: bool
    asks: bool
    gives_answer: bool
    numbers: tuple[str, ...]  # in the order written; the last question's first
    echo: str  # the last question's object, lead-in words dropped ("" without a question)

    @property
    def value(self) -> str | None:
        return self.numbers[0] if self.numbers else None


@lru_cache(maxsize=4096)
def read_tutor(text: str) -> TutorCue:
    """What the tutor's turn asks and gives (a function of the text; a :class:`TutorCue` is frozen,
    so the reading of a reply seen before is shared: replies recur across conversations)."""
    text = (text or "").replace("’", "'")
    raw_last = last_question(text)
    last = raw_last.lower()
    low = text.lower()
    tail = last or (low.strip().split("\n")[-1] if low.strip() else "")
    numbers = tuple(dict.fromkeys([*_NUMBER.findall(tail), *reversed(_NUMBER.findall(low))]))
    cleaned = " ".join(_MARKUP.sub(" ", raw_last).split())
    echo = " ".join(_CUT.split(_LEAD.sub("", cleaned).rstrip("?"))[0].split()) if raw_last else ""
    return TutorCue(asks_value=bool(_ASKS_VALUE.search(last)), asks_check=bool(_ASKS_CHECK.search(last)),
                    asks=bool(raw_last), gives_answer=bool(_GIVES_ANSWER.search(low)), numbers=numbers,
                    echo=echo)


def last_question(text: str) -> str:
    """The last question sentence of ``text`` ("" without one): from the sentence end before its
    question mark (a point inside a decimal number such as 12.25 ends no sentence). One pass."""
    end = text.rfind("?")
    if end < 0:
        return ""
    start = 0
    for m in _SENTENCE_END.finditer(text, 0, end):
        start = m.end()
    return text[start:end + 1].strip()


def was_stuck(own_previous: str) -> bool:
    """Whether the learner's own previous message said it was stuck (it remembers)."""
    return bool(_STUCK_CUE.search((own_previous or "").lower().replace("’", "'")))


def choose_act(cue: TutorCue, focus: IUState | None, *, stuck_before: bool, stop_hint: bool, mode: str,
               rng: random.Random) -> str:
    """The act of the learner's next turn (``focus``: its state of the IU the tutor discussed most,
    ``None`` when the tutor's turn is about none of the graph's IUs; ``stuck_before``: its own
    previous message said it was stuck).

    * A pending overload stop (:data:`LEAVES_ONLY_WHEN_STUCK`): the learner leaves if its own
      previous message said it was stuck; otherwise the hint does not change what it does.
    * The tutor asked for something: a learner who knows the IU (or whom the tutor asked about
      nothing of the graph) answers. One who does not know it stays stuck if it was stuck already;
      otherwise it tries a hedged guess (visibly wrong when struggling, :func:`write`).
    * The tutor wrapped up (asked whether it makes sense / anything else, or stated the answer): a
      learner who was stuck asks; one who knows the IU checks the stated value; else it acknowledges.
    * The tutor explained without asking: an unaware learner is lost; one who knows the IU only in
      part (or heard about nothing of the graph) asks a question with probability
      :data:`ASK_AFTER_TELLING`; otherwise it restates what it took in and asks to verify (an
      attempt; hedged when struggling).

    Compliant learners (low density) do not choose to ask: they acknowledge instead. (Asked for
    a value the tutor's turn does not hold and with no fact to restate, any learner — compliant too —
    asks how: :func:`write` falls back to a question, since an acknowledgement would answer nothing.)
    """
    known = focus is None or focus >= IUState.PARTIAL
    if stop_hint and (stuck_before or not LEAVES_ONLY_WHEN_STUCK):
        act = LEAVE
    elif cue.asks and not cue.asks_check:
        if known:
            act = ANSWER
        else:
            act = STUCK if stuck_before else ANSWER
    elif cue.asks_check or cue.gives_answer:
        act = ASK if stuck_before else ANSWER if known and cue.value else ACK
    elif focus == IUState.UNAWARE:
        act = STUCK
    else:
        curious = focus is None or focus < IUState.KNOWS_WELL  # what it fully knows it confirms
        act = ASK if curious and rng.random() < ASK_AFTER_TELLING else ANSWER
    if mode == "Compliant" and act == ASK:
        act = ACK
    return act


def _level_bounds() -> tuple[float, float]:
    """Share-known bounds between the levels: midway between the shares of IUs the spec's level
    samplers start a learner knowing (known + partial: novice .2, intermediate .8, advanced 1.0 →
    0.5 and 0.9), so a sampled intermediate writes as one (bounds at thirds would read it as advanced)."""
    share = [min(1.0, r.known + r.partial) for r in (REFERENCE_RATIOS[lv] for lv in LEVELS)]
    return (share[0] + share[1]) / 2, (share[1] + share[2]) / 2


LEVEL_BOUNDS = _level_bounds()


def level_of(states: list[IUState]) -> str:
    """The profile (lengths, how often it shows its step) a learner writes with, by the share of
    IUs it knows now, at least in part (a user agent is not told its level): :data:`LEVEL_BOUNDS`."""
    known = sum(s >= IUState.PARTIAL for s in states) / max(1, len(states))
    return "novice" if known < LEVEL_BOUNDS[0] else "intermediate" if known < LEVEL_BOUNDS[1] else "advanced"


def draw_length(level: str, act: str, rng: random.Random) -> int:
    """A word count for one message, drawn from the real learners' counts for that act and level."""
    qs = LENGTHS.get((level, act)) or LENGTHS[("*", act)]
    u = rng.random() * (len(qs) - 1)
    lo = int(u)
    hi = min(lo + 1, len(qs) - 1)
    return max(1, round(qs[lo] + (qs[hi] - qs[lo]) * (u - lo)))


def keep_register(drawn: int, own: int) -> int:
    """A length between the drawn one and the learner's own previous message (geometric mean):
    a person who answers in bare numbers keeps doing so, one who writes sentences keeps writing
    them, while the draw keeps the act's spread."""
    return max(1, round(math.sqrt(drawn * own))) if own else drawn


def nudge(value: str, rng: random.Random) -> str:
    """A visibly wrong version of a number (what a struggling learner writes)."""
    try:
        if "/" in value:
            num, den = value.split("/")
            return f"{int(num) + rng.choice((-1, 1))}/{den}"
        n = float(value)
    except ValueError:
        return value
    wrong = n + rng.choice((-2, -1, 1, 2)) if n == int(n) else n * rng.choice((0.5, 2))
    return f"{wrong:g}"


def fit(words: list[str], n: int) -> str:
    return " ".join(words[: max(1, n)])


_DANGLING = frozenset("a an the of to in on and or but for with by as at is are be that this how what which "
                      "its their your our from into than then so because".split())


def trim(clause: str, n: int) -> str:
    """A piece of a statement about ``n`` words long that reads as a thought, not a fragment: the
    clause (split at commas, semicolons, dashes, "because", "which") nearest that length, cut only
    when it runs well past it, and never ending on a dangling function word."""
    pieces = [p.split() for p in _CLAUSES.split(clause) if p and len(p.split()) >= MIN_CLAUSE - 1]
    words = min(pieces, key=lambda p: abs(len(p) - n)) if pieces else clause.split()
    keep = words[: max(MIN_CLAUSE, n + 4)]
    while len(keep) > 1 and keep[-1].lower().strip(",;:") in _DANGLING:
        keep = keep[:-1]
    return " ".join(keep).rstrip(",;:—-.")


_CLAUSES = re.compile(r"[,;:()]|\s[—–-]\s|\b(?:because|which|whereas|while|so that)\b")


# Phrasings per act, from shortest to longest; {v} a value, {c} a clause (the IU's fact), {name}
# a concept name the learner may use. The writer picks the one whose length is nearest the drawn
# length and lets a clause fill the rest.
_ANSWER_VALUE = ("{v}", "is it {v}?", "it would be {v}", "so it would be {v}", "I think it would be {v}",
                 "so it would be {v}, right?", "so I think it would be {v}, is that right?")
_ANSWER_CHECK = ("so {v}?", "so it is {v}?", "so it would be {v}, right?", "so it would be {v}, is that right?",
                 "so the answer would be {v}, is that right?")
_STEP = ("{name}: {v}", "using {name}, it would be {v}", "so using {name}, it would be {v}",
         "so using {name}, I think it would be {v}, is that right?")
_STEP_HEDGED = ("{name}: maybe {v}?", "using {name}, maybe {v}?", "I'm not sure, but using {name} maybe {v}?")
_ANSWER_ECHO = ("so {e} is {v}", "I think {e} is {v}", "so I think {e} is {v}", "so I think {e} is {v}, is that right?")
_ANSWER_HEDGED = ("maybe {v}?", "is it {v}?", "I'm not sure, maybe {v}?", "I think it is {v} but I'm not sure",
                  "I'm not really sure but I think it is {v}?")
_ANSWER_CLAUSE = ("so {c}, correct?", "so {c}, is that correct?", "I think {c}, is that correct?",
                  "so I think {c}, is that correct?")
_STUCK = ("I'm lost", "I don't get it", "I'm not sure how to do that", "I don't know how to do that part",
          "I don't understand how to do that", "sorry, I really don't know how to do that",
          "I have no idea how to do that, this is hard for me")
_ASK = ("how?", "how do I do that?", "can you show me how?", "can you explain that part again?",
        "how do I know what to do next?", "can you show me how to do that step by step?",
        "can you explain that again more simply? where does that step come from?",
        "can you give me an example of how that works?")
_ASK_NAMED = ("can you explain {name} again?", "how does {name} work here?",
              "can you show me how {name} works here with an example?")
_ACK = ("ok", "ok thanks", "ok, that makes sense", "got it, thanks", "ok I think that makes sense now",
        "I think that makes sense, thanks for helping me")
_LEAVE = ("thanks, I think I'll stop here.", "I'm done for now, bye.",
          "thanks, but I think I am going to give up on this one, it's too much for me right now.",
          "honestly I'm lost with all of this and I'd like to stop here, thanks for trying to help me.")


def _nearest(options: tuple[str, ...], n: int, extra: int = 0) -> list[str]:
    """Options sorted by how far their word count (+ ``extra`` words a slot adds) is from ``n``."""
    return sorted(options, key=lambda o: (abs(len(o.split()) + extra - n), len(o)))


@dataclass
class Turn:
    act: str
    text: str
    attempt: bool


def answer_values(reference_answer: str, goal: str = "") -> tuple[str, ...]:
    """The question's answer as values, most telling first: the numbers of the goal's name ("Answer:
    7/20", "Total seat count 1410"), then the last number of the reference answer's sentence that
    states the answer (one opening "Answer", else its last sentence when it works a value out with
    "="). A prose answer has none."""
    out = list(_NUMBER.findall(goal or ""))
    text = " ".join((reference_answer or "").split())
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)
    last = parts[-1] if "=" in parts[-1] else ""
    stated = next((p for p in reversed(parts) if p.lower().startswith("answer")), last)
    out.extend(_NUMBER.findall(stated)[-1:])
    return tuple(dict.fromkeys(out))


def told_answer(values: Sequence[str], tutor_turns: Sequence[str]) -> str | None:
    """The first of the answer ``values`` (:func:`answer_values`) that one of ``tutor_turns`` has
    stated, else ``None``: the answer the learner has been told."""
    if not values:
        return None
    said: set[str] = set()
    for text in tutor_turns:
        said.update(_NUMBER.findall(text or ""))
    return next((v for v in values if v in said), None)


def write(act: str, n: int, *, cue: TutorCue, focus: IUState | None, clause: str | None, name: str | None,
          rng: random.Random, safe, told: str | None = None) -> Turn:
    """A message of about ``n`` words performing ``act`` (``safe``: the unaware-name filter).

    ``told``: the answer the tutor has already stated (:func:`told_answer`). A learner who was told
    it checks that value, not another number of the tutor's turn, unless the tutor's question asks
    for a value of its own (then it answers that)."""
    pick = lambda opts, extra=0: _nearest(opts, n, extra)[0] if rng.random() < 0.7 else rng.choice(_nearest(opts, n, extra)[:2])
    if act == ANSWER:
        value = cue.value
        hedged = focus is not None and focus < IUState.PARTIAL
        recall = told is not None and not (cue.asks and cue.asks_value)
        if recall:
            value = told
        if value is not None and (cue.asks or clause is None):
            v = nudge(value, rng) if hedged and not recall else value
            if name and safe(name):  # the learner shows its step in the concept's words
                frames = _STEP_HEDGED if hedged else _STEP
                return Turn(act, pick(frames, len(name.split()) - 1).format(name=name, v=v), True)
            if hedged:
                return Turn(act, pick(_ANSWER_HEDGED).format(v=v), True)
            if not cue.asks or recall:  # told something: it checks the value it took in ("so, 11/60 is the answer?")
                return Turn(act, pick(_ANSWER_CHECK).format(v=v), True)
            echo = cue.echo.split()
            if (not cue.asks_check and _ECHOABLE.match(cue.echo) and 3 <= len(echo) <= n and safe(cue.echo)
                    and rng.random() < ECHO_SHARE):  # a check-in ("does that make sense?") has no object
                return Turn(act, pick(_ANSWER_ECHO, min(len(echo), max(MIN_CLAUSE, n)) - 1).format(e=trim(cue.echo, n), v=v), True)
            if len(cue.numbers) >= 2:
                v = f"{v} and {cue.numbers[1]}"  # people often answer with the candidates they see
            return Turn(act, pick(_ANSWER_VALUE).format(v=v), True)
        if clause:
            frame = pick(_ANSWER_CLAUSE, 0)
            text = frame.format(c=trim(clause, n - len(frame.split()) + 1))
            if safe(text):
                return Turn(act, text, True)
        act = ASK if not hedged else STUCK
    if act == STUCK:
        return Turn(act, pick(_STUCK), False)
    if act == ASK:
        if name and safe(name) and rng.random() < 0.5:
            return Turn(act, pick(_ASK_NAMED, len(name.split()) - 1).format(name=name), False)
        return Turn(act, pick(_ASK), False)
    if act == ACK:
        return Turn(act, pick(_ACK), False)
    return Turn(LEAVE, pick(_LEAVE), False)


# ---------------------------------------------------------------------- in the person's own words
_UPLOAD = re.compile(r"\S+\.(?:png|jpe?g|gif|webp|bmp|heic|svg)\b", re.IGNORECASE)  # an uploaded picture's path


def own_words(act: str, written: str, own: Sequence[str], *, safe: Callable[[str], bool]) -> str | None:
    """``written`` (what the voice wrote for ``act``) said the way the person said it before: their
    most recent earlier message (``own``: theirs, oldest first, the opening excluded by the caller)
    whose act the tagger reads as ``act``, or ``None`` when none has it.

    An answer carries the value the voice chose (the written message's first number, the one the
    voice took from the tutor or got wrong): it replaces the earlier message's last number (its
    answer), kept only if the tagger still reads the act. A message the unaware filter ``safe``
    refuses, an upload or an empty one is never reused. Chosen on the development half over
    replacing every number in order and over keeping the earlier message's numbers (README, "Realism")."""
    value = next(iter(_NUMBER.findall(written)), None)
    for text in reversed(own):
        text = text.strip()
        if not text or _UPLOAD.search(text) or tag_act(text) != act or not safe(text):
            continue
        old = list(_NUMBER.finditer(text))
        if act != ANSWER or value is None or not old:
            return text
        again = text[:old[-1].start()] + value + text[old[-1].end():]
        return again if tag_act(again) == act else text
    return None
