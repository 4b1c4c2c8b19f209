"""One validator for every URL that enters the product: endpoint base URLs, `probe --base-url`, RTT targets
(`regions add`, `rtt --url`, the Regions page), `rtt --proxy`.

A URL is refused, with a message naming what is wrong, when it
- is not http:// or https:// (or the schemes the caller allows),
- cannot be parsed (`http://[::1/v1`), has no host, a bad port, or a host with spaces or other stray characters,
- contains a line break, a tab, a space or another control character anywhere,
- carries credentials (`user:password@host`) — except where the caller allows them (a proxy), and then
  `redact_url` is what gets printed,
- carries a secret in its query (`?api_key=…`, `?token=…`): keys belong in an environment variable,
- is longer than the store keeps (500 characters by default).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from planner.errors import PlannerError
from planner.inputs.untrusted import mask_secret

__all__ = [
    "MAX_URL_CHARS",
    "UrlError",
    "check_url",
    "mask_credential",
    "mask_url_password",
    "redact_url",
    "url_host",
    "url_secrets",
]

MAX_URL_CHARS = 500
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_HOST = re.compile(r"^[\w-]+(\.[\w-]+)*\.?$")  # letters (any script), digits, - and _; dots between labels
# A query parameter holding a secret: the common names, any name ending in key/token/secret after a - or _, and any
# ending in password/passwd/secret/token (libpq's sslpassword).
_SECRET_PARAM = re.compile(
    r"^(api[-_]?key|apikey|key|token|access[-_]?token|auth|authorization|bearer|secret|client[-_]?secret|password|passwd|"
    r"pwd|pass|sig|signature|x[-_]api[-_]key)$|[-_](key|token|secret|password)$|(password|passwd|secret|token)$",
    re.IGNORECASE,
)


class UrlError(PlannerError, ValueError):
    """A URL the product will not use; the message says why and names the URL (credentials masked)."""


def redact_url(url: str, *, keep_user: bool = False) -> str:
    """`url` with every credential it carries replaced by ***, for messages and logs: the userinfo (`user:password@`;
    with `keep_user`, `user:***@`), read the widest way any parser reads it (a password holding an unencoded `@`,
    `/`, `?` or `#` included), and the value of every query parameter that holds a secret (libpq's `password=` and
    `sslpassword=`, `?api_key=`, `?token=`, … as _SECRET_PARAM names them, the name percent-decoded).
    Text without `://` but with an `@` keeps only what follows the last `@`, cut to 80 characters."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "***@" + url.rpartition("@")[2][:80] if "@" in url else url
    end = _userinfo_end(rest)
    if end >= 0:
        user, colon, _password = rest[:end].partition(":")
        shown = "***"
        if keep_user:
            shown = f"{user}:***" if colon else user
        rest = f"{shown}{rest[end:]}"
    head, q, query = rest.partition("?")
    if not q:
        return f"{scheme}://{rest}"
    query, h, fragment = query.partition("#")
    params = [_masked_param(p) for p in query.split("&")]
    return f"{scheme}://{head}?{'&'.join(params)}{h}{fragment}"


def url_secrets(url: str) -> list[str]:
    """Every secret `url` carries, each as written and percent-decoded, longest first: the password however a
    parser reads it (libpq and SQLAlchemy end it at the first `@`, urllib at the last: the widest reading, and each
    `@`-separated piece of 4+ characters, since a driver's message may quote the "host" it read after the first
    `@`), and the value of each secret query parameter (see redact_url). [] for none."""
    found: list[str] = []
    _scheme, sep, rest = url.partition("://")
    end = _userinfo_end(rest) if sep else -1
    if end >= 0:
        _user, colon, password = rest[:end].partition(":")
        if colon:
            found += [password, *(p for p in password.split("@") if len(p) >= _MIN_PIECE)]
    query = rest[end + 1 :].partition("?")[2].partition("#")[0] if sep else ""
    for param in query.split("&") if query else ():
        name, eq, value = param.partition("=")
        if eq and value and _SECRET_PARAM.search(unquote_plus(name)):
            found.append(value)
    decoded = [form for secret in found for form in (secret, unquote(secret), unquote_plus(secret))]
    return sorted({s for s in decoded if s and s != "***"}, key=len, reverse=True)  # *** : already redacted


