"""Weight loading (segment 2 for scale-to-zero): checkpoint bytes and a constant-rate load projection.

checkpoint GB = parameters (billions) × bytes per parameter (FP8/INT8 1, BF16/FP16 2, INT4/FP4 0.5):
weights only; scales, metadata and the KV cache come on top. Load time = GB / effective rate, the rate
taken from a published row (assets/loaders.toml) or from the team's own cold reading, plus engine
start-up where the user says so. Linear in bytes: an order-of-magnitude, constant-rate estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.specs import LoaderRow

__all__ = [
    "BYTES_PER_PARAM",
    "PROJECTION_LABEL",
    "PROJECTION_PARAMS_B",
    "LoadRate",
    "bytes_per_param",
    "checkpoint_gb",
    "load_time_s",
    "projection_table",
    "rate_from_cold_reading",
    "rate_from_row",
]

# Storage width of each weight format (NVIDIA PTX ISA alternate floating-point formats): a definition, not a preset.
BYTES_PER_PARAM: dict[str, float] = {"fp8": 1.0, "int8": 1.0, "bf16": 2.0, "fp16": 2.0, "int4": 0.5, "fp4": 0.5}

# Checkpoint sizes coding agents use, in billions of parameters (8B to 1T).
PROJECTION_PARAMS_B: tuple[float, ...] = (8, 14, 32, 70, 120, 235, 405, 671, 1000)

PROJECTION_LABEL = (
    "constant-rate estimate: bytes ÷ one published (or measured) effective rate; "
    "real stacks differ by storage tier and read concurrency"
)


def bytes_per_param(dtype: str) -> float:
    """Bytes per parameter for fp8/int8 (1), bf16/fp16 (2), int4/fp4 (0.5); CapacityError otherwise."""
    try:
        return BYTES_PER_PARAM[dtype.lower().strip()]
    except (KeyError, AttributeError):
        raise CapacityError(f"weight dtype must be one of {', '.join(BYTES_PER_PARAM)}, got {dtype!r}") from None


def checkpoint_gb(params_b: float, dtype: str) -> float:
    """Weight payload in GB (1e9 bytes): 70B at fp8 → 70 GB, at bf16 → 140 GB. CapacityError for params ≤ 0."""
    if params_b is None or not math.isfinite(params_b) or params_b <= 0:
        raise CapacityError(f"parameters must be a positive number of billions, got {params_b!r}")
    return float(params_b) * bytes_per_param(dtype)


@dataclass(frozen=True)
class LoadRate:
    """An effective checkpoint load rate (GB/s) and where it came from."""

    gb_per_s: float
    source: str  # "published row" or "cold reading"
    name: str  # short label for a table column
    detail: str
    engine_startup_s: float | None = None  # the overhead the source itself reports, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rate_from_row(row: LoaderRow) -> LoadRate:
    """The effective rate of a published loader row: checkpoint GB / load seconds."""
    if row.load_s <= 0 or row.checkpoint_gb <= 0:
        raise CapacityError(f"loader row {row.key!r} needs a positive size and time")
    return LoadRate(
        row.gb_per_s,
        "published row",
        f"{row.storage} · {row.loader} c{row.concurrency}",
        f"{row.label} ({row.source}, {row.as_of})",
        row.engine_startup_s,
    )


def rate_from_cold_reading(
    checkpoint_gb_: float, cold_ms: float, warm_ms: float = 0.0, engine_startup_s: float = 0.0
) -> LoadRate:
    """Effective rate from one cold reading: GB / (cold − warm − engine start-up) seconds.

    cold_ms/warm_ms are TTFT readings in ms (cold reading and the warm p50 right after it).
    Raises CapacityError when nothing is left for weight loading after warm TTFT and start-up.
    """
    if checkpoint_gb_ <= 0:
        raise CapacityError("checkpoint size must be greater than 0 GB")
    load_s = (cold_ms - warm_ms) / 1000.0 - engine_startup_s
    if load_s <= 0:
        raise CapacityError(
            f"the cold reading ({cold_ms:,.0f} ms) minus the warm TTFT ({warm_ms:,.0f} ms) and engine start-up "
            f"({engine_startup_s:g} s) leaves no time for loading weights; lower the start-up figure"
        )
    return LoadRate(
        checkpoint_gb_ / load_s,
        "cold reading",
        "team cold reading",
        f"{checkpoint_gb_:g} GB in {load_s:.1f} s "
        f"(cold {cold_ms:,.0f} ms − warm {warm_ms:,.0f} ms − start-up {engine_startup_s:g} s)",
    )


def load_time_s(checkpoint_gb_: float, rate: LoadRate | float, engine_startup_s: float = 0.0) -> float:
    """Seconds to load `checkpoint_gb_` at `rate` (GB/s or LoadRate) plus engine start-up (s)."""
    gbps = rate.gb_per_s if isinstance(rate, LoadRate) else float(rate)
    if not math.isfinite(gbps) or gbps <= 0:
        raise CapacityError(f"load rate must be greater than 0 GB/s, got {gbps!r}")
    if engine_startup_s < 0:
        raise CapacityError("engine start-up cannot be negative")
    return checkpoint_gb_ / gbps + engine_startup_s


def projection_table(
    rates: Sequence[LoadRate],
    dtype: str = "fp8",
    params_b: Sequence[float] = PROJECTION_PARAMS_B,
    engine_startup_s: float = 0.0,
) -> pd.DataFrame:
    """Projected load seconds per checkpoint size (rows) and rate (columns), a constant-rate estimate.

    Columns: params_b, checkpoint_gb, then one "<name> (<rate> GB/s)" column of seconds per rate.
    """
    if not rates:
        raise CapacityError("pick at least one load rate (a published row or a cold reading)")
    out: dict[str, list[Any]] = {
        "params_b": list(params_b),
        "checkpoint_gb": [checkpoint_gb(p, dtype) for p in params_b],
    }
    for r in rates:
        out[f"{r.name} ({r.gb_per_s:.2f} GB/s)"] = [load_time_s(gb, r, engine_startup_s) for gb in out["checkpoint_gb"]]
    return pd.DataFrame(out)
