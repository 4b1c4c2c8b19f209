"""Calibrate a what-if deployment spec on a live endpoint in a few minutes (issue 14).

Three measurements, all with the probe engine (fresh connection, nonce-first prompts):

- prefill, in `rounds` short rounds spread over the calibration (the other stages run between them): TTFT at two or
  more prompt lengths per round, fitted (Theil–Sen: robust to one slowed request) on the server's
  counted tokens when it reports usage (planner.probes.fit.fit_points) — tokens/s per slot. Calibrate at the
  prompt lengths the replay will see: the fixed part of a request's server time is extrapolated from the fit.
  The rounds' own fits give the engine's speed spread: `speed_sd`, the standard deviation of the log of the rounds'
  prefill rates, widened for the few rounds it rests on (a Student-t prediction for the next run, at 80 %), and
  `request_sd`, the robust spread of each request's TTFT around its round's line (log scale). They go into the
  spec and widen the what-if's prediction interval (planner.whatif.interval); rounds whose rates differ by more
  than DISAGREE_FRACTION are reported (`rounds_disagree`);
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

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx

from planner.probes.fit import PrefillFit, fit_points, fit_prefill
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.probes.warmup import warm_up
from planner.spread import speed_sd_of
from planner.sweep.run import SweepSpec, run_sweep

__all__ = ["DISAGREE_FRACTION", "Calibration", "calibrate"]

_SWEEP_OUTPUT_TOKENS = 8  # max_tokens of the parallelism stage's requests
_SATURATE_SLOTS_MAX = 8  # the saturation stage runs for engines with at most this many effective slots
DISAGREE_FRACTION = 0.25  # rounds whose fastest prefill rate is this much above the slowest are reported


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
    round_prefill_tokens_per_s: tuple[float, ...] = ()  # each round's own prefill rate, in the order measured
    request_sd: float = 0.0  # robust sd of log(TTFT ÷ its round's line) over every request

    @property
    def speed_sd(self) -> float:
        """The speed spread a next run may see (planner.spread.speed_sd_of the rounds' rates; 0 with one round)."""
        return speed_sd_of(self.round_prefill_tokens_per_s)

    @property
    def rounds_disagree(self) -> float | None:
        """How much faster the fastest round was than the slowest (0.3 = 30 %), when more than DISAGREE_FRACTION;
        else None."""
        rates = self.round_prefill_tokens_per_s
        if len(rates) < 2:
            return None
        spread = max(rates) / min(rates) - 1
        return spread if spread > DISAGREE_FRACTION else None

    @property
    def serving_model(self) -> str:
        """The serving model the spec assumes, in words."""
        slots = self.effective_slots
        if slots == 1 and max(self.throughput_by_concurrency) > 1 and self.slowdown_at_max > 1.5:
            return (
                "one slot, first in first out: requests in flight share one compute budget (at concurrency "
                f"{max(self.latency_ms_by_concurrency)} each took {self.slowdown_at_max:.1f}× as long and throughput "
                "did not rise), so they are modelled as served one after another at the full rate"
            )
        tput = self.throughput_by_concurrency
        gain = max(tput.values()) / tput[min(tput)] if tput[min(tput)] > 0 else 1.0
        return (
            f"{slots} independent slot(s), first in first out across them, each at the full rate "
            f"(throughput rose {gain:.1f}× with concurrency)"
        )

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
            f"overhead_tokens={overhead:.0f},speed_sd={min(self.speed_sd, 2.0):.3f},"
            f"request_sd={min(self.request_sd, 2.0):.3f}"
        )


async def _parallelism(
    target: ProbeTarget,
    prompt_tokens: int,
    concurrencies: tuple[int, ...],
    step_duration_s: float,
    client: httpx.AsyncClient | None,
    clock_ns: Callable[[], int],
) -> tuple[dict[int, float], dict[int, float]]:
    """Closed-loop steps at each concurrency: achieved requests/s and request ms (Little's law), by concurrency."""
    result = await run_sweep(
        SweepSpec(
            target=replace(target, prompt_tokens=prompt_tokens, max_tokens=_SWEEP_OUTPUT_TOKENS),
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
    return throughput, latency


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


async def calibrate(
    target: ProbeTarget,
    *,
    lengths: tuple[int, ...] = (128, 1024),
    n: int = 5,
    decode_tokens: int = 64,
    concurrencies: tuple[int, ...] = (1, 2, 4),
    step_duration_s: float = 10.0,
    rounds: int = 3,
    client: httpx.AsyncClient | None = None,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
) -> Calibration:
    """Measure prefill, decode and parallelism of `target` (its prompt_tokens/max_tokens are ignored).

    `n` samples per prompt length in each of `rounds` prefill rounds (rounds ≥ 2 measure the speed spread).

    Raises ValueError when a stage has no successful request (naming the stage and the first failure).
    `client` and `clock_ns` are seams for tests and benchmarks, as in run_sweep (without a client every request
    opens a fresh connection of its own).
    """
    if rounds < 1:
        raise ValueError(f"calibration needs at least one round, got {rounds}")
    t0 = clock_ns()

    async def probe(t: ProbeTarget) -> TtftSample:
        return await probe_once(t, client=client, max_attempts=1, clock_ns=clock_ns)

    await warm_up(target.protocol)

    async def prefill_round() -> list[TtftSample]:
        return [
            await probe(replace(target, prompt_tokens=length, max_tokens=1)) for _ in range(n) for length in lengths
        ]

    async def decode_round() -> list[float]:
        out = []
        for _ in range(max(1, n // 2)):
            s = await probe(replace(target, prompt_tokens=lengths[0], max_tokens=decode_tokens))
            if s.ok and s.output_tokens and s.output_tokens > 1:
                assert s.total_ms is not None and s.ttft_ms is not None  # a successful probe has both timings
                if s.total_ms > s.ttft_ms:
                    out.append((s.output_tokens - 1) / ((s.total_ms - s.ttft_ms) / 1000))
        return out

    # Rounds of prefill (each followed by a decode round) spread over the calibration: the parallelism stage runs
    # after the first, so the rounds see the engine at different moments, as the replayed run will.
    rounds_samples = [await prefill_round()]
    first = rounds_samples[0]
    if not any(s.ok for s in first):
        raise ValueError(
            f"calibration, prefill stage: every request failed ({first[0].error_class}: {first[0].error_detail})"
        )
    rates = await decode_round()
    throughput, latency = await _parallelism(target, lengths[0], concurrencies, step_duration_s, client, clock_ns)
    for _ in range(1, rounds):
        rounds_samples.append(await prefill_round())
        rates += await decode_round()
    samples = [s for r in rounds_samples for s in r]
    points, basis = fit_points(samples)
    fit = fit_prefill(points, robust=True)  # one request slowed by a neighbour must not tilt the slot time
    overhead = 0.0
    if basis == "server-counted":
        overhead = max(0.0, statistics.median(_overhead_tokens(s) for s in samples if s.ok))
    round_rates, request_sd = _round_spread(rounds_samples)
    if not rates:
        raise ValueError("calibration, decode stage: no request generated two or more tokens")
    decode = statistics.median(rates)
    cal = Calibration(
        prefill=fit,
        token_basis=basis,
        decode_tokens_per_s=decode,
        throughput_by_concurrency=throughput,
        latency_ms_by_concurrency=latency,
        wall_s=0.0,
        prompt_overhead_tokens=overhead,
        round_prefill_tokens_per_s=round_rates,
        request_sd=request_sd,
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
