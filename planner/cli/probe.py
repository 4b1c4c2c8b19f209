"""`ttft-planner probe`: streaming TTFT samples from the command line, with a summary and a prefill fit."""

from __future__ import annotations

import asyncio
import gc
import time
from collections import Counter

import click
import httpx

from planner import present, settings
from planner.cli._common import NumberList, echo_json, fail, open_engine, store_option
from planner.cli._measure import api_key_of, run_measuring, target_options
from planner.cli._output import Shape, output_option
from planner.cli._renamed import renamed_option
from planner.inputs.validate import PROMPT_TOKENS
from planner.percentiles import summarize
from planner.probes.errors import ERROR_CLASSES
from planner.probes.fit import fit_points, fit_prefill
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.probes.warmup import warm_up

__all__ = ["COMMANDS", "summary_of"]


def summary_of(samples: list[TtftSample]) -> dict:
    """n, failures by class, and nearest-rank p50/p95/max of ttft_ms (plus headers/first event/content p50)."""
    ok = [s for s in samples if s.ok]
    ttft = summarize([s.ttft_ms for s in ok], ps=(0.5, 0.95))
    out = {
        "n": len(ok),
        "failures": len(samples) - len(ok),
        "failures_by_class": dict(Counter(s.error_class for s in samples if not s.ok)),
        "ttft_p50_ms": ttft["p50"].value,
        "ttft_p95_ms": ttft["p95"].value,
        "ttft_max_ms": ttft["max"].value,
        "ttft_p95_reliable": ttft["p95"].reliable,
        "buffered": sum(1 for s in ok if s.buffered),
        # what the server counted (usage.prompt_tokens): the requested length plus the template and nonce
        "server_prompt_tokens_p50": summarize([s.prompt_tokens for s in ok], ps=(0.5,))["p50"].value,
    }
    for field in ("headers_ms", "first_event_ms", "first_content_ms", "total_ms"):
        out[f"{field[:-3]}_p50_ms"] = summarize([getattr(s, field) for s in ok], ps=(0.5,))["p50"].value
    return out


def _line(i: int, s: TtftSample) -> str:
    counted = f" (server {s.prompt_tokens})" if s.prompt_tokens is not None else ""
    head = f"#{i:<3} {s.prompt_tokens_requested:>6} tok{counted}  "
    if not s.ok:
        return (
            head
            + f"FAILED {s.error_class}: {s.error_detail}"
            + (f"  (attempts {s.attempts})" if s.attempts > 1 else "")
        )
    extra = []
    if s.attempts > 1:
        extra.append(f"attempts {s.attempts}, waited {s.retry_wait_ms / 1000:.1f} s")
    if s.buffered:
        extra.append("BUFFERED stream")
    if s.conn_reused:
        extra.append("reused connection")
    if s.cached_tokens:
        extra.append(f"{s.cached_tokens} cached")
    return (
        head + f"ttft {present.number(s.ttft_ms, 1):>8} ms  (dns {present.number(s.dns_ms, 1)}, "
        f"connect {present.number(s.connect_ms, 1)}, tls {present.number(s.tls_ms, 1)}, "
        f"headers {present.number(s.headers_ms, 1)}, first event {present.number(s.first_event_ms, 1)}, "
        f"content {present.number(s.first_content_ms, 1)}, end {present.number(s.total_ms, 1)})  {s.output_tokens} out"
        + (f"  [{'; '.join(extra)}]" if extra else "")
    )


async def _run(
    targets: list[ProbeTarget], n: int, interval_s: float, api_key: str | None, max_attempts: int, on_sample
) -> None:
    keep_alive = targets[0].keep_alive
    # Pay the first request's lazy imports and thread-pool start on a local canned stream, not in sample #1.
    await warm_up(targets[0].protocol, keep_alive=keep_alive)
    # Park the warm-up's objects outside the collector too (run_measuring parked start-up's): a full GC pass
    # over them is a multi-ms pause that would otherwise land inside some samples
    # (bench/bench_probe_accuracy.py: p99 2.3 → 0.9 ms).
    gc.collect()
    gc.freeze()
    client = None
    if keep_alive:
        client = httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(targets[0].timeout_s), http2=False)
    try:
        i = 0
        for _ in range(n):
            for target in targets:  # interleave lengths so drift hits every length alike
                t_next = time.monotonic() + interval_s
                sample = await probe_once(target, client=client, api_key=api_key, max_attempts=max_attempts)
                i += 1
                on_sample(i, sample)
                if i < n * len(targets):
                    await asyncio.sleep(max(0.0, t_next - time.monotonic()))
    finally:
        if client is not None:
            await client.aclose()


