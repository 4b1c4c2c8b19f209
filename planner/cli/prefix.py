"""`ttft-planner prefix`: how much of a team's prompts a deployment serves from its KV cache, by routing."""

from __future__ import annotations

from pathlib import Path

import click

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.cli._capacity.options import (
    by_key,
    kv_dtype_option,
    model_from_options,
    slope_option,
    usable_fraction_option,
    usage_error,
    weight_dtype_option,
    with_model_options,
)
from planner.cli._common import NumberList, echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import GPUS_PER_REPLICA, KV_BLOCK_TOKENS, REPLICAS
from planner.kvcache.capacity import kv_capacity, prefill_rate
from planner.kvcache.chains import MOONCAKE_BLOCK_TOKENS, BlockSizeError, PrefixTraceError, read_prefix_trace
from planner.kvcache.regime import RULE_WORDS, deployment_name, study
from planner.kvcache.simulate import Engine, Eviction, Routing, ServiceRates, engine_eviction, reuse_ceiling
from planner.logs.tokenize import TokenCounter

__all__ = ["COMMANDS", "MAX_REPLICA_COUNTS", "prefix"]

MAX_REPLICA_COUNTS = 16  # --replicas: each count is replayed under every routing, one more than the last too
_SHOWN_REJECTS, _JSON_REJECTS = 5, 20  # rejected lines named in the text and in --json, as `logs summarize` does


def _pct(x: float) -> str:
    return f"{x:6.1%}"


