"""Measured prefill slopes per endpoint from stored probe samples (fit with planner.probes.fit).

Only successful, cache-busting probes count (ok, not a deliberate cached series, not a cold reading);
the x value is the UNCACHED prompt length (prompt − cached tokens, the requested length when the
provider reported none). An endpoint needs probes at two or more lengths.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.probes.fit import PrefillFit, fit_prefill
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow

__all__ = ["MeasuredSlope", "measured_slopes"]


@dataclass(frozen=True)
class MeasuredSlope:
    """One endpoint's fitted prefill slope and when its newest sample was taken (UTC epoch ms)."""

    endpoint: str
    fit: PrefillFit
    newest_at_ms: int


def measured_slopes(engine: Engine, since_ms: int | None = None) -> list[MeasuredSlope]:
    """Fitted prefill slopes of every endpoint with probes at ≥ 2 prompt lengths, usable ones first.

    Endpoints whose fit has no positive slope are left out (they measured no prefill cost).
    """
    s, e = ProbeSampleRow.__table__, EndpointRow.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit it
    q = (
        sa.select(
            e.c.name, s.c.prompt_tokens, s.c.cached_tokens, s.c.prompt_tokens_requested, s.c.ttft_ms, s.c.started_at_ms
        )
        .join(e, e.c.id == s.c.endpoint_id)
        .where(s.c.ok.is_(True), s.c.cached_series.is_(False), s.c.kind != "cold", s.c.ttft_ms.is_not(None))
    )
    if since_ms is not None:
        q = q.where(s.c.started_at_ms >= since_ms)
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    newest: dict[str, int] = {}
    with engine.connect() as conn:
        for name, prompt, cached, requested, ttft, started in conn.execute(q):
            tokens = prompt if prompt is not None else requested
            if tokens is None:
                continue
            points[name].append((float(tokens - (cached or 0)), float(ttft)))
            newest[name] = max(newest.get(name, 0), int(started))
    out = []
    for name, pts in sorted(points.items()):
        try:
            f = fit_prefill(pts)
        except ValueError:
            continue
        if f.prefill_tokens_per_s is not None:
            out.append(MeasuredSlope(name, f, newest[name]))
    return out
