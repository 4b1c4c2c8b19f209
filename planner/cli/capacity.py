"""`ttft-planner cost | weights | gpu-fit | prefill | warm-pool`: the Capacity & cost models from the command line."""

from __future__ import annotations

import math

import click

from planner.capacity import presets as P
from planner.capacity.cost import CostInputs, break_even, summarize
from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import fit
from planner.capacity.prefill import estimate, largest_prompts, rate_from_slope
from planner.capacity.warmpool import keep_warm_tradeoff, min_slots_for_target, queue_wait
from planner.capacity.weights import (
    BYTES_PER_PARAM,
    PROJECTION_LABEL,
    PROJECTION_PARAMS_B,
    checkpoint_gb,
    load_time_s,
    projection_table,
    rate_from_cold_reading,
    rate_from_row,
)
from planner.cli._common import echo_json
from planner.presets import interactions

__all__ = ["COMMANDS"]

_DTYPES = click.Choice(sorted(BYTES_PER_PARAM), case_sensitive=False)


def _usage(exc: CapacityError) -> click.UsageError:
    return click.UsageError(str(exc))


def _by_key(rows, key: str, what: str, option: str):
    for r in rows:
        if r.key.lower() == key.lower():
            return r
    raise click.BadParameter(f"unknown {what} {key!r}; known: {', '.join(r.key for r in rows)}", param_hint=option)


def _non_negative(ctx, param, value):
    if value is None:
        return value
    vals = value if isinstance(value, tuple) else (value,)
    for v in vals:
        if not math.isfinite(v) or v < 0:
            raise click.BadParameter(f"must be a finite number ≥ 0, got {v:g}")
    return value


@click.command()
@click.option("--gpu-usd-per-hour", type=float, callback=_non_negative, help="Dedicated price per GPU-hour (USD). Or --gpu-price.")
@click.option("--gpu-price", "gpu_price_key", help="A GPU-hour preset key from assets/prices.toml (e.g. seed-h200, modal-h100).")
@click.option("--gpus-per-replica", type=int, default=1, show_default=True, help="GPUs in one replica/node (node size).")
@click.option("--overhead-usd-per-hour", type=float, default=0.0, show_default=True, callback=_non_negative, help="Extra cost per replica-hour (storage, egress, ops).")
@click.option("--capacity-tokens-per-min", type=float, callback=_non_negative, help="Sustained capacity of one replica (tokens/min). Or the preset's claim.")
@click.option("--capacity-excludes-cached", is_flag=True, help="The capacity counts only uncached prompt + output tokens (cached are free to serve).")
@click.option("--blended-usd-per-mtok", type=float, callback=_non_negative, help="Blended serverless price per 1M tokens; skips the token mix.")
@click.option("--price", "price_key", help="A serverless price preset key (e.g. fireworks-deepseek-v3).")
@click.option("--input-usd-per-mtok", type=float, callback=_non_negative, help="Serverless uncached input price per 1M tokens.")
@click.option("--cached-usd-per-mtok", type=float, callback=_non_negative, help="Serverless cached input price per 1M tokens (default: the input price).")
@click.option("--output-usd-per-mtok", type=float, callback=_non_negative, help="Serverless output price per 1M tokens.")
@click.option("--mix", "mix_tokens", type=float, nargs=3, callback=_non_negative, metavar="PROMPT CACHED OUTPUT",
              help="Token mix as totals (prompt includes cached). Default: the Copilot coding-agent trace, 129:1, 85.7% cached.")
