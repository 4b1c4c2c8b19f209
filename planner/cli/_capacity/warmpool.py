"""`ttft-planner capacity warm-pool`: Erlang C warm-pool sizing and the keep-warm vs scale-to-zero trade-off."""

from __future__ import annotations

import click

from planner.capacity.errors import CapacityError
from planner.capacity.warmpool import KeepWarm, plan_warm_pool
from planner.cli._capacity.options import usage_error
from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import (
    ARRIVALS_PER_HOUR,
    DURATION_MS,
    DURATION_S,
    GPUS_PER_REPLICA,
    SERVICE_S,
    SLOTS,
    USD_PER_HOUR,
)

__all__ = ["warm_pool"]


@click.command("warm-pool", short_help="Warm pool: Erlang C queue wait, and the fewest slots for a target.")
@click.option(
    "--arrivals-per-hour",
    type=rule_type(ARRIVALS_PER_HOUR),
    required=True,
    help="Arrival rate at the peak hour (requests/h).",
)
@click.option(
    "--service-s",
    type=rule_type(SERVICE_S),
    required=True,
    help="Mean time one request holds a slot (s): TTFT + decode at the target concurrency.",
)
@click.option(
    "--slots",
    type=rule_type(SLOTS),
    default=None,
    help="Request slots in the pool (replicas × slots per replica).",
)
@click.option("--p", "p", type=float, default=0.95, show_default=True, help="Queue-wait percentile.")
@click.option(
    "--target-wait-s",
    type=rule_type(DURATION_S),
    default=None,
    help="Queue-wait target (s) at --p: prints the minimum slots.",
)
@click.option(
    "--slots-per-replica",
    type=rule_type(SLOTS),
    default=1,
    show_default=True,
    help="Concurrent request slots per replica.",
)
@click.option(
    "--cold-start-s",
    type=rule_type(DURATION_S),
    default=None,
    help="Cold start (s): adds the keep-warm vs scale-to-zero trade-off.",
)
@click.option(
    "--warm-p95-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Warm p95 TTFT (ms) for the trade-off.",
)
@click.option(
    "--replica-usd-per-hour",
    type=rule_type(USD_PER_HOUR),
    default=0.0,
    show_default=True,
    help="One replica's cost per hour, for the trade-off.",
)
@click.option(
    "--gpus-per-replica",
    type=rule_type(GPUS_PER_REPLICA),
    default=1,
    show_default=True,
    help="GPUs in one replica: the trade-off's idle GPU-hours count each (the Break-even tab's node size).",
)
@output_option(Shape.OBJECT)
def warm_pool(
    arrivals_per_hour,
    service_s,
    slots,
    p,
    target_wait_s,
    slots_per_replica,
    cold_start_s,
    warm_p95_ms,
    replica_usd_per_hour,
    gpus_per_replica,
    as_json,
) -> None:
    """Warm-pool sizing with Erlang C: P(wait), queue-wait percentile, and the minimum slots for a target.

    P(W_q > t) = C(c, a)·e^(−(cμ−λ)t) with c slots, a = λ·E[S] Erlangs.

    \b
    Examples:
      ttft-planner capacity warm-pool --arrivals-per-hour 30 --service-s 300 --slots 4 --json     # P(wait) ≈ 0.32
      ttft-planner capacity warm-pool --arrivals-per-hour 1200 --service-s 12 --target-wait-s 0.1 --slots-per-replica 8
      ttft-planner capacity warm-pool --arrivals-per-hour 60 --service-s 10 --slots 1 --cold-start-s 45 \\
          --warm-p95-ms 400 --replica-usd-per-hour 3.2
    """
    if not 0 < p < 1:
        raise click.BadParameter(f"must be between 0 and 1, got {p:g}", param_hint="--p")
    if slots is None and target_wait_s is None:
        raise click.UsageError("give --slots (to size a pool) and/or --target-wait-s (to find the minimum slots)")
    keep_warm = (
        KeepWarm(replica_usd_per_hour, warm_p95_ms, cold_start_s * 1000, gpus_per_replica)
        if cold_start_s is not None
        else None
    )
    try:
        plan = plan_warm_pool(
            arrivals_per_hour,
            service_s,
            slots_per_replica=slots_per_replica,
            slots=slots,
            target_wait_s=target_wait_s,
            p=p,
            keep_warm=keep_warm,
        )
    except CapacityError as exc:
        raise usage_error(exc) from None
    qw, need, trade = plan.queue, plan.min_slots, plan.tradeoff
    label = f"p{p * 100:g}"
    out = {
        "arrivals_per_hour": arrivals_per_hour,
        "service_s": service_s,
        "p": p,
        "queue": qw.to_dict() if qw else None,
        "wait_probability": qw.wait_probability if qw else None,
        f"queue_wait_{label}_s": qw.wait_quantile_s if qw else None,
        "target_wait_s": target_wait_s,
        "min_slots": need,
        "min_replicas": plan.min_replicas,
        "gpus_per_replica": gpus_per_replica,
        "tradeoff": trade.to_dict(orient="records") if trade is not None else None,
    }
    if as_json:
        echo_json(out)
        return
    if qw:
        click.echo(qw.message)
    if need is not None:
        click.echo(
            f"minimum for queue-wait {label} ≤ {target_wait_s:g} s: {need} slots "
            f"= {out['min_replicas']} replica(s) of {slots_per_replica} slot(s)"
        )
    if plan.tradeoff_note:
        click.echo(plan.tradeoff_note)
    if trade is not None:
        click.echo(f"keep-warm trade-off (one replica of {gpus_per_replica} GPU(s)):")
        for r in out["tradeoff"]:
            click.echo(
                f"  {r['option']:<28} cold {r['cold_fraction']:6.1%}  warm {r['warm_hours_per_day']:5.1f} h/day  "
                f"idle {r['idle_gpu_hours_per_day']:5.1f} GPU-h/day  "
                f"${r['keep_warm_usd_per_month']:>8,.0f}/month  p95 {r['p95_ttft_ms']:>8,.0f} ms"
            )
