"""Nearest-rank percentiles, always reported with n.

The product's one percentile method: rank = ceil(p·n) on the sorted
sample, no interpolation, so every reported percentile is a value that was
actually observed. With 20 samples the p95 is the 19th value: a single cold
outlier never shows in it, which is why cold readings are shown apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Percentile",
    "ecdf",
    "min_n_for",
    "nearest_rank",
    "nearest_rank_index",
    "percentile",
    "summarize",
]


def nearest_rank_index(p: float, n: int) -> int:
    """Zero-based index of the nearest-rank p-quantile in a sorted sample of n.

    Raises ValueError for n < 1 or p outside (0, 1].
    """
    if n < 1:
        raise ValueError("a percentile needs at least one sample")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"percentile fraction must be in (0, 1], got {p}")
    # The small epsilon keeps 0.95 * 20 = 19.000000000000004 at rank 19.
    rank = max(1, math.ceil(p * n - 1e-9))
    return rank - 1


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank p-quantile of an already sorted, non-empty sequence."""
    return sorted_values[nearest_rank_index(p, len(sorted_values))]


def min_n_for(p: float) -> int:
    """Smallest n for which the nearest-rank p-quantile is not the maximum.

    p50 needs 2, p90 10, p95 20, p99 100: below that the "percentile" is just
    the largest value, so the UI greys it out.
    """
    if p >= 1.0:
        return 1
    return math.ceil(1.0 / (1.0 - p) - 1e-9)


@dataclass(frozen=True)
class Percentile:
    """One percentile with its sample size; `reliable` is False when n < min_n_for(p)."""

    p: float
    value: float | None
    n: int

    @property
    def reliable(self) -> bool:
        return self.value is not None and self.n >= min_n_for(self.p)

    @property
    def label(self) -> str:
        """'p95' style label."""
        pct = self.p * 100
        return f"p{pct:g}"


def percentile(values: Iterable[float], p: float) -> Percentile:
    """Nearest-rank percentile of unsorted values (NaN and None dropped)."""
    clean = sorted(v for v in values if v is not None and not math.isnan(v))
    if not clean:
        return Percentile(p=p, value=None, n=0)
    return Percentile(p=p, value=nearest_rank(clean, p), n=len(clean))


def summarize(values: Iterable[float | None], ps: Sequence[float] = (0.5, 0.9, 0.95, 0.99)) -> dict[str, Percentile]:
    """Several nearest-rank percentiles plus max, keyed 'p50', 'p95', …, 'max'."""
    clean = sorted(v for v in values if v is not None and not math.isnan(v))
    out: dict[str, Percentile] = {}
    for p in (*ps, 1.0):
        pc = Percentile(p=p, value=nearest_rank(clean, p) if clean else None, n=len(clean))
        out["max" if p == 1.0 else pc.label] = pc
    return out


def ecdf(values: Iterable[float]) -> tuple[list[float], list[float]]:
    """Empirical CDF as (sorted values, cumulative fractions in (0, 1])."""
    clean = sorted(v for v in values if v is not None and not math.isnan(v))
    n = len(clean)
    return clean, [(i + 1) / n for i in range(n)]
