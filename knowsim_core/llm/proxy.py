"""Which HTTP proxy, if any, a request to a base URL goes through: :func:`proxy_for`.

The clients are built with our own transport (the whole-request deadline, the error-body cap), and
an HTTP client given a transport reads no proxy variables: behind a corporate proxy every provider
was unreachable, with nothing saying why. So the environment's proxy variables are read here, with
the conventions curl, wget and Python's ``urllib`` share, and the transport is built to match.

Conventions:

* ``https_proxy`` / ``HTTPS_PROXY`` for an https target, ``http_proxy`` / ``HTTP_PROXY`` for an
  http one, else ``all_proxy`` / ``ALL_PROXY``; the lower-case name wins when both are set, and an
  empty value counts as unset (``HTTPS_PROXY= cmd`` is how a shell unsets one for a command).
* ``no_proxy`` / ``NO_PROXY``: comma-separated entries. ``*`` bypasses every proxy. A name matches
  the host and every host under it, a leading ``.`` or ``*.`` ignored (``example.com``,
  ``.example.com`` and ``*.example.com`` all match ``example.com`` and ``api.example.com``, as in curl
  and ``urllib``). An IP address or a CIDR block (``10.0.0.0/8``, ``fd00::/8``) matches hosts given
  as addresses inside it; host names are not resolved. ``:port`` after an entry (``[::1]:8080`` for
  IPv6) limits it to that port. An entry that cannot be read is skipped, as the other tools do: the
  variable is shared with the whole shell, so refusing it here would break a setup they accept.
* **Loopback is never proxied** — ``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``, and
  ``0.0.0.0`` / ``::`` (a connection to them reaches this machine too) — whatever ``NO_PROXY``
  says. A local server (the llama.cpp one ``make local-model`` runs on 127.0.0.1) must keep working
  in a shell that exports a corporate proxy and no ``NO_PROXY``; and a remote proxy asked for
  127.0.0.1 would reach its own loopback, not ours. An address is read as the resolver reads it,
  shorthand included: ``127.1``, ``2130706433`` and ``0x7f.1`` all connect to 127.0.0.1.
* A proxy URL without a scheme (``proxy.corp:3128``) is ``http://``. Only ``http://`` and
  ``https://`` proxies are supported (SOCKS in the SDKs' HTTP stack needs ``socksio``, which is not
  installed); another scheme is a :class:`~knowsim_core.errors.ConfigError`, raised only when that
  proxy would be used, naming the variable.
* Credentials in a proxy URL (``http://user:pass@host:3128``, percent-encoded as URLs are) become
  :attr:`Proxy.auth`, sent as ``Proxy-Authorization: Basic …``; :attr:`Proxy.url` is the URL without
  them, the only form that may be shown, and :attr:`Proxy.secrets` what to mask in any text.
* A proxy URL that cannot be read cleanly is refused, never guessed at: a password with a bare
  ``@``, ``/``, ``#`` or ``?`` (``http://bob:p@ss/1@proxy:3128``) ends the URL parser's host early,
  and the "host" it finds is a piece of the password — which would be shown in messages, stored
  with a failed run and looked up in DNS. Whenever the parser's credentials are not everything
  before the value's last ``@``, the value is refused, and every message quotes it masked from
  ``://`` up to its last ``@``.

Pure: the environment is an argument, nothing is read from the process here.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
import urllib.request
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import quote, unquote, urlsplit

from knowsim_core.errors import ConfigError
from knowsim_core.text.redact import MASK

PROXY_SCHEMES: tuple[str, ...] = ("http", "https")
DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443}
EXAMPLE_PROXY = "http://proxy.example.com:3128"
MISREAD = "its user name or password holds a bare @, /, # or ?, which ends the host early"
MIN_SECRET_CHARS = 4  # as redact.url_secrets: masking a 1-3 character "secret" would garble the text
# What the resolver may read as an IPv4 number (inet_aton's forms: 127.1, 2130706433, 0x7f.1, 0177.0.0.1);
# inet_aton itself also takes trailing text after a space, which no host may hold
_IPV4_NUMBER = re.compile(r"[0-9a-fx.]+")


@dataclass(frozen=True, slots=True)
class Proxy:
    """The proxy a request goes through. ``url``: scheme, host and port, no credentials;
    ``variable``: the environment variable it came from (named in every message about it);
    ``auth``: (user, password), percent-decoded, or None — left out of ``repr``."""

    url: str
    variable: str
    auth: tuple[str, str] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """How messages name it: ``http://proxy.corp:3128 (HTTPS_PROXY)``."""
        return f"{self.url} ({self.variable})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The password, and the Basic credentials it travels in, to mask wherever text is shown."""
        if self.auth is None:
            return ()
        user, password = self.auth
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        return tuple(s for s in (password, basic) if len(s) >= MIN_SECRET_CHARS)


def proxy_for(url: str, env: Mapping[str, str]) -> Proxy | None:
    """The proxy a request to ``url`` goes through under ``env``, or None to connect directly.

    Args:
        url: the target (a client's base URL, already checked to be http(s) with a host).
        env: the environment (``os.environ`` in the app; a plain dict in tests).

    Raises:
        ConfigError: the proxy that applies is not an http(s) URL (e.g. ``socks5://``) or cannot be
            read; the message names the variable and the fix, never the credentials.
    """
    target = urlsplit(url)
    host = (target.hostname or "").rstrip(".")
    scheme = target.scheme.lower()
    if not host or is_loopback(host):
        return None
    found = _variable(env, f"{scheme}_proxy") or _variable(env, "all_proxy")
    if found is None:
        return None
    try:
        port = target.port or DEFAULT_PORTS.get(scheme, 0)
    except ValueError:  # a bad port: the base URL check reports it; route as the default port would
        port = DEFAULT_PORTS.get(scheme, 0)
    no_proxy = _variable(env, "no_proxy")
    if no_proxy is not None and bypassed(host, port, no_proxy[1]):
        return None
    return _parse(*found, host=host)


