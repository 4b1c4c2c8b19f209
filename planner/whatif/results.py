"""What-if results: percentiles overall and per hour, the tail's segments, targets met, GPU-hours and cost.

Percentiles are nearest-rank (`planner.percentiles`), each with its n; an hour's p95 is only
trusted (`reliable`) at n ≥ 20. A candidate meets the chosen interaction's target when its
overall p95 and every reliable hourly p95 are at or under the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from planner.percentiles import Percentile, nearest_rank_index
from planner.whatif.deployment import Dedicated, Deployment, Serverless
from planner.whatif.interval import DEFAULT_LEVEL, Band, Prediction, predict
from planner.whatif.outcome import p95_segments
from planner.whatif.regime import regime_sentence
from planner.whatif.replay import DEFAULT_MAX_WAIT_S, SEGMENT_KEYS, CannotKeepUp, Replay
from planner.whatif.routing import placement
from planner.whatif.trace import Trace, hour_of_day
from planner.worksheet.interactions import Interaction, interactions

__all__ = [
    "PS",
    "CandidateResult",
    "Comparison",
    "HourStat",
    "compare",
    "cost_usd",
    "interaction_by_key",
    "percentiles_sorted",
    "summarize_replay",
]

PS = (0.5, 0.95, 0.99)


def percentiles_sorted(sorted_values: np.ndarray, ps: tuple[float, ...] = PS) -> dict[str, Percentile]:
    """Nearest-rank percentiles ('p50', 'p95', 'p99') of an already sorted array, via planner.percentiles."""
    n = len(sorted_values)
    out = {}
    for p in ps:
        pc = Percentile(p=p, value=float(sorted_values[nearest_rank_index(p, n)]) if n else None, n=n)
        out[pc.label] = pc
    return out


def interaction_by_key(key: str) -> Interaction:
    """The preset interaction `key` (inline, chat, agent); raises KeyError listing the known keys."""
    for it in interactions():
        if it.key == key:
            return it
    raise KeyError(f"unknown interaction {key!r}; one of {', '.join(i.key for i in interactions())}")


@dataclass(frozen=True)
class HourStat:
    """One hour of day (local to the chosen time zone): n and p50/p95/p99 TTFT (ms), and the p95's prediction
    interval (ms; None without one)."""

    hour: int
    n: int
    p50: Percentile
    p95: Percentile
    p99: Percentile
    p95_lo_ms: float | None = None
    p95_hi_ms: float | None = None


def _reliable_p95(h: HourStat) -> float:
    """The p95 of an hour whose p95 is reliable (a reliable Percentile always has a value)."""
    assert h.p95.value is not None
    return h.p95.value


@dataclass(frozen=True)
class CandidateResult:
    """The prediction for one candidate, or why there is none (`ok` False, `message`).

    tail_segments_ms: mean of each segment over the requests at or above the p95 (the tail): what the slowest 5 %
        wait for. Its segments can add up to more than the p95 (the slowest queue and the slowest cold start are
        often different requests), so it is never handed on as a decomposition of the p95.
    p95_segments_ms: the p95 itself split into its segments (p95_segments: the requests at the p95's rank), which
        add up to the p95 exactly — what the worksheet is handed.
    share_meeting: fraction of requests at or under each interaction's target.
    cost_usd: for the replayed period; usd_per_day scales it to 24 h.
    """

    name: str
    kind: str
    ok: bool
    message: str = ""
    n: int = 0
    overall: dict[str, Percentile] = field(default_factory=dict)
    hourly: tuple[HourStat, ...] = ()
    tail_segments_ms: dict[str, float] = field(default_factory=dict)
    p95_segments_ms: dict[str, float] = field(default_factory=dict)
    regime: str = ""  # what the p95 waits for and what one replica more does (planner.whatif.regime)
    share_meeting: dict[str, float] = field(default_factory=dict)
    meets_target: bool = False
    worst_hour: int | None = None
    gpu_hours: float = 0.0
    cost_usd: float = 0.0
    usd_per_day: float = 0.0
    period_h: float = 0.0
    cold_starts: int = 0
    peak_replicas: int = 0
    overflow_fraction: float = 0.0
    interval: dict[str, Band] = field(default_factory=dict)  # "p50"/"p95"/"p99" → value and interval
    interval_level: float = DEFAULT_LEVEL
    interval_driven_by: str = ""  # "engine" (the speed level), "requests" (their jitter), "trace" (its size alone)
    prefix_cache: dict[str, Any] | None = None  # routing=: its replicas' caches (planner.whatif.routing.Placement)

    def interval_sentence(self, key: str = "p95") -> str:
        """'p95 812 ms (80 %: 700–950 ms), width set by the engine's speed spread'; '' without an interval."""
        band = self.interval.get(key)
        if band is None:
            return ""
        why = {
            "engine": "the engine's speed spread",
            "requests": "request-to-request variation and the trace's size",
        }.get(self.interval_driven_by, "the trace's size alone")
        top = f"{band.hi_ms:,.0f} ms"
        if math.isinf(band.hi_ms):
            top = "unbounded (at its slower speeds it cannot keep up)"
        return (
            f"{key} {band.value_ms:,.0f} ms ({self.interval_level:.0%} interval {band.lo_ms:,.0f} ms – {top}), "
            f"its width set by {why}"
        )

    def to_dict(self) -> dict[str, Any]:
        def pc(p: Percentile) -> dict[str, Any]:
            return {"value_ms": p.value, "n": p.n, "reliable": p.reliable}

        return {
            "name": self.name,
            "kind": self.kind,
            "ok": self.ok,
            "message": self.message,
            "n": self.n,
            **{f"{k}_ms": v.value for k, v in self.overall.items()},
            "hourly": [
                {
                    "hour": h.hour,
                    "n": h.n,
                    "p50_ms": h.p50.value,
                    "p95_ms": h.p95.value,
                    "p99_ms": h.p99.value,
                    "p95_reliable": h.p95.reliable,
                    "p95_lo_ms": h.p95_lo_ms,
                    "p95_hi_ms": h.p95_hi_ms,
                }
                for h in self.hourly
            ],
            "interval": {
                "level": self.interval_level,
                "driven_by": self.interval_driven_by,
                **{
                    k: {"value_ms": b.value_ms, "lo_ms": b.lo_ms, "hi_ms": _finite(b.hi_ms)}
                    for k, b in self.interval.items()
                },
            },
            "overall": {k: pc(v) for k, v in self.overall.items()},
            "tail_segments_ms": self.tail_segments_ms,
            "p95_segments_ms": self.p95_segments_ms,
            "regime": self.regime,
            "share_meeting": self.share_meeting,
            "meets_target": self.meets_target,
            "worst_hour": self.worst_hour,
            "gpu_hours": self.gpu_hours,
            "cost_usd": self.cost_usd,
            "usd_per_day": self.usd_per_day,
            "period_h": self.period_h,
            "cold_starts": self.cold_starts,
            "peak_replicas": self.peak_replicas,
            "overflow_fraction": self.overflow_fraction,
            "prefix_cache": self.prefix_cache,
        }


@dataclass(frozen=True)
class Comparison:
    """Every candidate's result over one trace, the target in force and the cheapest candidate meeting it."""

    candidates: tuple[CandidateResult, ...]
    interaction: Interaction
    cheapest: str | None
    n_requests: int
    tz: str
    level: float = DEFAULT_LEVEL  # of every candidate's prediction intervals

    def to_dict(self) -> dict[str, Any]:
        return {
            "interaction": self.interaction.key,
            "target_p95_ms": self.interaction.target_p95_ms,
            "tz": self.tz,
            "n_requests": self.n_requests,
            "cheapest_meeting_target": self.cheapest,
            "candidates": [c.to_dict() for c in self.candidates],
        }

    def table(self) -> pd.DataFrame:
        """One row per candidate: p50/p95/p99 (ms), the p95's prediction interval (p95_lo_ms, p95_hi_ms; the top may
        be inf: at its slower speeds the candidate cannot keep up), worst hourly p95, share meeting target, GPU-h,
        cost."""
        key = self.interaction.key
        rows = []
        for c in self.candidates:
            worst = max((_reliable_p95(h) for h in c.hourly if h.p95.reliable), default=None)
            rows.append(
                {
                    "candidate": c.name,
                    "kind": c.kind,
                    "p50_ms": c.overall["p50"].value if c.ok else None,
                    "p95_ms": c.overall["p95"].value if c.ok else None,
                    "p95_lo_ms": c.interval["p95"].lo_ms if "p95" in c.interval else None,
                    "p95_hi_ms": c.interval["p95"].hi_ms if "p95" in c.interval else None,
                    "p99_ms": c.overall["p99"].value if c.ok else None,
                    "worst_hour_p95_ms": worst,
                    f"share_within_{key}_target": c.share_meeting.get(key) if c.ok else None,
                    "meets_target": c.meets_target,
                    "gpu_hours": c.gpu_hours if c.ok else None,
                    "cost_usd": c.cost_usd if c.ok else None,
                    "usd_per_day": c.usd_per_day if c.ok else None,
                    "cheapest": c.name == self.cheapest,
                    "note": c.message,
                }
            )
        return pd.DataFrame(rows)

    def hourly_frame(self) -> pd.DataFrame:
        """Long frame: candidate, hour, n, p50_ms, p95_ms, p95_reliable, p95_lo_ms, p95_hi_ms (the p95's prediction
        interval; one row per candidate-hour)."""
        rows = [
            {
                "candidate": c.name,
                "hour": h.hour,
                "n": h.n,
                "p50_ms": h.p50.value,
                "p95_ms": h.p95.value,
                "p95_reliable": h.p95.reliable,
                "p95_lo_ms": h.p95_lo_ms,
                "p95_hi_ms": h.p95_hi_ms,
            }
            for c in self.candidates
            if c.ok
            for h in c.hourly
        ]
        columns = ["candidate", "hour", "n", "p50_ms", "p95_ms", "p95_reliable", "p95_lo_ms", "p95_hi_ms"]
        return pd.DataFrame(rows, columns=columns)

    def segments_frame(self) -> pd.DataFrame:
        """Long frame: candidate, segment, ms (mean over the candidate's p95 tail)."""
        rows = [
            {"candidate": c.name, "segment": s, "ms": c.tail_segments_ms[s]}
            for c in self.candidates
            if c.ok
            for s in SEGMENT_KEYS
        ]
        return pd.DataFrame(rows, columns=["candidate", "segment", "ms"])


def cost_usd(dep: Deployment, rep: Replay) -> float:
    """Cost of the replayed period (USD): dedicated GPU-hours × $/GPU-h, plus the serverless pool's
    tokens × $/Mtok and warm GPU-hours × $/GPU-h."""
    total = 0.0
    pool: Serverless | None = dep if isinstance(dep, Serverless) else dep.overflow
    if isinstance(dep, Dedicated):
        total += rep.dedicated_gpu_hours * dep.usd_per_gpu_h.value
    if pool is not None:
        total += rep.serverless_tokens / 1e6 * pool.price_usd_per_mtok.value
        total += rep.serverless_gpu_hours * pool.usd_per_gpu_h.value
    return total


def _finite(ms: float) -> float | None:
    """JSON has no infinity: an unbounded end is null."""
    return ms if math.isfinite(ms) else None


def _hourly(rep: Replay, tz: str, pred: Prediction | None = None) -> tuple[HourStat, ...]:
    hours = hour_of_day(rep.arrival_ms, tz)
    order = np.lexsort((rep.ttft_ms, hours))
    hs = hours[order]
    vals = rep.ttft_ms[order]
    out = []
    bounds = np.searchsorted(hs, np.arange(25))
    for h in range(24):
        chunk = vals[bounds[h] : bounds[h + 1]]
        if len(chunk):
            pc = percentiles_sorted(chunk)
            lo = hi = None
            if pred is not None:
                lo, hi = pred.band_of(hours == h)
            out.append(HourStat(h, len(chunk), pc["p50"], pc["p95"], pc["p99"], lo, hi))
    return tuple(out)


def summarize_replay(
    dep: Deployment, rep: Replay, interaction: Interaction, tz: str = "UTC", pred: Prediction | None = None
) -> CandidateResult:
    """Reduce a Replay to the numbers the page and the CLI show (see CandidateResult); with `pred` (whose nominal
    replay `rep` is), every percentile carries its prediction interval."""
    ttft_sorted = np.sort(rep.ttft_ms)
    overall = percentiles_sorted(ttft_sorted)
    p95 = overall["p95"].value
    assert p95 is not None  # replay() needs at least one request (it reads the first arrival)
    tail = rep.ttft_ms >= p95
    tail_segments = {k: float(getattr(rep, k)[tail].mean()) for k in SEGMENT_KEYS}
    share = {
        it.key: float(np.searchsorted(ttft_sorted, it.target_p95_ms, side="right")) / rep.n
        for it in (*interactions(), interaction)
    }
    hourly = _hourly(rep, tz, pred)
    reliable = [h for h in hourly if h.p95.reliable]
    worst = max(reliable, key=_reliable_p95, default=None)
    target = interaction.target_p95_ms
    meets = p95 <= target and all(_reliable_p95(h) <= target for h in reliable)
    cost = cost_usd(dep, rep)
    return CandidateResult(
        name=dep.name,
        kind=dep.kind,
        ok=True,
        n=rep.n,
        overall=overall,
        hourly=hourly,
        tail_segments_ms=tail_segments,
        p95_segments_ms=p95_segments(rep),
        share_meeting=share,
        meets_target=meets,
        worst_hour=worst.hour if worst else None,
        gpu_hours=rep.gpu_hours,
        cost_usd=cost,
        usd_per_day=cost / rep.period_h * 24 if rep.period_h > 0 else 0.0,
        period_h=rep.period_h,
        cold_starts=rep.cold_starts,
        peak_replicas=rep.peak_replicas,
        overflow_fraction=float(rep.overflow.mean()),
        interval=dict(pred.bands) if pred else {},
        interval_level=pred.level if pred else DEFAULT_LEVEL,
        interval_driven_by=pred.driven_by if pred else "",
    )


def compare(
    trace: Trace,
    deployments: list[Deployment],
    interaction: str | Interaction = "chat",
    tz: str = "UTC",
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
    level: float = DEFAULT_LEVEL,
) -> Comparison:
    """Replay `trace` against every deployment and summarise; a candidate that cannot keep up
    is a row with ok=False and the reason, not an exception. `interaction`: a preset key, or an
    Interaction with its own target (the worksheet's, custom types included). Every percentile carries its `level`
    prediction interval (planner.whatif.interval: from the candidate's speed spread and the trace's size).
    Raises KeyError for an unknown interaction key, TraceError for an unknown time zone, ValueError for two
    candidates with one name."""
    it = interaction if isinstance(interaction, Interaction) else interaction_by_key(interaction)
    hour_of_day(trace.arrival_ms[:1], tz)  # fail early on a bad zone
    names = [d.name for d in deployments]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must differ, got {', '.join(names)}")
    results = []
    for dep in deployments:
        try:
            pred = predict(dep, trace, level=level, max_wait_s=max_wait_s)
        except CannotKeepUp as exc:
            results.append(CandidateResult(name=dep.name, kind=dep.kind, ok=False, message=exc.reason))
            continue
        placed = placement(dep, trace)  # routing=: the replicas' caches the replay served from (made once, reused)
        result = summarize_replay(dep, pred.nominal, it, tz, pred)
        result = replace(result, regime=regime_sentence(dep, pred.nominal, trace, max_wait_s))
        results.append(result if placed is None else replace(result, prefix_cache=placed.summary()))
    meeting = [c for c in results if c.ok and c.meets_target]
    cheapest = min(meeting, key=lambda c: c.cost_usd).name if meeting else None
    return Comparison(tuple(results), it, cheapest, trace.n, tz, level)
