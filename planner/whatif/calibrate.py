"""Calibrate a what-if deployment spec on a live endpoint in a few minutes (issue 14).

Three measurements, all with the probe engine (fresh connection, nonce-first prompts):

- prefill: TTFT at two or more prompt lengths, fitted (Theil–Sen: robust to one slowed request) on the server's
  counted tokens when it reports usage (planner.probes.fit.fit_points) — tokens/s per slot. Calibrate at the
  prompt lengths the replay will see: the fixed part of a request's server time is extrapolated from the fit;
- decode: one long generation per repetition, (output tokens − 1) ÷ (end − first token) — tokens/s;
- parallelism: closed-loop steps at concurrency 1, 2, 4, … (planner.sweep) with the same small
  request; effective slots = best achieved throughput ÷ throughput at concurrency 1, and the
  slowdown = how much longer one request takes at that concurrency than alone (1.0 for truly
  parallel slots; ≈ the concurrency when the slots share one compute budget, as llama.cpp's
  parallel slots on one core do).

The result is a `dedicated:` spec (one replica) for planner.whatif.deployment.parse_deployment;
the fixed part of TTFT (the fit's intercept: admission, one decode step, loopback) goes in as its
`rtt`. When the server counts prompt tokens, the median of (counted − requested) — the chat
template and the nonce, which the server prefills on top of every prompt and a request log does
not count — goes in as `overhead_tokens`: those tokens hold the slot like the prompt does.
For an engine of at most 8 effective slots, a saturation stage (twice as many prefill-only requests
in flight as slots, one step) gives each slot's time per request (slots ÷ throughput); what exceeds
the modelled prefill of that request is server work the prefill fit shows only as intercept
(request set-up, tokenising, a new batch shape): it holds the slot too, so it moves from `rtt` into
`overhead_tokens` (as tokens at the prefill rate).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx

from planner.probes.fit import PrefillFit, fit_points, fit_prefill
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.probes.warmup import warm_up
from planner.sweep.run import SweepSpec, run_sweep

__all__ = ["Calibration", "calibrate"]

_SWEEP_OUTPUT_TOKENS = 8  # max_tokens of the parallelism stage's requests
_SATURATE_SLOTS_MAX = 8  # the saturation stage runs for engines with at most this many effective slots


@dataclass(frozen=True)
class Calibration:
    """What a calibration run measured; `spec()` turns it into a what-if deployment."""

    prefill: PrefillFit
    token_basis: str  # "server-counted" or "requested"
    decode_tokens_per_s: float
    throughput_by_concurrency: dict[int, float]  # achieved requests/s
    latency_ms_by_concurrency: dict[int, float]  # median total time of one request
    wall_s: float
    prompt_overhead_tokens: float = 0.0  # median server-counted − requested prompt tokens (0 when not counted)
    fixed_hold_ms: float = 0.0  # slot time per request beyond its prefill at saturation (0: not measured)

    @property
    def effective_slots(self) -> int:
        base = self.throughput_by_concurrency[min(self.throughput_by_concurrency)]
        return max(1, round(max(self.throughput_by_concurrency.values()) / base)) if base > 0 else 1

    @property
    def slowdown_at_max(self) -> float:
        """Median request time at the highest concurrency ÷ alone: 1.0 = independent slots."""
        lat = self.latency_ms_by_concurrency
        return lat[max(lat)] / lat[min(lat)]

    def spec(self, name: str = "calibrated") -> str:
        """The `dedicated:` spec. A negative intercept (fewer tokens prefilled than counted: the server reuses the
        chat template's first tokens from its cache) comes off the overhead tokens instead of being lost at rtt=0."""
        rate = self.prefill.prefill_tokens_per_s
        if rate is None:
            raise ValueError("the prefill fit has no positive slope: probe longer prompts")
        icpt, fixed = self.prefill.intercept_ms, self.fixed_hold_ms
        # The fixed server time holds the slot: it moves from rtt into overhead tokens at the prefill rate.
        overhead = max(0.0, self.prompt_overhead_tokens + (min(0.0, icpt) + fixed) * rate / 1000.0)
        return (
            f"dedicated:name={name},replicas=1,slots={self.effective_slots},prefill={rate:.0f},"
            f"decode={self.decode_tokens_per_s:.1f},usd_per_gpu_h=0,gpus=1,rtt={max(0.0, icpt - fixed):.0f},"
            f"overhead_tokens={overhead:.0f}"
        )


def _overhead_tokens(s: TtftSample) -> int:
    """Tokens the server counted beyond the requested prompt (a server-counted successful sample has both)."""
    assert s.prompt_tokens is not None and s.prompt_tokens_requested is not None
    return s.prompt_tokens - s.prompt_tokens_requested


async def calibrate(
    target: ProbeTarget,
    *,
    lengths: tuple[int, ...] = (128, 1024),
    n: int = 5,
    decode_tokens: int = 64,
    concurrencies: tuple[int, ...] = (1, 2, 4),
    step_duration_s: float = 10.0,
    client: httpx.AsyncClient | None = None,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
) -> Calibration:
    """Measure prefill, decode and parallelism of `target` (its prompt_tokens/max_tokens are ignored).

    Raises ValueError when a stage has no successful request (naming the stage and the first failure).
    `client` and `clock_ns` are seams for tests and benchmarks, as in run_sweep (without a client every request
    opens a fresh connection of its own).
    """
    t0 = clock_ns()

    async def probe(t: ProbeTarget) -> TtftSample:
        return await probe_once(t, client=client, max_attempts=1, clock_ns=clock_ns)

    await warm_up(target.protocol)
    samples = []
    for _ in range(n):
        for length in lengths:
            samples.append(await probe(replace(target, prompt_tokens=length, max_tokens=1)))
    failed = [s for s in samples if not s.ok]
    if len(failed) == len(samples):
        raise ValueError(
            f"calibration, prefill stage: every request failed ({failed[0].error_class}: {failed[0].error_detail})"
        )
    points, basis = fit_points(samples)
    fit = fit_prefill(points, robust=True)  # one request slowed by a neighbour must not tilt the slot time
    overhead = 0.0
    if basis == "server-counted":
        overhead = max(0.0, statistics.median(_overhead_tokens(s) for s in samples if s.ok))

    rates = []
    for _ in range(max(1, n // 2)):
        s = await probe(replace(target, prompt_tokens=lengths[0], max_tokens=decode_tokens))
        if s.ok and s.output_tokens and s.output_tokens > 1:
            assert s.total_ms is not None and s.ttft_ms is not None  # a successful probe has both timings
            if s.total_ms > s.ttft_ms:
                rates.append((s.output_tokens - 1) / ((s.total_ms - s.ttft_ms) / 1000))
    if not rates:
        raise ValueError("calibration, decode stage: no request generated two or more tokens")

    small = replace(target, prompt_tokens=lengths[0], max_tokens=_SWEEP_OUTPUT_TOKENS)
    result = await run_sweep(
        SweepSpec(
            target=small,
            mode="concurrency",
            loads=tuple(float(c) for c in concurrencies),
            step_duration_s=step_duration_s,
        ),
        client=client,
        clock_ns=clock_ns,
    )
    if any(st.n_ok == 0 for st in result.steps):
        raise ValueError("calibration, parallelism stage: a concurrency step had no successful request")
    throughput = {int(st.load): st.achieved_rps for st in result.steps}
    latency = {int(st.load): st.load / st.achieved_rps * 1000 for st in result.steps}  # Little's law: W = L / λ
    decode = statistics.median(rates)
    cal = Calibration(
        prefill=fit,
        token_basis=basis,
        decode_tokens_per_s=decode,
        throughput_by_concurrency=throughput,
        latency_ms_by_concurrency=latency,
        wall_s=0.0,
        prompt_overhead_tokens=overhead,
    )
    rate = fit.prefill_tokens_per_s
    if rate and cal.effective_slots <= _SATURATE_SLOTS_MAX:
        # Saturation stage: twice as many prefill-only requests in flight as slots keeps every slot busy, so each
        # slot's time per request is slots ÷ throughput; beyond the modelled prefill it is server work the fit
        # shows only as intercept (request set-up, tokenising, a new batch shape), and it holds the slot.
        busy = await run_sweep(
            SweepSpec(
                target=replace(target, prompt_tokens=lengths[0], max_tokens=1),
                mode="concurrency",
                loads=(2.0 * cal.effective_slots,),
                step_duration_s=step_duration_s,
            ),
            client=client,
            clock_ns=clock_ns,
        )
        step = busy.steps[0]
        if step.n_ok and step.achieved_rps > 0:
            hold_ms = cal.effective_slots * 1000.0 / step.achieved_rps
            cal = replace(cal, fixed_hold_ms=max(0.0, hold_ms - (lengths[0] + overhead) * 1000.0 / rate))
    cal = replace(cal, wall_s=(clock_ns() - t0) / 1e9)
    return cal
