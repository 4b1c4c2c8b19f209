"""Bootstrap confidence intervals for the p95 and for the difference of two endpoints' p95s.

Resampling with replacement (seeded, so the same data always gives the same
interval), vectorised with numpy: each resample's nearest-rank p95 is found
with np.partition at planner.percentiles' rank, and the interval's ends are the
nearest-rank 2.5th and 97.5th percentiles of the resampled values (the
percentile bootstrap).

A difference is judged against a practical-equivalence margin m (`Margin`: the
larger of 5 ms and 3 % of the faster p95 by default, settable): when the whole
interval lies inside ±m the two are practically equivalent; when it lies wholly
beyond +m or −m one is faster; otherwise (it straddles ±m, or spans 0) the data
cannot yet tell. A statistically separable 1 ms is never called "faster".
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.percentiles import min_n_for, nearest_rank_index

__all__ = [
    "Bootstraps",
    "CANNOT_TELL",
    "DEFAULT_MARGIN",
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "Difference",
    "EQUIVALENT",
    "Interval",
    "Margin",
    "bootstrap_difference",
    "bootstrap_percentile",
    "resampled_percentiles",
]

DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 20261130
CANNOT_TELL = "cannot yet tell apart"
EQUIVALENT = "practically equivalent"
TOO_FEW = "too few samples"


@dataclass(frozen=True)
class Margin:
    """The practical-equivalence margin: max(abs_ms, fraction × the faster endpoint's point percentile), in ms."""

    abs_ms: float = 5.0
    fraction: float = 0.03

    def __post_init__(self) -> None:
        if not (self.abs_ms >= 0 and self.fraction >= 0):
            raise ValueError(f"the equivalence margin must be ≥ 0 (got {self.abs_ms:g} ms and {self.fraction:.1%})")

    def of(self, point_a_ms: float, point_b_ms: float) -> float:
        """The margin (ms) for two endpoints' point estimates."""
        return max(self.abs_ms, self.fraction * min(point_a_ms, point_b_ms))

    def describe(self) -> str:
        return f"the larger of {self.abs_ms:g} ms and {self.fraction * 100:g}% of the faster p95"


DEFAULT_MARGIN = Margin()
_CELLS_PER_CHUNK = 2_000_000  # resample this many values at a time: bounded memory for large n


@dataclass(frozen=True)
class Interval:
    """A percentile (ms) with its bootstrap confidence interval; low/high None when n == 0."""

    p: float
    point_ms: float | None
    low_ms: float | None
    high_ms: float | None
    n: int
    confidence: float
    n_boot: int

    @property
    def reliable(self) -> bool:
        """n large enough for the percentile itself (p95: n ≥ 20)."""
        return self.n >= min_n_for(self.p)


@dataclass(frozen=True)
class Difference:
    """p(b) − p(a) in ms with its bootstrap interval, and what it lets us say.

    verdict: "<a> is faster", "<b> is faster" (the whole interval beyond ±margin_ms), EQUIVALENT (the whole
    interval inside ±margin_ms), CANNOT_TELL (it straddles the margin), or "too few samples" (either side below
    the percentile's minimum n). faster: the name of the faster endpoint when the data tell them apart, else None.
    """

    a: str
    b: str
    p: float
    point_ms: float | None
    low_ms: float | None
    high_ms: float | None
    n_a: int
    n_b: int
    confidence: float
    verdict: str
    margin_ms: float | None = None
    faster: str | None = None

    @property
    def distinguishable(self) -> bool:
        """True when the whole interval lies beyond the margin: one endpoint is faster (`faster` names it)."""
        return self.faster is not None

    @property
    def equivalent(self) -> bool:
        return self.verdict == EQUIVALENT

    def statement(self) -> str:
        """One sentence for the page and the report (each n next to its own endpoint's name)."""
        label = f"p{self.p * 100:g}"
        counts = f"n={self.n_b} for {self.b}, n={self.n_a} for {self.a}"
        if self.point_ms is None or self.low_ms is None or self.high_ms is None:
            return f"{self.b} vs {self.a}: too few samples to compare ({counts})."
        ci = f"{self.confidence:.0%} CI {_signed(self.low_ms)} to {_signed(self.high_ms)} ms"
        diff = f"{label} of {self.b} − {self.a} = {_signed(self.point_ms)} ms ({ci}; {counts})"
        m = "" if self.margin_ms is None else f"{self.margin_ms:,.0f}"
        if self.verdict == TOO_FEW:
            need = min_n_for(self.p)
            return f"{diff}: too few samples for a {label} (need n ≥ {need} each); cannot yet tell apart."
        if self.verdict == EQUIVALENT:
            return (
                f"{diff}: the whole interval lies within the ±{m} ms equivalence margin, so {self.a} and "
                f"{self.b} are practically equivalent."
            )
        if self.verdict == CANNOT_TELL:
            where = "spans 0" if self.low_ms <= 0 <= self.high_ms else f"reaches inside the ±{m} ms equivalence margin"
            return (
                f"{diff}: the interval {where} and is not wholly inside ±{m} ms, so the data cannot yet tell "
                f"{self.a} and {self.b} apart."
            )
        return f"{diff}: {self.verdict} (the whole interval lies beyond the ±{m} ms equivalence margin)."


def _signed(v: float) -> str:
    """'+12', '−3', '0' (a true minus sign)."""
    r = round(v)
    return "0" if r == 0 else (f"+{r:,.0f}" if r > 0 else f"−{-r:,.0f}")


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[~np.isnan(arr)]


def _rng(seed: int, stream: str) -> np.random.Generator:
    # One random stream per endpoint name: an endpoint's resamples depend only on its own data, the seed
    # and its name, so its interval does not move when other endpoints join the comparison.
    return np.random.default_rng([seed, zlib.crc32(stream.encode())])


def resampled_percentiles(
    values: Sequence[float] | np.ndarray,
    p: float = 0.95,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    stream: str = "",
) -> np.ndarray:
    """n_boot nearest-rank p-percentiles (ms) of resamples with replacement of `values` (NaN dropped).

    Vectorised: resamples are drawn as an (rows × n) index matrix in chunks of bounded size and the
    percentile is read with np.partition at planner.percentiles' rank. Empty when there are no values.
    """
    x = _clean(values)
    n = len(x)
    if n == 0:
        return np.empty(0)
    rng = _rng(seed, stream)
    k = nearest_rank_index(p, n)
    out = np.empty(n_boot)
    chunk = max(1, _CELLS_PER_CHUNK // n)
    for start in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - start)
        sample = x[rng.integers(0, n, size=(rows, n))]
        out[start : start + rows] = np.partition(sample, k, axis=1)[:, k]
    return out


def _nearest_rank(sorted_values: np.ndarray, p: float) -> float:
    """Nearest-rank p-quantile of an already sorted, non-empty array (planner.percentiles.nearest_rank for arrays)."""
    return float(sorted_values[nearest_rank_index(p, len(sorted_values))])


def _ends(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    s = np.sort(boot)
    alpha = (1.0 - confidence) / 2.0
    return _nearest_rank(s, alpha), _nearest_rank(s, 1.0 - alpha)


def _check(confidence: float, n_boot: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100, got {n_boot}")


def _interval(x: np.ndarray, boot: np.ndarray, p: float, confidence: float, n_boot: int) -> Interval:
    if len(x) == 0:
        return Interval(p, None, None, None, 0, confidence, n_boot)
    low, high = _ends(boot, confidence)
    return Interval(p, _nearest_rank(np.sort(x), p), low, high, len(x), confidence, n_boot)


def _difference(
    a: str,
    b: str,
    xa: np.ndarray,
    xb: np.ndarray,
    boot_a: np.ndarray,
    boot_b: np.ndarray,
    p: float,
    confidence: float,
    margin: Margin = DEFAULT_MARGIN,
) -> Difference:
    if len(xa) == 0 or len(xb) == 0:
        return Difference(a, b, p, None, None, None, len(xa), len(xb), confidence, TOO_FEW)
    pa, pb = _nearest_rank(np.sort(xa), p), _nearest_rank(np.sort(xb), p)
    point = pb - pa
    low, high = _ends(boot_b - boot_a, confidence)
    m = margin.of(pa, pb)
    faster = None
    if min(len(xa), len(xb)) < min_n_for(p):
        verdict = TOO_FEW
    elif -m <= low and high <= m:
        verdict = EQUIVALENT
    elif low > m:
        faster = a
    elif high < -m:
        faster = b
    else:
        verdict = CANNOT_TELL
    if faster is not None:
        verdict = f"{faster} is faster"
    return Difference(a, b, p, point, low, high, len(xa), len(xb), confidence, verdict, m, faster)


def bootstrap_percentile(
    values: Sequence[float] | np.ndarray,
    p: float = 0.95,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    stream: str = "",
) -> Interval:
    """Nearest-rank p-percentile of `values` (ms) with a percentile-bootstrap interval.

    NaN values are dropped. Raises ValueError for confidence outside (0, 1) or n_boot < 100.
    """
    _check(confidence, n_boot)
    x = _clean(values)
    return _interval(x, resampled_percentiles(x, p, n_boot=n_boot, seed=seed, stream=stream), p, confidence, n_boot)


def bootstrap_difference(
    a_values: Sequence[float] | np.ndarray,
    b_values: Sequence[float] | np.ndarray,
    *,
    a: str = "A",
    b: str = "B",
    p: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    margin: Margin = DEFAULT_MARGIN,
) -> Difference:
    """p(b) − p(a) in ms, resampling each endpoint independently (its own stream), with interval and verdict
    (judged against the equivalence `margin`).

    A positive difference means `b` is slower. Raises ValueError like bootstrap_percentile.
    """
    _check(confidence, n_boot)
    xa, xb = _clean(a_values), _clean(b_values)
    boot_a = resampled_percentiles(xa, p, n_boot=n_boot, seed=seed, stream=a)
    boot_b = resampled_percentiles(xb, p, n_boot=n_boot, seed=seed, stream=b)
    return _difference(a, b, xa, xb, boot_a, boot_b, p, confidence, margin)


class Bootstraps:
    """Each endpoint's resampled p95s computed once, shared by its interval and every difference it is in.

    values_by_name: endpoint name → TTFT samples (ms). Gives exactly what bootstrap_percentile(…,
    stream=name) and bootstrap_difference(…, a=, b=) give, without resampling an endpoint twice.
    """

    def __init__(
        self,
        values_by_name: Mapping[str, Sequence[float] | np.ndarray],
        p: float = 0.95,
        *,
        n_boot: int = DEFAULT_N_BOOT,
        confidence: float = 0.95,
        seed: int = DEFAULT_SEED,
        margin: Margin = DEFAULT_MARGIN,
    ) -> None:
        _check(confidence, n_boot)
        self.p, self.n_boot, self.confidence, self.seed, self.margin = p, n_boot, confidence, seed, margin
        self._x = {k: _clean(v) for k, v in values_by_name.items()}
        self._boot: dict[str, np.ndarray] = {}

    def _get(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        x = self._x.get(name, np.empty(0))
        if name not in self._boot:
            self._boot[name] = resampled_percentiles(x, self.p, n_boot=self.n_boot, seed=self.seed, stream=name)
        return x, self._boot[name]

    def interval(self, name: str) -> Interval:
        """The endpoint's p with its interval."""
        x, boot = self._get(name)
        return _interval(x, boot, self.p, self.confidence, self.n_boot)

    def difference(self, a: str, b: str) -> Difference:
        """p(b) − p(a) with its interval and verdict."""
        (xa, ba), (xb, bb) = self._get(a), self._get(b)
        return _difference(a, b, xa, xb, ba, bb, self.p, self.confidence, self.margin)
