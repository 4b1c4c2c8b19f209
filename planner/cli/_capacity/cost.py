"""`ttft-planner capacity cost`: serverless vs dedicated break-even, and the monthly cost of your traffic."""

from __future__ import annotations

import math

import click

from planner.capacity import specs as P
from planner.capacity.cost import CostInputs, break_even, summarize
from planner.capacity.errors import CapacityError
from planner.cli._capacity.options import by_key, non_negative, usage_error
from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import (
    GPUS_PER_REPLICA,
    GROWTH_FACTOR,
    MIN_REPLICAS,
    REPLICAS,
    TOKENS_PER_HOUR,
    TOKENS_PER_MIN,
    USD_PER_HOUR,
    USD_PER_MTOK,
)

__all__ = ["cost"]


@click.command(short_help="Break-even: serverless vs dedicated cost, and the utilisation where they meet.")
@click.option(
    "--gpu-usd-per-hour", type=rule_type(USD_PER_HOUR), help="Dedicated price per GPU-hour (USD). Or --gpu-price."
)
@click.option(
    "--gpu-price", "gpu_price_key", help="A GPU-hour preset key from assets/prices.toml (e.g. seed-h200, modal-h100)."
)
@click.option(
    "--gpus-per-replica",
    type=rule_type(GPUS_PER_REPLICA),
    default=1,
    show_default=True,
    help="GPUs in one replica/node (node size).",
)
@click.option(
    "--overhead-usd-per-hour",
    type=rule_type(USD_PER_HOUR),
    default=0.0,
    show_default=True,
    help="Extra cost per replica-hour (storage, egress, ops).",
)
@click.option(
    "--capacity-tokens-per-min",
    type=rule_type(TOKENS_PER_MIN),
    help="Sustained capacity of one replica (tokens/min). Or the preset's claim.",
)
@click.option(
    "--capacity-excludes-cached",
    is_flag=True,
    help="The capacity counts only uncached prompt + output tokens (cached are free to serve).",
)
@click.option(
    "--blended-usd-per-mtok",
    type=rule_type(USD_PER_MTOK),
    help="Blended serverless price per 1M tokens; skips the token mix.",
)
@click.option("--price", "price_key", help="A serverless price preset key (e.g. fireworks-deepseek-v3).")
@click.option(
    "--input-usd-per-mtok", type=rule_type(USD_PER_MTOK), help="Serverless uncached input price per 1M tokens."
)
@click.option(
    "--cached-usd-per-mtok",
    type=rule_type(USD_PER_MTOK),
    help="Serverless cached input price per 1M tokens (default: the input price).",
)
@click.option("--output-usd-per-mtok", type=rule_type(USD_PER_MTOK), help="Serverless output price per 1M tokens.")
@click.option(
    "--mix",
    "mix_tokens",
    type=float,
    nargs=3,
    callback=non_negative,
    metavar="PROMPT CACHED OUTPUT",
    help="Token mix as totals (prompt includes cached). Default: the Copilot coding-agent trace, 129:1, 85.7% cached.",
)
@click.option(
    "--tokens-per-hour",
    type=rule_type(TOKENS_PER_HOUR),
    help="Your traffic as a flat rate (tokens/h), to place it on the curve.",
)
@click.option(
    "--growth",
    type=rule_type(GROWTH_FACTOR),
    default=1.0,
    show_default=True,
    help="Growth factor applied to the traffic.",
)
@click.option(
    "--min-replicas",
    type=rule_type(MIN_REPLICAS),
    default=0,
    show_default=True,
    help="Minimum warm replicas (hybrid base lower bound).",
)
@click.option("--max-replicas", type=rule_type(REPLICAS), default=8, show_default=True, help="Maximum replicas.")
@output_option(Shape.OBJECT)
def cost(
    gpu_usd_per_hour,
    gpu_price_key,
    gpus_per_replica,
    overhead_usd_per_hour,
    capacity_tokens_per_min,
    capacity_excludes_cached,
    blended_usd_per_mtok,
    price_key,
    input_usd_per_mtok,
    cached_usd_per_mtok,
    output_usd_per_mtok,
    mix_tokens,
    tokens_per_hour,
    growth,
    min_replicas,
    max_replicas,
    as_json,
) -> None:
    """Serverless vs dedicated: break-even utilisation u* = dedicated $/h ÷ (blended $/token × capacity tokens/h).

    u* ≥ 1 means serverless is cheaper at any utilisation. The node size (GPUs per replica) and whether the
    capacity counts cached prompt tokens are always part of the answer.

    \b
    Examples:
      ttft-planner capacity cost --gpu-usd-per-hour 3.20 --gpus-per-replica 1 --capacity-tokens-per-min 720000 \\
          --blended-usd-per-mtok 0.212 --json
      ttft-planner capacity cost --gpu-price seed-h200 --price fireworks-deepseek-v3 --tokens-per-hour 20e6
      ttft-planner capacity cost --gpu-usd-per-hour 3.20 --gpus-per-replica 8 --capacity-tokens-per-min 720000 \\
          --input-usd-per-mtok 0.56 --cached-usd-per-mtok 0.28 --output-usd-per-mtok 1.68
    """
    gpu_note = "typed"
    if gpu_price_key:
        g = by_key(P.gpu_hour_prices(), gpu_price_key, "GPU-hour preset", "--gpu-price")
        gpu_usd_per_hour = g.usd_per_gpu_hour if gpu_usd_per_hour is None else gpu_usd_per_hour
        capacity_tokens_per_min = (
            g.capacity_tokens_per_min if capacity_tokens_per_min is None else capacity_tokens_per_min
        )
        gpu_note = f"{g.label} ({g.source}, {g.as_of})"
    if gpu_usd_per_hour is None:
        raise click.UsageError("give --gpu-usd-per-hour or --gpu-price")
    if capacity_tokens_per_min is None:
        raise click.UsageError("give --capacity-tokens-per-min (the preset has no capacity claim)")
    try:
        mix = P.TokenMix.from_totals(*mix_tokens) if mix_tokens else P.default_mix()
        if mix.total_tokens <= 0:
            raise CapacityError("the token mix is empty: give some uncached, cached or output tokens")
    except CapacityError as exc:
        raise click.BadParameter(str(exc), param_hint="--mix") from None
    price_note = "typed"
    if blended_usd_per_mtok is not None:
        if price_key or input_usd_per_mtok is not None:
            raise click.UsageError(
                "give --blended-usd-per-mtok OR per-kind prices (--price / --input-usd-per-mtok …), not both"
            )
        p_in = p_cached = p_out = blended_usd_per_mtok
        price_note = "blended (typed)"
    else:
        if price_key:
            sp = by_key(P.serverless_prices(), price_key, "serverless price preset", "--price")
            p_in, p_cached, p_out = sp.input_usd_per_mtok, sp.effective_cached_usd_per_mtok, sp.output_usd_per_mtok
            price_note = f"{sp.label} ({sp.source}, {sp.as_of})"
        else:
            if input_usd_per_mtok is None or output_usd_per_mtok is None:
                raise click.UsageError(
                    "give --blended-usd-per-mtok, --price, or --input-usd-per-mtok and --output-usd-per-mtok"
                )
            p_in, p_out = input_usd_per_mtok, output_usd_per_mtok
            p_cached = input_usd_per_mtok
        p_in = input_usd_per_mtok if input_usd_per_mtok is not None else p_in
        p_cached = cached_usd_per_mtok if cached_usd_per_mtok is not None else p_cached
        p_out = output_usd_per_mtok if output_usd_per_mtok is not None else p_out
    if min_replicas > max_replicas:
        raise click.BadParameter(
            f"{min_replicas} is more than --max-replicas ({max_replicas})", param_hint="--min-replicas"
        )
    try:
        inputs = CostInputs.from_mix(
            mix,
            input_usd_per_mtok=p_in,
            cached_input_usd_per_mtok=p_cached,
            output_usd_per_mtok=p_out,
            gpu_usd_per_hour=gpu_usd_per_hour,
            capacity_tokens_per_min=capacity_tokens_per_min,
            gpus_per_replica=gpus_per_replica,
            overhead_usd_per_replica_hour=overhead_usd_per_hour,
            capacity_counts_cached=not capacity_excludes_cached,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            hourly_tokens=(tokens_per_hour or 0.0,) * 24,
            growth_factor=growth,
            price_label=price_note,
            gpu_label=gpu_note,
        )
        be = break_even(inputs)
        summary = summarize(inputs) if tokens_per_hour else None
    except CapacityError as exc:
        raise usage_error(exc) from None
    token_definition = (
        "capacity counts every billed token, cached prompt tokens included"
        if inputs.capacity_counts_cached
        else "capacity counts uncached prompt + output tokens; cached prompt tokens assumed free to serve"
    )
    out = {
        **be.to_dict(),
        "token_definition": token_definition,
        "price": price_note,
        "gpu_price": gpu_note,
        "mix": mix.to_dict(),
        "inputs": inputs.to_dict(),
        "traffic": summary.to_dict() if summary else None,
    }
    if as_json:
        echo_json(out)
        return
    click.echo(
        f"node                 {be.gpus_per_replica} GPU(s) × ${inputs.gpu_usd_per_hour:g}/"
        f"GPU-h = ${be.node_usd_per_hour:,.2f}/h"
    )
    click.echo(f"capacity             {be.capacity_tokens_per_hour / 1e6:,.1f}M tokens/h ({token_definition})")
    click.echo(f"blended price        ${be.blended_usd_per_mtok:.4f} per 1M tokens ({price_note})")
    u = be.break_even_utilisation
    click.echo(f"break-even u*        {'∞' if math.isinf(u) else f'{u:.2f} ({u:.0%})'}")
    click.echo(be.verdict())
    if summary:
        click.echo(
            f"your traffic         {summary.monthly_tokens / 1e9:,.2f}B tokens/month "
            f"on {summary.replicas_for_peak} replica(s), "
            f"utilisation {summary.traffic_utilisation:.0%}"
        )
        click.echo(f"serverless           ${summary.serverless_usd_per_month:,.0f}/month")
        click.echo(f"dedicated            ${summary.dedicated_usd_per_month:,.0f}/month")
        click.echo(
            f"hybrid ({summary.hybrid_base_replicas} base)      ${summary.hybrid_usd_per_month:,.0f}"
            f"/month  → cheapest: {summary.cheapest}"
        )
        for n in summary.notes:
            click.echo(f"note: {n}")
