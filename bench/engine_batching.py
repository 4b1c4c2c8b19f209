"""bench_engine_whatif.py's continuous-batching run (`--parallel N`, N > 1): llama.cpp's server with N slots batching
decode tokens and new prompts' tokens in one step, against the what-if's step model (engine=llama.cpp) and the slot
model, issue 45.

For each mix (decode-heavy: short prompts, long outputs, so new prompts share steps with running decodes;
prompt-heavy: long prompts, a few output tokens) and each busy share ρ (0.3 / 0.6 / 0.85 of the engine's time, from
the step replay: planner.whatif.levels.at_busy_fraction), a cell:

1. calibrates the server as a user would (`calibrate --engine llama.cpp --slots N`, three rounds), its speed spread
   pooled with this run's earlier calibrations in a store of the bench's own (planner.whatif.on_record: the path
   `calibrate` → `whatif` takes);
2. predicts the level with the step model (its 80 % interval) and with the slot model from the same calibration; the
   step model takes llama.cpp's profile, prompt_tail=4 included (Gemma 3 has sliding-window attention, so
   llama-server runs each prompt's last 4 tokens in the step after the rest: planner.whatif.steps);
3. sends every request at its arrival time (a nonce-first prompt, `ignore_eos`, so each runs its full output),
   reading the client's TTFT and the server's own `timings` (prompt_ms: from the slot's start to the prompt's last
   batch, which is when the first token comes);
4. compares: the measured p50/p95 inside the step model's interval; each request's server prompt time against the
   replay's prefill segment (first step → first token), for the step model and the slot model.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import numpy as np

from planner.percentiles import nearest_rank_index
from planner.probes.prompts import build_prompt, new_nonce
from planner.probes.ttft import ProbeTarget
from planner.store import open_store
from planner.whatif.calibrate import calibrate
from planner.whatif.deployment import parse_deployment
from planner.whatif.interval import predict
from planner.whatif.levels import at_busy_fraction
from planner.whatif.on_record import spread_on_record
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

__all__ = ["MIXES", "Result", "mix_trace", "run_batching"]

MIXES = {
    # (prompt tokens low, high), (output tokens low, high)
    "decode": ((16, 64), (24, 96)),
    "prompt": ((150, 450), (1, 4)),
}


@dataclass(frozen=True)
class Result:
    """One request as the client and the server saw it: TTFT (ms, client), the server's prompt time (ms) and
    counts, or the error."""

    ok: bool
    ttft_ms: float | None = None
    prompt_ms: float | None = None
    prompt_n: int | None = None
    cache_n: int | None = None
    predicted_n: int | None = None
    error: str = ""


def mix_trace(kind: str, n: int, seed: int) -> Trace:
    """n requests of mix `kind`, Poisson arrivals at one a second (scaled to a busy share later)."""
    (p_lo, p_hi), (o_lo, o_hi) = MIXES[kind]
    rng = np.random.default_rng(seed)
    return Trace(
        1_764_460_800_000 + np.cumsum(rng.exponential(1000.0, n)),
        rng.integers(p_lo, p_hi + 1, n).astype(float),
        np.zeros(n),
        rng.integers(o_lo, o_hi + 1, n).astype(float),
        f"{kind}-heavy mix",
    )


async def _one(client: httpx.AsyncClient, url: str, model: str, prompt: int, output: int) -> Result:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": build_prompt(max(8, prompt), new_nonce())}],
        "max_tokens": output,
        "stream": True,
        "temperature": 0,
        "ignore_eos": True,
    }
    t0 = time.perf_counter()
    ttft = None
    timings: dict = {}
    try:
        async with client.stream("POST", url + "/chat/completions", json=body) as r:
            if r.status_code != 200:
                return Result(False, error=f"HTTP {r.status_code}")
            async for line in r.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
                if ttft is None and delta.get("content"):
                    ttft = (time.perf_counter() - t0) * 1000
                timings = chunk.get("timings") or timings
    except (httpx.HTTPError, ValueError) as exc:
        return Result(False, error=type(exc).__name__)
    return Result(
        ttft is not None,
        ttft,
        timings.get("prompt_ms"),
        timings.get("prompt_n"),
        timings.get("cache_n"),
        timings.get("predicted_n"),
    )


async def send_trace(trace: Trace, url: str, model: str) -> list[Result]:
    """Every request at its arrival time from now (real time), each on a fresh connection."""
    offsets = ((trace.arrival_ms - trace.arrival_ms[0]) / 1000.0).tolist()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(600.0), limits=limits) as client:
        loop = asyncio.get_running_loop()
        t0 = loop.time() + 0.2

        async def at(i: int) -> Result:
            await asyncio.sleep(max(0.0, t0 + offsets[i] - loop.time()))
            return await _one(client, url, model, int(trace.prompt_tokens[i]), int(trace.output_tokens[i]))

        return list(await asyncio.gather(*(at(i) for i in range(trace.n))))


def _rank(values: np.ndarray, p: float) -> float:
    ordered = np.sort(values)
    return float(ordered[nearest_rank_index(p, len(ordered))])


def _median_abs_error(predicted: np.ndarray, measured: np.ndarray) -> float:
    keep = measured > 0
    return float(np.median(np.abs(predicted[keep] / measured[keep] - 1))) if keep.any() else float("nan")


def _at_run_speed(predicted: np.ndarray, measured: np.ndarray, lone: np.ndarray) -> float:
    """The median |error| once the prediction runs at the engine's speed during the run: the median of measured ÷
    predicted over the requests the replay has alone in their steps (no decode, no queue) scales every prediction.
    What is left is the step model's batching, not the engine's drift since its calibration (nan with < 3 alone)."""
    keep = lone & (measured > 0)
    if keep.sum() < 3:
        return float("nan")
    factor = float(np.median(measured[keep] / predicted[keep]))
    return _median_abs_error(predicted * factor, measured)


def run_cell(url: str, model: str, parallel: int, mix: str, rho: float, n: int, seed: int, store, args) -> dict:
    """One cell (see the module docstring); its figures as a dict."""
    cal = asyncio.run(
        calibrate(
            ProbeTarget(base_url=url, model=model, timeout_s=300),
            lengths=tuple(args.lengths),
            n=3,
            rounds=3,
            decode_tokens=32,
            concurrencies=tuple(c for c in getattr(args, "concurrencies", (1, 2, 4)) if c <= parallel),
            step_duration_s=args.calibration_step,
            engine=getattr(args, "engine_key", "llama.cpp"),
            slots=parallel,
        )
    )
    spread, spec = spread_on_record(store, url, model, cal, int(time.time() * 1000), name="step")
    step_dep = parse_deployment(spec)
    slot_dep = parse_deployment(replace(cal, engine="slots").spec("slots", speed_sd=spread.speed_sd))
    level = at_busy_fraction(mix_trace(mix, n, seed), step_dep, rho)
    pred = predict(step_dep, level)
    slot_pred = predict(slot_dep, level)
    t = time.monotonic()
    results = asyncio.run(send_trace(level, url, model))
    wall = time.monotonic() - t
    ok = np.array([r.ok for r in results])
    meas = np.array([r.ttft_ms for r, o in zip(results, ok, strict=True) if o])
    m50, m95 = _rank(meas, 0.5), _rank(meas, 0.95)
    served = np.array([r.ok and r.prompt_ms is not None for r in results])
    server_prompt = np.array([r.prompt_ms for r, s in zip(results, served, strict=True) if s], dtype=float)
    step_rep = replay(step_dep, level)
    step_prefill = step_rep.prefill_ms[served]
    slot_prefill = replay(slot_dep, level).prefill_ms[served]
    assert step_rep.first_step_decodes is not None  # a batching engine's replay
    lone = ((step_rep.first_step_decodes == 0) & (step_rep.queue_ms == 0))[served]
    s50, s95 = slot_pred.bands["p50"].value_ms, slot_pred.bands["p95"].value_ms
    return {
        "parallel": parallel,
        "mix": mix,
        "rho": rho,
        "n": int(ok.sum()),
        "failed": int((~ok).sum()),
        "wall_s": wall,
        "m50": m50,
        "m95": m95,
        "b50": pred.bands["p50"],
        "b95": pred.bands["p95"],
        "slot50_err": s50 / m50 - 1,
        "slot95_err": s95 / m95 - 1,
        "step_ttft_err": _median_abs_error(step_prefill, server_prompt),
        "slot_ttft_err": _median_abs_error(slot_prefill, server_prompt),
        "step_ttft_err_run": _at_run_speed(step_prefill, server_prompt, lone),
        "slot_ttft_err_run": _at_run_speed(slot_prefill, server_prompt, lone),
        "spec": spec,
        "spread": spread.describe(),
        "step": cal.step.describe() if cal.step else "",
        "cache_n": [r.cache_n for r in results if r.ok],
    }


def run_batching(url: str, model: str, args) -> list[dict]:
    """Every cell: parallel settings × mixes × busy shares × runs, printing each as it ends."""
    store_dir = Path(tempfile.mkdtemp(prefix="bench-engine-whatif-"))
    store = open_store(f"sqlite:///{store_dir / 'calibrations.db'}")
    cells = []
    print(
        f"{'N':>2} {'mix':>6} {'ρ':>5} {'n':>4}  {'p50 [80 %]':>15} {'meas':>6}    {'p95 [80 %]':>15} {'meas':>6}    "
        f"{'±p95':>5} {'slot p50/p95 err':>17} {'TTFT err step/slot':>19} {'wall':>5}",
        flush=True,
    )
    for run in range(1, args.runs + 1):
        for mix in args.mixes:
            for rho in args.levels:
                c = run_cell(url, model, args.parallel, mix, rho, args.requests, 1000 * run + len(cells), store, args)
                c["run"] = run
                cells.append(c)
                b50, b95 = c["b50"], c["b95"]
                print(
                    f"{c['parallel']:>2} {mix:>6} {rho:>5} {c['n']:>4}  {b50.range_text():>15} {c['m50']:>6.0f} "
                    f"{'in ' if b50.contains(c['m50']) else 'OUT'} {b95.range_text():>15} {c['m95']:>6.0f} "
                    f"{'in ' if b95.contains(c['m95']) else 'OUT'} {b95.half_width_fraction:>5.0%} "
                    f"{c['slot50_err']:>+8.0%}/{c['slot95_err']:<+8.0%} {c['step_ttft_err']:>9.1%}/"
                    f"{c['slot_ttft_err']:<9.1%} {c['wall_s']:>5.0f}"
                    + (f" ({c['failed']} failed)" if c["failed"] else ""),
                    flush=True,
                )
                print(
                    f"     at the run's own speed: TTFT err step {c['step_ttft_err_run']:.1%} / slot "
                    f"{c['slot_ttft_err_run']:.1%}; {c['step']}; {c['spread']}",
                    flush=True,
                )
    store.dispose()
    return cells


def summary(cells: list[dict]) -> None:
    """Coverage, half-widths and the per-request TTFT error, step model against slot model."""
    inside = sum(c["b50"].contains(c["m50"]) + c["b95"].contains(c["m95"]) for c in cells)
    low = [c for c in cells if c["rho"] <= 0.6]
    hw = float(np.median([h for c in low for h in (c["b50"].half_width_fraction, c["b95"].half_width_fraction)]))
    print(
        f"coverage: {inside}/{2 * len(cells)} = {inside / (2 * len(cells)):.0%} of p50/p95 cells inside the step "
        f"model's 80 % interval (target ≥ 80 %); median half-width at ρ ≤ 0.6 {hw:.0%} (target ≤ 35 %)"
    )
    for mix in sorted({c["mix"] for c in cells}):
        at = [c for c in cells if c["mix"] == mix]
        step_err = np.median([c["step_ttft_err"] for c in at])
        slot_err = np.median([c["slot_ttft_err"] for c in at])
        step_run = np.nanmedian([c["step_ttft_err_run"] for c in at])
        slot_run = np.nanmedian([c["slot_ttft_err_run"] for c in at])
        print(
            f"  {mix}-heavy: per-request TTFT vs the server's timings, median |error| step model "
            f"{step_err:.1%}, slot model {slot_err:.1%} (at the run's own speed {step_run:.1%} / {slot_run:.1%})"
            f" (target ≤ 10 %); slot model's p50/p95 error median "
            f"{np.median([abs(c['slot50_err']) for c in at]):.0%}/{np.median([abs(c['slot95_err']) for c in at]):.0%}"
        )


class ParallelServer:
    """llama-server with `parallel` slots (continuous batching on), pinned to one core as bench_engine.Server is;
    its log in a temporary folder."""

    def __init__(self, port: int, core: int, parallel: int, ctx_per_slot: int = 2048) -> None:
        import socket
        import sys

        from bench.bench_engine import healthy, start_server

        self.url = f"http://127.0.0.1:{port}/v1"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                sys.exit(f"port {port} is already in use (another benchmark's llama-server?): stop it or use --port")
        self.log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
        self.log = open(self.log_path, "w")
        flags = ["-c", str(ctx_per_slot * parallel), "--parallel", str(parallel)]
        self.proc = start_server(core, port, flags, self.log)
        if not healthy(self.proc, port):
            self.stop()
            sys.exit(f"llama-server exited or did not become healthy within 120 s; see {self.log_path}")

    def stop(self) -> None:
        from tests.support.stopping import stop_process

        stop_process(self.proc, self.log)
