"""Options and option helpers shared by the capacity commands: weight formats, ≥ 0 checks, preset lookup by key,
and the model options (a preset key, or a custom shape)."""

from __future__ import annotations

import functools
import math
from dataclasses import astuple, dataclass

import click

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.weights import BYTES_PER_PARAM
from planner.cli._common import rule_type
from planner.inputs.validate import (
    MODEL_HEAD_DIM,
    MODEL_HEADS,
    MODEL_LAYERS,
    MODEL_PARAMS_B,
    MODEL_WIDTH,
    SLOPE_MS_PER_1K_TOKENS,
    USABLE_HBM_FRACTION,
)

__all__ = [
    "DTYPES",
    "ModelOptions",
    "kv_dtype_option",
    "by_key",
    "model_from_options",
    "non_negative",
    "slope_option",
    "usable_fraction_option",
    "usage_error",
    "weight_dtype_option",
    "with_model_options",
]

DTYPES = click.Choice(sorted(BYTES_PER_PARAM), case_sensitive=False)


def usage_error(exc: CapacityError) -> click.UsageError:
    """A model's CapacityError as a usage error (exit 2): the message names the bad input."""
    return click.UsageError(str(exc))


def by_key(rows, key: str, what: str, option: str):
    """The preset in `rows` whose key is `key` (case-insensitive); raises click.BadParameter
    naming `option` and the known keys."""
    for r in rows:
        if r.key.lower() == key.lower():
            return r
    raise click.BadParameter(f"unknown {what} {key!r}; known: {', '.join(r.key for r in rows)}", param_hint=option)


def non_negative(ctx, param, value):
    """Click callback: every value (one, or a tuple for nargs/multiple) is a finite number ≥ 0."""
    if value is None:
        return value
    vals = value if isinstance(value, tuple) else (value,)
    for v in vals:
        if not math.isfinite(v) or v < 0:
            raise click.BadParameter(f"must be a finite number ≥ 0, got {v:g}")
    return value


@dataclass(frozen=True)
class ModelOptions:
    """The model options as given (None where left out): --model KEY, or a custom shape."""

    model_key: str | None
    params_b: float | None
    layers: int | None
    kv_heads: int | None
    head_dim: int | None
    d_model: int | None

    @property
    def given(self) -> bool:
        """--model, or any of the custom shape's four required options (--d-model alone names no model)."""
        custom = (self.params_b, self.layers, self.kv_heads, self.head_dim)
        return bool(self.model_key) or any(v is not None for v in custom)


def model_from_options(options: ModelOptions, *, need_d_model: bool = False) -> P.ModelSpec:
    """The model from --model KEY, or from a custom shape; raises click.UsageError / BadParameter
    when they are mixed or incomplete."""
    model_key, params_b, layers, kv_heads, head_dim, d_model = astuple(options)
    custom = (params_b, layers, kv_heads, head_dim)
    if model_key:
        if any(v is not None for v in custom):
            raise click.UsageError(
                "give --model OR a custom shape (--params-b --layers --kv-heads --head-dim), not both"
            )
        return by_key(P.models(), model_key, "model preset", "--model")
    if any(v is None for v in custom):
        raise click.UsageError(
            "give --model KEY, or all of --params-b --layers --kv-heads --head-dim for a custom model"
        )
    if need_d_model and not d_model:
        raise click.UsageError("the prefill model of a custom model needs --d-model (its hidden size)")
    return P.ModelSpec("custom", "custom model", params_b, layers, kv_heads, head_dim, d_model or 0)


_MODEL_OPTIONS = [
    click.option("--model", "model_key", help="Model preset key from assets/models.toml (e.g. llama-3.1-70b)."),
    # Each shape option is kept by its planner.inputs.validate rule (the range shows in --help): exit 2 naming it.
    click.option("--params-b", type=rule_type(MODEL_PARAMS_B), help="Custom model: parameters (billions)."),
    click.option("--layers", type=rule_type(MODEL_LAYERS), help="Custom model: transformer layers."),
    click.option("--kv-heads", type=rule_type(MODEL_HEADS), help="Custom model: KV heads."),
    click.option("--head-dim", type=rule_type(MODEL_HEAD_DIM), help="Custom model: head dimension."),
    click.option("--d-model", type=rule_type(MODEL_WIDTH), help="Custom model: hidden size (prefill attention term)."),
]


def with_model_options(f):
    """Decorator: add the model options (--model, or --params-b --layers --kv-heads --head-dim [--d-model]) and
    hand them to the command as one keyword argument, `model_options` (a ModelOptions)."""

    @functools.wraps(f)
    def command(*args, model_key, params_b, layers, kv_heads, head_dim, d_model, **kwargs):
        options = ModelOptions(model_key, params_b, layers, kv_heads, head_dim, d_model)
        return f(*args, model_options=options, **kwargs)

    for opt in reversed(_MODEL_OPTIONS):
        command = opt(command)
    return command


usable_fraction_option = click.option(
    "--usable-fraction",
    type=rule_type(USABLE_HBM_FRACTION),
    default=None,
    help="Share of HBM for weights + KV (default from assets/gpus.toml: vLLM's 0.9).",
)
slope_option = click.option(
    "--slope-ms-per-1k",
    type=rule_type(SLOPE_MS_PER_1K_TOKENS),
    default=None,
    help="Measured prefill slope (ms per 1K uncached tokens); overrides the model.",
)
weight_dtype_option = click.option(
    "--weight-dtype",
    type=DTYPES,
    default="bf16",
    show_default=True,
    help="Format the weights are held in: fp8/int8 1 byte a parameter, bf16/fp16 2, int4/fp4 0.5.",
)
kv_dtype_option = click.option(
    "--kv-dtype",
    type=DTYPES,
    default="bf16",
    show_default=True,
    help="Format of the KV cache: bytes per value as for --weight-dtype (fp8 halves bf16's).",
)
