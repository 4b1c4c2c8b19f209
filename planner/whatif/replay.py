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

from heapq import heapreplace

import numpy as np

from planner.whatif.batched import replay_batched
from planner.whatif.deployment import Dedicated, Deployment, Serverless
from planner.whatif.outcome import DEFAULT_MAX_WAIT_S, SEGMENT_KEYS, CannotKeepUp, Replay
from planner.whatif.pool import NEG_INF, overflow_run, serverless_pool, service_ms, too_long
from planner.whatif.routing import routed
from planner.whatif.trace import Trace

__all__ = ["DEFAULT_MAX_WAIT_S", "CannotKeepUp", "Replay", "SEGMENT_KEYS", "replay", "service_ms"]  # service_ms: pool's

_NEG_INF = NEG_INF


def _fixed(name: str, arr: list[float], svc: list[float], slots: int, max_wait_ms: float) -> list[float]:
    """Start times on `slots` always-warm slots, FIFO."""
    heap = [_NEG_INF] * slots
    start = [0.0] * len(arr)
    for i, a in enumerate(arr):
        s = heap[0]
        if s <= a:
            s = a
        elif s - a > max_wait_ms:
            raise too_long(name, a, s, max_wait_ms)
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
        s, r, dyn_gpu_ms, pinned, cold_starts, peak = serverless_pool(dep, arr, hold.tolist(), t0, max_wait_ms)
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
            spill = overflow_run(sl_pool, trace, idx, t0, max_wait_ms, slowdown)
            prefill[idx] = spill.prefill_ms
            hold[idx] = spill.hold_ms
            network[idx] = sl_pool.rtt_ms.value
            start[idx] = spill.start_ms
            ready[idx] = spill.ready_ms
            dyn_gpu_ms, pinned, cold_starts, peak = spill.dynamic_gpu_ms, spill.pinned, spill.cold_starts, spill.peak
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
        queue_ms=queue,
        cold_ms=cold,
        prefill_ms=prefill,
        network_ms=network,
        overflow=overflow,
        dedicated_gpu_hours=dedicated_gpu_h,
        serverless_gpu_hours=serverless_gpu_h,
        serverless_tokens=serverless_tokens,
        period_h=period_ms / ms_per_h,
        cold_starts=cold_starts,
        peak_replicas=peak,
    )