@renamed_option("--interval", "--interval-s")
@renamed_option("--timeout", "--timeout-s")
@click.command()
@target_options
@click.option(
    "-n",
    "--samples",
    "n",
    type=click.IntRange(1, 100_000),
    default=20,
    show_default=True,
    help="Samples per prompt length.",
)
@click.option(
    "--interval-s",
    "interval_s",
    type=click.FloatRange(0, 86_400),
    default=1.0,
    show_default=True,
    help="Seconds from one sample's start to the next.",
)
@click.option(
    "--prompt-tokens",
    "prompt_tokens",
    type=NumberList(PROMPT_TOKENS, keep_order=True),
    default="1000",
    show_default=True,
    help="Prompt length(s) in tokens (words of a 1-token vocabulary, nonce first). Two or more, e.g. "
    "256,4096, fit TTFT = a + b·tokens and report b, the measured prefill cost (on the server's "
    "own token count when it reports usage).",
)
@click.option(
    "--max-tokens", type=click.IntRange(1, 100_000), default=64, show_default=True, help="max_tokens of each request."
)
@click.option(
    "--timeout-s",
    "timeout_s",
    type=click.FloatRange(0.1, 3600),
    default=30.0,
    show_default=True,
    help="Seconds per attempt before a connect/read timeout (a stall mid-stream counts).",
)
@click.option(
    "--max-attempts",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Attempts per sample on 429/5xx (Retry-After honoured, capped at 30 s).",
)
@click.option(
    "--cached", is_flag=True, help="Repeat one identical prompt (no nonce): deliberately measures the prefix cache."
)
@click.option(
    "--keep-alive", is_flag=True, help="Reuse one pooled connection (default: a fresh connection per sample)."
)
@output_option(Shape.STREAM, "sample")
@click.option("--store", is_flag=True, help="Also write the samples to the database as a manual run (Probes page).")
@click.option(
    "--vantage",
    default=None,
    envvar=settings.VANTAGE.name,
    show_envvar=True,
    help="Label of the machine measuring, stored with --store (default: none — the default vantage, as the worker's).",
)
@store_option
def probe(
    base_url,
    model,
    protocol,
    api_key_env,
    n,
    interval_s,
    prompt_tokens,
    max_tokens,
    timeout_s,
    max_attempts,
    cached,
    keep_alive,
    as_json,
    store,
    vantage,
    database_url,
) -> None:
    """Measure TTFT of a streaming endpoint: per sample and as p50 / p95 / max with n and failures.

    Each sample times DNS, connect, TLS, response headers, first SSE event, first token (content,
    reasoning or tool call), first visible content and end of stream, from perf_counter_ns just
    before sending. Percentiles are nearest-rank over successful samples only; failures are
    counted by class.

    Example: ttft-planner probe --base-url http://127.0.0.1:8765/v1 --model sim-model -n 20 --prompt-tokens 256,4096
    """
    lengths = [int(n) for n in prompt_tokens]
    targets = [
        ProbeTarget(
            base_url=base_url,
            model=model,
            protocol=protocol,
            api_key_env=api_key_env,
            prompt_tokens=L,
            max_tokens=max_tokens,
            timeout_s=timeout_s,
            cached=cached,
            keep_alive=keep_alive,
        )
        for L in lengths
    ]
    api_key = api_key_of(targets[0])
    engine = open_engine(database_url) if store else None
    samples: list[TtftSample] = []

    def on_sample(i: int, s: TtftSample) -> None:
        samples.append(s)
        if as_json:
            echo_json({"type": "sample", "index": i, **s.to_dict()})
        else:
            click.echo(_line(i, s))

    interrupted = False
    try:
        run_measuring(_run(targets, n, interval_s, api_key, max_attempts, on_sample))
    except KeyboardInterrupt:
        interrupted = True
    stored = _store(engine, samples, base_url, model, protocol, api_key_env, vantage) if engine is not None else None
    _report(samples, lengths, as_json, stored, interrupted)
    if not any(s.ok for s in samples):
        sys_exit = 1
        if not as_json:
            described = {str(c): d for c, d in ERROR_CLASSES.items()}
            classes = sorted({str(s.error_class) for s in samples})
            click.echo(
                "no sample succeeded; classes: " + ", ".join(f"{k} ({described.get(k, '')})" for k in classes), err=True
            )
        raise SystemExit(sys_exit)


