"""`ttft-planner whatif`: replay a request log against candidate deployments in virtual time."""

from __future__ import annotations

from dataclasses import replace

import click

from planner import present
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.cli._common import echo_json, open_engine, rule_type, store_option
from planner.cli._log_input import (
    format_option,
    input_paths,
    map_option,
    prefix_option,
    progress_bar,
    progress_option,
    start_option,
)
from planner.cli._output import Shape, output_option
from planner.cli._renamed import renamed_option
from planner.inputs.validate import GPUS_PER_REPLICA, REPLAY_GROWTH, OutOfRange
from planner.kvcache.capacity import KvCapacity, kv_capacity
from planner.kvcache.chains import MOONCAKE_BLOCK_TOKENS
from planner.whatif.candidates import parse_candidates
from planner.whatif.deployment import Dedicated
from planner.whatif.gpu_kv import with_kv_blocks
from planner.whatif.results import compare
from planner.whatif.routing import prefix_cache_sentence, with_prefix_identity
from planner.whatif.trace import Trace, TraceError, grow, read_trace, trace_from_frame
from planner.whatif.trace import busiest_day as pick_busiest_day
from planner.worksheet.interactions import interactions

__all__ = ["COMMANDS"]


def _kv_from_gpu(ctx: click.Context, param: click.Parameter, value: str | None) -> KvCapacity | None:
    """MODEL@GPU[:GPUS] → the KV capacity of one replica, in the hash_ids' 512-token blocks. GPUS follows
    planner.inputs.validate's GPUS_PER_REPLICA; a bad or empty count is a usage error naming the option (exit 2)."""
    if value is None:
        return None
    model_key, at, rest = value.partition("@")
    gpu_key, colon, n = rest.partition(":")
    if not at or not model_key or not gpu_key or (colon and not n.strip()):
        raise click.BadParameter(f"{value!r} is not MODEL@GPU[:GPUS] (e.g. llama-3.1-70b@H100:4)")
    try:
        gpus = int(GPUS_PER_REPLICA.parse(n)) if colon else None
    except OutOfRange as exc:
        raise click.BadParameter(f"GPUS in {value!r}: {exc.reason}") from None
    model = next((m for m in P.models() if m.key.lower() == model_key.lower()), None)
    gpu = next((g for g in P.gpus() if g.key.lower() == gpu_key.lower()), None)
    if model is None or gpu is None:
        known = ", ".join(m.key for m in P.models()) if model is None else ", ".join(g.key for g in P.gpus())
        raise click.BadParameter(f"unknown {'model' if model is None else 'GPU'} in {value!r}; known: {known}")
    try:
        return kv_capacity(model, gpu, gpus_per_replica=gpus, block_tokens=MOONCAKE_BLOCK_TOKENS)
    except CapacityError as exc:
        raise click.BadParameter(str(exc)) from None


def _source_trace(name: str, database_url: str | None) -> Trace:
    """A live source's stored requests as a trace, its provenance in the trace's notes."""
    from planner.store.sources import SourceNotFound, get_source, load_source_frame

    engine = open_engine(database_url)
    try:
        src = get_source(engine, name)
    except SourceNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="--source") from None
    if not src.kind.per_request:
        raise click.BadParameter(
            f"{name} is a {src.kind.short} source: it keeps hours, not requests to replay", param_hint="--source"
        )
    trace = trace_from_frame(load_source_frame(engine, src.id), source=name)
    note = f"replayed: production traffic from {src.kind.origin}, source “{name}”, {src.n_requests:,} requests"
    return replace(trace, notes=(*trace.notes, note))


