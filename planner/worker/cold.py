"""The cold-reading state machine (segment 2 by provocation).

    idle ──(idle_until reached)──► cold ──(first success)──► warm ──► done
      │                              │                          │
      └──────── stop / error ────────┴──────────────────────────┴──► failed

The worker pauses the endpoint's schedule (its slots are stored as skipped,
"paused for a cold reading"), waits until ``idle_s`` after the endpoint's last
probe, then sends one probe tagged cold and keeps retrying 503s and other
retryable failures until the first success (up to `cold_deadline_s`): the cold
figure is the time from the first attempt's send to that success's first
token, so replica start-up behind 503s counts. Then one immediate warm probe;
cold − warm estimates the weight-loading segment. A probe interval shorter than
the scale-down window keeps the endpoint warm by itself (planner.endpoints.cold_policy.keeps_itself_warm).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.probes.ttft import TtftSample

__all__ = [
    "ColdOutcome",
    "measure_cold_then_warm",
]

FATAL_CLASSES = frozenset({"auth", "not_found", "dns", "tls", "not_sse", "bad_json"})


@dataclass
class ColdOutcome:
    """Result of the cold + warm probes. Samples are the probe engine's TtftSample objects."""

    state: str  # done | failed
    detail: str = ""
    cold_sample: TtftSample | None = None
    warm_sample: TtftSample | None = None
    cold_started_at_ms: int | None = None
    cold_ttft_ms: float | None = None
    attempts: int = 0
    status_503: int = 0
    failures: list[TtftSample] = field(default_factory=list)

    @property
    def cold_minus_warm_ms(self) -> float | None:
        warm = self.warm_sample.ttft_ms if self.warm_sample is not None else None
        if self.cold_ttft_ms is None or warm is None:
            return None
        return self.cold_ttft_ms - warm


async def measure_cold_then_warm(
    probe: Callable[[], Awaitable[TtftSample]],
    *,
    cold_deadline_s: float = 600.0,
    max_backoff_s: float = 5.0,
    mono: Callable[[], float] = time.monotonic,
    wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ColdOutcome:
    """The cold then warm half of a reading (the idle wait is the caller's).

    `probe()` sends one single-attempt probe and returns a TtftSample-like object
    (ok, ttft_ms, status_code, error_class). Retries until the first success or
    `cold_deadline_s`, waiting 0.5 s, 1 s, 2 s … between attempts, at most `max_backoff_s`
    (keep it under the scale-down window, or the endpoint unloads again between attempts);
    a non-retryable failure (auth, 404, DNS, TLS, not a stream) ends the reading as failed.
    Never raises for probe failures.
    """
    out = ColdOutcome(state="failed", cold_started_at_ms=wall_ms())
    t0 = mono()
    backoff_s = min(0.5, max_backoff_s)
    while True:
        t_attempt = mono()
        sample = await probe()
        out.attempts += 1
        ttft_ms = getattr(sample, "ttft_ms", None)
        if getattr(sample, "ok", False) and ttft_ms is not None:
            out.cold_sample = sample
            out.cold_ttft_ms = (t_attempt - t0) * 1000.0 + float(ttft_ms)
            break
        out.failures.append(sample)
        if getattr(sample, "status_code", None) == 503:
            out.status_503 += 1
        err = getattr(sample, "error_class", None)
        if err in FATAL_CLASSES:
            out.cold_sample = sample
            out.detail = f"cold probe failed: {err} ({getattr(sample, 'error_detail', '') or ''})".strip()
            return out
        if mono() - t0 + backoff_s > cold_deadline_s:
            out.cold_sample = sample
            out.detail = f"no successful cold probe within {cold_deadline_s:g} s ({out.attempts} attempts, last: {err})"
            return out
        await sleep(backoff_s)
        backoff_s = min(backoff_s * 2, max_backoff_s)
    out.warm_sample = await probe()
    if not getattr(out.warm_sample, "ok", False) or getattr(out.warm_sample, "ttft_ms", None) is None:
        out.detail = f"warm probe failed: {getattr(out.warm_sample, 'error_class', 'unknown')}"
        return out
    out.state = "done"
    return out
