"""Calibrate a what-if deployment spec on a live endpoint in a few minutes (issues 14 and 45).

Measurements, all with the probe engine (fresh connection, nonce-first prompts), in this order:

1. **prefill rounds** — `rounds` of them, spread evenly over the whole calibration (the first at its start, the
   last at its end, the others between the stages below; `round_at_s` says when each ran): TTFT at two or more prompt
   lengths per round. All rounds' points are fitted together (Theil–Sen: robust to one slowed request) on the
   server's counted tokens when it reports usage (planner.probes.fit.fit_points): the prefill rate and the fixed part
   of a lone request's TTFT (the intercept). Each round's own fit is one reading of the engine's speed: their spread
   is `speed_sd` for the next run (planner.spread; the CLI pools it with the endpoint's calibrations on record,
   planner.whatif.drift), the scatter of each request about its round's line is `request_sd`;
2. **decode**: long generations alone, (output tokens − 1) ÷ (end − first token) — tokens/s;
3. **parallelism**: one closed-loop step per concurrency (planner.sweep), each its own stage so that rounds fall
   between them: effective slots = best throughput ÷ throughput at concurrency 1, and the slowdown of one request at
   the highest concurrency against alone (≈ the concurrency when the slots share one compute budget);
4. **saturation** (the slot model, at most 8 effective slots): a queue of 2 × slots + 2 prefill-only requests, in four
   half-step chunks alternating the first and the second prompt length. Each slot's time per request at saturation
   (slots ÷ throughput) is fitted against the tokens prefilled over each two neighbouring chunks, so the slope is the
   speed the engine ran at then and the intercept the server time per request that holds the slot beyond prefill
   (set-up, tokenising); the median over the neighbours is kept. A speed change between the rounds and this stage
   moves the slopes, never the fixed time (one during the stage spoils one pair of three). The queue is deep enough
   that the client's own turnaround between a response and its next request never leaves a slot idle, so it is not
   counted as the engine's time either;
5. **step model** (a batching engine, `engine=vllm|sglang|llama.cpp`; planner.whatif.calibrate_steps): decode steps at
   each concurrency give the step's fixed cost and its cost per decode token; prompts sent while decodes run check
   the step model (`StepFit.residuals`).

The result is a `dedicated:` spec (one replica) for planner.whatif.deployment.parse_deployment. The slot model: the
fixed part of TTFT goes in as `rtt`, less what saturation shows to hold the slot, which goes into `overhead_tokens`
with the tokens the server counts beyond the requested ones (chat template, nonce). A batching engine: `prefill`,
`decode` (a lone request's), `step_ms`, and the intercept less one step as `rtt`.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import httpx

from planner.probes.fit import fit_points, fit_prefill
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.probes.warmup import warm_up
from planner.sweep.run import SweepSpec, run_sweep
from planner.whatif.calibrate_steps import StepFit, decode_steps, fit_step_line, prompts_under_load
from planner.whatif.calibration import DISAGREE_FRACTION, Calibration
from planner.whatif.engines import ENGINES, StepCosts, profile

__all__ = ["DISAGREE_FRACTION", "Calibration", "calibrate"]

_SWEEP_OUTPUT_TOKENS = 8  # max_tokens of the parallelism stage's requests
_SATURATE_SLOTS_MAX = 8  # the saturation stage runs for engines with at most this many effective slots


async def _concurrency_step(
    target: ProbeTarget,
    concurrency: int,
    step_duration_s: float,
    client: httpx.AsyncClient | None,
    clock_ns: Callable[[], int],
) -> tuple[float, float]:
    """One closed-loop step: achieved requests/s and request ms (Little's law: W = L / λ). Raises ValueError when
    no request of the step succeeded."""
    result = await run_sweep(
        SweepSpec(target=target, mode="concurrency", loads=(float(concurrency),), step_duration_s=step_duration_s),
        client=client,
        clock_ns=clock_ns,
    )
    step = result.steps[0]
    if step.n_ok == 0 or step.achieved_rps <= 0:
        raise ValueError(f"calibration, concurrency {concurrency}: no request of the step succeeded")
    return step.achieved_rps, concurrency / step.achieved_rps * 1000


def _round_spread(rounds_samples: list[list[TtftSample]]) -> tuple[tuple[float, ...], float]:
    """Each round's own prefill rate (rounds whose fit has no positive slope are left out), and the robust sd
    (1.4826 × MAD) of log(TTFT ÷ the request's round line) over every request."""
    rates: list[float] = []
    residuals: list[float] = []
    for samples in rounds_samples:
        points, _basis = fit_points(samples)
        if len({x for x, _ in points}) < 2:
            continue
        fit = fit_prefill(points, robust=True)
        if fit.prefill_tokens_per_s is None:
            continue
        rates.append(fit.prefill_tokens_per_s)
        for x, y in points:
            line = fit.intercept_ms + fit.slope_ms_per_token * x
            if line > 0 and y > 0:
                residuals.append(math.log(y / line))
    if len(residuals) < 3:
        return tuple(rates), 0.0
    mid = statistics.median(residuals)
    return tuple(rates), 1.4826 * statistics.median(abs(r - mid) for r in residuals)


def _overhead_tokens(s: TtftSample) -> int:
    """Tokens the server counted beyond the requested prompt (a server-counted successful sample has both)."""
    assert s.prompt_tokens is not None and s.prompt_tokens_requested is not None
    return s.prompt_tokens - s.prompt_tokens_requested


def _fixed_hold_ms(chunks: list[tuple[int, float]], overhead: float) -> float:
    """The slot time per request beyond prefill, from saturation chunks ((prompt length, slot ms per request), in
    the order run, the lengths alternating): each two neighbouring chunks give the intercept of slot time against
    the tokens prefilled (requested + overhead) at the speed of that moment; the median over the neighbours is kept
    (a speed change between two chunks spoils one pair, not the median), never below 0."""
    fixed = []
    for (l0, h0), (l1, h1) in zip(chunks, chunks[1:], strict=False):
        if l1 != l0:
            slope = (h1 - h0) / (l1 - l0)
            fixed.append(h0 - (l0 + overhead) * slope)
    return max(0.0, statistics.median(fixed)) if fixed else 0.0


def _spread_rounds(rounds: int, stages: int) -> list[int]:
    """Before which stage each round runs (stage index; `stages` = after the last): the first at the start, the
    last at the end, the others evenly between."""
    if rounds == 1:
        return [0]
    return [round(j * stages / (rounds - 1)) for j in range(rounds)]


async def calibrate(
    target: ProbeTarget,
    *,
    lengths: tuple[int, ...] = (128, 1024),
    n: int = 5,
    decode_tokens: int = 64,
    concurrencies: tuple[int, ...] = (1, 2, 4),
    step_duration_s: float = 10.0,
    rounds: int = 3,
    engine: str = "slots",
    slots: int | None = None,
    client: httpx.AsyncClient | None = None,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> Calibration:
    """Measure prefill, decode and parallelism of `target` (its prompt_tokens/max_tokens are ignored), and a batching
    `engine`'s step costs (see the module docstring).

    `n` samples per prompt length in each of `rounds` prefill rounds (rounds ≥ 2 measure the speed spread); `slots`:
    a batching engine's running sequences (vLLM max_num_seqs, llama.cpp --parallel; None: its profile's).
    Raises ValueError when a stage has no successful request (naming the stage and the first failure), or for an
    unknown engine. `client`, `clock_ns` and `sleep` are seams for tests and benchmarks, as in run_sweep (without a
    client every request opens a fresh connection of its own).
    """
    if rounds < 1:
        raise ValueError(f"calibration needs at least one round, got {rounds}")
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
    pause = sleep or asyncio.sleep
    t0 = clock_ns()

    async def probe(t: ProbeTarget) -> TtftSample:
        return await probe_once(t, client=client, max_attempts=1, clock_ns=clock_ns)

    await warm_up(target.protocol)
    rounds_samples: list[list[TtftSample]] = []
    round_at: list[float] = []

    async def prefill_round() -> None:
        round_at.append((clock_ns() - t0) / 1e9)
        samples = [
            await probe(replace(target, prompt_tokens=length, max_tokens=1)) for _ in range(n) for length in lengths
        ]
        if not rounds_samples and not any(s.ok for s in samples):
            raise ValueError(
                "calibration, prefill stage: every request failed "
                f"({samples[0].error_class}: {samples[0].error_detail})"
            )
        rounds_samples.append(samples)

    rates: list[float] = []

    async def decode_stage() -> None:
        for _ in range(max(1, n // 2)):
            s = await probe(replace(target, prompt_tokens=lengths[0], max_tokens=decode_tokens))
            if s.ok and s.output_tokens and s.output_tokens > 1:
                assert s.total_ms is not None and s.ttft_ms is not None  # a successful probe has both timings
                if s.total_ms > s.ttft_ms:
                    rates.append((s.output_tokens - 1) / ((s.total_ms - s.ttft_ms) / 1000))

    throughput: dict[int, float] = {}
    latency: dict[int, float] = {}
    small = replace(target, prompt_tokens=lengths[0], max_tokens=_SWEEP_OUTPUT_TOKENS)

    def concurrency_stage(c: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            throughput[c], latency[c] = await _concurrency_step(small, c, step_duration_s, client, clock_ns)

        return run

    chunks: list[tuple[int, float]] = []  # saturation: (prompt length, slot ms per request), in the order run

    async def saturation_stage() -> None:
        slots_now = max(1, round(max(throughput.values()) / throughput[min(throughput)]))
        if engine != "slots" or slots_now > _SATURATE_SLOTS_MAX:
            return
        for length in (*lengths[:2], *lengths[:2]):  # alternating, half a step each: neighbours share a speed
            full = replace(target, prompt_tokens=length, max_tokens=1)
            busy = await run_sweep(
                SweepSpec(full, mode="concurrency", loads=(2.0 * slots_now + 2,), step_duration_s=step_duration_s / 2),
                client=client,
                clock_ns=clock_ns,
            )
            step = busy.steps[0]
            if not (step.n_ok and step.achieved_rps > 0):
                return
            chunks.append((length, slots_now * 1000.0 / step.achieved_rps))

    step_fit: StepFit | None = None

    async def step_stage() -> None:
        nonlocal step_fit
        running = slots if slots is not None else profile(engine).slots
        ks = [c for c in concurrencies if c <= running] or [1]
        itl = await decode_steps(target, probe, ks, lengths[0], max(decode_tokens, 16))
        if not itl:
            return
        c0, b = fit_step_line(itl)
        step_fit = StepFit(c0, b, itl)

    stages: list[Callable[[], Awaitable[None]]] = [decode_stage, *(concurrency_stage(c) for c in concurrencies)]
    stages.append(saturation_stage)
    if engine != "slots":
        stages.append(step_stage)
    at = _spread_rounds(rounds, len(stages))
    for i in range(len(stages) + 1):
        for _ in range(at.count(i)):
            await prefill_round()
        if i < len(stages):
            await stages[i]()
    samples = [s for r in rounds_samples for s in r]
    points, basis = fit_points(samples)
    fit = fit_prefill(points, robust=True)  # one request slowed by a neighbour must not tilt the slot time
    overhead = 0.0
    if basis == "server-counted":
        overhead = max(0.0, statistics.median(_overhead_tokens(s) for s in samples if s.ok))
    round_rates, request_sd = _round_spread(rounds_samples)
    if not rates:
        raise ValueError("calibration, decode stage: no request generated two or more tokens")
    cal = Calibration(
        prefill=fit,
        token_basis=basis,
        decode_tokens_per_s=statistics.median(rates),
        throughput_by_concurrency=throughput,
        latency_ms_by_concurrency=latency,
        wall_s=0.0,
        prompt_overhead_tokens=overhead,
        fixed_hold_ms=_fixed_hold_ms(chunks, overhead),
        round_prefill_tokens_per_s=round_rates,
        request_sd=request_sd,
        round_at_s=tuple(round_at),
        hold_ms_by_tokens={k: statistics.fmean(h for ln, h in chunks if ln == k) for k, _ in chunks} or None,
        engine=engine,
        slots=slots,
        step=step_fit,
    )
    if step_fit is not None and fit.prefill_tokens_per_s:
        cal = replace(cal, step=await _check_steps(cal, target, probe, lengths, n, decode_tokens, pause))
    return replace(cal, wall_s=(clock_ns() - t0) / 1e9)


async def _check_steps(
    cal: Calibration,
    target: ProbeTarget,
    probe: Callable[[ProbeTarget], Awaitable[TtftSample]],
    lengths: tuple[int, ...],
    n: int,
    decode_tokens: int,
    pause: Callable[[float], Awaitable[None]],
) -> StepFit:
    """The step model's residuals on prompts sent while max(running) − 1 decodes run (one sequence kept free for the
    probe); the step costs as fitted."""
    step = cal.step
    assert step is not None and cal.prefill.prefill_tokens_per_s
    load = max(1, min(max(step.itl_ms_by_running), cal.spec_slots - 1))
    lone_step = step.step_ms + step.decode_token_ms * load
    settle_s = (lengths[0] * load / cal.prefill.prefill_tokens_per_s + 4 * lone_step / 1000) * 2
    samples = await prompts_under_load(
        target,
        probe,
        load=load,
        lengths=lengths,
        n=max(1, n // 2),
        background_tokens=max(decode_tokens * 32, 512),
        settle_s=settle_s,
        step_s=lone_step / 1000,
        sleep=pause,
    )
    costs = StepCosts(step.step_ms, 1000.0 / cal.prefill.prefill_tokens_per_s, step.decode_token_ms)
    tail = profile(cal.engine).prompt_tail
    # a lone request's TTFT is intercept + a × counted tokens = rtt + its prompt's steps (one, or two with a tail)
    rtt = cal.prefill.intercept_ms - costs.step_ms * (2 if tail else 1)
    residuals = []
    for s in samples:
        if not s.ok or s.ttft_ms is None:
            continue
        tokens = s.prompt_tokens if s.prompt_tokens else (s.prompt_tokens_requested or 0) + cal.prompt_overhead_tokens
        predicted = rtt + lone_step / 2 + costs.lone_prompt_ms(tokens, load, tail)
        if predicted > 0:
            residuals.append(s.ttft_ms / predicted - 1)
    return replace(step, load=load, residuals=tuple(residuals))
