"""A what-if candidate in words, for the What-if page (and anything else that shows a candidate to a person).

The serving model it assumes (the slot model's pool, or a batching engine's scheduler with its knobs and step costs),
its speed spread, and, for a batching engine whose spec came from a calibration on record, that calibration's
step-model fit with its residuals (planner.store.calibrations, planner.whatif.calibrate_steps.StepFit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.whatif.calibrate_steps import StepFit
from planner.whatif.deployment import Dedicated, Deployment, Serverless, SpecError, parse_deployment
from planner.whatif.engines import profile
from planner.worksheet.provenance import Figure

__all__ = ["engine_words", "figure_text", "fit_words", "has_spread", "serving_model", "speed_spread"]


def figure_text(f: Figure) -> str:
    """A figure's value with its unit, never in scientific notation: '12,000 tokens/s', '40 ms', '22.8 s'."""
    digits = 0 if abs(f.value) >= 100 or float(f.value).is_integer() else 2
    return f"{f.value:,.{digits}f} {f.unit}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _pool(d: Serverless) -> str:
    """A serverless pool in words: '0–4 replicas × 8 slots, started on demand (cold start 20 s), released after
    300 s idle'."""
    if d.min_replicas == d.max_replicas:
        replicas = _plural(d.max_replicas, "replica")
    else:
        replicas = f"{d.min_replicas}–{d.max_replicas} replicas"
    gpus = f" of {_plural(d.gpus_per_replica, 'GPU')}" if d.gpus_per_replica > 1 else ""
    warm = f", {d.min_replicas:,} always warm" if d.min_replicas else ""
    return (
        f"{replicas}{gpus} × {_plural(d.slots_per_replica, 'slot')}, started on demand (cold start "
        f"{figure_text(d.cold_start_s)}), released after {figure_text(d.scale_down_window_s)} idle{warm}"
    )


def engine_words(d: Dedicated) -> str:
    """A batching engine and its knobs: 'vLLM (V1 engine), continuous batching: 256 running sequences a replica,
    8,192 tokens a step, chunked prefill, decodes share a step with prompts, KV cache not limiting; a step 18 ms +
    0.083 ms a prompt token + 2 ms a decode token'."""
    c = d.step_costs
    kv = f"{d.kv_blocks:,} KV blocks of {d.block_size} tokens" if d.kv_blocks else "KV cache not limiting"
    return (
        f"{profile(d.engine).label}, continuous batching: {d.slots_per_replica:,} running sequences a replica, "
        f"{d.max_num_batched_tokens:,} tokens a step, "
        f"{'chunked prefill' if d.chunked_prefill else 'a prompt whole in one step'}, "
        f"{'decodes share a step with prompts' if d.mixed else 'a step with prompt work pauses the decodes'}, {kv}; "
        f"a step {c.step_ms:,.3g} ms + {c.prompt_token_ms:,.3g} ms a prompt token + {c.decode_token_ms:,.3g} ms a "
        "decode token"
    )


def serving_model(d: Deployment) -> str:
    """The serving model a candidate assumes, in words (docs/whatif-model.md has the details)."""
    fifo = "first in first out across the pool, each slot at the full prefill/decode rate"
    if isinstance(d, Serverless):
        return f"{_pool(d)}; {fifo}"
    gpus = f" of {_plural(d.gpus_per_replica, 'GPU')}" if d.gpus_per_replica > 1 else ""
    if d.batching:
        text = f"{_plural(d.replicas, 'replica')}{gpus}, always warm; {engine_words(d)}"
        if d.overflow is not None:
            text += (
                f"; a request finding its replica full (its {d.slots_per_replica:,} sequences taken, or too few KV "
                f"blocks) goes to a serverless overflow of {_pool(d.overflow)} instead"
            )
        return text
    text = f"{_plural(d.replicas, 'replica')}{gpus} × {_plural(d.slots_per_replica, 'slot')}, always warm; {fifo}"
    if d.overflow is not None:
        text += f"; a request finding every slot busy goes to a serverless overflow of {_pool(d.overflow)} instead"
    return text


def _spread_pct(fraction: float) -> str:
    return f"±{fraction * 100:.1f}".removesuffix(".0") + "%"


def speed_spread(d: Deployment) -> str:
    """'speed ±15% run to run, ±5% request to request', or 'fixed speed …' without a spread."""
    parts = []
    if d.speed_sd.value > 0:
        parts.append(f"{_spread_pct(d.speed_sd.value)} run to run")
    if d.request_sd.value > 0:
        parts.append(f"{_spread_pct(d.request_sd.value)} request to request")
    return "speed " + ", ".join(parts) if parts else "fixed speed (no speed_sd or request_sd in its spec)"


def has_spread(d: Deployment) -> bool:
    """True when the candidate's spec carries a speed spread (speed_sd or request_sd)."""
    return d.speed_sd.value > 0 or d.request_sd.value > 0


def _same_costs(a: Dedicated, b: Dedicated) -> bool:
    ca, cb = a.step_costs, b.step_costs
    pairs = (
        (ca.step_ms, cb.step_ms),
        (ca.prompt_token_ms, cb.prompt_token_ms),
        (ca.decode_token_ms, cb.decode_token_ms),
    )
    return a.engine == b.engine and all(abs(x - y) <= 0.01 * max(abs(x), abs(y), 1e-3) for x, y in pairs)


def fit_words(d: Deployment, fits: Sequence[tuple[str, str, int, str, dict[str, Any]]], when: str = "") -> str:
    """The step-model fit of the calibration on record that `d`'s step costs came from (the newest with the same
    engine and costs within 1 %), in words with its residuals; '' for the slot model or without one.

    fits: planner.store.calibrations.recent_fits' rows; `when` formats their time (a caller's time zone)."""
    if not (isinstance(d, Dedicated) and d.batching):
        return ""
    for url, model, _at_ms, spec, fit_json in fits:
        try:
            recorded = parse_deployment(spec)
            fit = StepFit.from_dict(fit_json)
        except (SpecError, ValueError, KeyError, TypeError):
            continue
        if not (isinstance(recorded, Dedicated) and recorded.batching and _same_costs(recorded, d)):
            continue
        steps = ", ".join(
            f"{itl:,.1f} ms with {k} running ({fit.line_residuals[k]:+.0%})" for k, itl in fit.itl_ms_by_running.items()
        )
        text = (
            f"step model fitted by the calibration of {model} at {url}{when}: {fit.step_ms:,.1f} ms + "
            f"{fit.decode_token_ms:,.2f} ms × running decodes; measured steps {steps}"
        )
        if fit.residuals:
            res = ", ".join(f"{r:+.0%}" for r in fit.residuals)
            text += f"; prompts sent under {fit.load} running decodes against the model: {res}"
        return text
    return ""
