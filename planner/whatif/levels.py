"""Load levels for checking the what-if against a real engine: one trace slice at chosen utilisations.

A production trace (e.g. the Azure LLM code trace) is far too heavy for a small engine on one core
and far too long to replay in real time. `scale_tokens` shrinks every request's prompt and output
tokens by one factor (so the mix of long and short requests is kept) to reach a chosen mean
service time on the calibrated deployment; `at_utilisation` then stretches or compresses the
arrival times (keeping their pattern: bursts stay bursts) so that the slice's work fills the
deployment's slots to a chosen utilisation ρ = Σ slot-holding time ÷ (slots × span). Token counts
and time are thus scaled together, and each level keeps the slice's n requests. A slice stitched
from separate windows has lulls of minutes between them; `cap_gaps` shortens those first, or ρ
would mostly measure the lull and the busy part would run far above it.
"""

from __future__ import annotations

import math

import numpy as np

from planner.whatif.deployment import Dedicated, Deployment
from planner.whatif.replay import replay, service_ms
from planner.whatif.trace import Trace

__all__ = ["at_busy_fraction", "at_utilisation", "busy_fraction", "cap_gaps", "scale_tokens", "utilisation"]

_MIN_PROMPT_TOKENS = 8


def _hold_ms(trace: Trace, dep: Deployment) -> np.ndarray:
    return service_ms(
        trace, dep.prefill_tokens_per_s.value, dep.decode_tokens_per_s.value, dep.prompt_overhead_tokens.value
    )[1]


def utilisation(trace: Trace, dep: Deployment) -> float:
    """Σ slot-holding time ÷ (slots × span of the arrivals): the offered load on `dep` (1.0 = saturated)."""
    if trace.n < 2 or trace.span_ms <= 0:
        raise ValueError("a utilisation needs two or more requests spread over time")
    return float(_hold_ms(trace, dep).sum()) / (dep.max_slots * trace.span_ms)


def scale_tokens(trace: Trace, dep: Deployment, mean_service_s: float) -> Trace:
    """The trace with prompt, cached and output tokens times one factor, so that the mean slot-holding time
    on `dep` is about `mean_service_s` (prompts at least 8 tokens, outputs at least 1, whole numbers)."""
    if not mean_service_s > 0:
        raise ValueError(f"mean service time must be > 0 s, got {mean_service_s}")

    def scaled(k: float) -> Trace:
        prompt = np.maximum(np.round(trace.prompt_tokens * k), _MIN_PROMPT_TOKENS)
        cached = np.minimum(np.round(trace.cached_tokens * k), prompt)
        output = np.maximum(np.round(trace.output_tokens * k), 1.0)
        return Trace(trace.arrival_ms.copy(), prompt, cached, output, f"{trace.source} (tokens ×{k:.3g})")

    k = mean_service_s * 1000.0 / float(_hold_ms(trace, dep).mean())
    out = scaled(k)
    for _ in range(5):  # whole tokens and the minimums bend the line a little: correct the factor
        k *= mean_service_s * 1000.0 / float(_hold_ms(out, dep).mean())
        out = scaled(k)
    return out


def at_utilisation(trace: Trace, dep: Deployment, rho: float) -> Trace:
    """The trace with its arrival gaps scaled by one factor so that utilisation(trace, dep) == rho."""
    if not 0 < rho:
        raise ValueError(f"utilisation must be > 0, got {rho}")
    factor = utilisation(trace, dep) / rho
    arrival = trace.arrival_ms[0] + (trace.arrival_ms - trace.arrival_ms[0]) * factor
    return Trace(
        arrival,
        trace.prompt_tokens,
        trace.cached_tokens,
        trace.output_tokens,
        f"{trace.source} (time ×{factor:.3g}, ρ={rho:g})",
    )


def busy_fraction(trace: Trace, dep: Deployment) -> float:
    """A batching engine's busy share over the trace: the replay's step time over every replica ÷ (replicas × span
    of the arrivals); raises ValueError for the slot model (use utilisation) or fewer than two requests."""
    if not (isinstance(dep, Dedicated) and dep.batching):
        raise ValueError(f"{dep.name}: a busy fraction is a batching engine's (engine=vllm|sglang|llama.cpp)")
    if trace.n < 2 or trace.span_ms <= 0:
        raise ValueError("a busy fraction needs two or more requests spread over time")
    return replay(dep, trace, max_wait_s=1e7).engine_busy_ms / (dep.replicas * trace.span_ms)


def at_busy_fraction(trace: Trace, dep: Deployment, rho: float, iterations: int = 20) -> Trace:
    """The trace with its arrival gaps scaled by one factor so that busy_fraction(trace, dep) ≈ rho (within 1 %):
    a batching engine's steps are fuller under more load, so its busy time is not the work alone (bisection on the
    factor's log). Raises ValueError for rho outside (0, 1)."""
    if not 0 < rho < 1:
        raise ValueError(f"a busy fraction must be between 0 and 1, got {rho}")

    def at(factor: float) -> Trace:
        arrival = trace.arrival_ms[0] + (trace.arrival_ms - trace.arrival_ms[0]) * factor
        return Trace(
            arrival,
            trace.prompt_tokens,
            trace.cached_tokens,
            trace.output_tokens,
            f"{trace.source} (time ×{factor:.3g}, busy {rho:g})",
        )

    lo, hi = math.log(1e-4), math.log(1e4)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        frac = busy_fraction(at(math.exp(mid)), dep)
        if abs(frac - rho) <= 0.01 * rho:
            break
        if frac > rho:
            lo = mid
        else:
            hi = mid
    return at(math.exp(mid))


def cap_gaps(trace: Trace, max_gap_ms: float) -> Trace:
    """The trace with every arrival gap longer than `max_gap_ms` shortened to it (the order and the other gaps kept)."""
    if not max_gap_ms > 0:
        raise ValueError(f"the longest gap must be > 0 ms, got {max_gap_ms}")
    if trace.n < 2:
        return trace
    gaps = np.minimum(np.diff(trace.arrival_ms), max_gap_ms)
    arrival = trace.arrival_ms[0] + np.concatenate(([0.0], np.cumsum(gaps)))
    capped = int((np.diff(trace.arrival_ms) > max_gap_ms).sum())
    return Trace(
        arrival,
        trace.prompt_tokens,
        trace.cached_tokens,
        trace.output_tokens,
        f"{trace.source} ({capped} gaps over {max_gap_ms / 1000:g} s cut to it)" if capped else trace.source,
    )
