"""`ttft-planner capacity weights`: checkpoint size and weight-load time from published loader rows or your cold
reading."""

from __future__ import annotations

import click

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.weights import (
    PROJECTION_LABEL,
    PROJECTION_PARAMS_B,
    checkpoint_gb,
    load_time_s,
    projection_table,
    rate_from_cold_reading,
    rate_from_row,
)
from planner.cli._capacity.options import DTYPES, by_key, usage_error
from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import CHECKPOINT_GB, DURATION_MS, DURATION_S, MODEL_PARAMS_B

__all__ = ["weights"]


@click.command(short_help="Weight loading: checkpoint size and load time (segment 2 of a cold start).")
@click.option(
    "--params-b",
    type=rule_type(MODEL_PARAMS_B),
    multiple=True,
    help="Parameters in billions (repeatable). Default: the 8B–1T projection.",
)
@click.option(
    "--dtype",
    type=DTYPES,
    default="bf16",
    show_default=True,
    help="Weight format: fp8/int8 1 byte, bf16/fp16 2, int4/fp4 0.5.",
)
@click.option(
    "--load-row",
    "load_rows",
    multiple=True,
    help="Published loader row key (repeatable; see --list-rows). Default: all rows.",
)
@click.option("--cold-ms", type=rule_type(DURATION_MS), help="Your cold reading (ms), to derive your own load rate.")
@click.option(
    "--warm-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Warm TTFT right after the cold reading (ms).",
)
@click.option(
    "--cold-checkpoint-gb",
    type=rule_type(CHECKPOINT_GB),
    help="Checkpoint size (GB) of the endpoint behind --cold-ms.",
)
@click.option(
    "--engine-startup-s",
    type=rule_type(DURATION_S),
    default=0.0,
    show_default=True,
    help="Engine start-up on top of the transfer (s); the published rows show 16–21 s for vLLM.",
)
@click.option("--list-rows", is_flag=True, help="List the published loader rows and exit.")
@output_option(Shape.OBJECT)
def weights(
    params_b, dtype, load_rows, cold_ms, warm_ms, cold_checkpoint_gb, engine_startup_s, list_rows, as_json
) -> None:
    """Weight-load projection (segment 2 for scale-to-zero): checkpoint GB = params × bytes/param; time = GB ÷ rate.

    The rate comes from a published row (Run:ai Model Streamer table, Llama 3 8B, ~15 GB) or from your own
    cold reading. A constant-rate, order-of-magnitude estimate: real stacks differ by storage tier and concurrency.

    \b
    Examples:
      ttft-planner capacity weights --params-b 70 --dtype fp8 --load-row s3-streamer-c32 --load-row gp3-safetensors
      ttft-planner capacity weights --params-b 70 --dtype fp8 --cold-ms 95000 --warm-ms 400 \\
          --cold-checkpoint-gb 16 --engine-startup-s 20 --json
      ttft-planner capacity weights --list-rows
    """
    rows = P.loader_rows()
    if list_rows:
        data = [
            {
                "key": r.key,
                "label": r.label,
                "gb_per_s": r.gb_per_s,
                "ready_s": r.ready_s,
                "source": r.source,
                "as_of": r.as_of,
            }
            for r in rows
        ]
        if as_json:
            echo_json({"rows": data})
        else:
            for d in data:
                click.echo(f"{d['key']:<20} {d['label']}  ({d['gb_per_s']:.2f} GB/s)")
        return
    try:
        rates = [rate_from_row(by_key(rows, k, "loader row", "--load-row")) for k in load_rows]
        if cold_ms is not None:
            if not cold_checkpoint_gb:
                raise click.UsageError(
                    "--cold-ms needs --cold-checkpoint-gb (the size of the checkpoint that cold reading loaded)"
                )
            rates.append(rate_from_cold_reading(cold_checkpoint_gb, cold_ms, warm_ms, engine_startup_s))
        if not rates:
            rates = [rate_from_row(r) for r in rows]
        table = projection_table(rates, dtype, params_b or PROJECTION_PARAMS_B, engine_startup_s)
    except CapacityError as exc:
        raise usage_error(exc) from None
    out = {
        "dtype": dtype,
        "engine_startup_s": engine_startup_s,
        "label": PROJECTION_LABEL,
        "rates": [r.to_dict() for r in rates],
        "projection": [
            {
                "params_b": p,
                "checkpoint_gb": checkpoint_gb(p, dtype),
                "load_s": {r.name: load_time_s(checkpoint_gb(p, dtype), r, engine_startup_s) for r in rates},
            }
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
