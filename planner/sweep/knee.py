"""The knee of a sweep: the highest load whose p95 TTFT is still within the target, in words, with a caveat when
the step it rests on has too few samples for a p95."""

from __future__ import annotations

from collections.abc import Sequence

from planner.percentiles import min_n_for

__all__ = ["knee_caveat", "knee_of", "knee_sentence", "load_words", "thin_percentiles"]

_PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def load_words(load: float, mode: str) -> str:
    """A sweep step's load in words: "1 request/s", "2 requests/s", "1 concurrent request", "8 concurrent
    requests" (`mode` "concurrency" for a closed loop, else open-loop arrivals)."""
    s = "" if load == 1 else "s"
    return f"{load:g} concurrent request{s}" if mode == "concurrency" else f"{load:g} request{s}/s"


def thin_percentiles(n_ok: int) -> list[str]:
    """Which of p50, p95, p99 a step of `n_ok` successful requests cannot support (planner.percentiles.min_n_for): the
    figure is then only the largest value seen, and is marked wherever it is shown."""
    return [name for name, p in _PERCENTILES.items() if n_ok < min_n_for(p)]


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


def knee_sentence(knee: float | None, over: float | None, target_p95_ms: float | None, mode: str) -> str:
    """The knee in words, the same on the CLI and the Sweep page: "p95 stays within 800 ms up to 6 requests/s and
    leaves it at 8 requests/s"; "not reached: …" when no step left the target (the knee is beyond the sweep, not its
    last step). `mode`: the sweep's ("concurrency" or an arrival kind), for load_words."""
    if target_p95_ms is None:
        return "no p95 target given: no knee"
    if knee is None:
        return (
            f"p95 is over {target_p95_ms:g} ms already at {load_words(over, mode)}" if over is not None else "no step"
        )
    if over is None:
        return (
            f"not reached: p95 stays within {target_p95_ms:g} ms up to {load_words(knee, mode)}, the sweep's last step"
        )
    return (
        f"p95 stays within {target_p95_ms:g} ms up to {load_words(knee, mode)} and leaves it at "
        f"{load_words(over, mode)}"
    )


def knee_caveat(knee: float | None, loads: Sequence[float], n_ok: Sequence[int], mode: str) -> str | None:
    """A sentence when the knee's step has fewer successful requests than a p95 needs (its p95 is then only the
    largest value seen, so the knee is provisional); None when it has enough or there is no knee."""
    if knee is None:
        return None
    n = next((int(k) for load, k in zip(loads, n_ok, strict=True) if load == knee), None)
    need = min_n_for(0.95)
    if n is None or n >= need:
        return None
    return (
        f"The knee rests on a p95 from {n:,} successful request{'' if n == 1 else 's'} at {load_words(knee, mode)} "
        f"(a p95 needs {need}): it is only the largest value seen, so the knee is provisional — sweep with longer "
        "steps (--step-duration-s) to confirm it."
    )