@click.option("--tokens-per-hour", type=float, callback=_non_negative, help="Your traffic as a flat rate (tokens/h), to place it on the curve.")
@click.option("--growth", type=float, default=1.0, show_default=True, callback=_non_negative, help="Growth factor applied to the traffic.")
@click.option("--min-replicas", type=int, default=0, show_default=True, help="Minimum warm replicas (hybrid base lower bound).")
@click.option("--max-replicas", type=int, default=8, show_default=True, help="Maximum replicas.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def cost(gpu_usd_per_hour, gpu_price_key, gpus_per_replica, overhead_usd_per_hour, capacity_tokens_per_min, capacity_excludes_cached,
         blended_usd_per_mtok, price_key, input_usd_per_mtok, cached_usd_per_mtok, output_usd_per_mtok, mix_tokens,
         tokens_per_hour, growth, min_replicas, max_replicas, as_json) -> None:
    """Serverless vs dedicated: break-even utilisation u* = dedicated $/h ÷ (blended $/token × capacity tokens/h).

    u* ≥ 1 means serverless is cheaper at any utilisation. The node size (GPUs per replica) and whether the
    capacity counts cached prompt tokens are always part of the answer.

    \b
    Examples:
      ttft-planner cost --gpu-usd-per-hour 3.20 --gpus-per-replica 1 --capacity-tokens-per-min 720000 --blended-usd-per-mtok 0.212 --json
      ttft-planner cost --gpu-price seed-h200 --price fireworks-deepseek-v3 --tokens-per-hour 20e6
      ttft-planner cost --gpu-usd-per-hour 3.20 --gpus-per-replica 8 --capacity-tokens-per-min 720000 --input-usd-per-mtok 0.56 --cached-usd-per-mtok 0.28 --output-usd-per-mtok 1.68
    """
    gpu_note = "typed"
    if gpu_price_key:
        g = _by_key(P.gpu_hour_prices(), gpu_price_key, "GPU-hour preset", "--gpu-price")
        gpu_usd_per_hour = g.usd_per_gpu_hour if gpu_usd_per_hour is None else gpu_usd_per_hour
        capacity_tokens_per_min = g.capacity_tokens_per_min if capacity_tokens_per_min is None else capacity_tokens_per_min
        gpu_note = f"{g.label} ({g.source}, {g.as_of})"
    if gpu_usd_per_hour is None:
        raise click.UsageError("give --gpu-usd-per-hour or --gpu-price")
    if capacity_tokens_per_min is None:
        raise click.UsageError("give --capacity-tokens-per-min (the preset has no capacity claim)")
    mix = P.TokenMix.from_totals(*mix_tokens) if mix_tokens else P.default_mix()
    price_note = "typed"
    if blended_usd_per_mtok is not None:
        if price_key or input_usd_per_mtok is not None:
            raise click.UsageError("give --blended-usd-per-mtok OR per-kind prices (--price / --input-usd-per-mtok …), not both")
        p_in = p_cached = p_out = blended_usd_per_mtok
        price_note = "blended (typed)"
    else:
        if price_key:
            sp = _by_key(P.serverless_prices(), price_key, "serverless price preset", "--price")
            p_in, p_cached, p_out = sp.input_usd_per_mtok, sp.effective_cached_usd_per_mtok, sp.output_usd_per_mtok
            price_note = f"{sp.label} ({sp.source}, {sp.as_of})"
        else:
            if input_usd_per_mtok is None or output_usd_per_mtok is None:
                raise click.UsageError("give --blended-usd-per-mtok, --price, or --input-usd-per-mtok and --output-usd-per-mtok")
            p_in, p_out = input_usd_per_mtok, output_usd_per_mtok
            p_cached = input_usd_per_mtok
        p_in = input_usd_per_mtok if input_usd_per_mtok is not None else p_in
        p_cached = cached_usd_per_mtok if cached_usd_per_mtok is not None else p_cached
        p_out = output_usd_per_mtok if output_usd_per_mtok is not None else p_out
    try:
        inputs = CostInputs(
            input_usd_per_mtok=p_in, cached_input_usd_per_mtok=p_cached, output_usd_per_mtok=p_out,
            mix_uncached_input_tokens=mix.uncached_input_tokens, mix_cached_input_tokens=mix.cached_input_tokens,
            mix_output_tokens=mix.output_tokens, gpu_usd_per_hour=gpu_usd_per_hour, capacity_tokens_per_min=capacity_tokens_per_min,
            gpus_per_replica=gpus_per_replica, overhead_usd_per_replica_hour=overhead_usd_per_hour,
            capacity_counts_cached=not capacity_excludes_cached, min_replicas=min_replicas, max_replicas=max_replicas,
            hourly_tokens=(tokens_per_hour or 0.0,) * 24, growth_factor=growth, price_label=price_note, gpu_label=gpu_note,
        )
        be = break_even(inputs)
        summary = summarize(inputs) if tokens_per_hour else None
    except CapacityError as exc:
        raise _usage(exc) from None
    token_definition = ("capacity counts every billed token, cached prompt tokens included" if inputs.capacity_counts_cached
                        else "capacity counts uncached prompt + output tokens; cached prompt tokens assumed free to serve")
    out = {**be.to_dict(), "token_definition": token_definition, "price": price_note, "gpu_price": gpu_note,
           "mix": mix.to_dict(), "inputs": inputs.to_dict(), "traffic": summary.to_dict() if summary else None}
    if as_json:
        echo_json(out)
        return
    click.echo(f"node                 {be.gpus_per_replica} GPU(s) × ${inputs.gpu_usd_per_hour:g}/GPU-h = ${be.node_usd_per_hour:,.2f}/h")
    click.echo(f"capacity             {be.capacity_tokens_per_hour / 1e6:,.1f}M tokens/h ({token_definition})")
    click.echo(f"blended price        ${be.blended_usd_per_mtok:.4f} per 1M tokens ({price_note})")
    u = be.break_even_utilisation
    click.echo(f"break-even u*        {'∞' if math.isinf(u) else f'{u:.2f} ({u:.0%})'}")
    click.echo(be.verdict())
    if summary:
        click.echo(f"your traffic         {summary.monthly_tokens / 1e9:,.2f}B tokens/month on {summary.replicas_for_peak} replica(s), "
                   f"utilisation {summary.traffic_utilisation:.0%}")
        click.echo(f"serverless           ${summary.serverless_usd_per_month:,.0f}/month")
        click.echo(f"dedicated            ${summary.dedicated_usd_per_month:,.0f}/month")
        click.echo(f"hybrid ({summary.hybrid_base_replicas} base)      ${summary.hybrid_usd_per_month:,.0f}/month  → cheapest: {summary.cheapest}")
        for n in summary.notes:
            click.echo(f"note: {n}")


