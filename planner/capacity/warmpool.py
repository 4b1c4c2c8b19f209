"""Warm-pool sizing: Erlang C queue waits, minimum warm slots, and the keep-warm vs cold-start trade-off.

M/M/c: c servers (replicas × request slots each),
offered load a = λ·E[S] Erlangs, ρ = a/c < 1 for a stable queue.
C(c, a) = probability an arrival waits; P(W_q > t) = C·e^(−(cμ−λ)t); E[W_q] = C/(cμ−λ);
p-quantile t_p = max(0, ln(C/(1−p)) / (cμ−λ)). Textbook check: λ = 30/h, E[S] = 5 min →
C = 0.32 at c = 4, 0.13 at c = 5, 0.047 at c = 6.

Scale-to-zero (§5): a request is cold when the gap since the previous request finished exceeds the
scale-down window W; the cold fraction comes from planner.logs.exposure (trace-driven or Poisson).
Cold starts reach the p95 only when more than 5% of requests are cold (nearest rank).

plan_warm_pool is the one flow the Warm pool tab and `capacity warm-pool` both run: the pool's slots (replicas ×
slots per replica), its queue wait, the fewest replicas for a target, and the keep-warm trade-off priced for the
replica's GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.capacity.cost import HOURS_PER_MONTH
from planner.capacity.errors import CapacityError
from planner.capacity.traffic import days_represented
from planner.logs.exposure import DEFAULT_WINDOWS_S, cold_in_p95, poisson_cold_fraction, trace_cold_fraction

__all__ = [
    "DEFAULT_WINDOWS_S",
    "NO_TRAFFIC",
    "KeepWarm",
    "QueueWait",
    "WarmPoolPlan",
    "erlang_c",
    "keep_warm_tradeoff",
    "min_slots_for_target",
    "plan_warm_pool",
    "pool_slots",
    "queue_wait",
    "queue_wait_quantile_s",
    "trace_idle_seconds",
    "wait_exceeds_probability",
]


def _rates(arrivals_per_s: float, service_s: float) -> tuple[float, float]:
    if arrivals_per_s is None or not math.isfinite(arrivals_per_s) or arrivals_per_s < 0:
        raise CapacityError(f"arrival rate must be a number ≥ 0, got {arrivals_per_s!r}")
    if service_s is None or not math.isfinite(service_s) or service_s <= 0:
        raise CapacityError(f"service time per request must be greater than 0 s, got {service_s!r}")
    return float(arrivals_per_s), 1.0 / float(service_s)


def erlang_c(servers: int, offered_load_erlangs: float) -> float:
    """Probability that an arrival waits in an M/M/c queue (1.0 when a ≥ c: the queue never drains).

    Uses the Erlang B recursion B(k) = a·B(k−1)/(k + a·B(k−1)), then C = c·B/(c − a·(1 − B)),
    which stays finite for thousands of servers. Raises CapacityError for servers < 1 or a < 0.
    """
    if int(servers) != servers or servers < 1:
        raise CapacityError(f"slots must be a whole number ≥ 1, got {servers!r}")
    a = float(offered_load_erlangs)
    if not math.isfinite(a) or a < 0:
        raise CapacityError(f"offered load must be ≥ 0 Erlangs, got {offered_load_erlangs!r}")
    if a == 0:
        return 0.0
    if a >= servers:
        return 1.0
    b = 1.0
    for k in range(1, int(servers) + 1):
        b = a * b / (k + a * b)
    return servers * b / (servers - a * (1.0 - b))


def wait_exceeds_probability(t_s: float, servers: int, arrivals_per_s: float, service_s: float) -> float:
    """P(W_q > t) = C(c, a)·e^(−(cμ − λ)t); 1.0 for an unstable queue."""
    lam, mu = _rates(arrivals_per_s, service_s)
    c = erlang_c(servers, lam / mu)
    drain = servers * mu - lam
    return 1.0 if drain <= 0 else c * math.exp(-drain * max(0.0, t_s))


def queue_wait_quantile_s(p: float, servers: int, arrivals_per_s: float, service_s: float) -> float:
    """p-quantile of the queue wait (s): max(0, ln(C/(1−p))/(cμ−λ)); math.inf for an unstable queue."""
    if not 0 < p < 1:
        raise CapacityError(f"percentile fraction must be in (0, 1), got {p:g}")
    lam, mu = _rates(arrivals_per_s, service_s)
    c = erlang_c(servers, lam / mu)
    drain = servers * mu - lam
    if drain <= 0:
        return math.inf
    if c <= 1 - p:
        return 0.0
    return math.log(c / (1.0 - p)) / drain


@dataclass(frozen=True)
class QueueWait:
    """Erlang C figures for one pool size."""

    arrivals_per_hour: float
    service_s: float
    slots: int
    offered_load_erlangs: float
    utilisation: float
    stable: bool
    wait_probability: float
    wait_p: float  # the percentile fraction, e.g. 0.95
    wait_quantile_s: float  # inf when unstable
    mean_wait_s: float  # inf when unstable
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def queue_wait(arrivals_per_hour: float, service_s: float, slots: int, p: float = 0.95) -> QueueWait:
    """Erlang C for `slots` request slots at `arrivals_per_hour` with mean `service_s` per request.

    An overloaded pool (a ≥ c) is a result with stable=False and a message, not an exception.
    Raises CapacityError for a negative rate, a service time ≤ 0 or slots < 1.
    """
    lam, mu = _rates(arrivals_per_hour / 3600.0 if arrivals_per_hour is not None else None, service_s)
    a = lam / mu
    c = erlang_c(slots, a)
    drain = slots * mu - lam
    stable = drain > 0
    q = queue_wait_quantile_s(p, slots, lam, service_s) if stable else math.inf
    mean = c / drain if stable else math.inf
    label = f"p{p * 100:g}"
    if lam == 0:
        msg = "No traffic: nobody waits; every warm slot is idle cost."
    elif not stable:
        msg = (
            f"Overloaded: {a:.2f} Erlangs of work on {slots} slots (ρ = {a / slots:.2f} ≥ 1), "
            f"so the queue grows without bound. "
            f"You need more than {math.floor(a)} slots."
        )
    else:
        msg = (
            f"{c:.1%} of requests wait for a slot; queue-wait {label} {q:,.1f} s, mean {mean:,.1f} s "
            f"({slots} slots, {a:.2f} Erlangs, ρ = {a / slots:.2f})."
        )
    return QueueWait(float(arrivals_per_hour), float(service_s), int(slots), a, a / slots, stable, c, p, q, mean, msg)


def min_slots_for_target(
    arrivals_per_hour: float, service_s: float, target_wait_s: float, p: float = 0.95, max_slots: int = 100_000
) -> int:
    """Fewest slots whose queue-wait p-quantile is ≤ target_wait_s (0 with no traffic).

    Raises CapacityError for a negative target or when even max_slots does not meet it.
    """
    if target_wait_s is None or not math.isfinite(target_wait_s) or target_wait_s < 0:
        raise CapacityError(f"queue-wait target must be a number of seconds ≥ 0, got {target_wait_s!r}")
    lam, mu = _rates(arrivals_per_hour / 3600.0, service_s)
    if lam == 0:
        return 0
    c = max(1, math.floor(lam / mu) + 1)
    while c <= max_slots:
        if queue_wait_quantile_s(p, c, lam, service_s) <= target_wait_s:
            return c
        c += 1
    raise CapacityError(f"no pool up to {max_slots:,} slots meets a {target_wait_s:g} s queue-wait target")


def trace_idle_seconds(arrival_ms: Sequence[float], window_s: float, service_ms: float = 0.0) -> float:
    """Seconds a single scale-to-zero replica sits warm but idle over a request trace.

    After each request finishes (arrival + service) the replica idles until the next arrival or for
    window_s, whichever is shorter; after the last request it idles a full window. Raises CapacityError
    for a negative window or service time.
    """
    if window_s < 0 or service_ms < 0:
        raise CapacityError("scale-down window and service time cannot be negative")
    times = sorted(float(t) for t in arrival_ms)
    if not times:
        return 0.0
    idle_ms = 0.0
    busy_until = times[0] + service_ms
    for t in times[1:]:
        if t > busy_until:
            idle_ms += min(t - busy_until, window_s * 1000.0)
        busy_until = max(busy_until, t) + service_ms
    return idle_ms / 1000.0 + window_s


def _cold_fraction(
    window_s: float, *, arrival_ms: Sequence[float] | None, rate_per_s: float | None, service_ms: float
) -> float:
    try:
        if arrival_ms is not None:
            return trace_cold_fraction(np.asarray(arrival_ms, dtype=float), window_s, service_ms=service_ms)
        assert rate_per_s is not None  # callers give a trace or a rate
        return poisson_cold_fraction(rate_per_s, window_s)
    except ValueError as exc:
        raise CapacityError(f"cold-start exposure: {exc}") from None


def keep_warm_tradeoff(
    *,
    node_usd_per_hour: float,
    warm_ttft_p95_ms: float,
    cold_start_ms: float,
    arrivals_per_hour: float | None = None,
    arrival_ms: Iterable[float] | None = None,  # read once, in order: a list or a numpy array
    service_ms: float = 0.0,
    windows_s: Sequence[float] = DEFAULT_WINDOWS_S,
    gpus_per_replica: int = 1,
) -> pd.DataFrame:
    """Cost of keeping one replica warm vs the p95 TTFT with cold starts, per scale-down window.

    Traffic is a request trace (arrival_ms, UTC epoch ms: trace-driven) or a Poisson rate (arrivals_per_hour).
    A trace is read by the daily model of planner.capacity.traffic (DAILY_RULE): it stands for
    days_represented(its span) days, so a trace shorter than a day runs once a day and the replica scales to zero
    for the rest of it; hours per day are its warm (busy) seconds ÷ those days.
    Columns: option, window_s, cold_fraction, warm_hours_per_day, idle_gpu_hours_per_day (warm but serving
    nothing, × gpus_per_replica), keep_warm_usd_per_month, p95_ttft_ms, cold_in_p95.
    The last row is an always-warm replica (min_replicas = 1). Raises CapacityError on bad input.
    """
    if (arrival_ms is None) == (arrivals_per_hour is None):
        raise CapacityError("give either a request trace or an arrival rate, not both")
    for name, v in (
        ("replica cost ($/h)", node_usd_per_hour),
        ("warm p95 TTFT (ms)", warm_ttft_p95_ms),
        ("cold start (ms)", cold_start_ms),
    ):
        if v is None or not math.isfinite(v) or v < 0:
            raise CapacityError(f"{name} must be a number ≥ 0, got {v!r}")
    rows = []
    if arrival_ms is not None:
        times = sorted(float(t) for t in arrival_ms)
        if len(times) < 2:
            raise CapacityError("a trace needs at least two requests to measure gaps")
        span_s = (times[-1] - times[0] + service_ms) / 1000.0
        if span_s <= 0:
            raise CapacityError("every request in the trace arrived at the same instant: no gaps to measure")
        busy_s = len(times) * service_ms / 1000.0
        days = days_represented((times[-1] - times[0]) / 1000.0)  # the daily model every capacity tab uses
        for w in windows_s:
            cold = _cold_fraction(w, arrival_ms=times, rate_per_s=None, service_ms=service_ms)
            warm_s = min(span_s + w, busy_s + trace_idle_seconds(times, w, service_ms))
            per_day_h = (min(24.0, warm_s / 3600.0 / days), min(24.0, busy_s / 3600.0 / days))
            rows.append((f"scale to zero, W = {w:g} s", w, cold, *per_day_h))
    else:
        assert arrivals_per_hour is not None  # exactly one of the two, checked above
        lam = arrivals_per_hour / 3600.0
        if not math.isfinite(lam) or lam < 0:
            raise CapacityError(f"arrival rate must be ≥ 0 per hour, got {arrivals_per_hour!r}")
        if lam == 0:
            raise CapacityError("no traffic: there is nothing to keep warm, and scale-to-zero costs nothing")
        for w in windows_s:
            cold = _cold_fraction(w, arrival_ms=None, rate_per_s=lam, service_ms=service_ms)
            # One cycle = a request's service S, then an idle gap ~ Exp(λ) of which min(gap, W) is spent warm:
            # warm fraction = (S + (1 − e^(−λW))/λ) / (S + 1/λ)  (= 1 − e^(−λW) when S ≪ 1/λ).
            s = service_ms / 1000.0
            warm = (s + (1.0 - math.exp(-lam * w)) / lam) / (s + 1.0 / lam)
            rows.append((f"scale to zero, W = {w:g} s", w, cold, 24.0 * warm, 24.0 * s / (s + 1.0 / lam)))
    out = []
    for option, w, cold, warm_h, busy_h in rows:
        in_p95 = cold_in_p95(cold)
        out.append(
            {
                "option": option,
                "window_s": w,
                "cold_fraction": cold,
                "warm_hours_per_day": warm_h,
                "idle_gpu_hours_per_day": max(0.0, warm_h - busy_h) * gpus_per_replica,
                "keep_warm_usd_per_month": warm_h / 24.0 * node_usd_per_hour * HOURS_PER_MONTH,
                "p95_ttft_ms": warm_ttft_p95_ms + (cold_start_ms if in_p95 else 0.0),
                "cold_in_p95": in_p95,
            }
        )
    busy_always = rows[0][4] if rows else 0.0
    out.append(
        {
            "option": "always warm (1 replica)",
            "window_s": math.inf,
            "cold_fraction": 0.0,
            "warm_hours_per_day": 24.0,
            "idle_gpu_hours_per_day": (24.0 - busy_always) * gpus_per_replica,
            "keep_warm_usd_per_month": node_usd_per_hour * HOURS_PER_MONTH,
            "p95_ttft_ms": warm_ttft_p95_ms,
            "cold_in_p95": False,
        }
    )
    return pd.DataFrame(out)


#: What the trade-off says when there is no traffic to keep warm for.
NO_TRAFFIC = "No traffic: nothing to keep warm; scale-to-zero costs nothing."


def pool_slots(replicas: int, slots_per_replica: int) -> int:
    """Request slots in a pool: replicas × slots per replica. Raises CapacityError when either is below 1."""
    if replicas < 1 or slots_per_replica < 1:
        raise CapacityError(f"a pool needs at least 1 replica of at least 1 slot, got {replicas} × {slots_per_replica}")
    return int(replicas) * int(slots_per_replica)


@dataclass(frozen=True)
class KeepWarm:
    """What the keep-warm vs scale-to-zero trade-off needs beyond the pool: one replica's cost (USD/h) and GPUs, the
    warm p95 TTFT (ms), the cold start (ms); `arrival_ms` (UTC epoch ms) and `service_ms` a request trace's arrivals
    and mean service time when a log drives it (None: Poisson arrivals at the pool's rate and service time)."""

    replica_usd_per_hour: float
    warm_ttft_p95_ms: float
    cold_start_ms: float
    gpus_per_replica: int = 1
    arrival_ms: Sequence[float] | np.ndarray | None = None
    service_ms: float | None = None


@dataclass(frozen=True)
class WarmPoolPlan:
    """plan_warm_pool's answer. `queue`: the pool's Erlang C figures (None without a pool size); `min_slots` and
    `min_replicas`: the fewest for the target (None without one); `tradeoff`: keep_warm_tradeoff's rows (None when
    not asked, or with no traffic: `tradeoff_note` says so), `tradeoff_from_trace` True when the log's trace drove it
    (False: Poisson arrivals)."""

    arrivals_per_hour: float
    service_s: float
    p: float
    slots_per_replica: int
    slots: int | None
    queue: QueueWait | None
    target_wait_s: float | None
    min_slots: int | None
    min_replicas: int | None
    tradeoff: pd.DataFrame | None
    tradeoff_note: str = ""
    tradeoff_from_trace: bool = False


def plan_warm_pool(
    arrivals_per_hour: float,
    service_s: float,
    *,
    slots_per_replica: int = 1,
    replicas: int | None = None,
    slots: int | None = None,
    target_wait_s: float | None = None,
    p: float = 0.95,
    keep_warm: KeepWarm | None = None,
) -> WarmPoolPlan:
    """A warm pool sized one way for the page and the command: the pool is `replicas` × `slots_per_replica` slots (or
    `slots` outright; neither: no queue figures), the minimum replicas for a queue-wait p-quantile ≤ target_wait_s
    is ⌈min slots ÷ slots per replica⌉, and the trade-off (`keep_warm`) counts idle GPU-hours for every GPU of the
    replica. Arrivals per hour, service time in s. Raises CapacityError on bad input (both `replicas` and `slots`,
    fewer than 1 slot per replica, a negative rate, …)."""
    if replicas is not None and slots is not None:
        raise CapacityError("give the pool as replicas or as slots, not both")
    if slots_per_replica < 1:
        raise CapacityError(f"slots per replica must be at least 1, got {slots_per_replica}")
    pool = pool_slots(replicas, slots_per_replica) if replicas is not None else slots
    qw = queue_wait(arrivals_per_hour, service_s, pool, p) if pool is not None else None
    need = min_slots_for_target(arrivals_per_hour, service_s, target_wait_s, p) if target_wait_s is not None else None
    trade, note, trace = None, "", False
    if keep_warm is not None:
        trace = keep_warm.arrival_ms is not None and len(keep_warm.arrival_ms) >= 2
        if trace or arrivals_per_hour > 0:
            trade = keep_warm_tradeoff(
                node_usd_per_hour=keep_warm.replica_usd_per_hour,
                warm_ttft_p95_ms=keep_warm.warm_ttft_p95_ms,
                cold_start_ms=keep_warm.cold_start_ms,
                arrivals_per_hour=None if trace else arrivals_per_hour,
                arrival_ms=keep_warm.arrival_ms if trace else None,
                service_ms=keep_warm.service_ms if trace and keep_warm.service_ms is not None else service_s * 1000,
                gpus_per_replica=keep_warm.gpus_per_replica,
            )
        else:
            note = NO_TRAFFIC
    return WarmPoolPlan(
        arrivals_per_hour=float(arrivals_per_hour),
        service_s=float(service_s),
        p=p,
        slots_per_replica=int(slots_per_replica),
        slots=pool,
        queue=qw,
        target_wait_s=target_wait_s,
        min_slots=need,
        min_replicas=math.ceil(need / slots_per_replica) if need is not None else None,
        tradeoff=trade,
        tradeoff_note=note,
        tradeoff_from_trace=trace,
    )
