"""Drive an endpoint through a load sweep with the probe engine and summarise each step.

Open loop (`poisson`, `constant`): each step sends requests at its scheduled times whatever the
endpoint does (a slow endpoint builds a queue, as real traffic would); the step ends when every
request it sent has finished or timed out. Closed loop (`concurrency`): N workers each send their
next request as soon as the previous one finished, for the step's duration.

Every request is one `probe_once` (fresh connection, nonce-first prompt, one attempt: a 429 or 5xx
is an error of that step, not retried). Per step: TTFT p50/p95/p99 over successful requests (with
n; nearest rank), error rate, offered and achieved throughput, how late the client sent (p95 send
lag: above a few ms the client, not the endpoint, was the bottleneck) and this process's CPU time
per request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from planner.percentiles import summarize
from planner.probes.ttft import ProbeTarget, TtftSample, _shared_ssl_context, probe_once
from planner.probes.warmup import warm_up
from planner.sweep.arrivals import ARRIVAL_KINDS, arrival_offsets_s
from planner.sweep.knee import knee_of

__all__ = ["MODES", "SweepResult", "SweepSpec", "SweepStep", "run_sweep"]

MODES = (*ARRIVAL_KINDS, "concurrency")

ClockNs = Callable[[], int]


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. loads: requests/s (poisson, constant) or concurrent requests (concurrency), ascending."""

    target: ProbeTarget
    mode: str
    loads: tuple[float, ...]
    step_duration_s: float = 10.0
    target_p95_ms: float | None = None
    seed: int = 0
    stop_after_knee: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.loads:
            raise ValueError("a sweep needs at least one load step")
        if any(not x > 0 for x in self.loads):
            raise ValueError(f"every load must be > 0, got {list(self.loads)}")
        if self.mode == "concurrency" and any(x != int(x) for x in self.loads):
            raise ValueError(f"concurrencies must be whole numbers, got {list(self.loads)}")
        if not self.step_duration_s > 0:
            raise ValueError(f"step duration must be > 0 s, got {self.step_duration_s}")
        if self.target_p95_ms is not None and not self.target_p95_ms > 0:
            raise ValueError(f"the p95 target must be > 0 ms, got {self.target_p95_ms}")


@dataclass(frozen=True)
class SweepStep:
    """One load step's outcome (times in ms, throughput in requests/s)."""

    index: int
    load: float
    n_sent: int
    n_ok: int
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    p95_reliable: bool
    p99_reliable: bool
    offered_rps: float
    achieved_rps: float
    send_lag_p95_ms: float
    wall_s: float
    client_cpu_ms_per_request: float
    errors_by_class: dict[str, int] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return self.n_sent - self.n_ok

    @property
    def error_rate(self) -> float:
        return self.n_failed / self.n_sent if self.n_sent else 0.0

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "n_failed": self.n_failed, "error_rate": self.error_rate}


@dataclass(frozen=True)
class SweepResult:
    """Every step run, the knee (last load within the target) and the first load over it."""

    spec: SweepSpec
    steps: tuple[SweepStep, ...]
    started_at_ms: int
    finished_at_ms: int
    knee_load: float | None
    over_load: float | None

    @property
    def client_cpu_ms_per_request(self) -> float:
        sent = sum(s.n_sent for s in self.steps)
        return sum(s.client_cpu_ms_per_request * s.n_sent for s in self.steps) / sent if sent else 0.0


def _new_client(timeout_s: float) -> httpx.AsyncClient:
    # No pool limit (open loop must never queue in the client) and no kept connections (fresh per request).
    return httpx.AsyncClient(
        trust_env=False,
        timeout=httpx.Timeout(timeout_s),
        verify=_shared_ssl_context(),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
    )


async def _one(target: ProbeTarget, client: httpx.AsyncClient, done_at: list[float], clock_ns: ClockNs) -> TtftSample:
    s = await probe_once(target, client=client, max_attempts=1, clock_ns=clock_ns)
    done_at.append(clock_ns() / 1e9)
    return s


