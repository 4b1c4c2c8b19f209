"""`ttft-planner simulate`: serve the simulated streaming endpoint (the built-in demo target)."""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from planner.cli._common import rule_type
from planner.cli._output import SERVER, no_json
from planner.inputs.validate import PORT_OR_ANY
from planner.simulator import SimulatorConfig, parse_load_curve, serve_forever
from planner.simulator.config import FIELD_RULES

__all__ = ["COMMANDS", "FLAG_FOR_FIELD"]

#: SimulatorConfig field → its flag (a test checks every field has one, documented in --help).
FLAG_FOR_FIELD = {
    "prefill_tokens_per_s": "--prefill-tokens-per-s",
    "decode_tokens_per_s": "--decode-tokens-per-s",
    "slots": "--slots",
    "base_overhead_ms": "--base-overhead-ms",
    "network_delay_ms": "--network-delay-ms",
    "prefix_cache_tokens": "--prefix-cache-tokens",
    "scale_down_window_s": "--scale-down-window-s",
    "cold_start_s": "--cold-start-s",
    "checkpoint_gb": "--checkpoint-gb",
    "load_gb_per_s": "--load-gb-per-s",
    "cold_503": "--cold-503",
    "start_cold": "--start-cold",
    "rate_429": "--rate-429",
    "rate_5xx": "--rate-5xx",
    "retry_after_s": "--retry-after-s",
    "load_curve": "--load-curve",
    "load_service_ms": "--load-service-ms",
    "max_output_tokens": "--max-output-tokens",
    "role_chunk_early": "--role-chunk-early",
    "ping_interval_s": "--ping-interval-s",
    "speedup": "--speedup",
    "models": "--model",
    "api_key": "--require-key-env",
    "seed": "--seed",
    "batching": "--batching",
    "step_ms": "--step-ms",
    "max_batched_tokens": "--max-batched-tokens",
    "speed_drift_sd": "--speed-drift-sd",
    "speed_drift_period_s": "--speed-drift-period-s",
}

_D = SimulatorConfig()
_FIELD_FOR_FLAG = {flag: field for field, flag in FLAG_FOR_FIELD.items()}