def _store(
    engine, samples: list[TtftSample], base_url: str, model: str, protocol: str, api_key_env: str, vantage: str | None
) -> int:
    from planner.endpoints.samples import SampleKind
    from planner.store.endpoints import get_or_create_manual_endpoint
    from planner.store.probes import insert_samples, sample_row

    try:
        ep = get_or_create_manual_endpoint(engine, base_url, model, protocol, api_key_env=api_key_env)
        assert ep.id is not None  # a stored endpoint has an id
        vantage = vantage or ""  # the one default vantage (planner.probes.rtt.default_vantage), as the worker's
        rows, last, prev = [], 0, None
        for s in samples:
            slot = max(s.started_at_ms, last + 1)  # the slot key must be unique within a run
            last = slot
            # idle gap: from the end of the previous sample to this one's start (None for the first)
            gap: float | None = (
                None if prev is None else max(0.0, s.started_at_ms - (prev.started_at_ms + (prev.total_ms or 0.0)))
            )
            prev = s
            rows.append(sample_row(s, ep.id, vantage, SampleKind.MANUAL, slot, idle_gap_ms=gap))
        return insert_samples(engine, rows)
    except Exception as exc:  # noqa: BLE001 - the measurements were printed; say why they were not stored
        fail(f"samples were measured but not stored: {type(exc).__name__}: {str(exc).splitlines()[0]}")


def _report(
    samples: list[TtftSample], lengths: list[int], as_json: bool, stored: int | None, interrupted: bool
) -> None:
    per_length = {L: summary_of([s for s in samples if s.prompt_tokens_requested == L]) for L in lengths}
    fit = None
    ok_points, basis = fit_points(samples)
    if len(lengths) >= 2:
        try:
            fit = fit_prefill(ok_points)
        except ValueError:
            fit = None
    if as_json:
        out = {
            "type": "summary",
            **summary_of(samples),
            "by_prompt_tokens": {str(k): v for k, v in per_length.items()},
            "interrupted": interrupted,
            "stored": stored,
        }
        if fit is not None:
            out["prefill_fit"] = {
                "intercept_ms": fit.intercept_ms,
                "ms_per_1k_tokens": fit.ms_per_1k_tokens,
                "prefill_tokens_per_s": fit.prefill_tokens_per_s,
                "r2": fit.r2,
                "slope_se_ms_per_1k_tokens": None
                if fit.slope_se_ms_per_token is None
                else fit.slope_se_ms_per_token * 1000,
                "n": fit.n,
                "quality": fit.quality,
                "tokens": basis,
                "lengths": list(fit.lengths),
            }
        echo_json(out)
        return
    click.echo("")
    for L, s in per_length.items():
        fails = ", ".join(f"{k} {v}" for k, v in s["failures_by_class"].items())
        click.echo(
            f"{L:>6} prompt tokens: TTFT p50 {present.ms(s['ttft_p50_ms'], 1)} · "
            f"p95 {present.too_few(present.ms(s['ttft_p95_ms'], 1), s['ttft_p95_reliable'])} · "
            f"max {present.ms(s['ttft_max_ms'], 1)} · n={s['n']} · failures {s['failures']}"
            + (f" ({fails})" if fails else "")
        )
        click.echo(
            f"{'':>6} first event p50 {present.ms(s['first_event_p50_ms'], 1)} · "
            f"headers p50 {present.ms(s['headers_p50_ms'], 1)}"
            + (
                f" · {s['buffered']} buffered stream(s): TTFT ≈ total, a proxy may be holding the stream"
                if s["buffered"]
                else ""
            )
        )
        if s["server_prompt_tokens_p50"] is not None:
            click.echo(
                f"{'':>6} the server counted {s['server_prompt_tokens_p50']:,.0f} "
                f"prompt tokens (p50) for {L:,} requested"
            )
    if fit is not None:
        click.echo(fit.describe() + f" ({basis} tokens)")
    elif len(lengths) >= 2:
        click.echo("prefill fit: needs successful samples at two or more lengths")
    if stored is not None:
        click.echo(f"stored {stored} sample(s) as a manual run")
    if interrupted:
        click.echo("interrupted: the summary covers the samples taken so far")


COMMANDS = [probe]
