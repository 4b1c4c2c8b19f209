"""Prefill rate: the FLOPs model, a measured slope, and the largest p95 prompt each budget allows.

Model: prefill FLOPs ≈ 2·N·L + 2·layers·L²·w, with N the parameters that work per token
(active parameters for MoE), L prompt tokens and w the attention width (heads × head_dim, = d_model for
Llama). Time = FLOPs / (dense peak FLOPS × MFU × GPUs). With a prefix-cache hit only the uncached tail
L_u = L − L_c is computed: 2·N·L_u + 2·layers·w·(L² − L_c²) (the new tokens still attend to the whole context).
Measured: TTFT = a + b·L fitted from probes; b ms per 1K uncached tokens → rate = 1e6 / b tokens/s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.specs import GpuSpec, ModelSpec
from planner.worksheet.budget import BudgetError, compute
from planner.worksheet.interactions import Interaction

__all__ = [
    "PrefillEstimate",
    "Segments",
    "estimate",
    "largest_prompts",
    "max_prompt_tokens",
    "prefill_curve",
    "prefill_flops",
    "rate_from_slope",
]


def _check(prompt_tokens: float, cache_hit_fraction: float) -> None:
    if prompt_tokens is None or not math.isfinite(prompt_tokens) or prompt_tokens < 0:
        raise CapacityError(f"prompt tokens must be a number ≥ 0, got {prompt_tokens!r}")
    if not 0.0 <= cache_hit_fraction <= 1.0:
        raise CapacityError(f"cache-hit rate must be between 0 and 1, got {cache_hit_fraction:g}")


def prefill_flops(model: ModelSpec, prompt_tokens: float, cache_hit_fraction: float = 0.0) -> tuple[float, float]:
    """(linear FLOPs, attention FLOPs) to prefill the uncached part of a prompt of `prompt_tokens`."""
    _check(prompt_tokens, cache_hit_fraction)
    cached = prompt_tokens * cache_hit_fraction
    uncached = prompt_tokens - cached
    linear = 2.0 * model.compute_params_b * 1e9 * uncached
    attention = 2.0 * model.layers * model.attention_width * (prompt_tokens**2 - cached**2)
    return linear, attention


def _effective_flops(gpu: GpuSpec, dtype: str, mfu: float, gpus: int) -> float:
    if not 0 < mfu <= 1:
        raise CapacityError(f"MFU must be in (0, 1], got {mfu:g}")
    if gpus < 1 or int(gpus) != gpus:
        raise CapacityError(f"GPU count must be a whole number ≥ 1, got {gpus!r}")
    peak = gpu.dense_tflops(dtype)
    if peak <= 0:
        raise CapacityError(f"{gpu.label}: dense {dtype} TFLOPS must be greater than 0")
    return peak * 1e12 * mfu * gpus


@dataclass(frozen=True)
class PrefillEstimate:
    """Modelled prefill of one prompt: time, uncached tokens, rate and the attention share of the work."""

    prompt_tokens: float
    uncached_tokens: float
    time_s: float
    tokens_per_s: float  # uncached tokens / time (0 when nothing is computed)
    attention_fraction: float  # attention FLOPs / all FLOPs
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate(
    model: ModelSpec,
    gpu: GpuSpec,
    prompt_tokens: float,
    *,
    dtype: str = "bf16",
    mfu: float = 0.5,
    gpus: int = 1,
    cache_hit_fraction: float = 0.0,
) -> PrefillEstimate:
    """Model-based prefill time for one prompt (8B, 8K tokens, H100 BF16, MFU 0.5 → ≈ 0.30 s).

    Raises CapacityError for a bad MFU, GPU count, cache-hit rate, or a dtype the GPU lacks (FP8 on A100).
    """
    linear, attention = prefill_flops(model, prompt_tokens, cache_hit_fraction)
    flops = linear + attention
    t = flops / _effective_flops(gpu, dtype, mfu, gpus)
    uncached = prompt_tokens * (1.0 - cache_hit_fraction)
    rate = uncached / t if t > 0 else 0.0
    detail = f"{model.label} on {gpus}× {gpu.label} {dtype.upper()}, MFU {mfu:g}, {prompt_tokens:,.0f}-token prompt"
    if cache_hit_fraction:
        detail += f", {cache_hit_fraction:.0%} cached"
    return PrefillEstimate(prompt_tokens, uncached, t, rate, attention / flops if flops else 0.0, detail)


def rate_from_slope(ms_per_1k_tokens: float) -> float:
    """Prefill rate (uncached tokens/s) from a measured slope in ms per 1K uncached prompt tokens."""
    if ms_per_1k_tokens is None or not math.isfinite(ms_per_1k_tokens) or ms_per_1k_tokens <= 0:
        raise CapacityError(f"the prefill slope must be greater than 0 ms per 1K tokens, got {ms_per_1k_tokens!r}")
    return 1e6 / ms_per_1k_tokens


def max_prompt_tokens(
    model: ModelSpec,
    gpu: GpuSpec,
    budget_ms: float,
    *,
    dtype: str = "bf16",
    mfu: float = 0.5,
    gpus: int = 1,
    cache_hit_fraction: float = 0.0,
) -> float:
    """Largest prompt (tokens, cached share included) whose modelled prefill fits in `budget_ms`.

    0 for a budget ≤ 0; math.inf when every token is cached. Solves a·L² + b·L = budget × effective FLOPS.
    """
    _check(0.0, cache_hit_fraction)
    if budget_ms <= 0:
        return 0.0
    if cache_hit_fraction >= 1.0:
        return math.inf
    x = budget_ms / 1000.0 * _effective_flops(gpu, dtype, mfu, gpus)
    h = cache_hit_fraction
    a = 2.0 * model.layers * model.attention_width * (1.0 - h * h)
    b = 2.0 * model.compute_params_b * 1e9 * (1.0 - h)
    return (-b + math.sqrt(b * b + 4.0 * a * x)) / (2.0 * a) if a > 0 else x / b


class Segments(TypedDict):
    """The worksheet's fixed segments and cache-hit rate, as largest_prompts() takes them by keyword."""

    queue_ms: float
    cold_ms: float
    network_ms: float
    cache_hit_fraction: float


