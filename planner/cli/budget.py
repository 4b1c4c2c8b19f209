"""`ttft-planner budget`: the worksheet arithmetic from the command line."""

from __future__ import annotations

import math

import click

from planner.cli._common import echo_json, rule_type
from planner.cli._output import Shape, output_option
from planner.inputs.validate import DURATION_MS, FRACTION, PROMPT_TOKENS_P95, TARGET_MS, TOKENS_PER_S
from planner.worksheet.budget import SEGMENTS, BudgetError, compute, verdict_text

__all__ = ["COMMANDS"]


@click.command()
@click.option(
    "--target-ms",
    type=rule_type(TARGET_MS),
    required=True,
    help="p95 TTFT target (ms), e.g. 200 inline, 500 chat, 1000 agent loop.",
)
@click.option(
    "--queue-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Segment 1: admission/queueing (ms).",
)
@click.option(
    "--cold-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Segment 2: weight loading / cold start in the p95 (ms).",
)
@click.option(
    "--network-ms",
    type=rule_type(DURATION_MS),
    default=0.0,
    show_default=True,
    help="Segment 4: network / first-token delivery (ms).",
)
@click.option(
    "--prefill-tokens-per-s",
    type=rule_type(TOKENS_PER_S),
    default=None,
    help="Prefill rate (uncached prompt tokens per second).",
)
@click.option(
    "--prompt-tokens-p95", type=rule_type(PROMPT_TOKENS_P95), default=None, help="p95 prompt length (tokens)."
)
@click.option(
    "--cache-hit",
    type=rule_type(FRACTION),
    default=0.0,
    show_default=True,
    help="Prefix-cache hit rate 0..1; only uncached tokens cost prefill.",
)
@output_option(Shape.OBJECT)
def budget(
    target_ms, queue_ms, cold_ms, network_ms, prefill_tokens_per_s, prompt_tokens_p95, cache_hit, as_json
) -> None:
    """Prefill budget = target − (queueing + cold start + network), and whether the p95 prompt fits.

    Example: ttft-planner budget --target-ms 500 --queue-ms 60 --cold-ms 0 --network-ms 80
    --prefill-tokens-per-s 12000 --prompt-tokens-p95 4000 --cache-hit 0.5
    """
    if (prefill_tokens_per_s is None) != (prompt_tokens_p95 is None):
        raise click.UsageError("give --prefill-tokens-per-s and --prompt-tokens-p95 together (or neither)")
    if target_ms == 0:
        raise click.BadParameter("must be greater than 0", param_hint="--target-ms")
    if prefill_tokens_per_s is not None and prefill_tokens_per_s <= 0:
        raise click.BadParameter(
            f"must be greater than 0 tokens/s, got {prefill_tokens_per_s:g}", param_hint="--prefill-tokens-per-s"
        )
    try:
        r = compute(target_ms, queue_ms, cold_ms, network_ms, prefill_tokens_per_s, prompt_tokens_p95, cache_hit)
    except BudgetError as exc:
        raise click.UsageError(str(exc)) from None
    level, sentence = verdict_text(r)
    out = {
        "target_ms": r.target_ms,
        "queue_ms": r.queue_ms,
        "cold_ms": r.cold_ms,
        "network_ms": r.network_ms,
        "prefill_budget_ms": r.prefill_budget_ms,
        "verdict": level,
        "verdict_text": sentence,
        "culprit_segment": r.culprit_segment,
        "uncached_prompt_tokens": r.uncached_prompt_tokens,
        "prefill_needed_ms": r.prefill_needed_ms,
        "max_prompt_tokens_p95": r.max_prompt_tokens_p95,
        "prompt_fits": r.prompt_fits,
    }
    if as_json:
        echo_json(out)
        return
    click.echo(f"target              {r.target_ms:>10,.0f} ms")
    for key, label in SEGMENTS.items():
        click.echo(f"− {label:<30} {getattr(r, key):>8,.0f} ms")
    click.echo(f"= prefill budget    {r.prefill_budget_ms:>10,.0f} ms")
    if not math.isnan(r.prefill_needed_ms):
        click.echo(
            f"prefill needed      {r.prefill_needed_ms:>10,.0f} ms  ({r.uncached_prompt_tokens:,.0f} uncached tokens)"
        )
        mx = (
            "unlimited (all cached)"
            if math.isinf(r.max_prompt_tokens_p95)
            else f"{r.max_prompt_tokens_p95:,.0f} tokens"
        )
        click.echo(f"largest p95 prompt  {mx:>10}")
    click.echo(f"verdict: {level.upper()} — {sentence}")


COMMANDS = [budget]
