"""How much a measured speed varies from one run to the next, from rates measured at separate moments.

A calibration's prefill rounds, or a probe's prefill slope day by day, are a few draws of the speed an endpoint
runs at. The next run (the one a what-if predicts) is one more draw: its spread is the draws' own, widened for how
few they are (a Student-t prediction interval, here at 80 %: the what-if's default level).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["pooled_speed_sd_of", "speed_sd_of"]

# Student t's 90th percentile by degrees of freedom: how much wider the next run's 80 % interval is than the
# draws' own spread says, when that spread rests on few draws (the normal's is 1.2816).
_T90 = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 6: 1.440, 7: 1.415, 8: 1.397, 9: 1.383, 10: 1.372}
_Z90 = 1.2816


def speed_sd_of(rates: Sequence[float]) -> float:
    """The log-sd of the speed a next run will see, from rates measured at separate moments (any unit, all > 0):
    the sample sd of log(rate) × t(0.9, k−1) / z(0.9) × √(1 + 1/k). 0 with fewer than two rates."""
    k = len(rates)
    if k < 2:
        return 0.0
    logs = [math.log(r) for r in rates]
    return statistics.stdev(logs) * _t90(k - 1) / _Z90 * math.sqrt(1 + 1 / k)


def pooled_speed_sd_of(groups: Sequence[Sequence[float]]) -> float:
    """speed_sd_of over rates from several kinds of measurement (a calibration's rounds; a probe's slope day by
    day), each group about its own mean level (their units and fixed parts differ) and their spreads pooled:
    √(Σ (log rate − its group's mean)² ÷ (N − G)) × t(0.9, N − G) / z(0.9) × √(1 + 1/N). Groups of one rate add
    nothing; 0 when no group has two."""
    used = [[math.log(r) for r in g] for g in groups if len(g) >= 2]
    n = sum(len(g) for g in used)
    df = n - len(used)
    if df < 1:
        return 0.0
    ss = sum(sum((x - statistics.fmean(g)) ** 2 for x in g) for g in used)
    return math.sqrt(ss / df) * _t90(df) / _Z90 * math.sqrt(1 + 1 / n)


def _t90(df: int) -> float:
    """Student t's 90th percentile at `df` degrees of freedom."""
    # past 10 degrees of freedom the first Cornish–Fisher term is within 0.5 % of t: z + (z³ + z) / (4 df)
    return _T90.get(df, _Z90 + (_Z90**3 + _Z90) / (4 * df))
