"""A prediction interval for the what-if replay: how far the TTFT percentiles may land from the point prediction.

Three sources of uncertainty, each drawn the same way for every candidate:

- **the engine's speed level** (`speed_sd`): a run happens at one speed, which a calibration a minute earlier only
  estimates. The replay is repeated at `draws` speed levels spaced by quantile of a log-normal of that spread
  (deterministic, so the interval does not move between page runs); the middle one is the speed as specified;
- **request-to-request speed** (`request_sd`): each request's prefill and slot hold are multiplied by its own
  log-normal factor (seeded), which lengthens queues (Pollaczek–Khinchine) as a real engine's jitter does;
- **a finite trace**: a percentile of n requests is itself a sample. For each replay, `samples` percentile values
  are drawn as the order statistic at a Binomial(n, p) rank (the distribution-free sampling law of a quantile).

The interval is the central `level` of all draws pooled; the point prediction is `replay()`'s at the specified
speed, as without an interval (request jitter lengthens queues, so under load it can sit low in its interval).
`driven_by` says which source makes the p95's interval wide, from the interval each gives alone: the speed level
("engine"), or requests' jitter with the trace's size ("requests", when the spec has a request_sd), or the trace's
size alone ("trace").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from planner.percentiles import nearest_rank_index
from planner.whatif.deployment import Deployment
from planner.whatif.replay import DEFAULT_MAX_WAIT_S, CannotKeepUp, Replay, replay
from planner.whatif.trace import Trace

__all__ = ["DEFAULT_DRAWS", "DEFAULT_LEVEL", "Band", "Prediction", "predict"]

DEFAULT_LEVEL = 0.8
DEFAULT_DRAWS = 9  # speed levels replayed when the deployment has a speed spread (odd: the middle one is nominal)
_SAMPLES = 200  # percentile values drawn per replay for the trace's sampling noise
_PS = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class Band:
    """One percentile's prediction (ms): the point value and its interval [lo_ms, hi_ms] at `level`."""

    value_ms: float
    lo_ms: float
    hi_ms: float

    @property
    def half_width_fraction(self) -> float:
        """Half the interval's width as a fraction of its centre (0.2 = ±20 %)."""
        centre = (self.lo_ms + self.hi_ms) / 2
        return (self.hi_ms - self.lo_ms) / 2 / centre if centre > 0 else 0.0

    def contains(self, ms: float) -> bool:
        return self.lo_ms <= ms <= self.hi_ms

    def describe(self, level: float) -> str:
        """'812 ms (80%: 700–950 ms)'; an infinite end reads 'unbounded': '812 ms (80%: 700 ms – unbounded)'."""
        return f"{self.value_ms:,.0f} ms ({level:.0%}: {self.range_text()})"

    def range_text(self) -> str:
        """The interval alone: '700–950 ms', '700 ms – unbounded' when its top (or both ends) is infinite."""
        if math.isinf(self.lo_ms):
            return "unbounded"
        if math.isinf(self.hi_ms):
            return f"{self.lo_ms:,.0f} ms – unbounded"
        return f"{self.lo_ms:,.0f}–{self.hi_ms:,.0f} ms"


@dataclass(frozen=True)
class Prediction:
    """The replay at the specified speed (`nominal`), every percentile's band, and what drives their width."""

    nominal: Replay
    level: float
    bands: dict[str, Band]  # "p50", "p95", "p99"
    driven_by: Literal["engine", "requests", "trace"]
    draws: int
    runs: tuple[np.ndarray, ...] = ()  # each draw's TTFT per request (ms), for bands over a subset (an hour)
    seed: int = 0

    def band_of(self, mask: np.ndarray, key: str = "p95") -> tuple[float, float]:
        """The interval of one percentile over the requests in `mask` (an hour of day), from the same draws."""
        return _bands([r[mask] for r in self.runs], self.level, self.seed, with_trace_noise=True)[key]

    def to_dict(self) -> dict[str, object]:
        return {
            "level": self.level,
            "driven_by": self.driven_by,
            "draws": self.draws,
            **{k: {"value_ms": b.value_ms, "lo_ms": b.lo_ms, "hi_ms": b.hi_ms} for k, b in self.bands.items()},
        }


