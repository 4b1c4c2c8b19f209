"""The store states the page sweep walks every page through (issue 12): each writes through the real store.

empty; one endpoint with 3 samples; two endpoints with a day of samples and a cold reading on one;
an uploaded log; a saved worksheet.
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.endpoints.registry import add_endpoint
from planner.store.probes import insert_samples
from planner.worksheet.budget import Worksheet
from tests.support.cold_readings import store_cold_reading
from tests.support.compare_seed import seed_endpoint
from tests.support.probe_rows import slot_row

__all__ = ["STATES", "seed_state", "store_acme_cold_reading"]

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
SAMPLE_LOG = Path(__file__).resolve().parents[2] / "assets" / "sample_logs" / "openai_chat_completions.jsonl"
STATES = (
    "empty",
    "one endpoint, 3 samples",
    "two endpoints, a day, one cold reading",
    "an uploaded log",
    "a saved worksheet",
)


def _three_samples(engine: Engine) -> None:
    ep = add_endpoint(engine, {"name": "solo", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    now = int(time.time() * 1000)
    insert_samples(
        engine,
        [slot_row(ep.id, now - i * 60_000, 250.0 + i, headers_ms=200.0, dns_ms=1.0, connect_ms=0.5) for i in range(3)],
    )


def store_acme_cold_reading(engine: Engine, now_ms: int) -> None:
    """The cold reading of the two-endpoint state: acme-sim-eu's, done 200 s before now_ms (9,300 ms cold after two
    attempts, one of them a 503; 300 ms warm)."""
    with engine.begin() as c:
        eid = c.execute(sa.text("SELECT id FROM endpoint WHERE name = 'acme-sim-eu'")).scalar()
    store_cold_reading(
        engine,
        eid,
        idle_s=330.0,
        cold_ttft_ms=9_300.0,
        warm_ttft_ms=300.0,
        cold_attempts=2,
        cold_status_503=1,
        requested_at_ms=now_ms - 600_000,
        completed_at_ms=now_ms - 200_000,
    )


def _two_endpoints_a_day(engine: Engine) -> None:
    now = int(time.time() * 1000)
    start = now - DAY_MS
    seed_endpoint(
        engine,
        "acme-sim-eu",
        median_ms=300,
        n=24 * 30,
        seed=1,
        start_ms=start,
        span_ms=DAY_MS - 60_000,
        vantage="",
        region="aws-eu-west-1",
        errors=5,
    )
    seed_endpoint(
        engine, "simulated", median_ms=450, n=24 * 30, seed=2, start_ms=start, span_ms=DAY_MS - 60_000, vantage=""
    )
    store_acme_cold_reading(engine, now)


def _uploaded_log(engine: Engine) -> None:
    from planner.logs import read_logs
    from planner.store.logs import save_upload

    save_upload(engine, SAMPLE_LOG.name, read_logs([SAMPLE_LOG]))


def _saved_worksheet(engine: Engine) -> None:
    from planner.store.worksheets import save_worksheet

    save_worksheet(engine, Worksheet(name="Team plan"))


def seed_state(engine: Engine, state: str) -> None:
    """Write `state` (one of STATES) into the store."""
    {
        "empty": lambda e: None,
        STATES[1]: _three_samples,
        STATES[2]: _two_endpoints_a_day,
        STATES[3]: _uploaded_log,
        STATES[4]: _saved_worksheet,
    }[state](engine)
