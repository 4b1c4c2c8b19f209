"""A store that looks like a team's after a few days of use: what the manual's screenshots show (docs/, README).

Everything is written through the real store, as the worker, the pages and the commands would write it, with a fixed
RNG so the pictures only change when a page does:

- three endpoints with three days of probes, one every 5 minutes, each with an office-hours queueing bump
  (09:00-18:00 UTC) over its own lognormal TTFT, phase timings, a few failures; a cold reading on one (`base_urls`
  points them at real servers, e.g. local simulators a real worker then keeps probing);
- RTT samples from the server to four regions and from a browser ("Berlin office") to two;
- the sample request log assets/sample_logs/requests.csv (400 requests over a week) stored as an upload; a saved
  worksheet;
- an OpenTelemetry source holding a day of production requests sent to one of the endpoints;
- a stored load sweep of five steps; an alert rule that fires on the slowest endpoint; a few audit rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine

from planner.alerts.evaluate import evaluate_all
from planner.alerts.rules import AlertKind, Rule
from planner.endpoints.registry import add_endpoint
from planner.logs import read_logs
from planner.percentiles import summarize
from planner.probes.ttft import ProbeTarget
from planner.store import alerts as alert_store
from planner.store.audit import record
from planner.store.logs import save_upload
from planner.store.probes import insert_samples
from planner.store.rtt import SampleRecord, insert_rtt_samples
from planner.store.sources import SourceKind, add_source, store_batch
from planner.store.sweeps import store_sweep
from planner.store.worksheets import save_worksheet
from planner.sweep import SweepResult, SweepSpec
from planner.sweep.knee import knee_of
from planner.sweep.run import SweepStep
from planner.worksheet.budget import Worksheet
from tests.support.cold_readings import store_cold_reading
from tests.support.probe_rows import slot_row

__all__ = ["DEMO_ENDPOINTS", "seed_demo"]

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"

#: name → (base URL, model, region, median TTFT ms off-peak, office-hours queueing ms)
DEMO_ENDPOINTS = {
    "acme-eu": ("https://eu.api.acme.example/v1", "llama-3.1-70b", "aws-eu-west-1", 310.0, 70.0),
    "simulated": ("http://127.0.0.1:8765/v1", "sim-model", "", 420.0, 40.0),
    "beta-us": ("https://api.beta.example/v1", "qwen2.5-coder-32b", "aws-us-east-1", 560.0, 180.0),
}


def _office_hours(t_ms: np.ndarray) -> np.ndarray:
    """1.0 inside 09:00-18:00 UTC on weekdays' busy middle, tapering at the edges; 0.0 at night."""
    hour = (t_ms % DAY_MS) / HOUR_MS
    return np.clip(np.minimum(hour - 8.0, 18.0 - hour) / 2.0, 0.0, 1.0)


def _probe_endpoints(engine: Engine, now_ms: int, rng: np.random.Generator, urls: dict[str, str]) -> dict[str, int]:
    ids: dict[str, int] = {}
    start = (now_ms - 3 * DAY_MS) // (5 * MINUTE_MS) * (5 * MINUTE_MS)
    slots = np.arange(start, now_ms - MINUTE_MS, 5 * MINUTE_MS)
    for name, (_url, model, region, median_ms, queue_ms) in DEMO_ENDPOINTS.items():
        ep = add_endpoint(
            engine,
            {
                "name": name,
                "provider": name.split("-")[0],
                "region": region,
                "base_url": urls[name],
                "model": model,
                "api_key_env": "" if name == "simulated" else f"{name.split('-')[0].upper()}_API_KEY",
                "interval_s": 60,
                "scale_down_window_s": 300 if name == "simulated" else 900,
            },
            simulated=name == "simulated",
        )
        ids[name] = int(ep.id or 0)
        busy = _office_hours(slots)
        ttft = median_ms * np.exp(rng.normal(0.0, 0.12, slots.size)) + queue_ms * busy * rng.exponential(
            1.0, slots.size
        )
        failed = rng.random(slots.size) < 0.01
        rows = []
        for t, v, bad in zip(slots.tolist(), ttft.tolist(), failed.tolist(), strict=True):
            if bad:
                rows.append(slot_row(ids[name], t, None, status_code=503, attempts=3))
                continue
            v = round(v, 1)
            rows.append(
                slot_row(
                    ids[name],
                    t,
                    v,
                    dns_ms=2.0,
                    connect_ms=18.0,
                    tls_ms=40.0,
                    headers_ms=round(v * 0.62, 1),
                    first_event_ms=round(v * 0.93, 1),
                    first_content_ms=round(v + 12.0, 1),
                    total_ms=round(v + 850.0, 1),
                    prompt_tokens=1000,
                    output_tokens=16,
                    attempts=1,
                )
            )
        insert_samples(engine, rows)
    store_cold_reading(
        engine,
        ids["acme-eu"],
        idle_s=960.0,
        cold_ttft_ms=8_900.0,
        warm_ttft_ms=305.0,
        cold_attempts=2,
        cold_status_503=1,
        requested_at_ms=now_ms - 3 * HOUR_MS,
        completed_at_ms=now_ms - 3 * HOUR_MS + 17 * MINUTE_MS,
    )
    return ids


