"""Send schedules for an open-loop step: when each request leaves, as offsets (s) from the step's start."""

from __future__ import annotations

import random

__all__ = ["ARRIVAL_KINDS", "arrival_offsets_s"]

ARRIVAL_KINDS = ("poisson", "constant")


def arrival_offsets_s(kind: str, rate_per_s: float, duration_s: float, seed: int | None = None) -> list[float]:
    """Offsets in [0, duration_s) of the requests of one step at `rate_per_s`.

    poisson: exponential gaps of mean 1/rate (seeded: the same seed gives the same schedule);
    constant: one request every 1/rate s, the first at 0. Raises ValueError for an unknown kind,
    a rate or duration that is not positive.
    """
    if kind not in ARRIVAL_KINDS:
        raise ValueError(f"arrivals must be one of {', '.join(ARRIVAL_KINDS)}, got {kind!r}")
    if not rate_per_s > 0:
        raise ValueError(f"a rate must be > 0 requests/s, got {rate_per_s}")
    if not duration_s > 0:
        raise ValueError(f"a step's duration must be > 0 s, got {duration_s}")
    if kind == "constant":
        n = max(1, int(rate_per_s * duration_s + 1e-9))
        return [i / rate_per_s for i in range(n)]
    rng = random.Random(seed)
    out, t = [], rng.expovariate(rate_per_s)
    while t < duration_s:
        out.append(t)
        t += rng.expovariate(rate_per_s)
    return out or [0.0]
