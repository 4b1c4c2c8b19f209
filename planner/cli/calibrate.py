"""`ttft-planner calibrate`: measure an endpoint's prefill, decode and parallelism and print a what-if spec."""

from __future__ import annotations

import time

import click

from planner.cli._common import NumberList, echo_json, open_engine, store_option
from planner.cli._measure import api_key_of, run_measuring, target_options
from planner.cli._output import Shape, output_option
from planner.cli._renamed import renamed_option
from planner.inputs.validate import CONCURRENCY, PROMPT_TOKENS
from planner.probes.ttft import ProbeTarget
from planner.whatif.calibrate import DISAGREE_FRACTION
from planner.whatif.calibrate import calibrate as run_calibration
from planner.whatif.drift import DRIFT_PRIOR_SD, next_run_spread
from planner.whatif.engines import ENGINES

__all__ = ["COMMANDS"]


@renamed_option("--step-duration", "--step-duration-s")
@renamed_option("--timeout", "--timeout-s")
@click.command()
@target_options
@click.option(
    "--prompt-tokens",
    "lengths",
    type=NumberList(PROMPT_TOKENS, keep_order=True),
    default="128,1024",
    show_default=True,
    help="Prompt lengths of the prefill fit (two or more; the first is also the decode and parallelism prompt).",
)
@click.option(
    "-n",
    "--samples",
    "n",
    type=click.IntRange(2, 1000),
    default=3,
    show_default=True,
    help="Samples per prompt length in each round.",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Prefill rounds spread over the calibration (the other stages run between them); their spread is the "
    "engine's speed spread (speed_sd), which widens the what-if's prediction interval. 1 = no spread measured.",
)
@click.option(
    "--decode-tokens",
    type=click.IntRange(2, 100_000),
    default=64,
    show_default=True,
    help="Output tokens of the decode measurement.",
)
@click.option(
    "--concurrency",
    type=NumberList(CONCURRENCY),
    default="1,2,4",
    show_default=True,
    help="Closed-loop steps of the parallelism measurement.",
)
@click.option(
    "--step-duration-s",
    "step_duration_s",
    type=click.FloatRange(0.5, 600),
    default=20.0,
    show_default=True,
    help="Seconds per concurrency step.",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="slots",
    show_default=True,
    help="The serving engine: 'slots' (independent slots, FIFO) or a continuous-batching engine, whose step costs "
    "(fixed per step, per decode token) are then measured with concurrent decodes and checked with prompts sent "
    "while decodes run; the spec gets engine= and step_ms=.",
)
@click.option(
    "--slots",
    type=click.IntRange(1, 4096),
    default=None,
    help="A batching engine's most running sequences (vLLM --max-num-seqs, llama.cpp --parallel); default: the "
    "engine profile's.",
)
@click.option(
    "--drift-prior",
    type=click.FloatRange(0, 2),
    default=DRIFT_PRIOR_SD,
    show_default=True,
    help="Speed drift beyond the calibration window (log-sd) added to the spec's speed_sd until the record holds 3 "
    "calibrations of this endpoint over an hour, or probe slopes on two days.",
)
@click.option(
    "--no-record",
    is_flag=True,
    help="Neither keep this calibration in the store nor pool the endpoint's record: speed_sd is this "
    "calibration's rounds plus --drift-prior.",
)
@store_option
@click.option("--name", default="calibrated", show_default=True, help="Name of the printed deployment.")
@click.option(
    "--timeout-s",
    "timeout_s",
    type=click.FloatRange(0.1, 3600),
    default=120.0,
    show_default=True,
    help="Seconds per request before it counts as a timeout.",
)
@output_option(Shape.OBJECT)
def calibrate(
    base_url,
    model,
    protocol,
    api_key_env,
    lengths,
    n,
    rounds,
    decode_tokens,
    concurrency,
    step_duration_s,
    engine,
    slots,
    drift_prior,
    no_record,
    database_url,
    name,
    timeout_s,
    as_json,
) -> None:
    """Measure prefill (on the server's counted tokens), decode and effective parallelism; print a `dedicated:` spec.

    Feed the spec to `ttft-planner whatif --deployment …` (one replica; the fit's intercept is its rtt, the tokens
    the server counts beyond the requested ones — chat template, nonce — its overhead_tokens; each request's
    scatter its request_sd). The prefill rounds are spread over the whole calibration; their rates are kept in
    the store with every earlier calibration of the same endpoint, and the spec's speed_sd pools them all (and the
    endpoint's probe history), plus --drift-prior until that record spans an hour: the what-if's interval then
    carries the drift between calibration and use. --engine vllm|sglang|llama.cpp also measures the step model.
    A slowdown near the concurrency means the slots share one compute budget (llama.cpp's parallel slots
    on one core do), which the FIFO-slot model does not represent: use slots=1 there.

    Example: ttft-planner calibrate --base-url http://127.0.0.1:8089/v1 --model gemma --step-duration-s 30
    """
    target = ProbeTarget(
        base_url=base_url, model=model, protocol=protocol, api_key_env=api_key_env, timeout_s=timeout_s
    )
    api_key_of(target)  # a missing key is a usage error now, not a failed calibration later
    if len(lengths) < 2:
        raise click.BadParameter(
            "the prefill fit needs two or more prompt lengths, e.g. 128,1024", param_hint="--prompt-tokens"
        )
    try:
        cal = run_measuring(
            run_calibration(
                target,
                lengths=tuple(int(n) for n in lengths),
                n=n,
                rounds=rounds,
                decode_tokens=decode_tokens,
                concurrencies=tuple(int(c) for c in concurrency),
                step_duration_s=step_duration_s,
                engine=engine,
                slots=slots,
            )
        )
        spec = cal.spec(name)  # no spec from a fit without a positive slope: one line, exit 1, no traceback
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    now_ms = int(time.time() * 1000)
    if no_record:
        spread = next_run_spread([(now_ms, cal.round_prefill_tokens_per_s)], prior_sd=drift_prior)
        spec = cal.spec(name, speed_sd=spread.speed_sd)
    else:
        from planner.whatif.on_record import spread_on_record

        spread, spec = spread_on_record(
            open_engine(database_url), base_url, model, cal, now_ms, prior_sd=drift_prior, name=name
        )
    if as_json:
        echo_json(
            {
                "spec": spec,
                "prefill_tokens_per_s": cal.prefill.prefill_tokens_per_s,
                "token_basis": cal.token_basis,
                "intercept_ms": cal.prefill.intercept_ms,
                "r2": cal.prefill.r2,
                "decode_tokens_per_s": cal.decode_tokens_per_s,
                "throughput_by_concurrency": cal.throughput_by_concurrency,
                "latency_ms_by_concurrency": cal.latency_ms_by_concurrency,
                "effective_slots": cal.effective_slots,
                "slowdown_at_max": cal.slowdown_at_max,
                "prompt_overhead_tokens": cal.prompt_overhead_tokens,
                "fixed_hold_ms": cal.fixed_hold_ms,
                "round_prefill_tokens_per_s": list(cal.round_prefill_tokens_per_s),
                "speed_sd": spread.speed_sd,
                "rounds_speed_sd": cal.speed_sd,
                "speed_spread": {
                    "measured_sd": spread.measured_sd,
                    "prior_sd": spread.prior_sd,
                    "calibrations": spread.calibrations,
                    "span_s": spread.span_s,
                    "probe_days": spread.probe_days,
                    "text": spread.describe(),
                },
                "round_at_s": list(cal.round_at_s),
                "hold_ms_by_tokens": cal.hold_ms_by_tokens,
                "engine": cal.engine,
                "step": None
                if cal.step is None
                else {
                    "step_ms": cal.step.step_ms,
                    "decode_token_ms": cal.step.decode_token_ms,
                    "itl_ms_by_running": cal.step.itl_ms_by_running,
                    "load": cal.step.load,
                    "residuals": list(cal.step.residuals),
                },
                "request_sd": cal.request_sd,
                "rounds_disagree": cal.rounds_disagree,
                "serving_model": cal.serving_model,
                "wall_s": cal.wall_s,
            }
        )
        return
    click.echo(cal.prefill.describe() + f" ({cal.token_basis} tokens)")
    click.echo(
        f"decode {cal.decode_tokens_per_s:,.1f} tokens/s; the server prefills {cal.prompt_overhead_tokens:,.0f} "
        "tokens more than requested per prompt (template, nonce: overhead_tokens); "
        f"{cal.fixed_hold_ms:,.0f} ms of slot time per request at saturation beyond prefill"
    )
    click.echo(
        "throughput by concurrency: "
        + ", ".join(f"{c}: {r:,.2f} req/s" for c, r in cal.throughput_by_concurrency.items())
        + f"; effective slots {cal.effective_slots}; one request takes {cal.slowdown_at_max:.2f}× as long at "
        f"concurrency {max(cal.latency_ms_by_concurrency)} as alone"
    )
    click.echo(f"serving model: {cal.serving_model}")
    click.echo(
        "prefill by round: "
        + ", ".join(f"{r:,.0f}" for r in cal.round_prefill_tokens_per_s)
        + " tokens/s, at "
        + ", ".join(f"{t:,.0f}" for t in cal.round_at_s)
        + f" s of the calibration; request to request ±{cal.request_sd:.0%} (request_sd)"
    )
    click.echo(spread.describe())
    if cal.rounds_disagree is not None:
        click.echo(
            f"warning: the rounds disagree by {cal.rounds_disagree:.0%} (more than {DISAGREE_FRACTION:.0%}): the "
            "engine's speed moved during calibration, so predictions from this spec carry a wide interval; "
            "calibrate again on a quieter machine or with more rounds to narrow it"
        )
    click.echo(f"measured in {cal.wall_s:,.0f} s")
    click.echo(spec)


COMMANDS = [calibrate]