def _rtt(engine: Engine, now_ms: int, rng: np.random.Generator) -> None:
    server = [
        SampleRecord(region, region, "server", "tcp-connect", round(base + rng.gamma(2.0, 0.8), 2), t, vantage="")
        for region, base in (
            ("aws-eu-west-1", 17.0),
            ("aws-eu-central-1", 9.0),
            ("aws-us-east-1", 81.0),
            ("gcp-us-central1", 98.0),
        )
        for t in range(now_ms - 2 * DAY_MS, now_ms, 30 * MINUTE_MS)
    ]
    browser = [
        SampleRecord(
            region,
            region,
            "browser",
            "resource-timing",
            round(base + rng.gamma(2.0, 1.5), 2),
            t,
            vantage="Berlin office",
        )
        for region, base in (("aws-eu-central-1", 14.0), ("aws-eu-west-1", 24.0))
        for t in range(now_ms - 6 * HOUR_MS, now_ms, 20 * MINUTE_MS)
    ]
    insert_rtt_samples(engine, [*server, *browser])


def _source(engine: Engine, now_ms: int, rng: np.random.Generator, url: str) -> None:
    """A day of production requests to acme-eu, reported by the agents' OpenTelemetry SDK."""
    sid = add_source(engine, "agents", SourceKind.OTLP, "OTLP_TOKEN")
    _url, model, _region, median_ms, queue_ms = DEMO_ENDPOINTS["acme-eu"]
    times = np.sort(rng.integers(now_ms - DAY_MS, now_ms - MINUTE_MS, 1_200))
    prompts = rng.lognormal(7.6, 0.7, times.size).astype(int) + 50
    rows = [
        {
            "request_id": f"span-{i:05d}",
            "ts_ms": int(t),
            "model": model,
            "api_base": url,
            "prompt_tokens": int(p),
            "cached_tokens": int(p * 0.6),
            "output_tokens": int(rng.integers(20, 400)),
            "ttft_ms": round(float(median_ms * 1.15 + p * 0.02 + queue_ms * _office_hours(np.array([t]))[0]), 1),
            "duration_ms": round(float(2_000 + rng.exponential(3_000)), 1),
        }
        for i, (t, p) in enumerate(zip(times.tolist(), prompts.tolist(), strict=True))
    ]
    store_batch(engine, sid, rows, (rows[-1]["ts_ms"], rows[-1]["request_id"]))


def _step(index: int, load: float, ttfts_ms: list[float]) -> SweepStep:
    q = summarize(ttfts_ms, ps=(0.5, 0.95, 0.99))
    return SweepStep(
        index=index,
        load=load,
        n_sent=len(ttfts_ms),
        n_ok=len(ttfts_ms),
        ttft_p50_ms=q["p50"].value,
        ttft_p95_ms=q["p95"].value,
        ttft_p99_ms=q["p99"].value,
        p95_reliable=q["p95"].reliable,
        p99_reliable=q["p99"].reliable,
        offered_rps=load,
        achieved_rps=round(load * 0.98, 2),
        send_lag_p95_ms=1.2,
        wall_s=30.0,
        client_cpu_ms_per_request=7.9,
    )