def _num(x: float | None, unit: str = "") -> str:
    return "—" if x is None else f"{x:,.0f}{unit}"


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_model_options
@click.option("--gpu", "gpu_key", default="H100", show_default=True, help="GPU preset key (assets/gpus.toml).")
@click.option(
    "--gpus-per-replica",
    type=rule_type(GPUS_PER_REPLICA),
    default=None,
    help="GPUs a replica spans (tensor parallel; default: the fewest that hold the weights and some KV).",
)
@weight_dtype_option
@kv_dtype_option
@usable_fraction_option
@click.option(
    "--replicas",
    type=NumberList(REPLICAS, max_items=MAX_REPLICA_COUNTS),
    default="1,2,3",
    show_default=True,
    help=f"Replica counts, comma-separated: up to {MAX_REPLICA_COUNTS}, each {REPLICAS.describe()}.",
)
@click.option(
    "--routing",
    "routings",
    type=click.Choice([r.value for r in Routing]),
    multiple=True,
    help="Routing policy (repeatable; default: all four).",
)
@click.option(
    "--engine",
    type=click.Choice([e.value for e in Engine]),
    default=Engine.VLLM.value,
    show_default=True,
    help="What a replica keeps: vllm (a KV block cache freeing a finished request's blocks tail first, so a shared "
    "prefix outlives its tails), sglang (a radix tree evicting least recently used leaves, each a whole run of "
    "blocks) or llama.cpp (its server's slots, each keeping its last prompt; see --slots).",
)
@click.option(
    "--eviction",
    type=click.Choice([e.value for e in Eviction]),
    default=None,
    help="Override the engine's eviction rule (vllm, sglang): tail-first, radix-leaf, or lru (a prompt's first "
    "block first, as no engine does: to compare). Default: the engine's own.",
)
@click.option(
    "--slots",
    type=click.IntRange(1, 1024),
    default=4,
    show_default=True,
    help="llama.cpp only: slots per replica (-np), the replica's KV split evenly over them.",
)
@click.option(
    "--block-tokens",
    type=rule_type(KV_BLOCK_TOKENS),
    default=None,
    help="Tokens the engine's KV block holds (default: the trace's hash block for hash_ids traces, 16 — vLLM's — "
    "for chat text). On a hash_ids trace it must divide the trace's block (each hash read as that many blocks) or "
    "be a multiple of it; another size is refused.",
)
@click.option(
    "--trace-block-tokens",
    type=rule_type(KV_BLOCK_TOKENS),
    default=MOONCAKE_BLOCK_TOKENS,
    show_default=True,
    help="hash_ids traces only: tokens each hash stands for (Mooncake's and AIPerf's 512; see the trace's README).",
)
@slope_option
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Hugging Face tokenizer.json: exact token blocks of chat text (default: ≈ 4 characters a token).",
)
@output_option(Shape.OBJECT)
def prefix(
    file,
    model_options,
    gpu_key,
    gpus_per_replica,
    weight_dtype,
    kv_dtype,
    usable_fraction,
    replicas,
    routings,
    engine,
    eviction,
    slots,
    block_tokens,
    trace_block_tokens,
    slope_ms_per_1k,
    tokenizer,
    as_json,
) -> None:
    """Prefix reuse under memory pressure: KV cache hit rate, uncached p95 and prefill p95 by routing and replicas.

    FILE is a JSON Lines trace (plain, .gz or .zst, read as `logs summarize` reads a file: a line it cannot use
    is named and the rest read): Mooncake/AIPerf hash_ids, or chat logs with message text. First the share of
    prompt tokens that repeat an earlier prefix; then, for the deployment (--model on --gpu), the KV cache hit
    rate, uncached prompt p95 and predicted prefill p95 per routing policy and replica count, the capacity
    where cache pressure stops eroding reuse (the knee), and one sentence to forward.

    Each replica is a KV block cache evicting by its engine's rule (vLLM: a finished request's blocks freed tail
    first; SGLang: radix-tree leaves first), or llama.cpp's slots; predicted TTFT is the uncached prompt at the
    prefill rate (no queueing: the what-if adds that).

    \b
    Examples:
      ttft-planner prefix assets/sample_logs/agent_sessions.jsonl --model llama-3.1-70b --gpu H100
      ttft-planner prefix trace.jsonl --model qwen2.5-coder-32b --gpu L40S --replicas 2,3 --routing round-robin \\
          --routing session --slope-ms-per-1k 180 --json
    """
    counter = None
    if tokenizer is not None:
        try:
            counter = TokenCounter.from_tokenizer_json(tokenizer.read_bytes(), tokenizer.name)
        except (ValueError, RuntimeError) as exc:
            raise click.BadParameter(str(exc), param_hint="--tokenizer") from None
    try:
        rule = engine_eviction(engine, eviction)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--eviction") from None
    try:
        trace = read_prefix_trace(file, block_tokens, counter, trace_block_tokens=trace_block_tokens)
    except BlockSizeError as exc:
        raise click.BadParameter(str(exc), param_hint="--block-tokens") from None
    except PrefixTraceError as exc:
        raise click.BadParameter(str(exc), param_hint="FILE") from None
    cap = None
    gpu = by_key(P.gpus(), gpu_key, "GPU preset", "--gpu")
    frac = usable_fraction if usable_fraction is not None else float(P.gpu_defaults()["usable_memory_fraction"])
    model = model_from_options(model_options) if model_options.given else None
    try:
        if model is not None:
            cap = kv_capacity(
                model,
                gpu,
                gpus_per_replica=gpus_per_replica,
                weight_dtype=weight_dtype,
                kv_dtype=kv_dtype,
                usable_fraction=frac,
                block_tokens=trace.block_tokens,
            )
        ms_per_token, rate_source = prefill_rate(model, gpu, cap.gpus_per_replica if cap else 1, slope_ms_per_1k)
    except CapacityError as exc:
        raise usage_error(exc) from None
    rates = ServiceRates(prefill_ms_per_token=ms_per_token)
    chosen = [Routing(r) for r in routings] or list(Routing)
    ceiling, within = reuse_ceiling(trace.requests, trace.block_tokens)
    found = study(trace, cap.tokens if cap else None, replicas, chosen, rates, engine, slots, rule)
    sweep, at_cap, knees = found.sweep, found.at_capacity, found.knees
    deployment = deployment_name(replicas[0], cap) if cap else ""
    said = found.sentence(deployment, replicas[0]) if cap else ""
    if as_json:
        echo_json(
            {
                "file": str(file),
                "requests": len(trace.requests),
                "n_rejected": trace.n_rejected,
                "rejected": [
                    {"source": r.source, "line_no": r.line_no, "reason": r.reason}
                    for r in trace.rejected[:_JSON_REJECTS]
                ],
                "sessions": len({r.session for r in trace.requests if r.session is not None}),
                "prefix_source": trace.source,
                "approximate": trace.approximate,
                "block_tokens": trace.block_tokens,
                "trace_block_tokens": trace.trace_block_tokens,
                "reuse_ceiling": ceiling,
                "reuse_within_session": within,
                "kv_capacity": None if cap is None else {**cap.__dict__, "blocks": cap.blocks, "label": cap.label()},
                "prefill_rate": rate_source,
                "engine": engine if rule is not None else f"{engine}, {slots} slots a replica",
                "eviction": None if rule is None else rule.value,
                "regime": [p.__dict__ for p in sweep],
                "knee_tokens": knees,
                "deployment": [p.__dict__ for p in at_cap if p.replicas in replicas],
                "sentence": said,
            }
        )
        return
    sessions = len({r.session for r in trace.requests if r.session is not None})
    click.echo(f"{len(trace.requests):,} requests, {sessions:,} sessions; prefix identity from {trace.source}")
    if trace.n_rejected:
        click.echo(
            f"{trace.n_rejected:,} line{'' if trace.n_rejected == 1 else 's'} rejected, first: "
            + "; ".join(str(r) for r in trace.rejected[:_SHOWN_REJECTS])
        )
    click.echo(
        f"reuse ceiling: {ceiling:.1%} of prompt tokens repeat an earlier request's prefix"
        + (f" ({within:.1%} within the same session)" if sessions else "")
    )
    click.echo(f"prefill: {rate_source}")
    if rule is None:
        click.echo(f"engine: llama.cpp's slots, {slots} a replica, each keeping its last prompt")
    else:
        click.echo(f"engine: {engine}, eviction {rule.value}: {RULE_WORDS[rule.value]}")
    if cap is None:
        click.echo("(give --model and --gpu for the deployment's KV capacity, the table at it and the sentence)")
    else:
        click.echo(f"KV per replica: {cap.label()}")
        click.echo("routing        replicas  hit rate  requests hit  fully cached  uncached p95  prefill p95")
        for p in at_cap:
            if p.replicas in replicas:
                click.echo(
                    f"{p.routing:<14} {p.replicas:>8}  {_pct(p.hit_rate)}  {_pct(p.request_hit_fraction):>12}  "
                    f"{f'{p.fully_cached:,}/{p.requests:,}':>12}  {_num(p.uncached_p95):>12}  "
                    f"{_num(p.ttft_p95_ms, ' ms'):>11}"
                )
    click.echo(f"regime ({replicas[0]} replica{'s' if replicas[0] > 1 else ''}): hit rate by KV tokens per replica")
    for r in chosen:
        pts = [p for p in sweep if p.routing == r.value]
        cells = "  ".join(f"{p.capacity_tokens:,}: {p.hit_rate:.0%}" for p in pts)
        click.echo(f"  {r.value:<13} {cells}")
        click.echo(f"  {'':<13} knee at {_num(knees[r.value])} tokens")
    if said:
        click.echo(said)


COMMANDS = [prefix]
