"""Bootstrap confidence intervals for the p95 and for the difference of two endpoints' p95s.

Resampling with replacement (seeded, so the same data always gives the same
interval), vectorised with numpy: each resample's nearest-rank p95 is found
with np.partition at planner.stats' rank, and the interval's ends are the
nearest-rank 2.5th and 97.5th percentiles of the resampled values (the
percentile bootstrap). When the interval of a difference spans 0, the data
cannot yet tell the two endpoints apart, whatever their point estimates say.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.stats import min_n_for, nearest_rank, nearest_rank_index

__all__ = [
    "Bootstraps",
    "CANNOT_TELL",
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "Difference",
    "Interval",
    "bootstrap_difference",
    "bootstrap_percentile",
    "resampled_percentiles",
]

DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 20261130
CANNOT_TELL = "cannot yet tell apart"
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

    verdict: "<a> is faster", "<b> is faster", CANNOT_TELL (interval spans 0), or
    "too few samples" (either side below the percentile's minimum n).
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

    @property
    def distinguishable(self) -> bool:
        return self.verdict.endswith(" is faster")

    def statement(self) -> str:
        """One sentence for the page and the report."""
        label = f"p{self.p * 100:g}"
        if self.point_ms is None or self.low_ms is None or self.high_ms is None:
            return f"{self.a} vs {self.b}: too few samples to compare (n={self.n_a} vs n={self.n_b})."
        ci = f"{self.confidence:.0%} CI {self.low_ms:+,.0f} to {self.high_ms:+,.0f} ms"
        diff = f"{label} of {self.b} − {self.a} = {self.point_ms:+,.0f} ms ({ci}; n={self.n_a} vs n={self.n_b})"
        if self.verdict == "too few samples":
            need = min_n_for(self.p)
            return f"{diff}: too few samples for a {label} (need n ≥ {need} each); cannot yet tell apart."
        if self.verdict == CANNOT_TELL:
            return f"{diff}: the interval spans 0, so the data cannot yet tell {self.a} and {self.b} apart."
        return f"{diff}: {self.verdict}."


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
    percentile is read with np.partition at planner.stats' rank. Empty when there are no values.
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
        out[start:start + rows] = np.partition(sample, k, axis=1)[:, k]
    return out


def _ends(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    s = np.sort(boot)
    alpha = (1.0 - confidence) / 2.0
    return float(nearest_rank(s, alpha)), float(nearest_rank(s, 1.0 - alpha))


def _check(confidence: float, n_boot: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100, got {n_boot}")


def _interval(x: np.ndarray, boot: np.ndarray, p: float, confidence: float, n_boot: int) -> Interval:
    if len(x) == 0:
        return Interval(p, None, None, None, 0, confidence, n_boot)
    low, high = _ends(boot, confidence)
    return Interval(p, float(nearest_rank(np.sort(x), p)), low, high, len(x), confidence, n_boot)


def _difference(a: str, b: str, xa: np.ndarray, xb: np.ndarray, boot_a: np.ndarray, boot_b: np.ndarray,
                p: float, confidence: float) -> Difference:
    if len(xa) == 0 or len(xb) == 0:
        return Difference(a, b, p, None, None, None, len(xa), len(xb), confidence, "too few samples")
    point = float(nearest_rank(np.sort(xb), p) - nearest_rank(np.sort(xa), p))
    low, high = _ends(boot_b - boot_a, confidence)
    if min(len(xa), len(xb)) < min_n_for(p):
        verdict = "too few samples"
    elif low <= 0.0 <= high:
        verdict = CANNOT_TELL
    else:
        verdict = f"{a} is faster" if low > 0 else f"{b} is faster"
    return Difference(a, b, p, point, low, high, len(xa), len(xb), confidence, verdict)


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
) -> Difference:
    """p(b) − p(a) in ms, resampling each endpoint independently (its own stream), with interval and verdict.

    A positive difference means `b` is slower. Raises ValueError like bootstrap_percentile.
    """
    _check(confidence, n_boot)
    xa, xb = _clean(a_values), _clean(b_values)
    boot_a = resampled_percentiles(xa, p, n_boot=n_boot, seed=seed, stream=a)
    boot_b = resampled_percentiles(xb, p, n_boot=n_boot, seed=seed, stream=b)
    return _difference(a, b, xa, xb, boot_a, boot_b, p, confidence)


class Bootstraps:
    """Each endpoint's resampled p95s computed once, shared by its interval and every difference it is in.

    values_by_name: endpoint name → TTFT samples (ms). Gives exactly what bootstrap_percentile(…,
    stream=name) and bootstrap_difference(…, a=, b=) give, without resampling an endpoint twice.
    """

    def __init__(self, values_by_name: Mapping[str, Sequence[float] | np.ndarray], p: float = 0.95, *,
                 n_boot: int = DEFAULT_N_BOOT, confidence: float = 0.95, seed: int = DEFAULT_SEED) -> None:
        _check(confidence, n_boot)
        self.p, self.n_boot, self.confidence, self.seed = p, n_boot, confidence, seed
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
        return _difference(a, b, xa, xb, ba, bb, self.p, self.confidence)