@click.command()
@click.option("--params-b", type=float, multiple=True, callback=_non_negative, help="Parameters in billions (repeatable). Default: the 8B–1T projection.")
@click.option("--dtype", type=_DTYPES, default="bf16", show_default=True, help="Weight format: fp8/int8 1 byte, bf16/fp16 2, int4/fp4 0.5.")
@click.option("--load-row", "load_rows", multiple=True, help="Published loader row key (repeatable; see --list-rows). Default: all rows.")
@click.option("--cold-ms", type=float, callback=_non_negative, help="Your cold reading (ms), to derive your own load rate.")
@click.option("--warm-ms", type=float, default=0.0, show_default=True, callback=_non_negative, help="Warm TTFT right after the cold reading (ms).")
@click.option("--cold-checkpoint-gb", type=float, callback=_non_negative, help="Checkpoint size (GB) of the endpoint behind --cold-ms.")
@click.option("--engine-startup-s", type=float, default=0.0, show_default=True, callback=_non_negative,
              help="Engine start-up on top of the transfer (s); the published rows show 16–21 s for vLLM.")
@click.option("--list-rows", is_flag=True, help="List the published loader rows and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def weights(params_b, dtype, load_rows, cold_ms, warm_ms, cold_checkpoint_gb, engine_startup_s, list_rows, as_json) -> None:
    """Weight-load projection (segment 2 for scale-to-zero): checkpoint GB = params × bytes/param; time = GB ÷ rate.

    The rate comes from a published row (Run:ai Model Streamer table, Llama 3 8B, ~15 GB) or from your own
    cold reading. A constant-rate, order-of-magnitude estimate: real stacks differ by storage tier and concurrency.

    \b
    Examples:
      ttft-planner weights --params-b 70 --dtype fp8 --load-row s3-streamer-c32 --load-row gp3-safetensors
      ttft-planner weights --params-b 70 --dtype fp8 --cold-ms 95000 --warm-ms 400 --cold-checkpoint-gb 16 --engine-startup-s 20 --json
      ttft-planner weights --list-rows
    """
    rows = P.loader_rows()
    if list_rows:
        data = [{"key": r.key, "label": r.label, "gb_per_s": r.gb_per_s, "ready_s": r.ready_s, "source": r.source, "as_of": r.as_of} for r in rows]
        if as_json:
            echo_json({"rows": data})
        else:
            for d in data:
                click.echo(f"{d['key']:<20} {d['label']}  ({d['gb_per_s']:.2f} GB/s)")
        return
    try:
        rates = [rate_from_row(_by_key(rows, k, "loader row", "--load-row")) for k in load_rows]
        if cold_ms is not None:
            if not cold_checkpoint_gb:
                raise click.UsageError("--cold-ms needs --cold-checkpoint-gb (the size of the checkpoint that cold reading loaded)")
            rates.append(rate_from_cold_reading(cold_checkpoint_gb, cold_ms, warm_ms, engine_startup_s))
        if not rates:
            rates = [rate_from_row(r) for r in rows]
        table = projection_table(rates, dtype, params_b or PROJECTION_PARAMS_B, engine_startup_s)
    except CapacityError as exc:
        raise _usage(exc) from None
    out = {
        "dtype": dtype, "engine_startup_s": engine_startup_s, "label": PROJECTION_LABEL,
        "rates": [r.to_dict() for r in rates],
        "projection": [
            {"params_b": p, "checkpoint_gb": checkpoint_gb(p, dtype),
             "load_s": {r.name: load_time_s(checkpoint_gb(p, dtype), r, engine_startup_s) for r in rates}}
            for p in table["params_b"]
        ],
    }
    if as_json:
        echo_json(out)
        return
    click.echo(f"weight-load projection, {dtype} ({PROJECTION_LABEL})")
    for r in rates:
        click.echo(f"  rate {r.gb_per_s:6.2f} GB/s  {r.detail}")
    for row in out["projection"]:
        cells = "  ".join(f"{name}: {s:,.0f} s" for name, s in row["load_s"].items())
        click.echo(f"{row['params_b']:>6g}B  {row['checkpoint_gb']:>7,.0f} GB  {cells}")


def _model(model_key, params_b, layers, kv_heads, head_dim, d_model, *, need_d_model: bool = False) -> P.ModelSpec:
    custom = (params_b, layers, kv_heads, head_dim)
    if model_key:
        if any(v is not None for v in custom):
            raise click.UsageError("give --model OR a custom shape (--params-b --layers --kv-heads --head-dim), not both")
        return _by_key(P.models(), model_key, "model preset", "--model")
    if any(v is None for v in custom):
        raise click.UsageError("give --model KEY, or all of --params-b --layers --kv-heads --head-dim for a custom model")
    for name, v in zip(("--params-b", "--layers", "--kv-heads", "--head-dim"), custom):
        if v <= 0:
            raise click.BadParameter("must be greater than 0", param_hint=name)
    if need_d_model and not d_model:
        raise click.UsageError("the prefill model of a custom model needs --d-model (its hidden size)")
    return P.ModelSpec("custom", "custom model", params_b, layers, kv_heads, head_dim, d_model or 0)


_model_options = [
    click.option("--model", "model_key", help="Model preset key from assets/models.toml (e.g. llama-3.1-70b)."),
    click.option("--params-b", type=float, help="Custom model: parameters (billions)."),
    click.option("--layers", type=int, help="Custom model: transformer layers."),
    click.option("--kv-heads", type=int, help="Custom model: KV heads."),
    click.option("--head-dim", type=int, help="Custom model: head dimension."),
    click.option("--d-model", type=int, help="Custom model: hidden size (prefill attention term)."),
]


def _with_model_options(f):
    for opt in reversed(_model_options):
        f = opt(f)
    return f


@click.command("gpu-fit", short_help="Weights + KV cache vs GPU memory: fits on how many GPUs, with what headroom.")
@_with_model_options
@click.option("--gpu", "gpu_keys", multiple=True, help="GPU preset key (repeatable; default: every preset): H100, H200, B200, A100-80GB, L40S, A10G, L4.")
@click.option("--weight-dtype", type=_DTYPES, default="bf16", show_default=True)
@click.option("--kv-dtype", type=_DTYPES, default="bf16", show_default=True)
@click.option("--context-tokens", type=int, default=32_768, show_default=True, help="Tokens in flight per sequence.")
@click.option("--sequences", type=int, default=1, show_default=True, help="Concurrent sequences.")
@click.option("--usable-fraction", type=float, default=None, help="Share of HBM for weights + KV (default from assets/gpus.toml: vLLM's 0.9).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def gpu_fit(model_key, params_b, layers, kv_heads, head_dim, d_model, gpu_keys, weight_dtype, kv_dtype, context_tokens, sequences,
            usable_fraction, as_json) -> None:
    """GPU fit: weights + KV cache (2·layers·kv_heads·head_dim·bytes per token × tokens in flight) vs HBM.

    \b
    Examples:
      ttft-planner gpu-fit --model llama-3.1-70b --weight-dtype fp8 --context-tokens 32768 --sequences 8
      ttft-planner gpu-fit --params-b 32 --layers 64 --kv-heads 8 --head-dim 128 --gpu H100 --gpu L40S --json
    """
    model = _model(model_key, params_b, layers, kv_heads, head_dim, d_model)
    gpus = [_by_key(P.gpus(), k, "GPU preset", "--gpu") for k in gpu_keys] or list(P.gpus())
    frac = usable_fraction if usable_fraction is not None else float(P.gpu_defaults()["usable_memory_fraction"])
    try:
        fits = [fit(model, g, weight_dtype=weight_dtype, kv_dtype=kv_dtype, context_tokens=context_tokens,
                    concurrent_sequences=sequences, usable_fraction=frac) for g in gpus]
    except CapacityError as exc:
        raise _usage(exc) from None
    if as_json:
        echo_json({"model": model.to_dict(), "usable_fraction": frac, "fits": [f.to_dict() for f in fits]})
        return
    click.echo(f"{model.label}: KV {fits[0].kv_bytes_per_token / 1024:,.0f} KiB/token ({kv_dtype}), usable memory {frac:.0%} of HBM")
    for f in fits:
        click.echo(f"- {f.message}")


@click.command()
@_with_model_options
@click.option("--gpu", "gpu_key", default="H100", show_default=True, help="GPU preset key.")
@click.option("--gpus", "gpu_count", type=int, default=1, show_default=True, help="GPUs working on one prompt (tensor parallel).")
@click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp8"], case_sensitive=False), default="bf16", show_default=True, help="Compute format (dense peak).")
@click.option("--mfu", type=float, default=None, help="Model FLOPs utilisation (default from assets/gpus.toml: 0.5).")
@click.option("--prompt-tokens", type=float, default=8192, show_default=True, callback=_non_negative, help="Prompt length (e.g. your p95).")
@click.option("--cache-hit", type=float, default=0.0, show_default=True, help="Prefix-cache hit rate 0..1; only uncached tokens are computed.")
@click.option("--slope-ms-per-1k", type=float, default=None, help="Measured prefill slope (ms per 1K uncached tokens); overrides the model.")
@click.option("--queue-ms", type=float, default=0.0, show_default=True, callback=_non_negative, help="Segment 1, for the largest prompt per interaction.")
@click.option("--cold-ms", type=float, default=0.0, show_default=True, callback=_non_negative, help="Segment 2 in the p95.")
@click.option("--network-ms", type=float, default=0.0, show_default=True, callback=_non_negative, help="Segment 4.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def prefill(model_key, params_b, layers, kv_heads, head_dim, d_model, gpu_key, gpu_count, dtype, mfu, prompt_tokens, cache_hit,
            slope_ms_per_1k, queue_ms, cold_ms, network_ms, as_json) -> None:
    """Prefill rate: (2·N·L + 2·layers·L²·d) / (dense FLOPS × MFU × GPUs), uncached tokens only; or a measured slope.

    Also prints the largest p95 prompt that fits each interaction type's prefill budget
    (target − queueing − cold start − network).

    \b
    Examples:
      ttft-planner prefill --model llama-3.1-8b --gpu H100 --prompt-tokens 8192 --json      # ≈ 0.30 s
      ttft-planner prefill --model llama-3.1-70b --gpu H200 --dtype fp8 --cache-hit 0.85 --queue-ms 60 --network-ms 80
      ttft-planner prefill --slope-ms-per-1k 45 --queue-ms 60 --network-ms 80
    """
    if not 0 <= cache_hit <= 1:
        raise click.BadParameter(f"must be between 0 and 1, got {cache_hit:g}", param_hint="--cache-hit")
    mfu = mfu if mfu is not None else float(P.gpu_defaults()["mfu"])
    try:
        if slope_ms_per_1k is not None:
            rate = rate_from_slope(slope_ms_per_1k)
            est = None
            table = largest_prompts(interactions(), queue_ms=queue_ms, cold_ms=cold_ms, network_ms=network_ms,
                                    cache_hit_fraction=cache_hit, rate_tokens_per_s=rate)
            source = f"slope {slope_ms_per_1k:g} ms per 1K uncached tokens"
        else:
            model = _model(model_key, params_b, layers, kv_heads, head_dim, d_model, need_d_model=True)
            gpu = _by_key(P.gpus(), gpu_key, "GPU preset", "--gpu")
            est = estimate(model, gpu, prompt_tokens, dtype=dtype, mfu=mfu, gpus=gpu_count, cache_hit_fraction=cache_hit)
            rate = est.tokens_per_s
            table = largest_prompts(interactions(), queue_ms=queue_ms, cold_ms=cold_ms, network_ms=network_ms,
                                    cache_hit_fraction=cache_hit, model=model, gpu=gpu, dtype=dtype, mfu=mfu, gpus=gpu_count)
            source = f"model: {est.detail}"
    except CapacityError as exc:
        raise _usage(exc) from None
    out = {"source": source, "prefill_tokens_per_s": rate, "estimate": est.to_dict() if est else None,
           "largest_prompts": table.to_dict(orient="records")}
    if as_json:
        echo_json(out)
        return
    if est:
        click.echo(f"{est.detail}: {est.time_s:,.3f} s for {est.uncached_tokens:,.0f} uncached tokens "
                   f"→ {rate:,.0f} tokens/s (attention {est.attention_fraction:.0%} of the work)")
    else:
        click.echo(f"{source} → {rate:,.0f} tokens/s")
    for r in out["largest_prompts"]:
        mx = r["max_prompt_tokens_p95"]
        txt = "no budget left" if r["prefill_budget_ms"] <= 0 else ("unlimited (all cached)" if math.isinf(mx) else f"{mx:,.0f} tokens")
        click.echo(f"{r['interaction']:<32} target {r['target_ms']:>6,.0f} ms  prefill budget {r['prefill_budget_ms']:>6,.0f} ms  largest p95 prompt {txt}")


@click.command("warm-pool")
@click.option("--arrivals-per-hour", type=float, required=True, callback=_non_negative, help="Arrival rate at the peak hour (requests/h).")
@click.option("--service-s", type=float, required=True, help="Mean time one request holds a slot (s): TTFT + decode at the target concurrency.")
@click.option("--slots", type=int, default=None, help="Request slots in the pool (replicas × slots per replica).")
@click.option("--p", "p", type=float, default=0.95, show_default=True, help="Queue-wait percentile.")
@click.option("--target-wait-s", type=float, default=None, callback=_non_negative, help="Queue-wait target (s) at --p: prints the minimum slots.")
@click.option("--slots-per-replica", type=int, default=1, show_default=True, help="Concurrent request slots per replica.")
@click.option("--cold-start-s", type=float, default=None, callback=_non_negative, help="Cold start (s): adds the keep-warm vs scale-to-zero trade-off.")
@click.option("--warm-p95-ms", type=float, default=0.0, show_default=True, callback=_non_negative, help="Warm p95 TTFT (ms) for the trade-off.")
@click.option("--replica-usd-per-hour", type=float, default=0.0, show_default=True, callback=_non_negative, help="One replica's cost per hour, for the trade-off.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def warm_pool(arrivals_per_hour, service_s, slots, p, target_wait_s, slots_per_replica, cold_start_s, warm_p95_ms, replica_usd_per_hour, as_json) -> None:
    """Warm-pool sizing with Erlang C: P(wait), queue-wait percentile, and the minimum slots for a target.

    P(W_q > t) = C(c, a)·e^(−(cμ−λ)t) with c slots, a = λ·E[S] Erlangs.

    \b
    Examples:
      ttft-planner warm-pool --arrivals-per-hour 30 --service-s 300 --slots 4 --json     # P(wait) ≈ 0.32
      ttft-planner warm-pool --arrivals-per-hour 1200 --service-s 12 --target-wait-s 0.1 --slots-per-replica 8
      ttft-planner warm-pool --arrivals-per-hour 60 --service-s 10 --slots 1 --cold-start-s 45 --warm-p95-ms 400 --replica-usd-per-hour 3.2
    """
    if service_s <= 0 or not math.isfinite(service_s):
        raise click.BadParameter(f"must be greater than 0 s, got {service_s:g}", param_hint="--service-s")
    if not 0 < p < 1:
        raise click.BadParameter(f"must be between 0 and 1, got {p:g}", param_hint="--p")
    if slots_per_replica < 1:
        raise click.BadParameter("must be at least 1", param_hint="--slots-per-replica")
    if slots is None and target_wait_s is None:
        raise click.UsageError("give --slots (to size a pool) and/or --target-wait-s (to find the minimum slots)")
    if slots is not None and slots < 1:
        raise click.BadParameter("must be at least 1", param_hint="--slots")
    try:
        qw = queue_wait(arrivals_per_hour, service_s, slots, p) if slots is not None else None
        need = min_slots_for_target(arrivals_per_hour, service_s, target_wait_s, p) if target_wait_s is not None else None
        trade = None
        if cold_start_s is not None:
            trade = keep_warm_tradeoff(node_usd_per_hour=replica_usd_per_hour, warm_ttft_p95_ms=warm_p95_ms, cold_start_ms=cold_start_s * 1000,
                                       arrivals_per_hour=arrivals_per_hour, service_ms=service_s * 1000)
    except CapacityError as exc:
        raise _usage(exc) from None
    label = f"p{p * 100:g}"
    out = {
        "arrivals_per_hour": arrivals_per_hour, "service_s": service_s, "p": p,
        "queue": qw.to_dict() if qw else None,
        "wait_probability": qw.wait_probability if qw else None,
        f"queue_wait_{label}_s": qw.wait_quantile_s if qw else None,
        "target_wait_s": target_wait_s, "min_slots": need,
        "min_replicas": math.ceil(need / slots_per_replica) if need is not None else None,
        "tradeoff": trade.to_dict(orient="records") if trade is not None else None,
    }
    if as_json:
        echo_json(out)
        return
    if qw:
        click.echo(qw.message)
    if need is not None:
        click.echo(f"minimum for queue-wait {label} ≤ {target_wait_s:g} s: {need} slots = {out['min_replicas']} replica(s) of {slots_per_replica} slot(s)")
    if trade is not None:
        click.echo("keep-warm trade-off (one replica):")
        for r in out["tradeoff"]:
            click.echo(f"  {r['option']:<28} cold {r['cold_fraction']:6.1%}  warm {r['warm_hours_per_day']:5.1f} h/day  "
                       f"${r['keep_warm_usd_per_month']:>8,.0f}/month  p95 {r['p95_ttft_ms']:>8,.0f} ms")


COMMANDS = [cost, weights, gpu_fit, prefill, warm_pool]
