"""The knee of a sweep: the highest load whose p95 TTFT is still within the target."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["knee_of", "knee_sentence"]


def knee_of(
    loads: Sequence[float], p95_ms: Sequence[float | None], target_p95_ms: float
) -> tuple[float | None, float | None]:
    """(knee, first load over the target) over steps in ascending load.

    knee: the last load before p95 first leaves the target (None when even the first step is over
    it); over: the first load whose p95 is above the target, or has no p95 at all (every request
    failed), None when every step stays within. Steps after the first one over are ignored: a
    queue that has tipped over does not recover at higher load.
    """
    knee = None
    for load, p95 in sorted(zip(loads, p95_ms, strict=True), key=lambda x: x[0]):
        if p95 is None or p95 > target_p95_ms:
            return knee, load
        knee = load
    return knee, None


def knee_sentence(knee: float | None, over: float | None, target_p95_ms: float | None, unit: str) -> str:
    """The knee in words, the same on the CLI and the Sweep page: "p95 stays within 800 ms up to 6 req/s and leaves
    it at 8 req/s"; "not reached: …" when no step left the target (the knee is beyond the sweep, not its last step)."""
    if target_p95_ms is None:
        return "no p95 target given: no knee"
    if knee is None:
        return f"p95 is over {target_p95_ms:g} ms already at {over:g} {unit}" if over is not None else "no step"
    if over is None:
        return f"not reached: p95 stays within {target_p95_ms:g} ms up to {knee:g} {unit}, the sweep's last step"
    return f"p95 stays within {target_p95_ms:g} ms up to {knee:g} {unit} and leaves it at {over:g} {unit}"
