"""What a what-if candidate hands to the worksheet: its p95's queueing (and cold start), with the replay's provenance.

The worksheet adds its segments up against the target (planner.worksheet.budget): queueing + cold start + network, and
what is left is the prefill budget. So the figures handed over are the segments of the replayed p95 itself
(planner.whatif.results.p95_segments: they add up to the p95), not the means over the slowest 5 %, whose queueing
and cold start belong to different requests and can add up to more than the p95 they came from (a candidate
replayed at p95 700 ms once handed over 686 + 292 ms, and the worksheet said it was over budget before prefill). With
the worksheet's network equal to the candidate's RTT, queueing + cold start + network is then the p95 less that
request's prefill: a candidate whose replay meets the target never leaves the worksheet over budget before prefill.
"""

from __future__ import annotations

import math

from planner.whatif.results import CandidateResult
from planner.worksheet.provenance import Figure, Source

__all__ = ["worksheet_figures"]


def worksheet_figures(c: CandidateResult, replayed: str, window: str) -> dict[str, Figure]:
    """The worksheet fields a candidate's replay fills: `queue_ms`, and `cold_ms` when its replay started replicas
    (ms, each the p95's own segment, rounded down to 0.1 so that they never add up to more than the p95).
    `replayed` names the trace (its source and growth) and `window` the period, for the provenance, which also
    carries the p95 and its interval."""
    band = c.interval.get("p95")
    p95 = band.describe(c.interval_level) if band else f"{c.overall['p95'].value:,.0f} ms"
    detail = f"what-if replay of {c.name} on {replayed}: the p95 request's segment; p95 {p95}"

    def fig(key: str) -> Figure:
        return Figure(
            value=math.floor(c.p95_segments_ms[key] * 10) / 10,
            unit="ms",
            source=Source.MODEL,
            detail=detail,
            n=c.n,
            window=window,
        )

    figures = {"queue_ms": fig("queue_ms")}
    if c.cold_starts:
        figures["cold_ms"] = fig("cold_ms")
    return figures