async def _open_loop(spec: SweepSpec, client: httpx.AsyncClient, rate: float, index: int, clock_ns: ClockNs):
    offsets = arrival_offsets_s(spec.mode, rate, spec.step_duration_s, seed=spec.seed * 1000 + index)
    done_at: list[float] = []
    lags: list[float] = []
    tasks = []
    start = clock_ns() / 1e9
    for off in offsets:
        delay = start + off - clock_ns() / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        lags.append(max(0.0, (clock_ns() / 1e9 - start - off) * 1000))
        tasks.append(asyncio.create_task(_one(spec.target, client, done_at, clock_ns)))
    samples = await asyncio.gather(*tasks)
    return samples, lags, start, done_at, len(offsets) / spec.step_duration_s


async def _closed_loop(spec: SweepSpec, client: httpx.AsyncClient, concurrency: float, clock_ns: ClockNs):
    done_at: list[float] = []
    samples: list[TtftSample] = []
    start = clock_ns() / 1e9
    end = start + spec.step_duration_s

    async def worker() -> None:
        while clock_ns() / 1e9 < end:
            samples.append(await _one(spec.target, client, done_at, clock_ns))

    await asyncio.gather(*(worker() for _ in range(int(concurrency))))
    wall = max(done_at, default=end) - start
    return samples, [0.0], start, done_at, len(samples) / wall if wall > 0 else 0.0


def _summarise(
    index: int,
    load: float,
    samples: list[TtftSample],
    lags: list[float],
    start: float,
    done_at: list[float],
    offered: float,
    cpu_s: float,
) -> SweepStep:
    ok = [s for s in samples if s.ok]
    q = summarize([s.ttft_ms for s in ok], ps=(0.5, 0.95, 0.99))
    wall = (max(done_at) - start) if done_at else 0.0
    return SweepStep(
        index=index,
        load=float(load),
        n_sent=len(samples),
        n_ok=len(ok),
        ttft_p50_ms=q["p50"].value,
        ttft_p95_ms=q["p95"].value,
        ttft_p99_ms=q["p99"].value,
        p95_reliable=q["p95"].reliable,
        p99_reliable=q["p99"].reliable,
        offered_rps=offered,
        achieved_rps=len(ok) / wall if wall > 0 else 0.0,
        send_lag_p95_ms=summarize(lags, ps=(0.95,))["p95"].value or 0.0,
        wall_s=wall,
        client_cpu_ms_per_request=cpu_s * 1000 / len(samples) if samples else 0.0,
        errors_by_class=dict(Counter(str(s.error_class) for s in samples if not s.ok)),
    )


async def run_sweep(
    spec: SweepSpec,
    on_step: Callable[[SweepStep], None] | None = None,
    *,
    client: httpx.AsyncClient | None = None,
    clock_ns: ClockNs = time.perf_counter_ns,
) -> SweepResult:
    """Run every step in order (stopping after the first one over the target when stop_after_knee).

    `client` (kept open) and `clock_ns` (the schedule's and every probe's clock) are seams for tests and benchmarks:
    the simulator in virtual time (planner.simulator.virtual) is swept with its in-memory client and the loop's clock.
    """
    started = int(time.time() * 1000)
    await warm_up(spec.target.protocol)  # lazy imports and thread-pool start outside the first step
    steps: list[SweepStep] = []
    own = client is None
    client = client or _new_client(spec.target.timeout_s)
    try:
        for i, load in enumerate(spec.loads):
            cpu0 = time.process_time()
            if spec.mode == "concurrency":
                samples, lags, start, done_at, offered = await _closed_loop(spec, client, load, clock_ns)
            else:
                samples, lags, start, done_at, offered = await _open_loop(spec, client, load, i, clock_ns)
            step = _summarise(i, load, samples, lags, start, done_at, offered, time.process_time() - cpu0)
            steps.append(step)
            if on_step is not None:
                on_step(step)
            if (
                spec.stop_after_knee
                and spec.target_p95_ms is not None
                and (step.ttft_p95_ms is None or step.ttft_p95_ms > spec.target_p95_ms)
            ):
                break
    finally:
        if own:
            await client.aclose()
    knee, over = (None, None)
    if spec.target_p95_ms is not None:
        knee, over = knee_of([s.load for s in steps], [s.ttft_p95_ms for s in steps], spec.target_p95_ms)
    return SweepResult(
        spec=spec,
        steps=tuple(steps),
        started_at_ms=started,
        finished_at_ms=int(time.time() * 1000),
        knee_load=knee,
        over_load=over,
    )
