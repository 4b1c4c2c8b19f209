"""Measured prefill slopes per endpoint from stored probe samples (fit with planner.probes.fit).

Only successful, cache-busting probes count (planner.store.probes.prefill_points: ok, not a deliberate cached
series, not a cold reading); the x value is the UNCACHED prompt length (prompt − cached tokens, the requested
length when the provider reported none). An endpoint needs probes at two or more lengths.

Each endpoint's slope is also fitted day by day (UTC days with probes at two or more lengths): how much those rates
differ is the endpoint's speed spread (`speed_sd`, planner.spread), what a what-if candidate on that endpoint takes
as its `speed_sd` when no calibration measured one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from planner.probes.fit import PrefillFit, fit_prefill
from planner.spread import speed_sd_of
from planner.store.probes import prefill_points

__all__ = ["MeasuredSlope", "measured_slopes"]


@dataclass(frozen=True)
class MeasuredSlope:
    """One endpoint's fitted prefill slope, when its newest sample was taken (UTC epoch ms), and the prefill rate
    of each UTC day that could be fitted on its own (tokens/s, oldest first)."""

    endpoint: str
    fit: PrefillFit
    newest_at_ms: int
    daily_tokens_per_s: tuple[float, ...] = ()

    @property
    def speed_sd(self) -> float:
        """The day-to-day speed spread (log-sd for the next run; 0 with fewer than two days)."""
        return speed_sd_of(self.daily_tokens_per_s)

    def describe_spread(self) -> str:
        """'day to day ±12 % over 5 days (speed_sd=0.123 for a what-if candidate)', or '' with fewer than two."""
        days = self.daily_tokens_per_s
        if len(days) < 2:
            return ""
        return (
            f"day to day ±{self.speed_sd:.0%} over {len(days)} days "
            f"(speed_sd={self.speed_sd:.3f} for a what-if candidate on it)"
        )


def measured_slopes(engine: Engine, since_ms: int | None = None) -> list[MeasuredSlope]:
    """Fitted prefill slopes of every endpoint with probes at ≥ 2 prompt lengths, usable ones first.

    Endpoints whose fit has no positive slope are left out (they measured no prefill cost).
    """
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    by_day: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    newest: dict[str, int] = {}
    for name, tokens, ttft_ms, started_ms in prefill_points(engine, since_ms):
        points[name].append((tokens, ttft_ms))
        by_day[name][started_ms // _DAY_MS].append((tokens, ttft_ms))
        newest[name] = max(newest.get(name, 0), started_ms)
    out = []
    for name, pts in sorted(points.items()):
        f = _fit(pts)
        if f is not None:
            daily = (_fit(by_day[name][day]) for day in sorted(by_day[name]))
            rates = tuple(d.prefill_tokens_per_s for d in daily if d is not None and d.prefill_tokens_per_s)
            out.append(MeasuredSlope(name, f, newest[name], rates))
    return out


_DAY_MS = 86_400_000


def _fit(points: list[tuple[float, float]]) -> PrefillFit | None:
    """The fit of these points when it has a positive slope; None without two lengths or without a slope."""
    try:
        f = fit_prefill(points)
    except ValueError:
        return None
    return f if f.prefill_tokens_per_s is not None else None
