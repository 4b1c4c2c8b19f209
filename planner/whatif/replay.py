"""Discrete-event replay of a request trace against one candidate deployment, in virtual time.

No clock and no sleeping: requests are taken in arrival order and each is given the slot
that frees first (FIFO across the pool, Kiefer–Wolfowitz recursion over a heap of slot-free
times), so a day of traffic replays in seconds. Each TTFT is split into the four segments:

    queue_ms    waiting for a busy slot
    cold_ms     waiting for a replica that is still starting (weight loading)
    prefill_ms  uncached prompt tokens / prefill rate
    network_ms  the deployment's RTT

A slot is held for prefill plus (output_tokens − 1) / decode rate (the first token ends prefill). Serverless
replicas follow the trace-driven pool of anchors §5: each replica keeps its slots' free times and the end of its
last request; it is released once idle longer than the scale-down window; a request that
finds no free slot (and no starting replica with an unclaimed slot) starts a new replica if
the pool is below its max, and takes whichever comes first, a slot freeing up or the new
replica becoming ready. Dedicated replicas never cool down; with an overflow pool, a request
that finds every dedicated slot busy on arrival goes to the overflow pool instead of queueing.

A deployment whose slots cannot serve the trace's work in the trace's time, or whose queue
wait passes `max_wait_s`, raises `CannotKeepUp` instead of replaying a queue that never drains.
"""

from __future__ import annotations

import math
from heapq import heapreplace

import numpy as np

from planner.whatif.batched import replay_batched
from planner.whatif.deployment import Dedicated, Deployment, Serverless
from planner.whatif.outcome import DEFAULT_MAX_WAIT_S, SEGMENT_KEYS, CannotKeepUp, Replay, when_text
from planner.whatif.routing import routed
from planner.whatif.trace import Trace

__all__ = ["DEFAULT_MAX_WAIT_S", "CannotKeepUp", "Replay", "SEGMENT_KEYS", "replay", "service_ms"]

_NEG_INF = float("-inf")


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


def _too_long(name: str, a: float, s: float, max_wait_ms: float) -> CannotKeepUp:
    return CannotKeepUp(
        name,
        f"cannot keep up: a request arriving at {when_text(a)} would wait {(s - a) / 1000:,.0f} s for a slot "
        f"(limit {max_wait_ms / 1000:,.0f} s); the queue grows faster than it drains around then",
        at_ms=a,
    )


def _fixed(name: str, arr: list[float], svc: list[float], slots: int, max_wait_ms: float) -> list[float]:
    """Start times on `slots` always-warm slots, FIFO."""
    heap = [_NEG_INF] * slots
    start = [0.0] * len(arr)
    for i, a in enumerate(arr):
        s = heap[0]
        if s <= a:
            s = a
        elif s - a > max_wait_ms:
            raise _too_long(name, a, s, max_wait_ms)
        heapreplace(heap, s + svc[i])
        start[i] = s
    return start


def _per_replica(
    dep: Dedicated, arr: np.ndarray, hold: np.ndarray, replica_of: np.ndarray, max_wait_ms: float
) -> np.ndarray:
    """Start times when each request queues FIFO on its own replica's slots (a router's choice, planner.whatif.routing)
    instead of on the first free slot of the pool."""
    start = np.empty(len(arr))
    for r in range(dep.replicas):
        idx = np.flatnonzero(replica_of == r)
        if idx.size:
            start[idx] = _fixed(dep.name, arr[idx].tolist(), hold[idx].tolist(), dep.slots_per_replica, max_wait_ms)
    return start


def _admit(arr: list[float], svc: list[float], slots: int) -> list[bool]:
    """Which requests find a free always-warm slot on arrival (the rest overflow; nobody queues)."""
    heap = [_NEG_INF] * slots
    taken = [False] * len(arr)
    for i, a in enumerate(arr):
        if heap[0] <= a:
            heapreplace(heap, a + svc[i])
            taken[i] = True
    return taken


def _pool(
    pool_spec: Serverless, arr: list[float], svc: list[float], t0: float, max_wait_ms: float
) -> tuple[list[float], list[float], float, int, int, int]:
    """Serverless pool replay: (start, ready-at of a fresh replica taken (else -inf), dynamic GPU-ms, pinned count,
    cold starts, peak)."""
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
                raise _too_long(name, a, s, max_wait_ms)
        e = s + svc[i]
        heapreplace(heaps[chosen], e)
        if e > last_end[chosen]:
            last_end[chosen] = e
        start[i] = s
        # Cold only when the request takes a starting replica's fresh slot; behind another request it is queueing.
        ready_of[i] = s if s == ready[chosen] else _NEG_INF
    for r in pool:
        if r >= pinned:
            gpu_ms += last_end[r] + window - born[r]
    return start, ready_of, gpu_ms, pinned, cold_starts, peak


def _check_capacity(dep: Deployment, trace: Trace, hold_ms: np.ndarray, max_wait_ms: float) -> None:
    """Raise CannotKeepUp when even perfect packing leaves the last request waiting past the limit.

    Work arriving before the last request, spread over every slot the deployment can ever have,
    still outlasts the trace's span by more than `max_wait_ms`: no schedule drains that queue.
    """
    if trace.n < 2:
        return
    span_ms = trace.span_ms
    backlog_ms = float(hold_ms[:-1].sum()) / dep.max_slots - span_ms
    if backlog_ms > max_wait_ms:
        demand = float(hold_ms.sum()) / max(span_ms, 1.0)
        rate = trace.n / max(span_ms, 1.0) * 1000
        raise CannotKeepUp(
            dep.name,
            f"can never keep up: the trace needs {demand:,.1f} slots busy on average "
            f"({rate:,.2f} requests/s × {hold_ms.mean() / 1000:,.2f} s per request) but the deployment has "
            f"at most {dep.max_slots} slots; the queue would grow without bound "
            f"(the last request would wait at least {backlog_ms / 1000:,.0f} s)",
        )


