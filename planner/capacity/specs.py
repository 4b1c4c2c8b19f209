"""Capacity specs: the typed rows of assets/ (GPUs, models, prices, loader rows), each with source and as_of.

Data, not code: every price, GPU spec and published load time lives in a TOML file;
this module only types it. All loaders raise FileNotFoundError / tomllib.TOMLDecodeError
naming the file, and CapacityError naming the row and key when a row is malformed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from planner.asset_files import load_asset
from planner.capacity.errors import CapacityError

__all__ = [
    "GIB_BYTES",
    "NO_FP8",
    "GpuHourPrice",
    "GpuSpec",
    "LoaderRow",
    "ModelSpec",
    "ServerlessPrice",
    "TokenMix",
    "capacity_claim",
    "default_mix",
    "fp8_cell",
    "gib",
    "gpu_hour_prices",
    "gpu_defaults",
    "gpu_from_record",
    "gpus",
    "loader_checkpoint_gb",
    "loader_rows",
    "model_from_record",
    "models",
    "serverless_prices",
]


#: Bytes in a GiB. GPU memory is counted in GiB, as CUDA, PyTorch and vLLM count it: an "80GB" H100 has 80 GiB
#: (85.9 × 10⁹ bytes), and vLLM sizes its KV cache from that total, not from 80 × 10⁹.
GIB_BYTES = 1 << 30


def gib(n_bytes: float) -> float:
    """`n_bytes` in GiB (2³⁰ bytes)."""
    return n_bytes / GIB_BYTES


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: memory (GiB, 2³⁰ bytes: the card's "80GB" is 80 GiB), bandwidth (TB/s) and DENSE peak TFLOPS (None
    where the GPU lacks that format)."""

    key: str
    label: str
    memory_gib: float
    bandwidth_tb_per_s: float
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    source: str
    as_of: str

    def dense_tflops(self, dtype: str) -> float:
        """Dense peak for 'bf16'/'fp16' or 'fp8'; raises CapacityError when the GPU has no such tensor cores."""
        d = dtype.lower()
        if d in ("bf16", "fp16"):
            return self.bf16_dense_tflops
        if d == "fp8":
            if self.fp8_dense_tflops is None:
                raise CapacityError(f"{self.label} has no FP8 tensor cores; pick BF16 for this GPU")
            return self.fp8_dense_tflops
        raise CapacityError(f"compute dtype must be bf16, fp16 or fp8, got {dtype!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelSpec:
    """A transformer's shape: parameters (billions; MoE: active_params_b per token), layers, heads, widths."""

    key: str
    label: str
    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    d_model: int
    attention_heads: int | None = None
    active_params_b: float | None = None
    source: str = "entered by hand"
    as_of: str = ""

    @property
    def compute_params_b(self) -> float:
        """Parameters that do work per token (active parameters for MoE, all of them otherwise)."""
        return self.active_params_b if self.active_params_b else self.params_b

    @property
    def attention_width(self) -> int:
        """Width of the attention products: heads × head_dim when known, else d_model."""
        return self.attention_heads * self.head_dim if self.attention_heads else self.d_model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ServerlessPrice:
    """A serverless price in USD per 1M tokens; cached input None = billed at the input price."""

    key: str
    provider: str
    model: str
    input_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None
    output_usd_per_mtok: float
    source: str
    as_of: str

    @property
    def label(self) -> str:
        return f"{self.provider} · {self.model}"

    @property
    def effective_cached_usd_per_mtok(self) -> float:
        return self.input_usd_per_mtok if self.cached_input_usd_per_mtok is None else self.cached_input_usd_per_mtok


@dataclass(frozen=True)
class GpuHourPrice:
    """A dedicated GPU-hour price (USD per GPU per hour), optionally with the publisher's capacity claim."""

    key: str
    provider: str
    gpu: str
    usd_per_gpu_hour: float
    source: str
    as_of: str
    capacity_tokens_per_min: float | None = None
    token_note: str = ""

    @property
    def label(self) -> str:
        return f"{self.provider} · {self.gpu} · ${self.usd_per_gpu_hour:,.2f}/GPU-h"


@dataclass(frozen=True)
class TokenMix:
    """Token volumes (any common scale): uncached prompt, cached prompt and output tokens."""

    uncached_input_tokens: float
    cached_input_tokens: float
    output_tokens: float
    label: str = "typed"
    source: str = ""
    as_of: str = ""

    @property
    def total_tokens(self) -> float:
        return self.uncached_input_tokens + self.cached_input_tokens + self.output_tokens

    @property
    def cache_hit_fraction(self) -> float:
        """Cached share of prompt tokens (0 when there are no prompt tokens)."""
        prompt = self.uncached_input_tokens + self.cached_input_tokens
        return self.cached_input_tokens / prompt if prompt > 0 else 0.0

    @property
    def input_output_ratio(self) -> float:
        prompt = self.uncached_input_tokens + self.cached_input_tokens
        return prompt / self.output_tokens if self.output_tokens > 0 else float("inf")

    @classmethod
    def from_totals(cls, prompt_tokens: float, cached_tokens: float, output_tokens: float, **meta: str) -> TokenMix:
        """From log-style totals where prompt_tokens INCLUDES cached_tokens; raises CapacityError if cached > prompt."""
        if min(prompt_tokens, cached_tokens, output_tokens) < 0:
            raise CapacityError("token counts cannot be negative")
        if cached_tokens > prompt_tokens:
            raise CapacityError(
                f"cached tokens ({cached_tokens:,.0f}) exceed prompt tokens ({prompt_tokens:,.0f})"
                f"; cached tokens are part of the prompt"
            )
        return cls(prompt_tokens - cached_tokens, cached_tokens, output_tokens, **meta)

    @classmethod
    def from_fractions(cls, cache_hit_fraction: float, input_output_ratio: float, **meta: str) -> TokenMix:
        """Per token of traffic (the three volumes sum to 1) from a cached share of the prompt (0–1) and an
        input:output token ratio; the inverse of `cache_hit_fraction` and `input_output_ratio`. A ratio ≤ 0 means
        no prompt tokens. Does not validate: callers bound the inputs (the page's widgets do)."""
        prompt = input_output_ratio / (input_output_ratio + 1.0) if input_output_ratio > 0 else 0.0
        return cls(prompt * (1 - cache_hit_fraction), prompt * cache_hit_fraction, 1.0 - prompt, **meta)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(kind: str, d: dict[str, Any], cls: type[Any], **extra: Any) -> Any:
    try:
        fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        fields.update(extra)
        return cls(**fields)
    except TypeError as exc:
        raise CapacityError(f"{kind} preset {d.get('key', '?')!r} is malformed: {exc}") from None


@cache
def gpus() -> tuple[GpuSpec, ...]:
    """GPU presets from assets/gpus.toml."""
    return tuple(
        _row("GPU", d, GpuSpec, fp8_dense_tflops=d.get("fp8_dense_tflops")) for d in load_asset("gpus.toml")["gpu"]
    )


@cache
def gpu_defaults() -> dict[str, Any]:
    """Modelling defaults from assets/gpus.toml [defaults]: mfu, usable_memory_fraction and their sources."""
    return dict(load_asset("gpus.toml")["defaults"])


@cache
def models() -> tuple[ModelSpec, ...]:
    """Model presets from assets/models.toml."""
    return tuple(_row("model", d, ModelSpec) for d in load_asset("models.toml")["model"])


@cache
def serverless_prices() -> tuple[ServerlessPrice, ...]:
    """Serverless price rows from assets/prices.toml."""
    return tuple(
        _row("serverless price", d, ServerlessPrice, cached_input_usd_per_mtok=d.get("cached_input_usd_per_mtok"))
        for d in load_asset("prices.toml")["serverless"]
    )


@cache
def gpu_hour_prices() -> tuple[GpuHourPrice, ...]:
    """Dedicated GPU-hour price rows from assets/prices.toml."""
    return tuple(_row("GPU-hour price", d, GpuHourPrice) for d in load_asset("prices.toml")["gpu_hour"])


def capacity_claim(preset: GpuHourPrice, presets: Iterable[GpuHourPrice]) -> tuple[float, str]:
    """The capacity claim (tokens/min per replica) and its note that a dedicated `preset` starts from.

    A preset without a claim borrows the first of `presets` that has one (and its note); none at all: 0 and the
    preset's own note.
    """
    src = preset if preset.capacity_tokens_per_min else next((g for g in presets if g.capacity_tokens_per_min), preset)
    return float(src.capacity_tokens_per_min or 0.0), src.token_note or ""


@cache
def default_mix() -> TokenMix:
    """The default token mix (the Copilot coding-agent trace) from assets/prices.toml."""
    m = load_asset("prices.toml")["mix"]
    return TokenMix.from_totals(
        float(m["prompt_tokens"]),
        float(m["cached_tokens"]),
        float(m["output_tokens"]),
        label=m["label"],
        source=m["source"],
        as_of=m["as_of"],
    )


@dataclass(frozen=True)
class LoaderRow:
    """One published weight-load measurement: storage × loader × concurrency → seconds for checkpoint_gb."""

    key: str
    storage: str
    loader: str
    concurrency: int
    load_s: float
    checkpoint_gb: float
    source: str
    as_of: str
    ready_s: float | None = None

    @property
    def gb_per_s(self) -> float:
        return self.checkpoint_gb / self.load_s

    @property
    def engine_startup_s(self) -> float | None:
        """Published non-load engine overhead (ready − load), when the row gives a ready time."""
        return None if self.ready_s is None else self.ready_s - self.load_s

    @property
    def label(self) -> str:
        return f"{self.storage} · {self.loader} · c{self.concurrency} · {self.load_s:g} s / {self.checkpoint_gb:g} GB"


def loader_checkpoint_gb() -> float:
    """Checkpoint size (GB) behind the published loader rows (Llama 3 8B, ~15 GB)."""
    return float(load_asset("loaders.toml")["defaults"]["checkpoint_gb"])


@cache
def loader_rows() -> tuple[LoaderRow, ...]:
    """Published loader rows from assets/loaders.toml."""
    data = load_asset("loaders.toml")
    gb = float(data["defaults"]["checkpoint_gb"])
    return tuple(_row("loader", d, LoaderRow, checkpoint_gb=float(d.get("checkpoint_gb", gb))) for d in data["row"])


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """Blank cells → None: NaN (an emptied number cell), None, and text that is only spaces."""
    return {
        k: (None if (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()) else v)
        for k, v in d.items()
    }


def _positive(kind: str, row: str, d: dict[str, Any], name: str, names: Mapping[str, str], required: bool) -> None:
    """Check cell `name` of an edited row: a finite number greater than 0 (an empty cell is allowed unless
    `required`). CapacityError names the row and the column as the table shows it (`names`, else the field)."""
    column = names.get(name, name)
    v = d.get(name)
    if v is None:
        if required:
            raise CapacityError(f"{kind} row {row!r}: the {column} cell is empty; fill it with a number greater than 0")
        return
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise CapacityError(f"{kind} row {row!r}: {column} must be a number greater than 0, got {v!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise CapacityError(f"{kind} row {row!r}: {column} must be a finite number greater than 0, got {v!r}")


#: What an FP8 cell holds for a GPU without FP8 tensor cores (shown as it, read back as none).
NO_FP8 = "—"
_NO_FP8_WORDS = {NO_FP8, "-", "no fp8", "none"}


def fp8_cell(tflops: float | None) -> str:
    """A GPU's FP8 dense TFLOPS as the preset editor shows it: "1979", or NO_FP8 ("—") for none."""
    return NO_FP8 if tflops is None or tflops != tflops else f"{float(tflops):g}"


def gpu_from_record(d: dict[str, Any], names: Mapping[str, str] | None = None) -> GpuSpec:
    """A GpuSpec from an edited table row (an empty or "—" FP8 cell: no FP8 tensor cores); CapacityError naming the
    row and the column otherwise. `names`: field → the column header the user sees (the message uses it)."""
    names = names or {}
    d = _clean(d)
    fp8 = d.get("fp8_dense_tflops")
    if isinstance(fp8, str):  # the editor shows the FP8 column as text: "—" (NO_FP8) for none, "1,979" for a figure
        d["fp8_dense_tflops"] = None if fp8.strip().casefold() in _NO_FP8_WORDS else fp8.replace(",", "").strip()
    d["key"] = d.get("key") or d.get("label")
    if not d["key"]:
        raise CapacityError(f"a GPU row has an empty {names.get('label', 'label')} cell: name the GPU")
    d["label"] = d.get("label") or d["key"]
    for name in ("memory_gib", "bandwidth_tb_per_s", "bf16_dense_tflops", "fp8_dense_tflops"):
        _positive("GPU", d["label"], d, name, names, required=name != "fp8_dense_tflops")
    d["source"] = d.get("source") or "entered by hand"
    d["as_of"] = d.get("as_of") or ""
    return _row(
        "GPU", d, GpuSpec, fp8_dense_tflops=None if d.get("fp8_dense_tflops") is None else float(d["fp8_dense_tflops"])
    )


def model_from_record(d: dict[str, Any], names: Mapping[str, str] | None = None) -> ModelSpec:
    """A ModelSpec from an edited table row (a custom model); CapacityError naming the row and the empty or bad
    column otherwise. `names`: field → the column header the user sees (the message uses it)."""
    names = names or {}
    d = _clean(d)
    d["key"] = d.get("key") or d.get("label") or "custom"
    d["label"] = d.get("label") or d["key"]
    for name in ("params_b", "layers", "kv_heads", "head_dim", "d_model", "attention_heads", "active_params_b"):
        _positive("model", d["label"], d, name, names, required=name not in ("attention_heads", "active_params_b"))
    for name in ("layers", "kv_heads", "head_dim", "d_model", "attention_heads"):
        if d.get(name) is not None:
            d[name] = max(1, round(float(d[name])))
    d["source"] = d.get("source") or "entered by hand"
    d["as_of"] = d.get("as_of") or ""
    return _row("model", d, ModelSpec)
