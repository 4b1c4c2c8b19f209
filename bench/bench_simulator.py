"""The simulator's timing model over real HTTP, measured against its configuration: how far a loaded machine moves it.

tests/planner/simulator/test_simulator.py, test_sweep.py and test_whatif_calibrate.py check the model in virtual time
(planner.simulator.virtual), where it comes back exact. Over real HTTP the same figures carry the machine's
scheduling: the simulator's timers run late (never early) and the client reads late. This prints each figure next
to the model's value, with the load average, so the error a busy machine adds is a number rather than a failed test.
The simulated endpoint runs in its own process (as `ttft-planner simulate` does), the client in this one.

    python bench/bench_simulator.py [--skip-calibrate] [--json]

Figures (model value in brackets):
- token pacing at 50 tokens/s: median gap between token reads [20 ms], share of gaps under 5 ms (tokens that
  arrived bunched: Nagle, a batched write) [0];
- FIFO on one slot: three requests of 200 ms prefill sent together, TTFT of the 2nd and 3rd minus the 1st
  [≈200, ≈400 ms];
- prefill: the fitted slope over 256- and 6,000-token prompts at 20,000 tokens/s [0.05 ms/token];
- prefix cache: TTFT saved by a cached 4,000-token prompt at 10,000 tokens/s [≈400 ms];
- cold start: TTFT after the scale-down window minus warm TTFT, 0.6 s load [600 ms];
- sweep: the knee (p95 ≤ 500 ms) at 2 and 15 requests/s with one and four 100 ms slots [2, 15];
- calibrate: prefill, decode, effective slots of a 2-slot simulator, and the slot time beyond prefill of a
  1-slot one spending 200 ms in admission [4,000 tokens/s, 50 tokens/s, 2, 200 ms].

Target: every figure within 10 % (or 10 ms) of the model on a quiet machine; on a loaded one the errors are
positive (late), and that is what this shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from planner.probes.fit import fit_prefill  # noqa: E402
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once  # noqa: E402
from planner.simulator import SimulatorConfig, running_simulator  # noqa: E402
from planner.sweep import SweepSpec, run_sweep  # noqa: E402
from planner.whatif.calibrate import calibrate  # noqa: E402

SERVICE = dict(prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0)


def _serve(cfg: SimulatorConfig, conn) -> None:
    with running_simulator(cfg) as url:
        conn.send(url)
        conn.recv()


@contextlib.contextmanager
def served(cfg: SimulatorConfig) -> Iterator[str]:
    """The simulated endpoint with `cfg` in a child process; yields its base URL."""
    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_serve, args=(cfg, child), daemon=True)
    proc.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        proc.join(10)


def probe(url: str, **kw) -> TtftSample:
    kw.setdefault("prompt_tokens", 64)
    kw.setdefault("max_tokens", 4)
    return asyncio.run(probe_once(ProbeTarget(base_url=url, model="m", **kw), max_attempts=1))


def token_pacing() -> dict:
    body = {"model": "m", "max_tokens": 60, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with served(SimulatorConfig(decode_tokens_per_s=50)) as url, httpx.Client(trust_env=False) as c:
        times = []
        with c.stream("POST", url + "/chat/completions", json=body) as r:
            for _ in r.iter_raw():
                times.append(time.perf_counter())
    gaps = [(b - a) * 1000 for a, b in zip(times[5:], times[6:-3], strict=False)]
    return {
        "token_gap_median_ms": statistics.median(gaps),
        "model_ms": 20.0,
        "bunched_share": sum(g < 5 for g in gaps) / len(gaps),
    }


def fifo() -> dict:
    cfg = SimulatorConfig(slots=1, prefill_tokens_per_s=2_000, decode_tokens_per_s=1000, base_overhead_ms=0)

    async def burst(url: str) -> list[TtftSample]:
        target = ProbeTarget(base_url=url, model="m", prompt_tokens=400, max_tokens=2)
        tasks = []
        for _ in range(3):
            tasks.append(asyncio.create_task(probe_once(target, max_attempts=1)))
            await asyncio.sleep(0.001)
        return await asyncio.gather(*tasks)

    with served(cfg) as url:
        probe(url)  # warm the client up
        ttft = sorted(s.ttft_ms for s in asyncio.run(burst(url)))
    return {"second_minus_first_ms": ttft[1] - ttft[0], "third_minus_first_ms": ttft[2] - ttft[0], "model_ms": 200.0}


def prefill_and_cache() -> dict:
    with served(SimulatorConfig(prefill_tokens_per_s=20_000, base_overhead_ms=5)) as url:
        pts = [(n, probe(url, prompt_tokens=n).ttft_ms) for _ in range(5) for n in (256, 6000)]
    with served(SimulatorConfig(prefill_tokens_per_s=10_000)) as url:
        fresh = [probe(url, prompt_tokens=4000) for _ in range(3)]
        probe(url, prompt_tokens=4000, cached=True)
        cached = [probe(url, prompt_tokens=4000, cached=True) for _ in range(3)]
    saved = statistics.median(s.ttft_ms for s in fresh) - statistics.median(s.ttft_ms for s in cached)
    model_saved = statistics.median(s.cached_tokens or 0 for s in cached) / 10
    return {
        "prefill_slope_ms_per_token": fit_prefill(pts).slope_ms_per_token,
        "model_slope": 0.05,
        "cache_saved_ms": saved,
        "model_saved_ms": model_saved,
    }


def cold_start() -> dict:
    with served(SimulatorConfig(scale_down_window_s=1.0, cold_start_s=0.6, prefill_tokens_per_s=50_000)) as url:
        probe(url)  # the child's first request pays its own start-up
        warm = probe(url)
        time.sleep(1.5)  # past the 1 s scale-down window of a simulator in another process
        cold = probe(url)
    return {"warm_ttft_ms": warm.ttft_ms, "cold_minus_warm_ms": cold.ttft_ms - warm.ttft_ms, "model_ms": 600.0}


def knees() -> dict:
    out = {}
    for slots in (1, 4):
        with served(SimulatorConfig(slots=slots, **SERVICE)) as url:
            target = ProbeTarget(base_url=url, model="m", prompt_tokens=400, max_tokens=2)
            spec = SweepSpec(target=target, mode="poisson", loads=(2.0, 15.0), step_duration_s=2.0, target_p95_ms=500)
            out[f"knee_{slots}_slot"] = asyncio.run(run_sweep(spec)).knee_load
    return {**out, "model": {"knee_1_slot": 2.0, "knee_4_slot": 15.0}}


def _calibrated(config: SimulatorConfig, *, n: int, concurrencies: tuple[int, ...], step_duration_s: float):
    """`calibrate` against the simulator with `config`, served over real HTTP."""
    with served(config) as url:
        return asyncio.run(
            calibrate(
                ProbeTarget(base_url=url, model="m"),
                lengths=(100, 800),
                n=n,
                decode_tokens=16,
                concurrencies=concurrencies,
                step_duration_s=step_duration_s,
            )
        )


def calibration() -> dict:
    rates = {"prefill_tokens_per_s": 4000, "decode_tokens_per_s": 50, "prefix_cache_tokens": 0, "seed": 0}
    cal = _calibrated(
        SimulatorConfig(slots=2, base_overhead_ms=0, **rates), n=4, concurrencies=(1, 2, 4), step_duration_s=2
    )
    cal_held = _calibrated(
        SimulatorConfig(slots=1, base_overhead_ms=200, **rates), n=3, concurrencies=(1, 2), step_duration_s=3
    )
    return {
        "prefill_tokens_per_s": cal.prefill.prefill_tokens_per_s,
        "decode_tokens_per_s": cal.decode_tokens_per_s,
        "effective_slots": cal.effective_slots,
        "fixed_hold_ms": cal_held.fixed_hold_ms,
        "model": {"prefill_tokens_per_s": 4000, "decode_tokens_per_s": 50, "effective_slots": 2, "fixed_hold_ms": 200},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-calibrate", action="store_true", help="leave out the calibrations (~30 s)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    figures = {
        "token pacing": token_pacing(),
        "FIFO on one slot": fifo(),
        "prefill and prefix cache": prefill_and_cache(),
        "cold start": cold_start(),
        "sweep knee": knees(),
    }
    if not args.skip_calibrate:
        figures["calibrate"] = calibration()
    load1 = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"load_average": [load0, load1], "cpus": os.cpu_count(), **figures}, indent=1))
        return 0
    print(f"the simulator over real HTTP vs its model; load average {load0:.1f} → {load1:.1f} on {os.cpu_count()} CPUs")
    for name, values in figures.items():
        shown = ", ".join(
            f"{k} {v:,.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items() if k != "model"
        )
        model = values.get("model")
        print(f"  {name}: {shown}" + (f"  (model: {model})" if model else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