def largest_prompts(
    interactions: Sequence[Interaction],
    *,
    queue_ms: float,
    cold_ms: float,
    network_ms: float,
    cache_hit_fraction: float = 0.0,
    rate_tokens_per_s: float | None = None,
    model: ModelSpec | None = None,
    gpu: GpuSpec | None = None,
    dtype: str = "bf16",
    mfu: float = 0.5,
    gpus: int = 1,
) -> pd.DataFrame:
    """Per interaction type: prefill budget (target − queue − cold − network) and the largest p95 prompt that fits.

    Uses a fixed rate (measured or typed, tokens/s) when given, else the FLOPs model of `model` on `gpu`.
    Columns: interaction, target_ms, prefill_budget_ms, max_prompt_tokens_p95 (inf = all cached), fits (budget > 0).
    Raises CapacityError on bad inputs.
    """
    if rate_tokens_per_s is None and (model is None or gpu is None):
        raise CapacityError("give either a prefill rate or a model and a GPU")
    rows = []
    for it in interactions:
        try:
            r = compute(
                it.target_p95_ms,
                queue_ms,
                cold_ms,
                network_ms,
                rate_tokens_per_s,
                0.0 if rate_tokens_per_s else None,
                cache_hit_fraction,
            )
        except BudgetError as exc:
            raise CapacityError(str(exc)) from None
        if rate_tokens_per_s is not None:
            mx = r.max_prompt_tokens_p95
        else:
            assert model is not None and gpu is not None  # checked above
            mx = max_prompt_tokens(
                model, gpu, r.prefill_budget_ms, dtype=dtype, mfu=mfu, gpus=gpus, cache_hit_fraction=cache_hit_fraction
            )
        rows.append(
            {
                "interaction": it.label,
                "target_ms": it.target_p95_ms,
                "prefill_budget_ms": r.prefill_budget_ms,
                "max_prompt_tokens_p95": mx,
                "fits": r.prefill_budget_ms > 0,
            }
        )
    return pd.DataFrame(rows)


def prefill_curve(
    model: ModelSpec,
    gpu: GpuSpec,
    max_prompt_tokens_: float,
    *,
    points: int = 50,
    dtype: str = "bf16",
    mfu: float = 0.5,
    gpus: int = 1,
    cache_hit_fraction: float = 0.0,
) -> pd.DataFrame:
    """Modelled prefill time over prompt lengths 0..max: columns prompt_tokens, prefill_ms."""
    if not math.isfinite(max_prompt_tokens_) or max_prompt_tokens_ <= 0:
        raise CapacityError(f"the largest prompt length must be greater than 0 tokens, got {max_prompt_tokens_!r}")
    xs = [max_prompt_tokens_ * i / (points - 1) for i in range(points)]
    ms = [
        estimate(model, gpu, x, dtype=dtype, mfu=mfu, gpus=gpus, cache_hit_fraction=cache_hit_fraction).time_s * 1000
        for x in xs
    ]
    return pd.DataFrame({"prompt_tokens": xs, "prefill_ms": ms})
