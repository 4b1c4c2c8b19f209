"""Proof against measurement: drive the simulated endpoint with the same trace and compare with the replay.

The simulated endpoint (`planner.simulator`) is configured like the candidate (slots, prefill and
decode rates, scale-down window, cold start) and runs time-compressed by `speedup`; each trace
request is sent at its arrival time ÷ speedup by the probe engine (`probe_once`, a fresh
connection per request, a nonce-first prompt of the request's prompt tokens, `max_tokens` = its
output tokens), and its measured TTFT × speedup is compared, hour by hour, with the replay's
prediction for the same request.

The network segment is measured, as the product measures RTT: before the run, a few small
requests to a warm copy of the endpoint give the loopback request overhead (its median TTFT
less the prefill of its prompt), which becomes the candidate's RTT for the prediction.
The simulator has no prefix cache, admission overhead, background load or errors here, so the
trace's cached tokens must be 0 (its prompts are all new: a nonce comes first).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from planner.percentiles import Percentile, min_n_for
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.simulator import SimulatorConfig, running_simulator
from planner.whatif.deployment import Dedicated, Deployment, Serverless
from planner.whatif.replay import replay
from planner.whatif.results import percentiles_sorted
from planner.whatif.trace import Trace, hour_of_day
from planner.worksheet.provenance import Figure, Source

__all__ = ["ProofHour", "ProofResult", "measure_trace", "prove", "simulator_config_for"]

_MIN_PROMPT_TOKENS = 8  # build_prompt sizes prompts exactly from 8 tokens up


@dataclass(frozen=True)
class ProofHour:
    """One hour of day: predicted and measured p50/p95 TTFT (ms, simulated time) over the same requests."""

    hour: int
    n: int
    predicted_p50: Percentile
    predicted_p95: Percentile
    measured_p50: Percentile
    measured_p95: Percentile

    @property
    def enough(self) -> bool:
        """n is large enough for a p95 (≥ 20)."""
        return self.n >= min_n_for(0.95)

    @property
    def p95_error_fraction(self) -> float:
        """(predicted − measured) / measured at p95."""
        predicted, measured = self.predicted_p95.value, self.measured_p95.value
        assert predicted is not None and measured is not None  # prove() makes hours with at least one request
        return (predicted - measured) / measured


@dataclass(frozen=True)
class ProofResult:
    """Hours compared, requests that failed (never in the percentiles), the measured network segment, the speedup.

    decode_overrun: median of measured ÷ configured decode time − 1 over requests with ≥ 2 output
    tokens — how late the endpoint's timers ran (a loaded CPU at a high speedup stretches every
    slot hold, and queueing amplifies it); None when no request decoded.
    predicted_cold_starts / endpoint_cold_starts: loads the replay predicts and loads the endpoint
    reports on /health (None when it did not answer); a difference explains a cold hour's miss.
    """

    hours: tuple[ProofHour, ...]
    n_sent: int
    n_failed: int
    network_ms: float
    speedup: float
    wall_s: float
    failures: tuple[str, ...] = ()
    decode_overrun: float | None = None
    predicted_cold_starts: int = 0
    endpoint_cold_starts: int | None = None

    def worst_p95_error(self) -> float:
        """Largest |p95 error| over the hours with enough samples (0 when none)."""
        return max((abs(h.p95_error_fraction) for h in self.hours if h.enough), default=0.0)

    def within(self, tolerance: float = 0.10) -> bool:
        """True when every hour with enough samples has its predicted p95 within `tolerance` of the measured one."""
        return any(h.enough for h in self.hours) and self.worst_p95_error() <= tolerance

    def table(self) -> list[dict]:
        return [
            {
                "hour": h.hour,
                "n": h.n,
                "predicted_p50_ms": h.predicted_p50.value,
                "measured_p50_ms": h.measured_p50.value,
                "predicted_p95_ms": h.predicted_p95.value,
                "measured_p95_ms": h.measured_p95.value,
                "p95_error": h.p95_error_fraction,
                "enough": h.enough,
            }
            for h in self.hours
        ]


def simulator_config_for(dep: Deployment, speedup: float, max_output_tokens: int = 512) -> SimulatorConfig:
    """A SimulatorConfig behaving like `dep` (one serverless replica, or dedicated slots pooled).

    Raises ValueError for a shape the single-replica simulator cannot represent (serverless max > 1,
    min replicas, an overflow pool).
    """
    common: dict[str, Any] = dict(  # the SimulatorConfig fields both shapes share
        prefill_tokens_per_s=dep.prefill_tokens_per_s.value,
        decode_tokens_per_s=dep.decode_tokens_per_s.value,
        base_overhead_ms=0.0,
        network_delay_ms=0.0,
        prefix_cache_tokens=0,
        load_curve=None,
        rate_429=0.0,
        rate_5xx=0.0,
        ping_interval_s=0.0,
        max_output_tokens=max_output_tokens,
        speedup=speedup,
        seed=0,
    )
    if dep.prompt_overhead_tokens.value > 0:
        raise ValueError(
            f"{dep.name}: the simulated endpoint prefills only the prompt; use overhead_tokens=0 for a proof"
        )
    if isinstance(dep, Serverless):
        if dep.max_replicas != 1 or dep.min_replicas != 0:
            raise ValueError(f"{dep.name}: the simulated endpoint is one replica; use max=1 and min=0 for a proof")
        return SimulatorConfig(
            slots=dep.slots_per_replica,
            scale_down_window_s=dep.scale_down_window_s.value,
            cold_start_s=dep.cold_start_s.value,
            start_cold=True,
            **common,
        )
    if isinstance(dep, Dedicated) and dep.overflow is None:
        return SimulatorConfig(slots=dep.replicas * dep.slots_per_replica, scale_down_window_s=None, **common)
    raise ValueError(f"{dep.name}: a dedicated deployment with overflow cannot be simulated by one endpoint")


async def measure_trace(
    trace: Trace,
    base_url: str,
    speedup: float,
    timeout_s: float = 120.0,
    model: str = "sim-model",
    *,
    client: httpx.AsyncClient | None = None,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
) -> list[TtftSample]:
    """Send every trace request at (arrival − first arrival) ÷ speedup from now; returns the samples in trace order.

    Each request is a fresh connection with a nonce-first prompt of its prompt tokens (at least 8) and
    max_tokens = its output tokens (at least 1); nothing is retried (a failure stays a failure).
    `client` and `clock_ns`: a caller's client and clock (a virtual simulator's, planner.simulator.virtual), else
    a fresh client without keep-alive and the process's clock.
    """
    offsets_s = ((trace.arrival_ms - trace.arrival_ms[0]) / 1000.0 / speedup).tolist()
    prompts = np.maximum(trace.prompt_tokens, _MIN_PROMPT_TOKENS).astype(int).tolist()
    outputs = np.maximum(trace.output_tokens, 1).astype(int).tolist()

    async def send_all(c: httpx.AsyncClient) -> list[TtftSample]:
        loop = asyncio.get_running_loop()
        t0 = loop.time() + 0.2

        async def one(i: int) -> TtftSample:
            await asyncio.sleep(max(0.0, t0 + offsets_s[i] - loop.time()))
            target = ProbeTarget(
                base_url=base_url, model=model, prompt_tokens=prompts[i], max_tokens=outputs[i], timeout_s=timeout_s
            )
            return await probe_once(target, client=c, max_attempts=1, clock_ns=clock_ns)

        return list(await asyncio.gather(*(one(i) for i in range(trace.n))))

    if client is not None:
        return await send_all(client)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(timeout_s), limits=limits) as fresh:
        return await send_all(fresh)


def _endpoint_cold_starts(base_url: str) -> int | None:
    """The simulated endpoint's own count of model loads (GET /health), or None."""
    try:
        r = httpx.get(base_url.removesuffix("/v1") + "/health", timeout=5.0, trust_env=False)
        return int(r.json()["cold_starts"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def _scaled(ms: float | None, speedup: float) -> float:
    """A timing of a sample the `ok` mask keeps (so it has it), back in real time."""
    assert ms is not None
    return ms * speedup


def _decode_ms(s: TtftSample) -> float:
    """First token → last byte of a sample the `decoding` mask keeps (ok, with a total time)."""
    assert s.total_ms is not None and s.ttft_ms is not None
    return s.total_ms - s.ttft_ms


def prove(dep: Deployment, trace: Trace, speedup: float, tz: str = "UTC") -> ProofResult:
    """Replay `trace` on `dep` and measure it on a simulated endpoint configured like `dep`; compare per hour.

    Blocks for about trace span ÷ speedup (real seconds). Raises ValueError for a deployment the
    simulator cannot represent or a trace with cached tokens, RuntimeError if the endpoint never answers.
    """
    if float(trace.cached_tokens.sum()) > 0:
        raise ValueError("the proof sends all-new prompts (nonce first): use a trace with cached_tokens = 0")
    trace = Trace(
        trace.arrival_ms,
        np.maximum(trace.prompt_tokens, _MIN_PROMPT_TOKENS).round(),
        trace.cached_tokens,
        np.maximum(trace.output_tokens, 1).round(),
        trace.source,
    )
    config = simulator_config_for(dep, speedup, max_output_tokens=int(trace.output_tokens.max()))
    loop = asyncio.new_event_loop()
    try:
        with running_simulator(config) as url:
            t = loop.time()
            samples = loop.run_until_complete(measure_trace(trace, url, speedup))
            wall_s = loop.time() - t
            endpoint_cold_starts = _endpoint_cold_starts(url)
    finally:
        loop.close()
    ok = np.array([s.ok and s.ttft_ms is not None and s.first_event_ms is not None for s in samples], dtype=bool)
    if not ok.any():
        detail = next((f"{s.error_class}: {s.error_detail}" for s in samples if not s.ok), "no sample")
        raise RuntimeError(f"the simulated endpoint answered none of {trace.n} requests ({detail})")
    measured = np.array([_scaled(s.ttft_ms, speedup) if o else np.nan for s, o in zip(samples, ok, strict=True)])
    # The network segment, measured as the product measures it: request → first event, over the requests the
    # replay has warm (a cold endpoint holds every byte until its weights are loaded).
    no_rtt = dataclasses.replace(dep, rtt_ms=Figure.typed(0, "ms"))
    warm = ok & (replay(no_rtt, trace).cold_ms == 0)
    basis = warm if warm.any() else ok
    first_event_ms = np.array(
        [_scaled(s.first_event_ms, speedup) if b else np.nan for s, b in zip(samples, basis, strict=True)]
    )
    network_ms = float(np.nanmedian(first_event_ms))
    rtt = Figure(
        network_ms, "ms", Source.RTT, detail="loopback request → first event, warm requests", n=int(basis.sum())
    )
    predicted = replay(dataclasses.replace(dep, rtt_ms=rtt), trace)
    hours = hour_of_day(trace.arrival_ms, tz)
    rows = []
    for h in np.unique(hours[ok]):
        sel = ok & (hours == h)
        pp = percentiles_sorted(np.sort(predicted.ttft_ms[sel]), (0.5, 0.95))
        mp = percentiles_sorted(np.sort(measured[sel]), (0.5, 0.95))
        rows.append(ProofHour(int(h), int(sel.sum()), pp["p50"], pp["p95"], mp["p50"], mp["p95"]))
    failures = tuple(sorted({f"{s.error_class}: {s.error_detail}" for s in samples if not s.ok}))[:5]
    decoding = ok & (trace.output_tokens >= 2) & np.array([s.total_ms is not None for s in samples])
    overrun = None
    if decoding.any():
        took = np.array([_decode_ms(s) * speedup for s, d in zip(samples, decoding, strict=True) if d])
        configured = (trace.output_tokens[decoding] - 1) / dep.decode_tokens_per_s.value * 1000.0
        overrun = float(np.median(took / configured)) - 1.0
    return ProofResult(
        tuple(rows),
        trace.n,
        int((~ok).sum()),
        network_ms,
        speedup,
        wall_s,
        failures,
        overrun,
        predicted.cold_starts,
        endpoint_cold_starts,
    )