def opener(proxy: Proxy | None) -> urllib.request.OpenerDirector:
    """A ``urllib`` opener that goes as the clients' transport goes: through ``proxy`` (what
    :func:`proxy_for` chose for the target), or directly when None — ``urllib``'s default opener reads
    the proxy variables itself and would send a request to 127.0.0.1 (the local server's readiness
    probe, its tokenizer) to a proxy."""
    if proxy is None:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    scheme, _, rest = proxy.url.partition("://")
    creds = "" if proxy.auth is None else f"{quote(proxy.auth[0], safe='')}:{quote(proxy.auth[1], safe='')}@"
    via = f"{scheme}://{creds}{rest}"
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": via, "https": via}))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without brackets) is this machine itself."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = _address(host) or _ipv4_number(host)
    if ip is None:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is 127.0.0.1
    return ip.is_loopback or ip.is_unspecified or (mapped is not None and mapped.is_loopback)


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether a ``NO_PROXY`` value names ``host`` on ``port`` (the entry forms: module docstring)."""
    host = host.lower().rstrip(".")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if name and (entry_port is None or entry_port == port) and _names(name, host):
            return True
    return False


def _variable(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(the variable's name as set, its value) for ``name`` in lower case, else upper case; empty is unset."""
    for var in (name.lower(), name.upper()):
        value = (env.get(var) or "").strip()
        if value:
            return var, value
    return None


def _split_port(entry: str) -> tuple[str, int | None]:
    """(name, port or None) of one NO_PROXY entry; ("", None) when it cannot be read. A bare IPv6
    address has several colons and no port; with a port it is written in brackets."""
    if entry.startswith("["):
        address, sep, rest = entry[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return "", None
        return address, int(rest[1:]) if rest else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return (name, int(port)) if port.isdigit() else ("", None)
    return entry, None


def _names(entry: str, host: str) -> bool:
    """Whether one NO_PROXY entry (its port already checked) names ``host``."""
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
        ip = _address(host)
        return ip is not None and ip.version == network.version and ip in network
    address = _address(entry)
    if address is not None:
        return _address(host) == address
    domain = entry.removeprefix("*").lstrip(".").rstrip(".")
    return bool(domain) and (host == domain or host.endswith("." + domain))


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _ipv4_number(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address the resolver connects to for a numeric ``host`` in any form ``inet_aton``
    takes (``127.1``, ``2130706433``, ``0x7f.1``), or None: a connection to ``http://127.1:8080``
    reaches 127.0.0.1, though ``ipaddress`` reads only the dotted-quad form."""
    if not _IPV4_NUMBER.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _parse(variable: str, value: str, *, host: str) -> Proxy:
    """The :class:`Proxy` of one variable's value, its credentials moved out of the URL."""
    raw = value if "://" in value else f"http://{value}"
    shown = masked(raw)
    example = EXAMPLE_PROXY
    try:
        parts = urlsplit(raw)
        scheme, proxy_host, port = parts.scheme.lower(), parts.hostname, parts.port
        problem = "" if scheme and proxy_host else "no scheme" if not scheme else "no host"
        if not problem and credentials_misread(raw):
            problem = MISREAD
            # no URL with credentials here: messages are redacted on their way out, which would mask it
            example = f"{EXAMPLE_PROXY} with user:password@ before the host, @ / # ? in them as %40 %2F %23 %3F"
    except ValueError:  # an unclosed "[", a bad port; the parser's text may quote the URL: not shown
        scheme, proxy_host, port, problem = "", None, None, "its host or port cannot be read"
    if problem:
        raise ConfigError(f"{variable}={shown!r} is not a proxy URL ({problem}); write e.g. {example}")
    if scheme not in PROXY_SCHEMES:
        raise ConfigError(f"{variable}={shown!r}: a {scheme} proxy, which the LLM clients cannot use; set "
                          f"{variable} to an http:// proxy (e.g. {EXAMPLE_PROXY}), or add {host} to NO_PROXY")
    netloc = f"[{proxy_host}]" if ":" in proxy_host else proxy_host
    url = f"{scheme}://{netloc}" + (f":{port}" if port is not None else "")
    auth = None
    if parts.username is not None or parts.password is not None:
        auth = (unquote(parts.username or ""), unquote(parts.password or ""))
    return Proxy(url=url, variable=variable, auth=auth)


def credentials_misread(url: str) -> bool:
    """Whether a URL parser reads credentials in ``url`` other than all its text between ``://`` and
    its last ``@`` — a bare ``@ / # ?`` in a password ends the host early, and the host the parser
    finds is a piece of the password. (A URL the parser cannot split at all is not this case.)"""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return False
    return url.partition("://")[2].rpartition("@")[0] != netloc.rpartition("@")[0]


def masked(raw: str) -> str:
    """``raw`` as a message may quote it: everything between ``://`` and the last ``@`` masked. Wider
    than :func:`~knowsim_core.text.redact.redact_url` on purpose: a password with a bare ``/`` or
    ``#`` in it is misread by URL parsers, and a message about a malformed URL must not show it."""
    scheme, sep, rest = raw.partition("://")
    return f"{scheme}{sep}{MASK}@{rest.rpartition('@')[2]}" if "@" in rest else raw