def _sweep(engine: Engine, now_ms: int, rng: np.random.Generator) -> None:
    """Four slots of ~250 ms: flat to 8 requests/s, queueing past the 800 ms target at 16."""
    loads = (1.0, 2.0, 4.0, 8.0, 16.0)
    queue_ms = {1.0: 0.0, 2.0: 5.0, 4.0: 25.0, 8.0: 140.0, 16.0: 1_400.0}
    steps = tuple(
        _step(
            i,
            load,
            (250.0 * np.exp(rng.normal(0, 0.1, int(load * 30))) + rng.exponential(queue_ms[load] + 1, int(load * 30)))
            .round(1)
            .tolist(),
        )
        for i, load in enumerate(loads)
    )
    spec = SweepSpec(
        target=ProbeTarget(base_url="http://127.0.0.1:8765/v1", model="sim-model", prompt_tokens=1000, max_tokens=16),
        mode="poisson",
        loads=loads,
        step_duration_s=30.0,
        target_p95_ms=800,
        stop_after_knee=False,
    )
    knee, over = knee_of([s.load for s in steps], [s.ttft_p95_ms for s in steps], 800)
    started = now_ms - 5 * HOUR_MS
    result = SweepResult(
        spec=spec, steps=steps, started_at_ms=started, finished_at_ms=started + 150_000, knee_load=knee, over_load=over
    )
    store_sweep(engine, result, vantage="", tool_version="0.1.0")


def _alerts(engine: Engine, ids: dict[str, int], now_ms: int) -> None:
    rule = Rule(
        name="beta-us chat p95",
        kind=AlertKind.P95_OVER,
        threshold=500,
        window_s=6 * 3600,
        for_s=0,
        min_n=20,
        endpoint_id=ids["beta-us"],
        interaction="Chat panel / single-file edit",
    )
    alert_store.add_rule(engine, rule, now_ms - 2 * HOUR_MS)
    alert_store.add_rule(
        engine, Rule(name="any endpoint silent", kind=AlertKind.NO_SUCCESS, threshold=30, window_s=1800), now_ms
    )
    evaluate_all(engine, now_ms - HOUR_MS, deliver=False)
    evaluate_all(engine, now_ms, deliver=False)


def _audit(engine: Engine, now_ms: int) -> None:
    for i, (actor, role, action, name, detail) in enumerate(
        (
            ("alice@example.com", "admin", "endpoint.write", "acme-eu", "added"),
            ("alice@example.com", "admin", "endpoint.write", "beta-us", "added"),
            ("bob@example.com", "editor", "logs.upload", "requests.csv", "stored"),
            ("cli:alice", "", "alert.write", "beta-us chat p95", "added"),
            ("bob@example.com", "editor", "worksheet.save", "Team plan", "saved"),
        )
    ):
        record(
            engine,
            actor=actor,
            role=role,
            action=action,
            object_name=name,
            detail=detail,
            at_ms=now_ms - (5 - i) * HOUR_MS,
        )


def seed_demo(engine: Engine, now_ms: int, *, base_urls: dict[str, str] | None = None, seed: int = 44) -> None:
    """Write the demo store described in the module docstring, its newest sample just before now_ms; `base_urls`
    (endpoint name → URL) replaces DEMO_ENDPOINTS' example URLs."""
    rng = np.random.default_rng(seed)
    urls = {name: url for name, (url, *_rest) in DEMO_ENDPOINTS.items()} | (base_urls or {})
    ids = _probe_endpoints(engine, now_ms, rng, urls)
    _rtt(engine, now_ms, rng)
    path = SAMPLES / "requests.csv"
    save_upload(engine, path.name, read_logs([path]))
    save_worksheet(engine, Worksheet(name="Team plan"))
    _source(engine, now_ms, rng, urls["acme-eu"])
    _sweep(engine, now_ms, rng)
    _alerts(engine, ids, now_ms)
    _audit(engine, now_ms)
