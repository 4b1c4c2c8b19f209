"""`ttft-planner capacity prefill`: the prefill rate (FLOPs model or a measured slope)
and the largest p95 prompt per interaction type."""

from __future__ import annotations

import math

import click

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.prefill import PrefillEstimate, estimate, largest_prompts, rate_from_slope
from planner.capacity.specs import GpuSpec, ModelSpec
from planner.cli._capacity.options import (
    by_key,
    model_from_options,
    slope_option,
    usage_error,
    with_model_options,
)
from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import DURATION_MS, FRACTION, GPUS_PER_REPLICA, MFU, PROMPT_TOKENS_P95
from planner.worksheet.interactions import interactions

__all__ = ["prefill"]


@click.command(short_help="Prefill rate and time of a prompt: from the FLOPs, or a measured slope.")
@with_model_options
@click.option("--gpu", "gpu_key", default="H100", show_default=True, help="GPU preset key.")
@click.option(
    "--gpus",
    "gpu_count",
    type=rule_type(GPUS_PER_REPLICA),
    default=1,
    show_default=True,
    help="GPUs working on one prompt (tensor parallel).",
)
@click.option(
    "--dtype",
    type=click.Choice(["bf16", "fp16", "fp8"], case_sensitive=False),
    default="bf16",
    show_default=True,
    help="Compute format (dense peak).",
)
@click.option(
    "--mfu",
    type=rule_type(MFU),
    default=None,
    help="Model FLOPs utilisation (default from assets/gpus.toml: 0.5).",
)
@click.option(
    "--prompt-tokens",
    type=rule_type(PROMPT_TOKENS_P95),
    default=8192,
    show_default=True,
    help="Prompt length (e.g. your p95).",
)
@click.option(
    "--cache-hit",
    type=rule_type(FRACTION),
    default=0.0,
    show_default=True,
    help="Prefix-cache hit rate 0..1; only uncached tokens are computed.",
)
@slope_option
@click.option(
    "--queue-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Segment 1, for the largest prompt per interaction.",
)
@click.option("--cold-ms", type=rule_type(DURATION_MS), default=0.0, show_default=True, help="Segment 2 in the p95.")
@click.option("--network-ms", type=rule_type(DURATION_MS), default=0.0, show_default=True, help="Segment 4.")
@output_option(Shape.OBJECT)
def prefill(
    model_options,
    gpu_key,
    gpu_count,
    dtype,
    mfu,
    prompt_tokens,
    cache_hit,
    slope_ms_per_1k,
    queue_ms,
    cold_ms,
    network_ms,
    as_json,
) -> None:
    """Prefill rate: (2·N·L + 2·layers·L²·d) / (dense FLOPS × MFU × GPUs), uncached tokens only; or a measured slope.

    Also prints the largest p95 prompt that fits each interaction type's prefill budget
    (target − queueing − cold start − network).

    \b
    Examples:
      ttft-planner capacity prefill --model llama-3.1-8b --gpu H100 --prompt-tokens 8192 --json      # ≈ 0.30 s
      ttft-planner capacity prefill --model llama-3.1-70b --gpu H200 --dtype fp8 --cache-hit 0.85 \\
          --queue-ms 60 --network-ms 80
      ttft-planner capacity prefill --slope-ms-per-1k 45 --queue-ms 60 --network-ms 80
    """
    mfu = mfu if mfu is not None else float(P.gpu_defaults()["mfu"])
    try:
        model: ModelSpec | None = None
        gpu: GpuSpec | None = None
        est: PrefillEstimate | None = None
        if slope_ms_per_1k is not None:
            rate = rate_from_slope(slope_ms_per_1k)
            source = f"slope {slope_ms_per_1k:g} ms per 1K uncached tokens"
        else:
            model = model_from_options(model_options, need_d_model=True)
            gpu = by_key(P.gpus(), gpu_key, "GPU preset", "--gpu")
            est = estimate(
                model, gpu, prompt_tokens, dtype=dtype, mfu=mfu, gpus=gpu_count, cache_hit_fraction=cache_hit
            )
            rate = est.tokens_per_s
            source = f"model: {est.detail}"
        # the largest prompts: at the measured rate, or (no slope) each one's own modelled prefill
        table = largest_prompts(
            interactions(),
            queue_ms=queue_ms,
            cold_ms=cold_ms,
            network_ms=network_ms,
            cache_hit_fraction=cache_hit,
            rate_tokens_per_s=rate if est is None else None,
            model=model,
            gpu=gpu,
            dtype=dtype,
            mfu=mfu,
            gpus=gpu_count,
        )
    except CapacityError as exc:
        raise usage_error(exc) from None
    out = {
        "source": source,
        "prefill_tokens_per_s": rate,
        "estimate": est.to_dict() if est else None,
        "largest_prompts": table.to_dict(orient="records"),
    }
    if as_json:
        echo_json(out)
        return
    if est:
        click.echo(
            f"{est.detail}: {est.time_s:,.3f} s for {est.uncached_tokens:,.0f} uncached tokens "
            f"→ {rate:,.0f} tokens/s (attention {est.attention_fraction:.0%} of the work)"
        )
    else:
        click.echo(f"{source} → {rate:,.0f} tokens/s")
    for r in out["largest_prompts"]:
        mx = r["max_prompt_tokens_p95"]
        txt = (
            "no budget left"
            if r["prefill_budget_ms"] <= 0
            else ("unlimited (all cached)" if math.isinf(mx) else f"{mx:,.0f} tokens")
        )
        click.echo(
            f"{r['interaction']:<32} target {r['target_ms']:>6,.0f} ms"
            f"  prefill budget {r['prefill_budget_ms']:>6,.0f} ms  largest p95 prompt {txt}"
        )
