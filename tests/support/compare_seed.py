"""Constructed probe data for the comparison tests: endpoints and samples written through the real store.

A fixed RNG: endpoint "fast-a" lognormal around 300 ms, "slow-b" around 600 ms,
"twin-c" drawn from the same distribution as "fast-a" (so A and C cannot be
told apart). Samples are spread over every hour of three days (UTC).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from planner.store import session
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow

__all__ = ["DAY_MS", "SEED_START_MS", "seed_endpoint", "seed_three"]

DAY_MS = 86_400_000
# Three whole UTC days ending at today's midnight: always inside the pages' default range (the last 7 days).
SEED_START_MS = int(time.time() * 1000) // DAY_MS * DAY_MS - 3 * DAY_MS


def seed_endpoint(
    engine: Engine,
    name: str,
    *,
    median_ms: float,
    n: int,
    sigma: float = 0.25,
    seed: int = 1,
    region: str = "",
    errors: int = 0,
    retries: int = 0,
    cold_ms: float | None = None,
    start_ms: int = SEED_START_MS,
    span_ms: int = 3 * DAY_MS,
    vantage: str = "office",
) -> np.ndarray:
    """Register `name` and store n ok samples (lognormal around median_ms) plus `errors` failures.

    Returns the stored ok TTFTs (ms) in insertion order.
    """
    rng = np.random.default_rng(seed)
    ttft = np.round(median_ms * np.exp(rng.normal(0.0, sigma, n)), 1)
    times = start_ms + np.sort(rng.choice(span_ms, n + errors, replace=False))  # distinct slots
    with session(engine) as s:
        ep = EndpointRow(
            name=name,
            provider=f"{name}-provider",
            region=region,
            base_url=f"https://{name}.invalid/v1",
            model="coder-32b",
            api_key_env="SECRET_KEY_ENV_NAME",
            created_at_ms=start_ms,
            updated_at_ms=start_ms,
            scale_down_window_s=300,
        )
        s.add(ep)
        s.flush()

        def slot(kind: str, t_ms: int, **columns: Any) -> ProbeSampleRow:
            """A row of this endpoint for the slot at t_ms, started then."""
            return ProbeSampleRow(
                endpoint_id=ep.id, vantage=vantage, kind=kind, scheduled_at_ms=t_ms, started_at_ms=t_ms, **columns
            )

        rows = []
        for i, t in enumerate(times[:n]):
            v = float(ttft[i])
            rows.append(
                slot(
                    "scheduled",
                    int(t),
                    ok=True,
                    attempts=2 if i < retries else 1,
                    dns_ms=2.0,
                    connect_ms=20.0,
                    tls_ms=45.0,
                    headers_ms=v * 0.6,
                    first_event_ms=v * 0.9,
                    ttft_ms=v,
                    first_content_ms=v + 15.0,
                    total_ms=v + 900,
                )
            )
        for t in times[n:]:
            rows.append(slot("scheduled", int(t), ok=False, error_class="http_503", status_code=503, attempts=3))
        if cold_ms is not None:
            t = int(start_ms + span_ms - 60_000)
            rows.append(slot("cold", t, ok=True, ttft_ms=cold_ms, first_content_ms=cold_ms + 10))
            rows.append(
                ProbeSampleRow(
                    endpoint_id=ep.id,
                    vantage=vantage,
                    kind="warm",
                    scheduled_at_ms=t + 1,
                    started_at_ms=t + 30_000,
                    ok=True,
                    ttft_ms=median_ms,
                    first_content_ms=median_ms + 10,
                )
            )
        s.add_all(rows)
    return ttft


#: seed_endpoint's arguments (but n) for each of seed_three's endpoints.
_THREE: dict[str, dict] = {
    "fast-a": {"median_ms": 300, "seed": 1, "cold_ms": 21_000, "retries": 8},
    "slow-b": {"median_ms": 600, "seed": 2, "errors": 10},
    "twin-c": {"median_ms": 300, "seed": 3},
}


def seed_three(engine: Engine, n: int = 400, *, only: tuple[str, ...] = tuple(_THREE)) -> dict[str, np.ndarray]:
    """fast-a (~300 ms), slow-b (~600 ms, 10 errors), twin-c (same distribution as fast-a); `only` seeds just
    those of them (a test that needs one gets the very samples it would have among the three)."""
    return {name: seed_endpoint(engine, name, n=n, **_THREE[name]) for name in only}
