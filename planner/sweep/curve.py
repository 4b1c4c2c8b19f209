"""A sweep as the measured queueing curve: the p95 TTFT added by load, at any load between its steps."""

from __future__ import annotations

from collections.abc import Sequence

from planner.worksheet.provenance import Figure, Source

__all__ = ["queueing_p95_ms"]


def queueing_p95_ms(
    loads: Sequence[float],
    p95_ms: Sequence[float | None],
    load: float,
    *,
    detail: str = "",
    n: int | None = None,
    measured_at_ms: int | None = None,
) -> Figure:
    """p95 TTFT at `load` minus p95 at the lightest step (the unloaded TTFT), linear between steps, as a Figure.

    That difference is what queueing costs at that load on the swept endpoint: the worksheet's
    admission/queueing segment, measured. Raises ValueError outside the swept range (no
    extrapolation) or when a step in the way has no p95.
    """
    pts = sorted(zip(loads, p95_ms, strict=True), key=lambda x: x[0])
    if not pts or not pts[0][0] <= load <= pts[-1][0]:
        raise ValueError(
            f"load {load:g} is outside the swept range {pts[0][0]:g}–{pts[-1][0]:g}"
            if pts
            else "the sweep has no steps"
        )
    if any(p is None for _, p in pts):
        raise ValueError("a step without a p95 (every request failed) cannot give a queueing figure")
    known = [(x, p) for x, p in pts if p is not None]
    base = known[0][1]
    for (x0, y0), (x1, y1) in zip(known, known[1:] + known[-1:], strict=True):
        if x0 <= load <= x1:
            y = y0 if x1 == x0 else y0 + (y1 - y0) * (load - x0) / (x1 - x0)
            return Figure(
                value=max(0.0, y - base),
                unit="ms",
                source=Source.PROBE,
                detail=detail or f"load sweep: p95 at {load:g} minus p95 at {pts[0][0]:g}",
                n=n,
                window=f"loads {pts[0][0]:g}–{pts[-1][0]:g}",
                measured_at_ms=measured_at_ms,
            )
    raise AssertionError("unreachable")
