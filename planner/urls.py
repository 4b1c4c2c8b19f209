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
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from planner.errors import PlannerError
from planner.untrusted import mask_secret

__all__ = ["MAX_URL_CHARS", "UrlError", "check_url", "mask_url_password", "redact_url"]

MAX_URL_CHARS = 500
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_HOST = re.compile(r"^[\w-]+(\.[\w-]+)*\.?$")  # letters (any script), digits, - and _; dots between labels
_SECRET_PARAM = re.compile(
    r"^(api[-_]?key|apikey|key|token|access[-_]?token|auth|authorization|bearer|secret|client[-_]?secret|password|passwd|"
    r"pwd|sig|signature|x[-_]api[-_]key)$|[-_](key|token|secret|password)$",
    re.IGNORECASE,
)


class UrlError(PlannerError, ValueError):
    """A URL the product will not use; the message says why and names the URL (credentials masked)."""


def redact_url(url: str) -> str:
    """`url` with any password (and the user name) replaced by ***, for messages;
    unparseable input is cut to 80 chars."""
    try:
        parts = urlsplit(url)
        if parts.password is not None or parts.username is not None:
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))
    except ValueError:
        pass
    if "@" in url:
        return "***@" + url.rpartition("@")[2][:80]
    return url


def mask_url_password(text: str, url: str) -> str:
    """`text` (a message that may quote `url` or parts of it) with the password `url` carries masked, as written and
    percent-decoded; unchanged when `url` has none or cannot be parsed."""
    try:
        password = urlsplit(url).password or ""
    except ValueError:
        return text
    for secret in (password, unquote(password)):
        text = mask_secret(text, secret)
    return text


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
    max_chars: int = MAX_URL_CHARS,
) -> str:
    """The URL (surrounding spaces removed) when it is safe to store and request; raises UrlError otherwise.

    `what` names the field in the message (e.g. 'base_url', '--proxy').
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