def url_host(url: str) -> str:
    """The URL's host[:port] for a sentence — never a user or password it may carry — or the URL itself when it has
    no host."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url
    return (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "") if host else url


def mask_url_password(text: str, url: str) -> str:
    """`text` (a message that may quote `url` or parts of it: a driver's error, a host it read) with every secret
    `url` carries (url_secrets: its password, a secret query parameter's value) masked in any encoding
    (planner.inputs.untrusted.mask_secret); unchanged when `url` carries none."""
    for secret in url_secrets(url):
        text = mask_secret(text, secret)
    return text


def mask_credential(text: str, value: str | None) -> str:
    """`text` with `value` — a credential read from the environment: a database URL, a bearer token — masked whole
    and, where it is a URL, each secret it carries (mask_url_password), in any encoding; unchanged for None or ''."""
    if not value:
        return text
    return mask_url_password(mask_secret(text, value), value)


_MIN_PIECE = 4  # a shorter piece of a password (between two of its @) says nothing about it


def _userinfo_end(rest: str) -> int:
    """Where the userinfo of a URL's text after `scheme://` ends (the index of its `@`), or -1 for none.

    Read the widest way: the user name holds no `:` or `/` (SQLAlchemy's rule); the password runs to the last `@`
    before the path, query or fragment that follows the first `@`, so `reader:p@ss@host` and `reader:a/b?c@host`
    are read whole."""
    first = rest.find("@")
    if first < 0 or "/" in rest[:first].partition(":")[0]:
        return -1
    stop = min((i for i in (rest.find(c, first) for c in "/?#") if i >= 0), default=len(rest))
    return rest.rfind("@", 0, stop)


def _masked_param(param: str) -> str:
    name, eq, value = param.partition("=")
    return f"{name}=***" if eq and value and _SECRET_PARAM.search(unquote_plus(name)) else param


# Cloud metadata services outside the link-local range, by address and by name (AWS IPv6, Alibaba; GCP, AWS).
_METADATA_IPS = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
_METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
_LEGACY_IPV4 = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]+)(\.(0[xX][0-9a-fA-F]+|[0-9]+)){0,3}$")  # inet_aton's forms


def _is_metadata_host(host: str) -> bool:
    """Whether `host` (as urlsplit gives it: lower case, no brackets) is link-local or a cloud metadata service."""
    name = host.lower().rstrip(".")
    if name in _METADATA_NAMES:
        return True
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(name)
    except ValueError:
        if not _LEGACY_IPV4.match(name):
            return False
        try:  # 0xa9fea9fe, 2852039166, 169.254.43518: spellings a resolver reads as an IPv4 address
            ip = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_link_local or ip in _METADATA_IPS


def _shown(url: str) -> str:
    text = redact_url(url)
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1] if m.group() != " " else " ", text)
    return repr(text if len(text) <= 120 else text[:119] + "…")


def check_url(
    url: str,
    *,
    what: str = "URL",
    schemes: tuple[str, ...] = ("http", "https"),
    allow_credentials: bool = False,
    allow_link_local: bool = False,
    max_chars: int = MAX_URL_CHARS,
) -> str:
    """The URL (surrounding spaces removed) when it is safe to store and request; raises UrlError otherwise.

    `what` names the field in the message (e.g. 'base_url', '--proxy'). A host in the link-local range
    (169.254.0.0/16, fe80::/10, in any spelling a resolver takes: `0xa9fea9fe`, `::ffff:169.254.169.254`) or a cloud
    metadata service's address or name (fd00:ec2::254, metadata.google.internal, …) is refused unless
    `allow_link_local`: a URL pointed there would have the product fetch the machine's own credentials.
    """
    if not isinstance(url, str):
        raise UrlError(f"{what} must be text, got {type(url).__name__}")
    url = url.strip()
    if not url:
        raise UrlError(f"{what} is empty: give e.g. https://api.example.com/v1")
    bad = _CONTROL.search(url)
    if bad:
        kind = {"\n": "a line break", "\r": "a line break", "\t": "a tab", " ": "a space"}.get(
            bad.group(), "a control character"
        )
        after_scheme = url.find("://") + 3
        in_host = after_scheme >= 3 and bad.start() >= after_scheme and "/" not in url[after_scheme : bad.start()]
        where = "its host name contains" if in_host else "contains"
        raise UrlError(f"{what} {_shown(url)}: {where} {kind}; a URL is one line without spaces")
    if len(url) > max_chars:
        raise UrlError(f"{what} is {len(url)} characters long; at most {max_chars} are kept")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
        user, password = parts.username, parts.password
    except ValueError as exc:
        raise UrlError(f"{what} {_shown(url)} is not a valid URL: {exc}") from None
    if parts.scheme.lower() not in schemes:
        names = " or ".join(f"{s}://" for s in schemes)
        raise UrlError(f"{what} must start with {names}, got {_shown(url)} (scheme {parts.scheme or 'missing'!r})")
    if not host:
        raise UrlError(f"{what} {_shown(url)} has no host")
    if port is not None and not 1 <= port <= 65535:
        raise UrlError(f"{what} {_shown(url)} has port {port}: use 1–65535")
    if ":" in host or host.replace(".", "").isdigit():
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UrlError(f"{what} {_shown(url)}: {host!r} is not a valid IP address") from None
    elif not _HOST.match(host):
        raise UrlError(f"{what} {_shown(url)}: {host!r} is not a host name")
    if not allow_link_local and _is_metadata_host(host):
        raise UrlError(
            f"{what} {_shown(url)} points at {host!r}, a link-local or cloud metadata address, which the product never "
            "requests (a cloud machine's metadata service answers there with its credentials); give the server's own "
            "address"
        )
    if (user or password) and not allow_credentials:
        raise UrlError(
            f"{what} must not contain credentials (user:password@): they would be stored and shown; "
            "put an API key in an environment variable and name it instead"
        )
    secrets = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(k)]
    if secrets:
        raise UrlError(
            f"{what} carries a secret in its query ({', '.join(sorted(set(secrets)))}=…): it would be stored "
            "and shown; put the key in an environment variable and name it instead"
        )
    return url
