"""KV-cache capacity of one replica from the deployment: what the GPUs hold after the weights, in tokens and blocks.

tokens = (memory × usable fraction × GPUs − weights − reserve) ÷ KV bytes per token, where KV bytes per token =
2 (K and V) × layers × KV heads × head dim × bytes per KV element (planner.capacity.gpufit.kv_bytes_per_token).
Memory is in GiB (2³⁰ bytes), as in the GPU fit and as vLLM sizes its cache: gpu_memory_utilization (0.9 by default)
of the card's total, an H100's 80 GiB, not 80 × 10⁹ bytes. Weights are params × bytes per parameter (8.03 B in bf16:
16.06 × 10⁹ bytes = 14.96 GiB). The reserve is what the runtime keeps beyond that (activations, CUDA graphs), 0 unless
stated.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import TP_DEGREES, kv_bytes_per_token
from planner.capacity.prefill import estimate
from planner.capacity.specs import GIB_BYTES, GpuSpec, ModelSpec, gib
from planner.capacity.weights import checkpoint_gb
from planner.inputs.validate import GPUS_PER_REPLICA, KV_BLOCK_TOKENS

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
    """The KV cache one replica holds: its tokens and blocks, and the figures they come from (memory in GiB)."""

    model: str
    gpu: str
    gpus_per_replica: int
    kv_dtype: str
    usable_gib: float  # memory × usable fraction × GPUs
    weights_gib: float
    reserve_gib: float
    kv_bytes_per_token: float
    tokens: int
    block_tokens: int

    @property
    def blocks(self) -> int:
        return self.tokens // self.block_tokens

    def label(self) -> str:
        return (
            f"{self.gpus_per_replica}× {self.gpu}, {self.model}: {self.usable_gib:,.1f} GiB usable − "
            f"{self.weights_gib:,.1f} GiB weights − {self.reserve_gib:,.1f} GiB reserve = {self.tokens:,} tokens of "
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
    reserve_gib: float = 0.0,
    block_tokens: int = DEFAULT_BLOCK_TOKENS,
) -> KvCapacity:
    """The KV capacity of one replica of `model` on `gpus_per_replica` × `gpu` (default: the smallest tensor-parallel
    degree whose memory holds the weights and at least one block).

    Raises CapacityError when the weights leave no room for KV, or for a bad fraction, reserve, GPU count or block
    size (the counts by planner.inputs.validate's GPUS_PER_REPLICA and KV_BLOCK_TOKENS).
    """
    if not 0 < usable_fraction <= 1:
        raise CapacityError(f"usable memory fraction must be in (0, 1], got {usable_fraction:g}")
    if reserve_gib < 0:
        raise CapacityError(f"the reserve must be ≥ 0 GiB, got {reserve_gib:g}")
    for what, rule, value in (
        ("GPUs per replica", GPUS_PER_REPLICA, gpus_per_replica),
        ("a KV block's tokens", KV_BLOCK_TOKENS, block_tokens),
    ):
        why = None if value is None else rule.problem(value)
        if why is not None:
            raise CapacityError(f"{what} {why}")
    weights_bytes = checkpoint_gb(model.params_b, weight_dtype) * 1e9
    weights = gib(weights_bytes)
    per_token = kv_bytes_per_token(model, kv_dtype)
    per_gpu = gpu.memory_gib * usable_fraction

    def tokens_on(n_gpus: int) -> int:
        return int((per_gpu * n_gpus * GIB_BYTES - weights_bytes - reserve_gib * GIB_BYTES) // per_token)

    if gpus_per_replica is None:
        gpus_per_replica = next((n for n in TP_DEGREES if tokens_on(n) >= block_tokens), None)
        if gpus_per_replica is None:
            raise CapacityError(
                f"{model.label} ({weight_dtype}, {weights:,.1f} GiB) leaves no KV room on {TP_DEGREES[-1]}× {gpu.label}"
            )
    tokens = tokens_on(gpus_per_replica)
    if tokens < block_tokens:
        raise CapacityError(
            f"{model.label} ({weight_dtype}, {weights:,.1f} GiB) leaves no KV room on {gpus_per_replica}× {gpu.label} "
            f"({per_gpu * gpus_per_replica:,.1f} GiB usable, {reserve_gib:,.1f} GiB reserve)"
        )
    return KvCapacity(
        model.label,
        gpu.label,
        gpus_per_replica,
        kv_dtype,
        per_gpu * gpus_per_replica,
        weights,
        reserve_gib,
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