@renamed_option("--interval", "--interval-level")
@click.command()
@click.option(
    "--log",
    "log_paths",
    multiple=True,
    metavar="FILE|DIR|GLOB|S3-URL",
    help="Request log(s), repeatable: any format `logs summarize` reads (JSONL/CSV/JSON/Parquet, .gz/.zst, "
    "public traces), a directory or a glob.",
)
@click.option(
    "--source",
    "source_name",
    metavar="NAME",
    help="Instead of --log: the production requests of a live source (`ttft-planner sources`), from the store.",
)
@store_option
@format_option
@map_option
@start_option
@prefix_option
@click.option(
    "--kv-from-gpu",
    "kv",
    metavar="MODEL@GPU[:GPUS]",
    callback=_kv_from_gpu,
    help="Size the prefix cache of a hash_ids trace from a deployment instead of --prefix-cache-blocks: the KV "
    "memory one replica of MODEL on GPUS × GPU keeps after its weights, in GiB as the engine sizes it (e.g. "
    "llama-3.1-70b@H100:4); it also fills kv_blocks of each batching candidate (engine=…) that leaves it out, so "
    "requests wait for KV blocks as on that GPU.",
)
@click.option(
    "--deployment",
    "specs",
    required=True,
    multiple=True,
    metavar="SPEC",
    help="A candidate, repeatable: "
    "'serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3' or "
    "'dedicated:replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=1,rtt=40' (add name=… to label it; "
    "routing=round-robin|least-loaded|session|prefix gives each dedicated replica its own prefix cache, evicting by "
    "the engine's rule or eviction=tail-first|radix-leaf|lru). A dedicated candidate's engine=vllm|sglang|llama.cpp "
    "replays a continuous-batching scheduler step by step, with its knobs: slots (most running sequences), "
    "max_num_batched_tokens (tokens a step carries), chunked_prefill=0|1, mixed=0|1 (decodes share a step with "
    "prompts), block_size and kv_blocks (KV cache, 0 = not limiting), step_ms (fixed cost of a step, ms); "
    "prompt_tail (a prompt's last tokens run in the next step: llama.cpp checkpointing an SWA model, 4); "
    "engine=slots (the default) is independent slots. A batching candidate's overflow_… pool (overflow_slots= "
    "required) takes the requests that find their replica's sequences all taken; a serverless pool is slots only.",
)
@click.option(
    "--growth",
    type=rule_type(REPLAY_GROWTH),
    default=1.0,
    show_default=True,
    help="Scale the request volume (1.5 = 50% more requests, same hour-of-day shape).",
)
@click.option("--busiest-day", is_flag=True, help="Replay only the calendar day (in --tz) with the most requests.")
@click.option(
    "--tz", default="UTC", show_default=True, help="Time zone for hour-of-day buckets and --busiest-day (IANA name)."
)
@click.option(
    "--interaction",
    type=click.Choice([i.key for i in interactions()]),
    default="chat",
    show_default=True,
    help="Whose p95 target a candidate must meet (inline 200 ms, chat 500 ms, agent 1000 ms by default).",
)
@click.option(
    "--max-wait-s",
    type=click.FloatRange(0, 1e7, min_open=True),
    default=3600.0,
    show_default=True,
    help="A queue wait past this means the candidate cannot keep up (s).",
)
@click.option(
    "--interval-level",
    "level",
    type=click.FloatRange(0.5, 0.99),
    default=0.8,
    show_default=True,
    help="Level of each percentile's prediction interval: from the candidate's speed_sd/request_sd (measured by "
    "`ttft-planner calibrate`) and the trace's size.",
)
@progress_option
@output_option(Shape.OBJECT)
def whatif(
    log_paths,
    source_name,
    database_url,
    fmt,
    mapping,
    start,
    cache_blocks,
    kv,
    specs,
    growth,
    busiest_day,
    tz,
    interaction,
    max_wait_s,
    level,
    show_progress,
    as_json,
) -> None:
    """Predict TTFT p50/p95/p99 (overall and per hour of day) and cost for each candidate deployment.

    Each request of the log queues FIFO for a slot, may wait for a cold start, pays prefill for
    its uncached tokens and adds the RTT; the cheapest candidate meeting the target is marked.
    Each candidate's p50 and p95 come with a prediction interval (--interval-level), wide when its speed varies
    (speed_sd, request_sd in its spec) or the trace is short.
    A dedicated candidate with routing= sends each request to a replica by that policy (as `ttft-planner prefix`
    replays them) and queues it there; each replica keeps its own prefix cache of --prefix-cache-blocks (or
    --kv-from-gpu), read from the log's hash_ids or message text, and reports its hit rate.

    \b
    Engines (engine= in a dedicated spec; defaults from assets/engines.toml):
      slots      N independent slots per replica, FIFO across the pool, each at the full rate (the default)
      vllm       continuous batching: each step carries every running decode, then prompt chunks up to
                 max_num_batched_tokens=8192 (chunked_prefill=1, mixed=1), slots=256 sequences, block_size=16
      sglang     as vllm, but a step with prompt work carries no decodes (mixed=0), block_size=1
      llama.cpp  --parallel slots=4, max_num_batched_tokens=2048 (its -b), mixed=1, prompt_tail=4 (a
                 prompt's last 4 tokens in the next step, as llama-server does for a model it checkpoints)
    A batching step takes step_ms + prompt tokens ÷ prefill + decode tokens × (1000 ÷ decode − step_ms) ms, so a
    lone request decodes at `decode` tokens/s; `ttft-planner calibrate --engine …` measures step_ms. Each candidate
    also gets the sentence a lead forwards: what its p95 waits for (decode-bound, capacity-bound, …) and what one
    replica more does to it.
    """
    candidates = parse_candidates(specs)  # as the What-if page reads its box
    if candidates.problems or not candidates.deployments:
        why = "; ".join(candidates.problems) or "every spec is empty: describe a deployment"
        raise click.BadParameter(why, param_hint="--deployment")
    deployments = candidates.deployments
    if max_wait_s <= 0:
        raise click.BadParameter("must be > 0 s", param_hint="--max-wait-s")
    kv_given: dict[str, int] = {}
    if kv is not None:
        if click.get_current_context().get_parameter_source("cache_blocks") is click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError("give --kv-from-gpu or --prefix-cache-blocks, not both")
        cache_blocks = kv.blocks
        deployments, kv_given = with_kv_blocks(deployments, kv)  # a batching candidate's KV cache: its GPU's
    if bool(log_paths) == bool(source_name):
        raise click.UsageError("give --log FILE… or --source NAME")
    paths = input_paths(log_paths, "--log") if log_paths else []
    bar = progress_bar(show_progress)
    try:
        try:
            if source_name:
                trace = _source_trace(source_name, database_url)
            else:
                trace = read_trace(
                    paths, tz=tz, fmt=fmt, mapping=mapping, start=start, cache_blocks=cache_blocks, progress=bar
                )
            # routing=: a prefix cache per replica, read from the log file, as the What-if page does (issue 45)
            trace = with_prefix_identity(trace, deployments, paths, cache_blocks * MOONCAKE_BLOCK_TOKENS)
        finally:
            if bar is not None:
                bar.close()
        day = None
        if busiest_day:
            trace, day = pick_busiest_day(trace, tz)
        trace = grow(trace, growth)
        result = compare(trace, deployments, interaction=interaction, tz=tz, max_wait_s=max_wait_s, level=level)
    except TraceError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        echo_json(
            {
                **result.to_dict(),
                "log": [str(p) for p in paths] or [f"source:{source_name}"],
                "growth": growth,
                "busiest_day": day,
                "notes": list(trace.notes),
                "kv_capacity": None if kv is None else kv.label(),
                "kv_blocks": kv_given,
            }
        )
        return
    if kv is not None:
        click.echo(f"prefix cache: {kv.label()} = {kv.blocks:,} blocks of {kv.block_tokens} tokens")
        for d in deployments:
            if isinstance(d, Dedicated) and d.name in kv_given:
                click.echo(
                    f"{d.name}: kv_blocks={kv_given[d.name]:,} ({kv.tokens:,} tokens ÷ block_size {d.block_size}): a "
                    "request waits for the blocks of its prompt and output"
                )
    for note in trace.notes:
        click.echo(f"note: {note}")
    it = result.interaction
    scope = f" · busiest day {day}" if day else ""
    click.echo(
        f"{result.n_requests:,} requests{scope} · growth ×{growth:g} · target: {it.label} p95 ≤ "
        f"{it.target_p95_ms:,.0f} ms · hours in {tz}"
    )
    click.echo(
        f"{'candidate':<24} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'worst h p95':>12} {'within':>7} "
        f"{'GPU-h':>8} {'cost $':>10}  verdict"
    )
    for c in result.candidates:
        if not c.ok:
            click.echo(f"{c.name:<24} {'—':>8} {'—':>8} {'—':>8} {'—':>12} {'—':>7} {'—':>8} {'—':>10}  {c.message}")
            continue
        worst = next((h for h in c.hourly if h.hour == c.worst_hour), None)
        worst_txt = f"{present.number(worst.p95.value)} @{worst.hour:02d}h" if worst else "—"
        verdict = "meets target" if c.meets_target else "misses target"
        if c.name == result.cheapest:
            verdict += " · CHEAPEST"
        p = c.overall
        click.echo(
            f"{c.name:<24} {present.number(p['p50'].value):>8} "
            f"{present.too_few(present.number(p['p95'].value), p['p95'].reliable):>8} "
            f"{present.too_few(present.number(p['p99'].value), p['p99'].reliable):>8} {worst_txt:>12} "
            f"{c.share_meeting[it.key]:>7.1%} "
            f"{c.gpu_hours:>8,.1f} {c.cost_usd:>10,.2f}  {verdict}"
        )
    for c in result.candidates:
        if c.ok:
            click.echo(f"{c.name}: " + "; ".join(c.interval_sentence(k) for k in ("p50", "p95")))
            if c.regime:
                click.echo(f"{c.name}: {c.regime}")
        if c.ok and c.prefix_cache:
            click.echo(f"{c.name}: {prefix_cache_sentence(c.prefix_cache)}")
    if result.cheapest is None:
        click.echo(f"No candidate meets the {it.label} target of {it.target_p95_ms:,.0f} ms at p95.")
    click.echo(
        f"Percentiles are nearest-rank; {present.TOO_FEW} marks one from too few requests (p95 needs 20, p99 100)."
    )


COMMANDS = [whatif]
