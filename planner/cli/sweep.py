"""`ttft-planner sweep`: TTFT under load, step by step, and the knee where p95 leaves the target."""

from __future__ import annotations

import socket

import click

from planner import __version__, present, settings
from planner.cli._common import NumberList, echo_json, fail, open_engine, rule_type, store_option
from planner.cli._measure import api_key_of, run_measuring, target_options
from planner.cli._output import Shape, output_option
from planner.cli._renamed import renamed_option
from planner.inputs.validate import CONCURRENCY, MAX_REQUESTS_PER_STEP, REQUESTS_PER_S, SEED
from planner.probes.ttft import ProbeTarget
from planner.sweep.arrivals import ARRIVAL_KINDS
from planner.sweep.knee import knee_sentence
from planner.sweep.run import SweepResult, SweepSpec, SweepStep, run_sweep

__all__ = ["COMMANDS"]


def _unit(mode: str) -> str:
    return "concurrent" if mode == "concurrency" else "req/s"


def _step_line(mode: str, s: SweepStep) -> str:
    errors = ", ".join(f"{k} {v}" for k, v in s.errors_by_class.items())
    return (
        f"{s.load:>8g} {_unit(mode):<10} n={s.n_ok:<5} TTFT p50 {present.ms(s.ttft_p50_ms):>8} · p95 "
        f"{present.too_few(present.ms(s.ttft_p95_ms), s.p95_reliable):>8} · p99 "
        f"{present.too_few(present.ms(s.ttft_p99_ms), s.p99_reliable):>8} · errors "
        f"{s.error_rate:.1%}{f' ({errors})' if errors else ''} · achieved {s.achieved_rps:,.2f} req/s · "
        f"send lag p95 {s.send_lag_p95_ms:,.1f} ms · client CPU {s.client_cpu_ms_per_request:,.2f} ms/request"
    )


def _knee_line(r: SweepResult) -> str:
    spec = r.spec
    if spec.target_p95_ms is None:
        return "no --target-p95-ms given: no knee"
    return "knee: " + knee_sentence(r.knee_load, r.over_load, spec.target_p95_ms, spec.mode)