def _speed_levels(speed_sd: float, draws: int) -> np.ndarray:
    """`draws` slowdown factors at evenly spaced quantiles of a log-normal with log-sd `speed_sd` (1 in the middle)."""
    if speed_sd <= 0 or draws <= 1:
        return np.ones(1)
    z = np.array([NormalDist().inv_cdf((j + 0.5) / draws) for j in range(draws)])
    return np.exp(speed_sd * z)


def _percentile_draws(ttft_ms: np.ndarray, p: float, rng: np.random.Generator, samples: int) -> np.ndarray:
    """`samples` draws of the nearest-rank p-percentile a run of these n requests could have shown."""
    ordered = np.sort(ttft_ms)
    n = len(ordered)
    ranks = np.clip(rng.binomial(n, p, samples), 1, n) - 1
    return ordered[ranks]


def _replays(
    dep: Deployment, trace: Trace, levels: np.ndarray, request_sd: float, seed: int, max_wait_s: float
) -> list[np.ndarray]:
    """Each speed level's TTFTs (with its own request jitter); a draw so slow that the deployment cannot keep up
    counts as infinitely slow."""
    rng = np.random.default_rng(seed)
    out = []
    for f in levels:
        jitter = np.exp(request_sd * rng.standard_normal(trace.n)) if request_sd > 0 else None
        try:
            out.append(replay(dep, trace, max_wait_s=max_wait_s, slowdown=jitter, speed=float(f)).ttft_ms)
        except CannotKeepUp:
            out.append(np.full(trace.n, np.inf))
    return out


def _bands(runs: list[np.ndarray], level: float, seed: int, with_trace_noise: bool) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed + 1)
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    out = {}
    for key, p in _PS.items():
        if with_trace_noise:
            pooled = np.concatenate([_percentile_draws(r, p, rng, _SAMPLES) for r in runs])
        else:
            pooled = np.array([np.sort(r)[nearest_rank_index(p, len(r))] for r in runs])
        lo, hi = np.quantile(pooled, [lo_q, hi_q], method="inverted_cdf")  # a drawn value: inf stays inf
        out[key] = (float(lo), float(hi))
    return out


def predict(
    dep: Deployment,
    trace: Trace,
    *,
    level: float = DEFAULT_LEVEL,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
) -> Prediction:
    """Replay `trace` against `dep` at its specified speed and at `draws` speed levels of its spread; return the
    percentiles with their `level` interval (see the module docstring).

    Raises CannotKeepUp as replay() does (checked at the specified speed first); a slower draw that cannot keep up
    makes the interval's top unbounded (inf). A deployment without spread costs one replay.
    """
    if not 0 < level < 1:
        raise ValueError(f"the interval's level must be between 0 and 1, got {level}")
    nominal = replay(dep, trace, max_wait_s=max_wait_s)
    speed_sd, request_sd = dep.speed_sd.value, dep.request_sd.value
    levels = _speed_levels(speed_sd, draws)
    runs = [nominal.ttft_ms] if len(levels) == 1 and request_sd <= 0 else []
    runs = runs or _replays(dep, trace, levels, request_sd, seed, max_wait_s)
    both = _bands(runs, level, seed, with_trace_noise=True)
    ordered = np.sort(nominal.ttft_ms)
    bands = {k: Band(float(ordered[nearest_rank_index(p, len(ordered))]), *both[k]) for k, p in _PS.items()}
    # Which source makes it wide: the engine's speed level alone, or requests and the trace's size alone.
    engine_only = _bands(runs, level, seed, with_trace_noise=False) if len(runs) > 1 else None
    if request_sd > 0:
        trace_runs = _replays(dep, trace, np.ones(1), request_sd, seed, max_wait_s)
    else:
        trace_runs = [nominal.ttft_ms]
    trace_only = _bands(trace_runs, level, seed, with_trace_noise=True)
    width_engine = engine_only["p95"][1] - engine_only["p95"][0] if engine_only else 0.0
    width_trace = trace_only["p95"][1] - trace_only["p95"][0]
    driven_by: Literal["engine", "requests", "trace"] = "requests" if request_sd > 0 else "trace"
    if width_engine > width_trace:
        driven_by = "engine"
    return Prediction(
        nominal=nominal, level=level, bands=bands, driven_by=driven_by, draws=len(runs), runs=tuple(runs), seed=seed
    )