def replay(
    dep: Deployment,
    trace: Trace,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
    slowdown: np.ndarray | None = None,
    speed: float = 1.0,
) -> Replay:
    """Replay `trace` against `dep` in virtual time and return per-request TTFT segments and totals.

    `slowdown`: per request, how many times longer than the deployment's rates say its prefill and slot hold take
    (1 = as specified; planner.whatif.interval draws them from the deployment's speed spread); `speed`: the same
    for the whole run (a batching engine's every step takes `speed` × its cost).
    A dedicated deployment with a batching engine (engine=vllm|sglang|llama.cpp) is replayed step by step
    (planner.whatif.batched). Runs in O(n log slots) for a fixed pool and O(n · replicas) for a serverless pool.
    A dedicated deployment with routing= sends each request to a replica by that policy, each replica keeping its own
    prefix cache (planner.whatif.routing), and queues it there.
    Raises CannotKeepUp when the deployment cannot serve the trace (see the module docstring).
    """
    trace, replica_of = routed(dep, trace)  # its replica, and the tokens that replica's cache serves (issue 45)
    if isinstance(dep, Dedicated) and dep.batching:
        return replay_batched(dep, trace, max_wait_s=max_wait_s, slowdown=slowdown, speed=speed, replica_of=replica_of)
    if speed != 1.0:
        slowdown = np.full(trace.n, speed) if slowdown is None else slowdown * speed
    n = trace.n
    max_wait_ms = max_wait_s * 1000.0
    prefill, hold = service_ms(
        trace, dep.prefill_tokens_per_s.value, dep.decode_tokens_per_s.value, dep.prompt_overhead_tokens.value
    )
    if slowdown is not None:
        prefill, hold = prefill * slowdown, hold * slowdown
    _check_capacity(dep, trace, hold, max_wait_ms)
    arr_np = trace.arrival_ms
    t0 = float(arr_np[0])
    arr = arr_np.tolist()
    overflow = np.zeros(n, dtype=bool)
    ready = np.full(n, _NEG_INF)
    network = np.full(n, dep.rtt_ms.value)
    dyn_gpu_ms = 0.0
    pinned = 0
    cold_starts = 0
    peak = 0
    sl_pool: Serverless | None = None
    if isinstance(dep, Serverless):
        sl_pool = dep
        s, r, dyn_gpu_ms, pinned, cold_starts, peak = _pool(dep, arr, hold.tolist(), t0, max_wait_ms)
        start = np.asarray(s)
        ready = np.asarray(r)
    elif dep.overflow is None:
        if replica_of is None:
            slots = dep.replicas * dep.slots_per_replica
            start = np.asarray(_fixed(dep.name, arr, hold.tolist(), slots, max_wait_ms))
        else:
            start = _per_replica(dep, arr_np, hold, replica_of, max_wait_ms)
        peak = dep.replicas
    else:
        sl_pool = dep.overflow
        taken = np.asarray(_admit(arr, hold.tolist(), dep.replicas * dep.slots_per_replica), dtype=bool)
        overflow = ~taken
        start = arr_np.copy()
        idx = np.flatnonzero(overflow)
        if idx.size:
            o_pre, o_hold = service_ms(
                trace.take(idx),
                sl_pool.prefill_tokens_per_s.value,
                sl_pool.decode_tokens_per_s.value,
                sl_pool.prompt_overhead_tokens.value,
            )
            if slowdown is not None:
                o_pre, o_hold = o_pre * slowdown[idx], o_hold * slowdown[idx]
            prefill[idx] = o_pre
            hold[idx] = o_hold
            network[idx] = sl_pool.rtt_ms.value
            s, r, dyn_gpu_ms, pinned, cold_starts, o_peak = _pool(
                sl_pool, arr_np[idx].tolist(), o_hold.tolist(), t0, max_wait_ms
            )
            start[idx] = s
            ready[idx] = r
            peak = o_peak
        peak += dep.replicas
    wait = start - arr_np
    cold = np.clip(np.minimum(start, ready) - arr_np, 0.0, None)
    queue = wait - cold
    end_ms = float((start + hold).max())
    period_ms = max(end_ms - t0, 0.0)
    ms_per_h = 3_600_000.0
    serverless_gpu_h = 0.0
    serverless_tokens = 0.0
    if sl_pool is not None:
        serverless_gpu_h = (dyn_gpu_ms + pinned * period_ms) * sl_pool.gpus_per_replica / ms_per_h
        mask = overflow if isinstance(dep, Dedicated) else np.ones(n, dtype=bool)
        serverless_tokens = float(trace.prompt_tokens[mask].sum() + trace.output_tokens[mask].sum())
    dedicated_gpu_h = dep.replicas * dep.gpus_per_replica * period_ms / ms_per_h if isinstance(dep, Dedicated) else 0.0
    return Replay(
        name=dep.name,
        arrival_ms=arr_np,
        ttft_ms=network + queue + cold + prefill,
        queue_ms=queue,
        cold_ms=cold,
        prefill_ms=prefill,
        network_ms=network,
        overflow=overflow,
        gpu_hours=dedicated_gpu_h + serverless_gpu_h,
        dedicated_gpu_hours=dedicated_gpu_h,
        serverless_gpu_hours=serverless_gpu_h,
        serverless_tokens=serverless_tokens,
        period_h=period_ms / ms_per_h,
        cold_starts=cold_starts,
        peak_replicas=peak,
    )
