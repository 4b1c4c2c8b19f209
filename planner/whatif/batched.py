"""A dedicated deployment of a continuous-batching engine, replayed step by step (planner.whatif.steps) per replica.

Requests go to replicas in turn (round-robin, as a plain Kubernetes Service spreads them) unless the caller gives
each request's replica (`replica_of`: a routing policy's choice). Each replica then runs its own scheduler; a
request's TTFT segments are

    queue_ms    arrival → the start of the first step that carries its prompt (waiting for a sequence slot, KV
                blocks, the step in flight and the prompts ahead of it)
    prefill_ms  that start → the end of the step that gives its first token (its chunks, shared with the decodes and
                other prompts of those steps)
    network_ms  the deployment's RTT

and the replica's GPUs are paid for the whole period, as for the slot model.

With an overflow pool (`overflow_…` keys) a replica turns away a request that finds it full when its scheduler first
sees it — every one of its `slots` sequences running, prefilling or waiting, or too few KV blocks free beyond those the
waiting requests need — instead of queueing it, as a gateway with a per-replica concurrency limit spills to a
serverless API; the overflow pool (planner.whatif.pool) serves it as the slot model's overflow does, cold starts and
per-token or per-GPU-hour price included. The dedicated side then never queues past its running sequences.
"""

from __future__ import annotations

import numpy as np

from planner.whatif.deployment import Dedicated
from planner.whatif.outcome import DEFAULT_MAX_WAIT_S, CannotKeepUp, Replay, when_text
from planner.whatif.pool import overflow_run
from planner.whatif.steps import StepConfig, StepOverflow, StepWaitTooLong, kv_blocks_needed, replay_replica
from planner.whatif.trace import Trace

__all__ = ["replay_batched", "round_robin", "step_config"]


def round_robin(n: int, replicas: int) -> np.ndarray:
    """Each of n requests' replica when they are sent in turn (request i to replica i mod replicas)."""
    return np.arange(n) % replicas


def step_config(dep: Dedicated, speed: float = 1.0) -> StepConfig:
    """One replica's scheduler for `dep`, every step cost × `speed`."""
    return StepConfig(
        costs=dep.step_costs.scaled(speed),
        max_num_batched_tokens=dep.max_num_batched_tokens,
        chunked_prefill=bool(dep.chunked_prefill),
        mixed=bool(dep.mixed),
        max_seqs=dep.slots_per_replica,
        kv_blocks=dep.kv_blocks,
        prompt_tail=dep.prompt_tail,
    )


def _check_capacity(dep: Dedicated, trace: Trace, prompt: np.ndarray, cfg: StepConfig, max_wait_ms: float) -> None:
    """CannotKeepUp when even perfect batching leaves the last request waiting past the limit: every prompt token
    and decode token computed, and a step's fixed cost for every max_seqs decode tokens, over all replicas, outlast
    the trace's span by more than `max_wait_ms`."""
    if trace.n < 2:
        return
    decode = np.maximum(trace.output_tokens - 1.0, 0.0)
    c = cfg.costs
    work_ms = c.prompt_token_ms * prompt + decode * (c.decode_token_ms + c.step_ms / cfg.max_seqs)
    backlog_ms = float(work_ms[:-1].sum()) / dep.replicas - trace.span_ms
    if backlog_ms > max_wait_ms:
        demand = float(work_ms.sum()) / max(trace.span_ms, 1.0)
        raise CannotKeepUp(
            dep.name,
            f"can never keep up: the trace keeps {demand:,.1f} replicas of this engine busy on average (prompt and "
            f"decode tokens at its step costs, {cfg.max_seqs} sequences a step) but the deployment has "
            f"{dep.replicas}; the queue would grow without bound (the last request would wait at least "
            f"{backlog_ms / 1000:,.0f} s)",
        )


