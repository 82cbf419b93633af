"""Stored text (model replies, imported conversations, questions) as markdown that fetches nothing
and keeps the page's layout.

Streamlit renders ``st.markdown`` fully: ``![x](http://…/q.png)`` makes the browser fetch that
image the moment a turn is shown — a tracking pixel in an imported conversation, against the
README's "nothing is fetched" — and ``# heading``, tables and ``$$…$$`` blocks render at full
size inside a chat bubble. :func:`inline_markdown` keeps what reads well inline (emphasis, code,
lists, links, inline ``$…$`` maths — a maths tutor's replies are full of it) and neutralises the
rest:

* images become links (``\\![x](url)`` renders "!" and a link "x"): nothing loads until a click.
  The ``!`` must end up behind an *odd* run of backslashes: ``\\\\![x](url)`` is an escaped
  backslash followed by a real image, so a backslash is added only where the run before ``!`` is
  even (none counts as even) — adding one to text that already escaped the ``!`` would unescape it;
* ATX headings (``# …``) and setext underlines (``===`` / ``---`` lines) are escaped, so they
  read as the text they are;
* a table's delimiter row (``|---|---|``) is escaped, so no table forms (other pipes are left
  alone: ``$|x|$`` is maths);
* display maths ``$$…$$`` becomes inline ``$…$`` (same formula, text size).

Raw HTML needs no handling here: without ``unsafe_allow_html`` Streamlit shows it as text.
"""

from __future__ import annotations

import re

_HEADING = re.compile(r"^( {0,3})(#)", re.MULTILINE)
_SETEXT = re.compile(r"^( {0,3})([=-])(?=[=\- \t]*$)", re.MULTILINE)
_IMAGE = re.compile(r"(\\*)!\[")
_TABLE_DELIMITER = re.compile(r"^([ \t]*)(?=[|:\-][|:\- \t]*$)(?=.*\|)(?=.*-)(.)", re.MULTILINE)


def _escape_image(m: re.Match[str]) -> str:
    """``![`` with an odd run of backslashes before it, so the ``!`` is escaped (see above)."""
    run = m.group(1)
    return run + ("!" if len(run) % 2 else "\\!") + "["


def inline_markdown(text: str) -> str:
    """``text`` as markdown that loads no remote resource and renders no block layout (see above)."""
    out = _IMAGE.sub(_escape_image, str(text))
    out = out.replace("$$", "$")
    out = _TABLE_DELIMITER.sub(r"\1\\\2", out)
    out = _HEADING.sub(r"\1\\\2", out)
    return _SETEXT.sub(r"\1\\\2", out)


__all__ = ["inline_markdown"]