@renamed_option("--step-duration", "--step-duration-s")
@renamed_option("--timeout", "--timeout-s")
@click.command()
@target_options
@click.option(
    "--rates",
    type=NumberList(REQUESTS_PER_S),
    default=None,
    help=f"Open loop: arrival rates in requests/s, e.g. 0.5,1,2,4 (one step each; each {REQUESTS_PER_S.describe()}).",
)
@click.option(
    "--concurrency",
    type=NumberList(CONCURRENCY),
    default=None,
    help=f"Closed loop instead: concurrent requests per step, e.g. 1,2,4,8 (each {CONCURRENCY.describe()}).",
)
@click.option(
    "--arrivals",
    type=click.Choice(ARRIVAL_KINDS),
    default="poisson",
    show_default=True,
    help="Open-loop arrival process: Poisson (exponential gaps) or constant spacing.",
)
@click.option(
    "--step-duration-s",
    "step_duration_s",
    type=click.FloatRange(0.1, 86_400),
    default=30.0,
    show_default=True,
    help="Seconds of arrivals per step (the step then waits for its requests to finish).",
)
@click.option(
    "--target-p95-ms",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="p95 TTFT target: the knee is the last load within it; the sweep stops after the first step over it.",
)
@click.option("--all-steps", is_flag=True, help="Run every step even after p95 has left the target.")
@click.option(
    "--prompt-tokens",
    type=click.IntRange(1, 2_000_000),
    default=1000,
    show_default=True,
    help="Prompt length of every request (nonce first, never cached).",
)
@click.option(
    "--max-tokens", type=click.IntRange(1, 100_000), default=16, show_default=True, help="max_tokens of each request."
)
@click.option(
    "--timeout-s",
    "timeout_s",
    type=click.FloatRange(0.1, 3600),
    default=60.0,
    show_default=True,
    help="Seconds per request before it counts as a timeout error.",
)
@click.option(
    "--seed",
    type=rule_type(SEED),
    default=0,
    show_default=True,
    help="Seed of the Poisson schedules (same seed, same arrivals).",
)
@output_option(Shape.STREAM, "step")
@click.option("--store", is_flag=True, help="Also store the run and its steps (Sweep page).")
@click.option(
    "--vantage",
    default=None,
    envvar=settings.VANTAGE.name,
    show_envvar=True,
    help="Label of the machine measuring, stored with --store (default: host name).",
)
@store_option
def sweep(
    base_url,
    model,
    protocol,
    api_key_env,
    rates,
    concurrency,
    arrivals,
    step_duration_s,
    target_p95_ms,
    all_steps,
    prompt_tokens,
    max_tokens,
    timeout_s,
    seed,
    as_json,
    store,
    vantage,
    database_url,
) -> None:
    """TTFT p50/p95/p99 of an endpoint at a list of loads, and the knee where p95 leaves a target.

    Open loop (--rates): requests leave at Poisson (or constant) arrival times whatever the endpoint
    does, as real traffic does. Closed loop (--concurrency): N requests in flight at all times.
    Every request is a fresh connection with a nonce-first prompt, timed like `probe`; per step:
    n, percentiles (nearest rank; * = fewer samples than the percentile needs), error rate,
    achieved throughput, how late the client sent, and this process's CPU per request.

    Example: ttft-planner sweep --base-url http://127.0.0.1:8765/v1 --model m --rates 1,2,4,8 --target-p95-ms 800
    """
    if (rates is None) == (concurrency is None):
        raise click.UsageError("give exactly one of --rates (open loop) or --concurrency (closed loop)")
    mode = "concurrency" if concurrency is not None else arrivals
    loads = tuple(float(v) for v in (concurrency if concurrency is not None else rates))
    if rates is not None and max(loads) * step_duration_s > MAX_REQUESTS_PER_STEP:
        raise click.BadParameter(
            f"{max(loads):g} requests/s for {step_duration_s:g} s is {max(loads) * step_duration_s:,.0f} requests "
            f"in one step; at most {MAX_REQUESTS_PER_STEP:,} (lower --rates or --step-duration-s)",
            param_hint="--rates",
        )
    target = ProbeTarget(
        base_url=base_url,
        model=model,
        protocol=protocol,
        api_key_env=api_key_env,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
    )
    api_key_of(target)  # a missing key is a usage error now, not a failed request in every step
    spec = SweepSpec(
        target=target,
        mode=mode,
        loads=loads,
        step_duration_s=step_duration_s,
        target_p95_ms=target_p95_ms,
        seed=seed,
        stop_after_knee=not all_steps,
    )
    engine = open_engine(database_url) if store else None

    def on_step(s: SweepStep) -> None:
        if as_json:
            echo_json({"type": "step", **s.to_dict()})
        else:
            click.echo(_step_line(mode, s))

    try:
        result = run_measuring(run_sweep(spec, on_step=on_step))
    except KeyboardInterrupt:
        fail("interrupted: nothing stored")
    stored = None
    if engine is not None:
        from planner.store.sweeps import store_sweep

        try:
            stored = store_sweep(engine, result, vantage=vantage or socket.gethostname(), tool_version=__version__)
        except Exception as exc:  # noqa: BLE001 - the figures were printed; say why they were not stored
            fail(f"the sweep ran but was not stored: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    if as_json:
        echo_json(
            {
                "type": "summary",
                "mode": mode,
                "knee_load": result.knee_load,
                "over_load": result.over_load,
                "target_p95_ms": target_p95_ms,
                "client_cpu_ms_per_request": result.client_cpu_ms_per_request,
                "stored_run_id": stored,
            }
        )
        return
    click.echo(_knee_line(result))
    click.echo(f"client CPU: {result.client_cpu_ms_per_request:,.2f} ms per request (this process)")
    if stored is not None:
        click.echo(f"stored as sweep run {stored}")


COMMANDS = [sweep]
