"""GPU fit: weights + KV cache for the context × concurrent sequences vs the GPUs' memory.

KV bytes per token = 2 (K and V) · layers · kv_heads · head_dim · bytes per element
(Llama-3-8B bf16: 128 KiB; Llama-3-70B: 320 KiB). Memory in GiB = 2³⁰ bytes, the unit the card's size is given in
and vLLM counts in (an H100 "80GB" is 80 GiB; weights of 8.03 B bf16 parameters, 16.06 × 10⁹ bytes, are 14.96 GiB);
usable memory per GPU = memory × usable fraction (vLLM's gpu_memory_utilization, default 0.9, leaves the rest for
activations and the runtime). Tensor parallelism splits weights and KV evenly over 1, 2, 4 or 8 GPUs of one node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, Unpack

import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.specs import GpuSpec, ModelSpec, gib
from planner.capacity.weights import bytes_per_param, checkpoint_gb

__all__ = ["TP_DEGREES", "FitOptions", "GpuFit", "fit", "fit_table", "kv_bytes_per_token"]

# Tensor-parallel degrees inside one node (attention heads split evenly only over powers of two).
TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes per token: 2 · layers · kv_heads · head_dim · bytes(kv_dtype)."""
    for name in ("layers", "kv_heads", "head_dim"):
        v = getattr(model, name)
        if not isinstance(v, (int, float)) or v <= 0:
            raise CapacityError(f"model {model.label!r}: {name} must be a positive number, got {v!r}")
    return 2.0 * model.layers * model.kv_heads * model.head_dim * bytes_per_param(kv_dtype)


@dataclass(frozen=True)
class GpuFit:
    """Whether a model with its KV cache fits, on how many GPUs, and the headroom left; memory in GiB (2³⁰ bytes)."""

    model: str
    gpu: str
    weights_gib: float
    kv_bytes_per_token: float
    kv_gib: float
    total_gib: float
    usable_gib_per_gpu: float
    min_gpus: int  # ceil(total / usable per GPU), ignoring TP constraints
    tp_gpus: int | None  # smallest TP degree in TP_DEGREES that fits; None = not on one node
    headroom_gib: float | None  # free usable memory on tp_gpus GPUs
    max_sequences: int | None  # concurrent sequences at this context that fit on tp_gpus
    message: str

    @property
    def fits(self) -> bool:
        return self.tp_gpus is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fits"] = self.fits
        return d


class FitOptions(TypedDict, total=False):
    """fit()'s keyword options, as one value a page or command hands to fit() and fit_table() alike."""

    weight_dtype: str
    kv_dtype: str
    context_tokens: int
    concurrent_sequences: int
    usable_fraction: float


def fit(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    context_tokens: int = 32_768,
    concurrent_sequences: int = 1,
    usable_fraction: float = 0.9,
) -> GpuFit:
    """Fit `model` on `gpu`: weights (params × bytes) + KV (bytes/token × context × sequences) vs usable memory, in GiB.

    Raises CapacityError for a context or sequence count < 1, a usable fraction outside (0, 1], or a GPU
    without memory. A model that fits on no single node is a result (tp_gpus None) with a message, not an error.
    """
    if context_tokens < 1 or concurrent_sequences < 1:
        raise CapacityError("context length and concurrent sequences must each be at least 1")
    if not 0 < usable_fraction <= 1:
        raise CapacityError(f"usable memory fraction must be in (0, 1], got {usable_fraction:g}")
    if gpu.memory_gib <= 0:
        raise CapacityError(f"GPU {gpu.label!r} needs a memory size greater than 0 GiB")
    weights = gib(checkpoint_gb(model.params_b, weight_dtype) * 1e9)
    kv_tok = kv_bytes_per_token(model, kv_dtype)
    kv_seq_gib = gib(kv_tok * context_tokens)
    kv = kv_seq_gib * concurrent_sequences
    total = weights + kv
    usable = gpu.memory_gib * usable_fraction
    min_gpus = max(1, math.ceil(total / usable - 1e-12))
    tp = next((n for n in TP_DEGREES if n >= min_gpus), None)
    what = (
        f"{model.label} ({weight_dtype} weights {weights:,.1f} GiB + "
        f"KV {kv:,.1f} GiB for {concurrent_sequences} × {context_tokens:,} tokens)"
    )
    headroom: float | None = None
    max_seq: int | None = None
    if tp is None:
        node = TP_DEGREES[-1]
        message = (
            f"{what} = {total:,.0f} GiB does not fit on one {node}×{gpu.label} node ({node * usable:,.0f} GiB usable): "
            f"it needs at least {min_gpus} GPUs across nodes. "
            f"Quantise the weights, shorten the context or serve fewer sequences."
        )
    else:
        headroom = tp * usable - total
        max_seq = int((tp * usable - weights) // kv_seq_gib) if kv_seq_gib > 0 else None
        message = (
            f"{what} = {total:,.1f} GiB fits on {tp}× {gpu.label} with {headroom:,.1f} GiB headroom "
            f"(room for {max_seq:,} sequences of {context_tokens:,} tokens)."
        )
    return GpuFit(model.label, gpu.label, weights, kv_tok, kv, total, usable, min_gpus, tp, headroom, max_seq, message)


def fit_table(model: ModelSpec, gpus: Sequence[GpuSpec], **kwargs: Unpack[FitOptions]) -> pd.DataFrame:
    """fit() for each GPU: columns gpu, memory_gib, total_gib, min_gpus, tp_gpus, headroom_gib, max_sequences, fits
    (memory in GiB)."""
    rows = []
    for g in gpus:
        f = fit(model, g, **kwargs)
        rows.append(
            {
                "gpu": g.label,
                "memory_gib": g.memory_gib,
                "total_gib": f.total_gib,
                "min_gpus": f.min_gpus,
                "tp_gpus": f.tp_gpus,
                "headroom_gib": f.headroom_gib,
                "max_sequences": f.max_sequences,
                "fits": f.fits,
            }
        )
    return pd.DataFrame(rows)