def _setting(flag: str, value_type: type, help_text: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The option for one SimulatorConfig setting: its flag names the field, and its default is the config's own."""
    return click.option(
        flag, type=value_type, default=getattr(_D, _FIELD_FOR_FLAG[flag]), show_default=True, help=help_text
    )


@no_json(SERVER)
@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=rule_type(PORT_OR_ANY),
    default=8765,
    show_default=True,
    help="Port to listen on (0 = any free port).",
)
@_setting(
    "--prefill-tokens-per-s",
    float,
    "Prefill speed: uncached prompt tokens per second (prefill time = uncached tokens / rate).",
)
@_setting("--decode-tokens-per-s", float, "Decode speed: output tokens per second after the first.")
@_setting("--slots", int, "Requests served at once; more wait in a first-in-first-out queue.")
@_setting("--base-overhead-ms", float, "Fixed admission/scheduling time before prefill (ms).")
@_setting("--network-delay-ms", float, "Extra delay before the response headers (ms), standing in for distance.")
@_setting(
    "--prefix-cache-tokens",
    int,
    "Tokens of recent prompts kept for prefix reuse (0 = no prefix cache); --cached probes hit it.",
)
@click.option(
    "--scale-down-window-s",
    type=float,
    default=None,
    help="Unload the model after this many idle seconds (default: never); the next request pays a cold start.",
)
@_setting(
    "--cold-start-s",
    float,
    "Cold start (weight loading) in seconds; 0 with --checkpoint-gb and --load-gb-per-s = their ratio.",
)
@click.option("--checkpoint-gb", type=float, default=None, help="Checkpoint size (GB) for a projected cold start.")
@click.option(
    "--load-gb-per-s", type=float, default=None, help="Weight loading rate (GB/s) for a projected cold start."
)
@click.option(
    "--cold-503", is_flag=True, help="While loading, answer 503 with Retry-After instead of holding the request."
)
@click.option("--start-cold", is_flag=True, help="Start unloaded: the first request pays the cold start.")
@_setting("--rate-429", float, "Fraction of requests answered 429 Too Many Requests (with Retry-After).")
@_setting("--rate-5xx", float, "Fraction of requests answered 500.")
@_setting("--retry-after-s", int, "Retry-After (seconds) sent with simulated 429s.")
@click.option(
    "--load-curve",
    default="none",
    show_default=True,
    help="Background load by UTC hour: 'office' (quiet nights, busy working day), 'none', or 24 "
    "comma-separated utilisations 0..0.95. A request waits behind it with probability ρ.",
)
@_setting("--load-service-ms", float, "Mean service time (ms) of background requests; queue wait ≈ this × ρ/(1−ρ).")
@_setting("--max-output-tokens", int, "Cap on generated tokens (the request's max_tokens applies below it).")
@click.option(
    "--role-chunk-early/--role-chunk-late",
    "role_chunk_early",
    default=True,
    show_default=True,
    help="Send the OpenAI role-only chunk (Anthropic message_start) on admission, before prefill, so the first "
    "event is not the first token; --role-chunk-late sends it with the first token.",
)
@_setting("--ping-interval-s", float, "During a long prefill, send an SSE ': ping' comment this often (0 = never).")
@_setting("--speedup", float, "Divide every simulated duration by this (time-compressed replays).")
@click.option(
    "--batching",
    is_flag=True,
    help="Serve as a continuous-batching engine: scheduler steps carry every running decode token and prompt chunks "
    "up to --max-batched-tokens, --slots running sequences at most (what `whatif` replays as engine=vllm).",
)
@_setting("--step-ms", float, "With --batching: fixed cost of one step (ms); a decode token costs 1000/decode − it.")
@_setting("--max-batched-tokens", int, "With --batching: tokens one scheduler step may carry.")
@_setting(
    "--speed-drift-sd",
    float,
    "The engine's speed drifts: compute takes exp(sd × a normal draw) times as long, redrawn every "
    "--speed-drift-period-s simulated seconds (0 = no drift).",
)
@_setting("--speed-drift-period-s", float, "Simulated seconds between redraws of the speed drift.")
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Accepted model name (repeatable); other names get 404. Default: any name is accepted.",
)
@click.option(
    "--require-key-env",
    default="",
    help="Name of an environment variable holding a key that requests must send (else 401). Default: no key.",
)
@click.option("--seed", type=int, default=None, help="Random seed for injected errors and background load.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="uvicorn log level (info shows each request).",
)
def simulate(host, port, load_curve, models, require_key_env, log_level, **fields) -> None:
    """Serve a SIMULATED streaming LLM endpoint (OpenAI chat/completions and Anthropic Messages) for demos and tests.

    Its timing follows the four TTFT segments rather than a fixed sleep: FIFO queueing behind --slots
    (plus optional background load by hour), a cold start after --scale-down-window-s idle, prefill
    proportional to uncached prompt tokens (with a prefix cache), and decode at --decode-tokens-per-s.
    Every response is labelled simulated (header x-simulated: 1, model echoed as simulated/<name>).

    Example: ttft-planner simulate --port 8765 --scale-down-window-s 60 --cold-start-s 8 --rate-429 0.02
    then: ttft-planner probe --base-url http://127.0.0.1:8765/v1 --model sim-model
    """
    try:
        curve = parse_load_curve(load_curve)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--load-curve") from None
    api_key = None
    if require_key_env:
        api_key = os.environ.get(require_key_env)
        if not api_key:
            raise click.BadParameter(
                f"environment variable {require_key_env} is not set", param_hint="--require-key-env"
            )
    try:
        config = SimulatorConfig(load_curve=curve, models=tuple(models) or None, api_key=api_key, **fields)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"simulated endpoint (not a real model) at http://{shown}:{port}/v1  — Ctrl-C stops it", err=True)
    click.echo(f"try: ttft-planner probe --base-url http://{shown}:{port}/v1 --model sim-model -n 5", err=True)
    serve_forever(config, host=host, port=port, log_level=log_level)


# Every numeric setting's option takes SimulatorConfig's own rule, so a value the config would refuse is refused
# while parsing, naming the option (exit 2), before anything listens.
for _param in simulate.params:
    if _param.name in FIELD_RULES:
        _param.type = rule_type(FIELD_RULES[_param.name])

COMMANDS = [simulate]
