"""A serverless pool in the what-if replay: replicas started on demand, packed, released when idle (anchors §5).

Used for a serverless candidate and for a dedicated candidate's overflow pool, whatever the dedicated side runs (the
slot model's FIFO slots, planner.whatif.replay, or a batching engine's scheduler, planner.whatif.batched): a request
the dedicated side does not take is served here as a slot of the pool. service_ms is the slot model's service time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from heapq import heapreplace

import numpy as np

from planner.whatif.deployment import Serverless
from planner.whatif.outcome import CannotKeepUp, when_text
from planner.whatif.trace import Trace

__all__ = ["NEG_INF", "OverflowRun", "overflow_run", "serverless_pool", "service_ms", "too_long"]

NEG_INF = float("-inf")


def service_ms(
    trace: Trace, prefill_tokens_per_s: float, decode_tokens_per_s: float, prompt_overhead_tokens: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(prefill_ms, slot-holding ms) per request.

    Prefill: (uncached prompt tokens + the deployment's prompt overhead tokens: template, system prompt)
    / prefill rate; the first token comes out of prefill, so the slot is then held for the other
    output_tokens − 1 at the decode rate (as the simulated endpoint does).
    """
    prefill = (trace.uncached_tokens + prompt_overhead_tokens) * (1000.0 / prefill_tokens_per_s)
    decode = np.maximum(trace.output_tokens - 1.0, 0.0) * (1000.0 / decode_tokens_per_s)
    return prefill, prefill + decode


def too_long(name: str, a: float, s: float, max_wait_ms: float) -> CannotKeepUp:
    """CannotKeepUp for a request arriving at `a` (ms) that would start at `s` (ms), past the wait limit."""
    return CannotKeepUp(
        name,
        f"cannot keep up: a request arriving at {when_text(a)} would wait {(s - a) / 1000:,.0f} s for a slot "
        f"(limit {max_wait_ms / 1000:,.0f} s); the queue grows faster than it drains around then",
        at_ms=a,
    )


def serverless_pool(
    pool_spec: Serverless, arr: list[float], svc: list[float], t0: float, max_wait_ms: float
) -> tuple[list[float], list[float], float, int, int, int]:
    """Serverless pool replay of requests arriving at `arr` (ms) holding a slot `svc` ms each: (start, ready-at of a
    fresh replica taken (else -inf), dynamic GPU-ms, pinned count, cold starts, peak). Raises CannotKeepUp when a
    request would wait past `max_wait_ms`."""
    name = pool_spec.name
    slots = pool_spec.slots_per_replica
    max_r = pool_spec.max_replicas
    pinned = pool_spec.min_replicas
    window = pool_spec.scale_down_window_s.value * 1000.0
    cold = pool_spec.cold_start_s.value * 1000.0
    heaps: list[list[float]] = []
    last_end: list[float] = []
    ready: list[float] = []
    born: list[float] = []
    pool: list[int] = []  # live replica ids, oldest first; ids < pinned never expire
    for r in range(pinned):
        heaps.append([t0] * slots)
        last_end.append(t0)
        ready.append(t0)
        born.append(t0)
        pool.append(r)
    n = len(arr)
    start = [0.0] * n
    ready_of = [0.0] * n
    gpu_ms = 0.0
    cold_starts = 0
    peak = len(pool)
    inf = math.inf
    for i in range(n):
        a = arr[i]
        chosen = -1
        best = inf
        best_r = -1
        pending = False
        dead = None
        # Packing: the oldest live replica with a free slot takes the request, so extra replicas can cool down.
        for r in pool:
            h0 = heaps[r][0]
            if h0 <= a:
                if r >= pinned and a - last_end[r] > window:
                    if dead is None:
                        dead = []
                    dead.append(r)
                    continue
                chosen = r
                break
            if h0 < best:
                best = h0
                best_r = r
            if h0 == ready[r]:
                pending = True  # a starting replica still has an unclaimed slot: no second scale-up for it
        if dead is not None:
            for r in dead:
                pool.remove(r)
                gpu_ms += last_end[r] + window - born[r]
        if chosen >= 0:
            s = a
        else:
            if not pending and len(pool) < max_r:
                r = len(heaps)
                up = a + cold
                heaps.append([up] * slots)
                last_end.append(up)
                ready.append(up)
                born.append(a)
                pool.append(r)
                cold_starts += 1
                if len(pool) > peak:
                    peak = len(pool)
                if up < best:
                    best = up
                    best_r = r
            chosen = best_r
            s = best
            if s - a > max_wait_ms:
                raise too_long(name, a, s, max_wait_ms)
        e = s + svc[i]
        heapreplace(heaps[chosen], e)
        if e > last_end[chosen]:
            last_end[chosen] = e
        start[i] = s
        # Cold only when the request takes a starting replica's fresh slot; behind another request it is queueing.
        ready_of[i] = s if s == ready[chosen] else NEG_INF
    for r in pool:
        if r >= pinned:
            gpu_ms += last_end[r] + window - born[r]
    return start, ready_of, gpu_ms, pinned, cold_starts, peak


@dataclass(frozen=True)
class OverflowRun:
    """The requests a dedicated side sent to its overflow pool, served there (arrays over those requests, in trace
    order, ms): start (of service), ready-at of a fresh replica taken (-inf when none), prefill and slot hold; and the
    pool's dynamic GPU-ms, pinned replicas, cold starts and peak replicas."""

    start_ms: np.ndarray
    ready_ms: np.ndarray
    prefill_ms: np.ndarray
    hold_ms: np.ndarray
    dynamic_gpu_ms: float
    pinned: int
    cold_starts: int
    peak: int

    def gpu_hours(self, pool: Serverless, period_ms: float) -> float:
        """The pool's GPU-hours over a period of `period_ms` (its min replicas kept the whole period)."""
        return (self.dynamic_gpu_ms + self.pinned * period_ms) * pool.gpus_per_replica / 3_600_000.0


def overflow_run(
    pool: Serverless,
    trace: Trace,
    idx: np.ndarray,
    t0: float,
    max_wait_ms: float,
    slowdown: np.ndarray | None = None,
) -> OverflowRun:
    """Serve the requests `idx` of `trace` (indices, in order) on the overflow `pool` from `t0` (ms, the replay's
    start), each request's prefill and hold × its `slowdown` (over the whole trace; None = 1). Raises CannotKeepUp
    when a request would wait past `max_wait_ms`."""
    pre, hold = service_ms(
        trace.take(idx),
        pool.prefill_tokens_per_s.value,
        pool.decode_tokens_per_s.value,
        pool.prompt_overhead_tokens.value,
    )
    if slowdown is not None:
        pre, hold = pre * slowdown[idx], hold * slowdown[idx]
    s, r, gpu_ms, pinned, cold_starts, peak = serverless_pool(
        pool, trace.arrival_ms[idx].tolist(), hold.tolist(), t0, max_wait_ms
    )
    return OverflowRun(np.asarray(s), np.asarray(r), pre, hold, gpu_ms, pinned, cold_starts, peak)
