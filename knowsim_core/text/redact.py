"""Keep credentials out of everything that is stored, listed, exported or logged.

A base URL may carry a password (``http://admin:secret@host/v1``) or a key in its query
(``…/v1?api_key=…``). Agent ids embed their base URL (``compat/llama@http://…``), and ids are
stored with every run, shown by ``runs`` and written to every export — so the *id* is built
from :func:`redact_url`, while the live client keeps the real URL. Model replies and error texts
go through :func:`redact` with the configured keys (and the secrets of configured URLs) before
they are stored or shown. Pure functions: no I/O, no settings lookup.

**Linear in the text.** A model reply can be megabytes (up to the reply cap). URLs are found from
their ``://`` (a plain ``str.find``), not by a regex that tries every letter as the start of a
scheme — that one was quadratic on long runs of letters (40k letters: 2.1 s, holding the GIL so
even Ctrl-C waited). Secrets are masked in one pass of one alternation, longest first.

**Every form a credential travels in.** A password in a base URL is sent by the HTTP client as
``Authorization: Basic base64(user:password)``; a server that echoes that header must not get it
stored, so :func:`url_secrets` lists the encoded form too. When keys overlap (one key's prefix is
another's), every full key is masked before any partial mask (a shortened echo's first 12 / last
8 characters), so no partial mask can cut a full key in two and leave its tail readable.
"""

from __future__ import annotations

import base64
import re
from typing import Iterable, Iterator
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
# query parameters whose value is a credential (compared lower-cased, "-" read as "_")
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "authorization", "password", "passwd",
    "secret", "client_secret", "sig", "signature", "x_api_key", "code",
})
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_END = re.compile(r"[\s'\"<>`]")
MAX_SCHEME = 32  # the longest scheme looked for before "://" (real ones are under 10)
_KEY_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-*.]{6,}"),  # OpenAI / Anthropic style keys, incl. masked echoes
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-.=]{8,}"),
    re.compile(r"(?i)(basic\s+)[A-Za-z0-9+/=]{8,}"),  # HTTP Basic credentials (user:password in base64)
    re.compile(r"(?i)(api[_-]?key[\"'\s:=]+)[A-Za-z0-9_\-.]{8,}"),
)


def _is_secret_param(name: str) -> bool:
    return name.lower().replace("-", "_") in SECRET_PARAMS


def redact_url(url: str) -> str:
    """``url`` without credentials: user info becomes ``***@``, secret query values ``***``.

    >>> redact_url("http://admin:secret@host/v1?api_key=abc&x=1")
    'http://***@host/v1?api_key=***&x=1'
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: mask anything that looks like user info
        return re.sub(r"//[^/@\s]*@", f"//{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_is_secret_param(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _is_secret_param(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> tuple[str, ...]:
    """The credential parts of ``url`` (password, secret query values, and the
    ``base64(user:password)`` an HTTP client sends for them), to redact from text."""
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        password, user = parts.password or "", parts.username or ""
    except ValueError:
        return ()
    found = [password, unquote(password)]  # a user name alone is not a secret (and often a common word)
    if password:
        for u, p in {(user, password), (unquote(user), unquote(password))}:
            found.append(base64.b64encode(f"{u}:{p}".encode()).decode())
    found += [v for k, v in pairs if _is_secret_param(k)]
    # a 1–3 character "secret" would mask half the text
    return tuple(dict.fromkeys(s for s in found if len(s) >= 4))


def unredact_url(url: str, candidates: Iterable[str]) -> str:
    """The configured URL whose redacted form is ``url`` (a stored id resumed), else ``url``.

    Stored agent ids carry redacted URLs; to continue such a run the live client needs the real
    one, which only the current settings know.
    """
    if MASK not in url:
        return url
    return next((c for c in candidates if c and redact_url(c) == url), url)


def _urls(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each URL in ``text``: a scheme (up to :data:`MAX_SCHEME` characters, starting
    with a letter) before ``://``, up to the next space or quote. One pass: linear in the text."""
    pos = 0
    while (sep := text.find("://", pos)) != -1:
        start = sep
        while start > 0 and sep - start < MAX_SCHEME and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < sep and not text[start].isalpha():
            start += 1
        m = _URL_END.search(text, sep + 3)
        end = m.start() if m else len(text)
        if start < sep and end > sep + 3:
            yield start, end
        pos = max(end, sep + 3)


def redact_urls(text: str) -> str:
    """Every URL inside ``text`` (an agent id such as ``compat/llama@http://…``) via :func:`redact_url`."""
    out, last = [], 0
    for start, end in _urls(text):
        out += [text[last:start], redact_url(text[start:end])]
        last = end
    return "".join(out) + text[last:] if out else text


def _mask_all(text: str, secrets: list[str]) -> str:
    """Each of ``secrets`` in ``text`` masked in one pass; at any place the longest one that fits wins."""
    if not secrets:
        return text
    pattern = re.compile("|".join(re.escape(s) for s in sorted(set(secrets), key=len, reverse=True)))
    return pattern.sub(MASK, text)


def redact(text: str, secrets: Iterable[str] = (), *, patterns: bool = True) -> str:
    """``text`` with the given secrets masked and, with ``patterns``, URL credentials and anything
    that looks like a key too. Model replies use ``patterns=False``: a tutor explaining
    ``api_key = …`` is content; only the configured secrets are masked there.

    Full secrets go first, all of them (longest match first), then the partial masks of long ones
    (a provider may echo a shortened key: its distinctive first 12 / last 8 characters)."""
    out = redact_urls(str(text)) if patterns else str(text)
    full = [s for s in secrets if s]
    out = _mask_all(out, full)
    out = _mask_all(out, [p for s in full if len(s) > 12 for p in (s[:12], s[-8:])])
    for pat in _KEY_PATTERNS if patterns else ():
        out = pat.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, out)
    return out
