"""Keep credentials out of everything that is stored, listed, exported or logged.

A base URL may carry a password (``http://admin:secret@host/v1``) or a key in its query
(``…/v1?api_key=…``). Agent ids embed their base URL (``compat/llama@http://…``), and ids are
stored with every run, shown by ``runs`` and written to every export — so the *id* is built
from :func:`redact_url`, while the live client keeps the real URL. Model replies and error texts
go through :func:`redact` with the configured keys (and the secrets of configured URLs) before
they are stored or shown. Pure functions: no I/O, no settings lookup.
"""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# query parameters whose value is a credential (compared lower-cased, "-" read as "_")
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "authorization", "password", "passwd",
    "secret", "client_secret", "sig", "signature", "x_api_key", "code",
})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_KEY_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-*.]{6,}"),  # OpenAI / Anthropic style keys, incl. masked echoes
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-.=]{8,}"),
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
    """The credential parts of ``url`` (password, user, secret query values), to redact from text."""
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        found = [parts.password or ""]  # a user name alone is not a secret (and often a common word)
    except ValueError:
        return ()
    found += [v for k, v in pairs if _is_secret_param(k)]
    return tuple(s for s in found if len(s) >= 4)  # a 1–3 character "secret" would mask half the text


def unredact_url(url: str, candidates: Iterable[str]) -> str:
    """The configured URL whose redacted form is ``url`` (a stored id resumed), else ``url``.

    Stored agent ids carry redacted URLs; to continue such a run the live client needs the real
    one, which only the current settings know.
    """
    if MASK not in url:
        return url
    return next((c for c in candidates if c and redact_url(c) == url), url)


def redact_urls(text: str) -> str:
    """Every URL inside ``text`` (an agent id such as ``compat/llama@http://…``) via :func:`redact_url`."""
    return _URL.sub(lambda m: redact_url(m.group()), text)


def redact(text: str, secrets: Iterable[str] = (), *, patterns: bool = True) -> str:
    """``text`` with the given secrets masked and, with ``patterns``, URL credentials and anything
    that looks like a key too. Model replies use ``patterns=False``: a tutor explaining
    ``api_key = …`` is content; only the configured secrets are masked there."""
    out = redact_urls(str(text)) if patterns else str(text)
    for s in sorted((s for s in secrets if s), key=len, reverse=True):
        out = out.replace(s, MASK)
        if len(s) > 12:  # a provider may echo a shortened key: hide its distinctive ends too
            out = out.replace(s[:12], MASK).replace(s[-8:], MASK)
    for pat in _KEY_PATTERNS if patterns else ():
        out = pat.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, out)
    return out
