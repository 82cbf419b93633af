"""Offline dialogue-act tagger for a learner's turn in a maths tutoring chat (pure, no model).

Five acts:

* ``math_answer`` — attempts the maths the tutor asked for: a value, a step, a guess, a claim;
* ``not_understanding`` — says they don't know, are stuck or lost;
* ``seek_information`` — asks a clarifying or conceptual question, or asks the tutor to do or
  explain something (stating the problem and asking for help included);
* ``off_topic`` — greetings, goodbyes, giving up, remarks about the tutor rather than the maths;
* ``acknowledge`` — acknowledges the tutor's previous turn ("thanks, that makes sense").

The rules read surface cues in a fixed order, most specific first. They were written on half of
the hand-labelled real conversations and measured on the other half (README, "Real conversations
and realism"): they are general cue lists, not fitted to particular messages. When no cue fires a
statement is read as an attempt, because in a tutoring chat a learner's statement usually is one.

They live in the text layer so that a user simulator (``offline/person`` reads the acts of the
person's own earlier messages) and the evaluation (:mod:`knowsim_core.evaluation.acts`, which
re-exports them with the agreement measures) use one tagger.
"""

from __future__ import annotations

import re

ACTS = ("math_answer", "not_understanding", "seek_information", "off_topic", "acknowledge")
MATH_ANSWER, NOT_UNDERSTANDING, SEEK_INFORMATION, OFF_TOPIC, ACKNOWLEDGE = ACTS


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b")


_IMAGE = re.compile(r"\S+\.(?:png|jpe?g|gif|webp|bmp|heic|svg)\b", re.IGNORECASE)
_GREETING_ONLY = re.compile(r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))(?: there)?\W*$|"
                            r"\bare you (?:functioning|working|there|online|ok|okay)\b")
_BYE = _rx(r"bye", r"goodbye", r"give up", r"giving up", r"i'?m done", r"on my own", r"see you", r"that'?s all",
           r"stop here", r"end this", r"have a (?:good|nice|great)")
_COMPLAINT = _rx(r"you are not", r"you'?re not", r"you aren'?t", r"not helpful", r"unhelpful", r"bad info\w*",
                 r"trust", r"(?:do not|don'?t|stop) (?:say|saying|repeat|repeating)", r"too long", r"you can'?t even",
                 r"patroniz\w*", r"annoy\w*", r"irritat\w*", r"frustrat\w*", r"useless", r"waste of")
_REQUEST = _rx(r"can you", r"could you", r"would you", r"will you", r"can u", r"please", r"help me", r"show me",
               r"explain", r"give me", r"tell me", r"reword", r"rephrase", r"walk me", r"you do", r"let'?s start",
               r"lets start", r"help!?")
_STRONG_REQUEST = _rx(r"can you", r"could you", r"would you", r"give me", r"explain", r"reword", r"rephrase",
                      r"show me")
_WH = re.compile(r"(?:^|[.!?]\s+|\n)\s*(?:so |and |but |ok,? |okay,? )?(?:what|how|why|where|when|which|who)(?:'s)?\b")
_STUCK = _rx(r"(?:don'?t|do not|dont|didn'?t) (?:really |fully |quite )?(?:know|understand|get|follow|see)",
             r"not (?:really )?sure", r"no idea", r"i'?m (?:so |completely |totally )?(?:lost|stuck|confused)",
             r"(?:am|feel) (?:so |completely |totally )?(?:lost|stuck|confused)", r"over my head", r"can'?t do",
             r"i (?:really )?can'?t", r"wrap my head", r"need (?:some |more )?help", r"no clue", r"clueless",
             r"where to (?:start|begin)", r"makes no sense", r"doesn'?t make sense", r"very difficult", r"too hard")
_ACK_STRONG = _rx(r"thanks?", r"thank you", r"makes sense", r"gotcha", r"got it", r"i see", r"that'?s what i",
                  r"i understand(?: now)?", r"understood", r"that helps", r"great,? thanks")
_ACK_WEAK = _rx(r"ok", r"okay", r"alright", r"yes", r"yeah", r"yep", r"cool", r"great", r"right", r"sure", r"perfect",
                r"nice", r"awesome", r"ah", r"oh")
_ATTEMPT = _rx(r"i think", r"i guess", r"i'?d guess", r"i would guess", r"guess", r"i get", r"i got", r"i found",
               r"i calculated", r"so it", r"so the", r"so we", r"it would be", r"would it be", r"is it", r"it'?s",
               r"the answer is", r"my answer", r"should be", r"maybe", r"we should", r"that means", r"equals?",
               r"because", r"correct", r"right\?", r"do you mean")
_VALUE = re.compile(r"\d|[=+*/^<>√π]|\b[a-z]\s*[-+*/=]\s*\w|\bsqrt|\bpi\b|\bx\b|\by\b")


def _value(text: str) -> bool:
    return bool(_VALUE.search(text))


def tag(text: str | None) -> str:
    """The dialogue act of one learner message (one of :data:`ACTS`)."""
    raw = (text or "").strip()
    if _IMAGE.search(raw):
        raw = _IMAGE.sub(" ", raw).strip()
        if not raw:
            return MATH_ANSWER  # a bare picture: in a tutoring chat, a photo of written working
    low = re.sub(r"\s+", " ", raw.lower().replace("’", "'"))
    if not low or not re.search(r"\w", low):
        return OFF_TOPIC
    value, asks = _value(low), "?" in low
    if _GREETING_ONLY.search(low) and not (_REQUEST.search(low) or value):
        return OFF_TOPIC
    if _BYE.search(low) and not value:
        return OFF_TOPIC
    if _COMPLAINT.search(low) and not _STRONG_REQUEST.search(low) and not (value and _ATTEMPT.search(low)):
        return OFF_TOPIC
    if _ACK_STRONG.search(low) and not asks and not value and not re.search(r"\b(?:but|still)\b", low):
        return ACKNOWLEDGE
    if _STUCK.search(low) and not (value and _ATTEMPT.search(low)):
        return NOT_UNDERSTANDING
    if _REQUEST.search(low) or _WH.search(low):
        return MATH_ANSWER if value and _ATTEMPT.search(low) and not _WH.match(low) else SEEK_INFORMATION
    if asks:
        return MATH_ANSWER if value or _ATTEMPT.search(low) else SEEK_INFORMATION
    if _ACK_WEAK.search(low) and len(low.split()) <= 6 and not value:
        return ACKNOWLEDGE
    return MATH_ANSWER


def is_attempt(act: str) -> bool:
    """Whether an act attempts an answer (the realism table's answer-attempt agreement)."""
    return act == MATH_ANSWER