def replay_batched(
    dep: Dedicated,
    trace: Trace,
    *,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
    slowdown: np.ndarray | None = None,
    speed: float = 1.0,
    replica_of: np.ndarray | None = None,
) -> Replay:
    """Replay `trace` on `dep` (a batching engine) replica by replica; see the module docstring.

    slowdown: per request, how many times its own prompt's compute is slower than the rates say (request-to-request
    jitter); speed: every step's cost × this (the engine's speed level in the run). replica_of: each request's
    replica (0 … replicas − 1), round-robin when None.
    Raises CannotKeepUp when the deployment can never serve the trace, a request waits past `max_wait_s`, or a
    request needs more KV blocks than a replica has.
    """
    n = trace.n
    cfg = step_config(dep, speed)
    prompt = trace.uncached_tokens + dep.prompt_overhead_tokens.value
    if slowdown is not None:
        prompt = prompt * slowdown
    max_wait_ms = max_wait_s * 1000.0
    spill = dep.overflow is not None
    if not spill:  # an overflow pool takes what the replicas cannot: it has its own limit (planner.whatif.pool)
        _check_capacity(dep, trace, prompt, cfg, max_wait_ms)
    output = np.maximum(np.round(trace.output_tokens), 1).astype(np.int64)
    need = None
    if dep.kv_blocks > 0:
        whole = trace.prompt_tokens + dep.prompt_overhead_tokens.value
        need = np.asarray(kv_blocks_needed(whole, trace.output_tokens, dep.block_size))
    where = round_robin(n, dep.replicas) if replica_of is None else np.asarray(replica_of)
    start = np.zeros(n)
    first = np.zeros(n)
    end = np.zeros(n)
    decodes = np.zeros(n, dtype=np.int64)
    overflow = np.zeros(n, dtype=bool)
    steps = 0
    busy_ms = 0.0
    arrival = trace.arrival_ms
    for r in range(dep.replicas):
        idx = np.flatnonzero(where == r)
        if idx.size == 0:
            continue
        try:
            res = replay_replica(
                arrival[idx].tolist(),
                prompt[idx].tolist(),
                output[idx].tolist(),
                None if need is None else need[idx].tolist(),
                cfg,
                max_wait_ms,
                spill,
            )
        except StepWaitTooLong as exc:
            raise CannotKeepUp(
                dep.name,
                f"cannot keep up: a request arriving at {when_text(exc.arrival_ms)} would wait "
                f"{exc.wait_ms / 1000:,.0f} s for its first step (limit {max_wait_s:,.0f} s); the queue grows faster "
                "than it drains around then",
                at_ms=exc.arrival_ms,
            ) from None
        except StepOverflow as exc:
            i = int(idx[exc.index])
            raise CannotKeepUp(
                dep.name,
                f"a request of {trace.prompt_tokens[i]:,.0f} prompt and {trace.output_tokens[i]:,.0f} output tokens "
                f"needs {exc.blocks:,} KV blocks of {dep.block_size} tokens; a replica has {dep.kv_blocks:,}",
                at_ms=float(arrival[i]),
            ) from None
        start[idx] = res.start_ms
        first[idx] = res.first_ms
        end[idx] = res.end_ms
        decodes[idx] = res.decodes
        if res.spilled is not None:
            overflow[idx] = res.spilled
        steps += res.steps
        busy_ms += res.busy_ms
    queue = start - arrival
    prefill = first - start
    cold = np.zeros(n)
    network = np.full(n, dep.rtt_ms.value)
    t0 = float(arrival[0]) if n else 0.0
    done = end.copy()
    spilled = np.flatnonzero(overflow)
    run = None
    if dep.overflow is not None and spilled.size:
        factor = None if slowdown is None and speed == 1.0 else (np.ones(n) if slowdown is None else slowdown) * speed
        run = overflow_run(dep.overflow, trace, spilled, t0, max_wait_ms, factor)
        at = arrival[spilled]
        cold[spilled] = np.clip(np.minimum(run.start_ms, run.ready_ms) - at, 0.0, None)
        queue[spilled] = run.start_ms - at - cold[spilled]
        prefill[spilled] = run.prefill_ms
        network[spilled] = dep.overflow.rtt_ms.value
        done[spilled] = run.start_ms + run.hold_ms
        decodes[spilled] = 0
    period_ms = max(float(done.max()) - t0, 0.0) if n else 0.0
    dedicated_h = dep.replicas * dep.gpus_per_replica * period_ms / 3_600_000.0
    serverless_h = run.gpu_hours(dep.overflow, period_ms) if run is not None and dep.overflow is not None else 0.0
    return Replay(
        name=dep.name,
        arrival_ms=arrival,
        queue_ms=queue,
        cold_ms=cold,
        prefill_ms=prefill,
        network_ms=network,
        overflow=overflow,
        dedicated_gpu_hours=dedicated_h,
        serverless_gpu_hours=serverless_h,
        serverless_tokens=float(trace.prompt_tokens[overflow].sum() + trace.output_tokens[overflow].sum()),
        period_h=period_ms / 3_600_000.0,
        cold_starts=run.cold_starts if run is not None else 0,
        peak_replicas=dep.replicas + (run.peak if run is not None else 0),
        first_step_decodes=decodes,
        engine_steps=steps,
        engine_busy_ms=busy_ms,
    )
