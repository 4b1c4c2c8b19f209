"""The continuous-batching replay: a discrete-event model of an engine's scheduler, step by step, in virtual time.

One replica of a batching engine (vLLM, SGLang, llama.cpp; planner.whatif.engines) runs scheduler steps back to
back while it has work. Each step, in the order vLLM's V1 scheduler fills it:

1. every running request that has its first token carries one decode token (with `mixed` = 0, SGLang's default, a
   step that has prompt work carries no decodes: they wait for the next decode step);
2. requests part-way through their prompt carry their next chunk, first come first served;
3. waiting requests are admitted in arrival order while the replica runs fewer than `max_seqs` sequences, the KV
   cache has blocks for the request's prompt and output (`kv_blocks`; 0 = not limiting), and the step has budget.

Prompt tokens fill what is left of the token budget `max_num_batched_tokens`; with chunked prefill a prompt that does
not fit is split across steps, without it the prompt waits for a step with room (or runs alone in an empty step when
it is longer than the whole budget). The step then takes `StepCosts.step_time_ms(prompt tokens, decode tokens)`; a
request whose prompt's last chunk was in it has its first token at the step's end, so a new request's first token
waits on the decodes in flight. A request leaves after its output tokens − 1 further decode tokens.

`prompt_tail` (tokens, 0 = none): the engine runs a prompt's last that many tokens in a step after the rest of it.
llama.cpp's server does so for a model whose KV cache it checkpoints (sliding-window attention, hybrid or recurrent
models such as Gemma 3): it stops filling a prompt's batch 4 tokens before its end so that a checkpoint can be taken
there (llama.cpp PR 20288), and the last 4 go in the next iteration, with whatever that iteration admits. So a
prompt's first token waits for the next step too, and a prompt arriving while another's body runs shares that step
with the other's tail: the first request's first token then waits for the second's whole prompt.

Speed: runs of decode-only steps (nothing waiting that could be admitted) are taken in one jump up to the next
completion or arrival, so the loop turns about three times per request plus once per prompt chunk, whatever the
output lengths (bench/bench_step_replay.py measures a million requests).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from heapq import heappop, heappush

import numpy as np

from planner.errors import PlannerError
from planner.whatif.engines import StepCosts

__all__ = ["ReplicaSteps", "StepConfig", "StepOverflow", "StepWaitTooLong", "kv_blocks_needed", "replay_replica"]


@dataclass(frozen=True)
class StepConfig:
    """One replica's scheduler: step costs, token budget per step (tokens), chunked prefill and mixed steps,
    most running sequences, KV blocks (0 = not limiting), and the prompt's last tokens run in a step of their own
    (prompt_tail, tokens; 0 = none: see the module docstring)."""

    costs: StepCosts
    max_num_batched_tokens: int
    chunked_prefill: bool
    mixed: bool
    max_seqs: int
    kv_blocks: int = 0
    prompt_tail: int = 0


class StepWaitTooLong(PlannerError, RuntimeError):
    """A request waited longer than the limit for its first step: the replica cannot keep up (arrival, wait in ms)."""

    def __init__(self, arrival_ms: float, wait_ms: float) -> None:
        super().__init__(arrival_ms, wait_ms)
        self.arrival_ms = arrival_ms
        self.wait_ms = wait_ms


class StepOverflow(PlannerError, RuntimeError):
    """A request needs more KV blocks than the replica has (its index in the replica's requests, blocks needed)."""

    def __init__(self, index: int, blocks: int) -> None:
        super().__init__(index, blocks)
        self.index = index
        self.blocks = blocks


@dataclass(frozen=True)
class ReplicaSteps:
    """Per request of one replica (lists in its arrival order): the start of its first step (ms), its first token
    (ms), its last token (ms), and the decode tokens in the step that gave its first token; and the steps run and
    their total time (ms: the replica's busy time); with spill, which requests it turned away."""

    start_ms: list[float]
    first_ms: list[float]
    end_ms: list[float]
    decodes: list[int]
    steps: int
    busy_ms: float = 0.0
    spilled: list[bool] | None = None  # with spill: the requests the replica did not take (their times are 0)


def replay_replica(
    arrival_ms: list[float],
    prompt_tokens: list[float],
    output_tokens: list[int],
    kv_need: list[int] | None,
    cfg: StepConfig,
    max_wait_ms: float = math.inf,
    spill: bool = False,
) -> ReplicaSteps:
    """Replay one replica's requests (sorted by arrival) through its scheduler (see the module docstring).

    prompt_tokens: tokens each request prefills (its uncached prompt and any overhead; at least 1 is computed);
    output_tokens: tokens it generates (at least 1: the first comes out of its prefill); kv_need: KV blocks it holds
    from admission to its last token (None when cfg.kv_blocks is 0). spill: a request that finds the replica full
    when the scheduler first sees it (every one of max_seqs sequences running, prefilling or waiting, or too few KV
    blocks free beyond those the waiting requests need) is turned away instead of queued (`spilled`: an overflow pool
    serves it), decided at the first step boundary after its arrival, where the engine would admit or queue it.
    Raises StepOverflow when a request needs more KV blocks than the replica has, StepWaitTooLong when a request
    waits past `max_wait_ms` for its first step.
    """
    n = len(arrival_ms)
    c0, a, b = cfg.costs.step_ms, cfg.costs.prompt_token_ms, cfg.costs.decode_token_ms
    budget, chunked, mixed, max_seqs = cfg.max_num_batched_tokens, cfg.chunked_prefill, cfg.mixed, cfg.max_seqs
    limited = cfg.kv_blocks > 0 and kv_need is not None
    need = kv_need if limited and kv_need is not None else [0] * n
    if limited and not spill:
        worst = max(need, default=0)
        if worst > cfg.kv_blocks:
            raise StepOverflow(need.index(worst), worst)
    free = cfg.kv_blocks if limited else 0
    rem = [p if p >= 1.0 else 1.0 for p in prompt_tokens]
    # A prompt longer than the tail runs its body first; its tail is put back to prefill in the next step.
    tail_of = float(cfg.prompt_tail)
    tail = [tail_of if x > tail_of else 0.0 for x in rem] if tail_of > 0 else None
    if tail is not None:
        rem = [x - t for x, t in zip(rem, tail, strict=True)]
    start = [0.0] * n
    first = [0.0] * n
    end = [0.0] * n
    decodes = [0] * n
    spilled = [False] * n if spill else None
    held = 0  # KV blocks the waiting requests will need (spill only)
    waiting: deque[int] = deque()
    prefilling: list[int] = []
    heap: list[tuple[int, int]] = []  # (value of the decode counter at which the request is done, request)
    done_at = 0  # decode steps run so far: a decoding request's remaining tokens are its finish mark − this
    t = -math.inf
    i = 0
    steps = 0
    busy = 0.0
    ceil = math.ceil
    while True:
        if not waiting and not prefilling and not heap:
            if i >= n:
                break
            if t < arrival_ms[i]:
                t = arrival_ms[i]
        running = len(heap)
        while i < n and arrival_ms[i] <= t:
            if spilled is not None and (
                running + len(prefilling) + len(waiting) >= max_seqs or (limited and need[i] > free - held)
            ):
                spilled[i] = True
            else:
                waiting.append(i)
                held += need[i]
            i += 1
        room = budget - running if mixed else budget
        admissible = (
            bool(waiting)
            and room > 0
            and running + len(prefilling) < max_seqs
            and (not limited or need[waiting[0]] <= free)
        )
        if not prefilling and not admissible:
            # Decode-only steps change nothing until a request finishes (or one arrives that can be admitted): jump.
            step = c0 + b * running
            k = heap[0][0] - done_at
            if i < n and (spill or (not waiting and running < max_seqs)) and step > 0:
                to_arrival = ceil((arrival_ms[i] - t) / step)
                if to_arrival < k:
                    k = to_arrival if to_arrival > 1 else 1
            t += k * step
            busy += k * step
            done_at += k
            steps += k
            while heap and heap[0][0] <= done_at:
                r = heappop(heap)[1]
                end[r] = t
                if limited:
                    free += need[r]
            if waiting and t - arrival_ms[waiting[0]] > max_wait_ms:
                raise StepWaitTooLong(arrival_ms[waiting[0]], t - arrival_ms[waiting[0]])
            continue
        # A step with prompt work: decodes first (when mixed), then chunks of running prompts, then admissions.
        dtok = running if mixed else 0
        left: float = room
        ptok = 0.0
        finished: list[int] = []
        still: list[int] = []
        for r in prefilling:
            x = rem[r]
            if left <= 0:
                still.append(r)
            elif x <= left or (not chunked and ptok == 0):
                ptok += x
                left -= x
                finished.append(r)
            elif chunked:
                rem[r] = x - left
                ptok += left
                left = 0
                still.append(r)
            else:
                still.append(r)
        active = running + len(prefilling)
        while waiting and left > 0 and active < max_seqs:
            r = waiting[0]
            if limited and need[r] > free:
                break
            x = rem[r]
            if not chunked and x > left and ptok > 0:
                break
            waiting.popleft()
            held -= need[r]
            active += 1
            if limited:
                free -= need[r]
            start[r] = t
            if x <= left or not chunked:
                ptok += x
                left -= x
                finished.append(r)
            else:
                rem[r] = x - left
                ptok += left
                left = 0
                still.append(r)
        if tail is not None:
            done = []
            for r in finished:
                if tail[r] > 0:  # its body is done: the tail prefills in the next step, its first token comes then
                    rem[r] = tail[r]
                    tail[r] = 0.0
                    still.append(r)
                else:
                    done.append(r)
            finished = done
        prefilling = still
        if ptok == 0:
            dtok = running  # nothing to prefill after all: a decode step
        step = c0 + a * ptok + b * dtok
        t += step
        busy += step
        steps += 1
        if dtok:
            done_at += 1
            while heap and heap[0][0] <= done_at:
                r = heappop(heap)[1]
                end[r] = t
                if limited:
                    free += need[r]
        for r in finished:
            first[r] = t
            decodes[r] = dtok
            more = output_tokens[r] - 1
            if more > 0:
                heappush(heap, (done_at + more, r))
            else:
                end[r] = t
                if limited:
                    free += need[r]
        if waiting and t - arrival_ms[waiting[0]] > max_wait_ms:
            raise StepWaitTooLong(arrival_ms[waiting[0]], t - arrival_ms[waiting[0]])
    return ReplicaSteps(start, first, end, decodes, steps, busy, spilled)


def kv_blocks_needed(prompt_tokens: np.ndarray, output_tokens: np.ndarray, block_size: int) -> list[int]:
    """KV blocks a request holds: its whole prompt (cached tokens too) and its output, in blocks of `block_size`."""
    return np.ceil((prompt_tokens + np.maximum(output_tokens, 1.0)) / block_size).astype(np.int64).tolist()
