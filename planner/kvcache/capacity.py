"""KV-cache capacity of one replica from the deployment: what the GPUs hold after the weights, in tokens and blocks.

tokens = (HBM × usable fraction × GPUs − weights − reserve) ÷ KV bytes per token, where KV bytes per token =
2 (K and V) × layers × KV heads × head dim × bytes per KV element (planner.capacity.gpufit.kv_bytes_per_token).
Memory in GB is 1e9 bytes, as in the GPU fit; the usable fraction is vLLM's gpu_memory_utilization (0.9 by
default); the reserve is what the runtime keeps beyond that (activations, CUDA graphs), 0 unless stated.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import TP_DEGREES, kv_bytes_per_token
from planner.capacity.prefill import estimate
from planner.capacity.specs import GpuSpec, ModelSpec
from planner.capacity.weights import checkpoint_gb
from planner.validate import GPUS_PER_REPLICA, KV_BLOCK_TOKENS

__all__ = [
    "ASSUMED_MS_PER_TOKEN",
    "DEFAULT_BLOCK_TOKENS",
    "RATE_PROMPT_TOKENS",
    "KvCapacity",
    "kv_capacity",
    "prefill_rate",
]

DEFAULT_BLOCK_TOKENS = 16  # vLLM's default KV block size (SGLang's radix cache is per token: block 1)
RATE_PROMPT_TOKENS = 8192  # the prompt at which a modelled prefill rate is read (prefill is near-linear below it)
ASSUMED_MS_PER_TOKEN = 0.1  # 10,000 uncached tokens a second, when neither a slope nor the model's width is known


@dataclass(frozen=True)
class KvCapacity:
    """The KV cache one replica holds: its tokens and blocks, and the figures they come from."""

    model: str
    gpu: str
    gpus_per_replica: int
    kv_dtype: str
    usable_gb: float  # HBM × usable fraction × GPUs
    weights_gb: float
    reserve_gb: float
    kv_bytes_per_token: float
    tokens: int
    block_tokens: int

    @property
    def blocks(self) -> int:
        return self.tokens // self.block_tokens

    def label(self) -> str:
        return (
            f"{self.gpus_per_replica}× {self.gpu}, {self.model}: {self.usable_gb:,.1f} GB usable − "
            f"{self.weights_gb:,.1f} GB weights − {self.reserve_gb:,.1f} GB reserve = {self.tokens:,} tokens of "
            f"{self.kv_dtype} KV ({self.kv_bytes_per_token / 1024:,.0f} KiB a token) per replica"
        )


def kv_capacity(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    gpus_per_replica: int | None = None,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    usable_fraction: float = 0.9,
    reserve_gb: float = 0.0,
    block_tokens: int = DEFAULT_BLOCK_TOKENS,
) -> KvCapacity:
    """The KV capacity of one replica of `model` on `gpus_per_replica` × `gpu` (default: the smallest tensor-parallel
    degree whose memory holds the weights and at least one block).

    Raises CapacityError when the weights leave no room for KV, or for a bad fraction, reserve, GPU count or block
    size (the counts by planner.validate's GPUS_PER_REPLICA and KV_BLOCK_TOKENS).
    """
    if not 0 < usable_fraction <= 1:
        raise CapacityError(f"usable memory fraction must be in (0, 1], got {usable_fraction:g}")
    if reserve_gb < 0:
        raise CapacityError(f"the reserve must be ≥ 0 GB, got {reserve_gb:g}")
    for what, rule, value in (
        ("GPUs per replica", GPUS_PER_REPLICA, gpus_per_replica),
        ("a KV block's tokens", KV_BLOCK_TOKENS, block_tokens),
    ):
        why = None if value is None else rule.problem(value)
        if why is not None:
            raise CapacityError(f"{what} {why}")
    weights = checkpoint_gb(model.params_b, weight_dtype)
    per_token = kv_bytes_per_token(model, kv_dtype)
    per_gpu = gpu.hbm_gb * usable_fraction

    def tokens_on(n_gpus: int) -> int:
        return int((per_gpu * n_gpus - weights - reserve_gb) * 1e9 // per_token)

    if gpus_per_replica is None:
        gpus_per_replica = next((n for n in TP_DEGREES if tokens_on(n) >= block_tokens), None)
        if gpus_per_replica is None:
            raise CapacityError(
                f"{model.label} ({weight_dtype}, {weights:,.1f} GB) leaves no KV room on {TP_DEGREES[-1]}× {gpu.label}"
            )
    tokens = tokens_on(gpus_per_replica)
    if tokens < block_tokens:
        raise CapacityError(
            f"{model.label} ({weight_dtype}, {weights:,.1f} GB) leaves no KV room on {gpus_per_replica}× {gpu.label} "
            f"({per_gpu * gpus_per_replica:,.1f} GB usable, {reserve_gb:,.1f} GB reserve)"
        )
    return KvCapacity(
        model.label,
        gpu.label,
        gpus_per_replica,
        kv_dtype,
        per_gpu * gpus_per_replica,
        weights,
        reserve_gb,
        per_token,
        tokens,
        block_tokens,
    )


def prefill_rate(
    model: ModelSpec | None, gpu: GpuSpec, gpus: int, slope_ms_per_1k: float | None = None
) -> tuple[float, str]:
    """(ms per uncached prompt token, where it comes from): a measured slope, else the prefill model (planner.capacity
    .prefill) at a RATE_PROMPT_TOKENS prompt on `gpus` × `gpu`, else ASSUMED_MS_PER_TOKEN, said so."""
    if slope_ms_per_1k:
        return slope_ms_per_1k / 1000.0, f"measured slope {slope_ms_per_1k:g} ms per 1K tokens"
    if model is not None and model.d_model:
        est = estimate(model, gpu, RATE_PROMPT_TOKENS, gpus=gpus)
        return 1000.0 / est.tokens_per_s, f"prefill model: {est.detail}"
    return ASSUMED_MS_PER_TOKEN, (
        f"assumed {1000.0 / ASSUMED_MS_PER_TOKEN:,.0f} tokens/s (no measured slope, and no model width for the prefill "
        "model)"
    )
