"""Prefill slope: TTFT = a + b·tokens fitted by least squares (or Theil–Sen) over probes at two or more prompt lengths.

b is the endpoint's measured prefill cost (ms per uncached prompt token; shown
per 1K tokens) and 1000/b its prefill rate in tokens/s, which feeds the
worksheet; a is the intercept (network + admission + fixed overheads). The
probes must use cache-busting nonces, or b measures the prefix cache.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.worksheet.provenance import Figure, Source

if TYPE_CHECKING:
    from planner.probes.ttft import TtftSample

__all__ = ["PrefillFit", "fit_points", "fit_prefill"]


@dataclass(frozen=True)
class PrefillFit:
    """Least-squares fit of ttft_ms = intercept_ms + slope_ms_per_token · prompt_tokens, with its quality.

    r2: coefficient of determination (0..1); slope_se_ms_per_token: standard
    error of the slope (None with only 2 points); quality: "good" (r² ≥ 0.9 and
    slope ±10%), "fair" (r² ≥ 0.5 and slope ±30%), "poor", or "unusable" (slope ≤ 0:
    no prefill cost visible at these lengths).
    """

    intercept_ms: float
    slope_ms_per_token: float
    r2: float
    slope_se_ms_per_token: float | None
    n: int
    lengths: tuple[int, ...]

    @property
    def ms_per_1k_tokens(self) -> float:
        """Prefill cost in ms per 1,000 uncached prompt tokens."""
        return self.slope_ms_per_token * 1000.0

    @property
    def prefill_tokens_per_s(self) -> float | None:
        """Prefill rate implied by the slope (tokens/s); None when the slope is not positive."""
        return 1000.0 / self.slope_ms_per_token if self.slope_ms_per_token > 0 else None

    @property
    def relative_se(self) -> float | None:
        if self.slope_se_ms_per_token is None or self.slope_ms_per_token <= 0:
            return None
        return self.slope_se_ms_per_token / self.slope_ms_per_token

    @property
    def quality(self) -> str:
        if self.slope_ms_per_token <= 0:
            return "unusable"
        rel = self.relative_se
        if rel is None:
            return "poor"
        if self.r2 >= 0.9 and rel <= 0.1:
            return "good"
        if self.r2 >= 0.5 and rel <= 0.3:
            return "fair"
        return "poor"

    def describe(self) -> str:
        """One line, e.g. 'prefill 0.25 ms/token (250 ms per 1K tokens, 4,000 tokens/s),
        intercept 40 ms, r²=0.98, n=40: good'."""
        rate = self.prefill_tokens_per_s
        se = "" if self.slope_se_ms_per_token is None else f" ± {self.slope_se_ms_per_token * 1000:,.1f}"
        rate_txt = f", {rate:,.0f} tokens/s" if rate else ""
        return (
            f"prefill {self.ms_per_1k_tokens:,.1f}{se} ms per 1K tokens{rate_txt}; "
            f"intercept {self.intercept_ms:,.1f} ms; "
            f"r²={self.r2:.3f}; n={self.n} at {', '.join(str(x) for x in self.lengths)} tokens: {self.quality}"
        )

    def to_figure(self, detail: str = "", measured_at_ms: int | None = None) -> Figure:
        """The prefill rate as a worksheet figure (tokens/s, source probe); raises ValueError when unusable."""
        rate = self.prefill_tokens_per_s
        if rate is None:
            raise ValueError("the fitted prefill slope is not positive: no prefill rate to hand on")
        return Figure(
            value=rate,
            unit="tokens/s",
            source=Source.PROBE,
            detail=detail or f"prefill slope fit ({self.quality})",
            n=self.n,
            window=f"prompt lengths {', '.join(str(x) for x in self.lengths)}",
            measured_at_ms=measured_at_ms,
        )


def fit_prefill(points: Iterable[tuple[float, float]], *, robust: bool = False) -> PrefillFit:
    """Fit (prompt_tokens, ttft_ms) points; failed samples must be left out by the caller.

    robust: Theil–Sen instead of least squares — the slope is the median of the slopes between every two points
    at least half the length range apart and the intercept the median of y − slope·x, so one request slowed by a
    neighbour's burst (a shared machine, a noisy endpoint) cannot tilt the line; r² and the slope's standard error
    are still those of the residuals.

    Raises ValueError with fewer than two distinct prompt lengths or a non-finite value.
    """
    pts = [(float(x), float(y)) for x, y in points]
    if any(not (math.isfinite(x) and math.isfinite(y)) for x, y in pts):
        raise ValueError("prefill fit points must be finite numbers")
    lengths = tuple(sorted({int(x) for x, _ in pts}))
    if len(lengths) < 2:
        raise ValueError(
            "a prefill slope needs successful probes at two or more prompt lengths (e.g. --prompt-tokens 256,4096)"
        )
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    syy = sum((y - my) ** 2 for _, y in pts)
    b = sxy / sxx
    a = my - b * mx
    if robust:
        # Pairs at least half the range apart: two samples of one length differ by a token or two of nonce,
        # and the slope between them is noise.
        far = 0.5 * (max(x for x, _ in pts) - min(x for x, _ in pts))
        b = statistics.median(
            (y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(pts) for x2, y2 in pts[i + 1 :] if abs(x2 - x1) >= far
        )
        a = statistics.median(y - b * x for x, y in pts)
    sse = sum((y - (a + b * x)) ** 2 for x, y in pts)
    r2 = 1.0 - sse / syy if syy > 0 else 1.0
    se = math.sqrt(sse / (n - 2) / sxx) if n > 2 else None
    return PrefillFit(
        intercept_ms=a, slope_ms_per_token=b, r2=max(0.0, r2), slope_se_ms_per_token=se, n=n, lengths=lengths
    )


def fit_points(samples: Iterable[TtftSample]) -> tuple[list[tuple[int, float]], str]:
    """(prompt tokens, TTFT ms) points for the prefill fit, and which token count they use.

    The server's own count (usage.prompt_tokens) when it reported one for every successful sample:
    it includes the chat template and the nonce, which a real tokenizer counts and the requested
    length does not. Otherwise the requested lengths.
    """
    ok = [s for s in samples if s.ok]
    if ok and all(s.prompt_tokens for s in ok):
        return [(s.prompt_tokens, s.ttft_ms) for s in ok if s.prompt_tokens and s.ttft_ms is not None], "server-counted"
    return [
        (s.prompt_tokens_requested, s.ttft_ms)
        for s in ok
        if s.prompt_tokens_requested is not None and s.ttft_ms is not None
    ], "requested"
