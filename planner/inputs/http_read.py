"""One bounded HTTP read: a connect timeout, a deadline over the whole answer, and a byte cap enforced while streaming.

httpx's read timeout is per socket read: a server that drips one byte every few seconds never trips it, and
`response.read()` keeps whatever the server sends (a 400 MB answer is 400 MB held, and more while parsed).
`read_capped` streams the body (`client.stream` + `iter_bytes`), stops as soon as the bytes read pass `max_bytes` or
the monotonic clock passes the deadline, and closes the connection. An answer whose Content-Length is over the cap is
refused before its body is read.

The deadline is checked between reads; one socket read may still wait up to the time left when the request was sent,
so a read ends within twice `deadline_s` at worst (a server that sends nothing trips the read timeout at the
deadline). What a compressed answer inflates to is what counts against the cap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from planner.errors import PlannerError

__all__ = ["DEFAULT_CONNECT_S", "CappedBody", "HttpReadError", "read_capped"]

DEFAULT_CONNECT_S = 5.0  # a server that has not accepted the connection by then is down or black-holed


class HttpReadError(PlannerError, RuntimeError):
    """A bounded read failed: the server cannot be reached, did not finish within the deadline, or answered more than
    the cap. The message names the server and what happened (never a credential of its URL)."""


@dataclass(frozen=True)
class CappedBody:
    """A whole answer read within its bounds: the HTTP status and the (decoded) body."""

    status_code: int
    content: bytes


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1 << 20):g} MiB"


def read_capped(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    server: str,
    deadline_s: float,
    max_bytes: int,
    params: Mapping[str, Any] | None = None,
    connect_s: float = DEFAULT_CONNECT_S,
    started_s: float | None = None,
    mono_s: Callable[[], float] = time.monotonic,
) -> CappedBody:
    """Send `method url` (relative to the client's base URL) and read the whole answer within `deadline_s` seconds
    and `max_bytes` bytes of body; the connection gets `connect_s` seconds. The deadline counts from `started_s` on
    the monotonic clock `mono_s` (now when None: several reads can share one deadline).

    `server` names the server in messages ("Prometheus at http://prom:9090"). Raises HttpReadError when the server
    cannot be reached, sends nothing or not all of its answer by the deadline, or answers more than `max_bytes`.
    """
    start = mono_s() if started_s is None else started_s
    left_s = deadline_s - (mono_s() - start)
    if left_s <= 0:
        raise HttpReadError(f"{server} did not answer within {deadline_s:g} s")
    timeout = httpx.Timeout(left_s, connect=min(connect_s, left_s))
    read = 0
    try:
        with client.stream(method, url, params=params, timeout=timeout) as response:
            announced = response.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > max_bytes:
                raise HttpReadError(
                    f"{server} announced an answer of {int(announced):,} bytes, over the {_mib(max_bytes)} cap on "
                    "one answer: not read"
                )
            chunks: list[bytes] = []
            for chunk in response.iter_bytes():
                read += len(chunk)
                if read > max_bytes:
                    raise HttpReadError(
                        f"{server} answered more than {_mib(max_bytes)}, the cap on one answer: stopped reading"
                    )
                chunks.append(chunk)
                if mono_s() - start > deadline_s:
                    raise HttpReadError(
                        f"{server} did not finish its answer within {deadline_s:g} s (stopped after {read:,} bytes): "
                        "it sends too slowly or never ends"
                    )
            return CappedBody(response.status_code, b"".join(chunks))
    except httpx.ConnectTimeout:
        raise HttpReadError(f"{server} cannot be reached: no connection within {timeout.connect:.3g} s") from None
    except httpx.TimeoutException:
        raise HttpReadError(
            f"{server} did not answer within {deadline_s:g} s (stopped after {read:,} bytes of its answer)"
        ) from None
    except httpx.ConnectError as exc:
        raise HttpReadError(f"{server} cannot be reached: {_said(exc)}") from None
    except (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL) as exc:
        raise HttpReadError(f"{server} broke off its answer: {_said(exc)}") from None


def _said(exc: Exception) -> str:
    """An exception's message as one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
