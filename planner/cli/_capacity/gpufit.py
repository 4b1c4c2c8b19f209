"""`ttft-planner capacity gpu-fit`: weights + KV cache against each GPU's memory."""

from __future__ import annotations

import click

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import fit
from planner.cli._capacity.options import (
    by_key,
    kv_dtype_option,
    model_from_options,
    usable_fraction_option,
    usage_error,
    weight_dtype_option,
    with_model_options,
)
from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import CONTEXT_TOKENS, SEQUENCES

__all__ = ["gpu_fit"]


@click.command("gpu-fit", short_help="GPU fit: weights + KV cache vs GPU memory, on how many GPUs, with what headroom.")
@with_model_options
@click.option(
    "--gpu",
    "gpu_keys",
    multiple=True,
    help="GPU preset key (repeatable; default: every preset): H100, H200, B200, A100-80GB, L40S, A10G, L4.",
)
@weight_dtype_option
@kv_dtype_option
@click.option(
    "--context-tokens",
    type=rule_type(CONTEXT_TOKENS),
    default=32_768,
    show_default=True,
    help="Tokens in flight per sequence.",
)
@click.option("--sequences", type=rule_type(SEQUENCES), default=1, show_default=True, help="Concurrent sequences.")
@usable_fraction_option
@output_option(Shape.OBJECT)
def gpu_fit(
    model_options,
    gpu_keys,
    weight_dtype,
    kv_dtype,
    context_tokens,
    sequences,
    usable_fraction,
    as_json,
) -> None:
    """GPU fit: weights + KV cache (2·layers·kv_heads·head_dim·bytes per token × tokens in flight) vs HBM.

    \b
    Examples:
      ttft-planner capacity gpu-fit --model llama-3.1-70b --weight-dtype fp8 --context-tokens 32768 --sequences 8
      ttft-planner capacity gpu-fit --params-b 32 --layers 64 --kv-heads 8 --head-dim 128 --gpu H100 --gpu L40S --json
    """
    model = model_from_options(model_options)
    gpus = [by_key(P.gpus(), k, "GPU preset", "--gpu") for k in gpu_keys] or list(P.gpus())
    frac = usable_fraction if usable_fraction is not None else float(P.gpu_defaults()["usable_memory_fraction"])
    try:
        fits = [
            fit(
                model,
                g,
                weight_dtype=weight_dtype,
                kv_dtype=kv_dtype,
                context_tokens=context_tokens,
                concurrent_sequences=sequences,
                usable_fraction=frac,
            )
            for g in gpus
        ]
    except CapacityError as exc:
        raise usage_error(exc) from None
    if as_json:
        echo_json({"model": model.to_dict(), "usable_fraction": frac, "fits": [f.to_dict() for f in fits]})
        return
    click.echo(
        f"{model.label}: KV {fits[0].kv_bytes_per_token / 1024:,.0f} KiB/token ({kv_dtype}), "
        f"usable memory {frac:.0%} of HBM"
    )
    for f in fits:
        click.echo(f"- {f.message}")
