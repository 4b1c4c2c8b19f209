"""Error classes of a TTFT probe outcome, and the probe's few exceptions.

Also the retry policy's pieces: which class an HTTP status is, how long a
Retry-After says to wait, and the backoff when it says nothing.

A network or server fault is never raised out of `probe_once`: it becomes a
sample with ok=False and one of ERROR_CLASSES. Exceptions here are
for configuration mistakes the caller must fix (a missing API key) and for the
internal hand-off between the stream reader and the sampler.
"""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime
from enum import StrEnum

from planner.errors import PlannerError
from planner.inputs.untrusted import mask_secret

__all__ = [
    "ERROR_CLASSES",
    "RTT_ERROR_CLASSES",
    "ErrorClass",
    "RETRYABLE_CLASSES",
    "MissingApiKey",
    "ProbeFault",
    "backoff_s",
    "class_for_status",
    "parse_retry_after",
    "scrub",
]

_BACKOFF_BASE_S = 0.5


class ErrorClass(StrEnum):
    """Why a probe failed: one vocabulary for TTFT samples and RTT results (the stored value is the member's value;
    the two probes grew different spellings, kept as stored)."""

    REFUSED = "refused"
    DNS = "dns"
    CONNECT_TIMEOUT = "connect_timeout"
    READ_TIMEOUT = "read_timeout"
    TLS = "tls"
    AUTH = "auth"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    NO_CONTENT = "no_content"
    DISCONNECT = "disconnect"
    BAD_JSON = "bad_json"
    BAD_FRAME = "bad_frame"
    NOT_SSE = "not_sse"
    HTTP_ERROR = "http_error"
    SKIPPED = "skipped"  # a schedule slot the worker did not run (kind='skipped')
    BAD_TARGET = "bad-target"
    UNRESOLVABLE = "unresolvable"
    BLOCKED_PORT = "blocked-port"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    HTTP = "http"
    PROXY = "proxy"
    ERROR = "error"


_E = ErrorClass
#: Every error class a TTFT sample can carry, with a one-line meaning (used in --help and the UI).
ERROR_CLASSES: dict[ErrorClass, str] = {
    _E.REFUSED: "could not open a TCP connection (refused or unreachable)",
    _E.DNS: "the host name did not resolve",
    _E.CONNECT_TIMEOUT: "no connection within the timeout",
    _E.READ_TIMEOUT: "the server stopped sending (before headers or mid-stream) for longer than the timeout",
    _E.TLS: "TLS handshake or certificate failure",
    _E.AUTH: "401/403: the key is missing, wrong or not allowed (not retried)",
    _E.NOT_FOUND: "404: wrong URL or unknown model",
    _E.RATE_LIMITED: "429 after all retries",
    _E.SERVER_ERROR: "5xx (after all retries) or an error event inside the stream",
    _E.NO_CONTENT: "the stream ended without a single token",
    _E.DISCONNECT: "the connection closed in the middle of the stream",
    _E.BAD_JSON: "an SSE event's data was not valid JSON",
    _E.BAD_FRAME: "a binary event-stream frame (Bedrock) was corrupt: bad checksum or length, or cut off at the end",
    _E.NOT_SSE: "the response was not an event stream (streaming ignored or an HTML/JSON body)",
    _E.HTTP_ERROR: "any other non-2xx status or HTTP protocol error",
}

#: Each failure class an RTT result can carry, with what it means for the user.
RTT_ERROR_CLASSES: dict[ErrorClass, str] = {
    _E.BAD_TARGET: "the target is not a valid URL or host:port",
    _E.UNRESOLVABLE: "the host name did not resolve (DNS)",
    _E.REFUSED: "the host answered with a TCP reset: nothing listens on that port",
    _E.BLOCKED_PORT: "no answer to the TCP SYN within the timeout, or a firewall rejected it: the port is filtered or "
    "the host is down",
    _E.UNREACHABLE: "no route to the host or network",
    _E.TIMEOUT: "connected, but the TLS handshake or the HTTP response did not arrive within the timeout",
    _E.TLS: "TLS handshake or certificate failure",
    _E.HTTP: "the server did not answer with HTTP",
    _E.PROXY: "the proxy refused or failed the CONNECT tunnel",
    _E.ERROR: "another socket error",
}

#: Classes worth another attempt (with Retry-After or exponential backoff).
RETRYABLE_CLASSES = frozenset({ErrorClass.RATE_LIMITED, ErrorClass.SERVER_ERROR})


class MissingApiKey(PlannerError):
    """The environment variable (or secrets key) that should hold the API key is not set.

    The message names the variable, never a value.
    """

    def __init__(self, env_name: str) -> None:
        self.env_name = env_name
        super().__init__(
            f"API key variable {env_name} is not set (export {env_name}=... or add it to Streamlit secrets)"
        )


class ProbeFault(PlannerError):
    """Internal: one attempt ended in `error_class` with a human-readable detail."""

    def __init__(
        self, error_class: str, detail: str, *, status_code: int | None = None, retry_after_s: float | None = None
    ) -> None:
        assert error_class in ERROR_CLASSES, error_class
        super().__init__(detail)
        self.error_class = error_class
        self.detail = detail
        self.status_code = status_code
        self.retry_after_s = retry_after_s


def scrub(text: str, secret: str | None, limit: int = 500) -> str:
    """`text` with `secret` replaced by *** in every encoding a body can carry it (planner.inputs.untrusted.mask_secret:
    as written, JSON-escaped — `\\/`, `\\uXXXX` —, percent-encoded, base64 alone or as Basic `user:key`, and any
    piece cut by truncation), on one line, cut to `limit` characters.

    Applied to every error detail so that a key echoed by a server or an
    exception never reaches the database, a log or the page.
    """
    text = mask_secret(text, secret)  # before any cut: a body truncated mid-key must not keep its first half
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def class_for_status(status: int) -> ErrorClass:
    """The error class of an HTTP error status (401/403 auth, 404 not_found, 429 rate_limited, 5xx server_error)."""
    if status in (401, 403):
        return ErrorClass.AUTH
    if status == 404:
        return ErrorClass.NOT_FOUND
    if status == 429:
        return ErrorClass.RATE_LIMITED
    if status >= 500:
        return ErrorClass.SERVER_ERROR
    return ErrorClass.HTTP_ERROR


def backoff_s(attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based) when no Retry-After came: 0.5, 1, 2, …"""
    return _BACKOFF_BASE_S * 2.0 ** (attempt - 1)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header, in either RFC 9110 form.

    "120" (delay-seconds) or "Wed, 21 Oct 2015 07:28:00 GMT" (HTTP-date, also
    the obsolete RFC 850/asctime forms); a date in the past means 0. Returns
    None when the header is absent or unparseable.
    """
    if not value:
        return None
    v = value.strip()
    try:
        secs = float(v)
        return secs if secs >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
