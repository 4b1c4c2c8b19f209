"""Capacity inputs from the store: a stored log's traffic, and measured prefill slopes from probe samples."""

import time

import numpy as np
import pandas as pd
import pytest

from planner.capacity.measured import measured_slopes
from planner.capacity.traffic import traffic_from_frame
from planner.logs import COLUMNS, LogParseResult
from planner.spread import speed_sd_of
from planner.store.database import session
from planner.store.endpoints import EndpointRow
from planner.store.logs import load_upload_frame, save_upload
from planner.store.probes import ProbeSampleRow, insert_samples
from tests.support.probe_rows import slot_row

DAY_MS = 86_400_000
T0 = 1_780_000_000_000 - (1_780_000_000_000 % DAY_MS)  # a UTC midnight


def _frame() -> pd.DataFrame:
    # one day: 10 requests at 09:xx UTC, 2 at 15:xx; 1,000 prompt (800 cached) + 10 output tokens each, 4 s long
    ts = [T0 + 9 * 3_600_000 + i * 60_000 for i in range(10)] + [T0 + 15 * 3_600_000 + i * 60_000 for i in range(2)]
    n = len(ts)
    return pd.DataFrame(
        {
            "ts_ms": np.array(ts, dtype=np.int64),
            "model": ["m"] * n,
            "prompt_tokens": [1000] * n,
            "cached_tokens": [800] * n,
            "output_tokens": [10] * n,
            "ttft_ms": [300.0] * n,
            "duration_ms": [4000.0] * n,
            "source": ["test"] * n,
        }
    )[list(COLUMNS)]


def test_traffic_from_a_stored_log(engine):
    upload_id = save_upload(engine, "team.jsonl", LogParseResult(requests=_frame()))
    t = traffic_from_frame(load_upload_frame(engine, upload_id), "team.jsonl", "UTC")
    assert t.n_requests == 12
    assert t.mix.cache_hit_fraction == pytest.approx(0.8)
    assert t.mix.input_output_ratio == pytest.approx(100)
    assert t.hourly_tokens[9] == pytest.approx(10 * 1010) and t.hourly_tokens[15] == pytest.approx(2 * 1010)
    assert sum(t.hourly_tokens) == pytest.approx(12 * 1010)
    assert t.peak_arrivals_per_hour == pytest.approx(10)
    assert t.mean_service_s == pytest.approx(4.0)


def test_measured_slope_per_endpoint(engine):
    now = int(time.time() * 1000)
    with session(engine) as s:
        ep = EndpointRow(name="sim", base_url="http://127.0.0.1:1", model="m", created_at_ms=now, updated_at_ms=now)
        flat = EndpointRow(
            name="one-length", base_url="http://127.0.0.1:2", model="m", created_at_ms=now, updated_at_ms=now
        )
        s.add(ep)
        s.add(flat)
        s.flush()
        ep_id, flat_id = ep.id, flat.id
    rows = []
    # TTFT = 40 ms + 0.05 ms per uncached token (50 ms per 1K → 20,000 tokens/s)
    for i, (tokens, cached) in enumerate([(256, 0), (4096, 0), (8192, 0), (8192, 4096), (1024, 0)]):
        rows.append(slot_row(ep_id, now + i, 40 + 0.05 * (tokens - cached), prompt_tokens=tokens, cached_tokens=cached))
    # left out: a failure, a deliberate cached series, a cold reading
    rows.append(
        ProbeSampleRow(
            endpoint_id=ep_id,
            scheduled_at_ms=now + 10,
            started_at_ms=now + 10,
            ok=False,
            ttft_ms=None,
            prompt_tokens=512,
        )
    )
    rows.append(slot_row(ep_id, now + 11, 5000, prompt_tokens=512, cached_series=True))
    rows.append(slot_row(ep_id, now + 12, 60_000, kind="cold", prompt_tokens=512))
    rows.append(slot_row(flat_id, now, 90, prompt_tokens=1000))
    insert_samples(engine, rows)
    slopes = measured_slopes(engine)
    assert [s.endpoint for s in slopes] == ["sim"]
    fit = slopes[0].fit
    assert fit.ms_per_1k_tokens == pytest.approx(50)
    assert fit.prefill_tokens_per_s == pytest.approx(20_000)
    assert fit.n == 5 and slopes[0].newest_at_ms == now + 4
    fig = fit.to_figure(detail="sim")
    assert fig.source == "probe" and fig.unit == "tokens/s"


def _uniform_log(start_ms: int, hours: float, every_s: int = 300, tokens: int = 1000) -> pd.DataFrame:
    ts = np.arange(start_ms, start_ms + int(hours * 3_600_000) + 1, every_s * 1000, dtype=np.int64)
    n = len(ts)
    return pd.DataFrame(
        {
            "ts_ms": ts,
            "model": ["m"] * n,
            "prompt_tokens": [tokens - 10] * n,
            "cached_tokens": [0] * n,
            "output_tokens": [10] * n,
            "ttft_ms": [np.nan] * n,
            "duration_ms": [np.nan] * n,
            "source": ["test"] * n,
        }
    )[list(COLUMNS)]


def test_tokens_per_hour_average_over_the_hours_the_log_covers_not_the_calendar_days():
    from planner.capacity.cost import HOURS_PER_MONTH

    # Mon 20:15 → Thu 19:45 UTC: 71.5 h touching 4 calendar days, a request of 1,000 tokens every 5 minutes
    frame = _uniform_log(T0 + 20 * 3_600_000 + 15 * 60_000, 71.5)
    t = traffic_from_frame(frame, "71h.jsonl", "UTC")
    total = 1000 * len(frame)
    by_hand_monthly = total / 71.5 * HOURS_PER_MONTH  # tokens per hour of log × hours per month
    monthly = sum(t.hourly_tokens) * HOURS_PER_MONTH / 24
    assert monthly == pytest.approx(by_hand_monthly, rel=0.01)  # 72 covered clock hours vs 71.5 h: within 0.7 %
    calendar_days_monthly = total / 4 * HOURS_PER_MONTH / 24  # the old rule: ÷ 4 calendar days
    assert monthly / calendar_days_monthly == pytest.approx(96 / 72, rel=0.001)
    assert t.covered_hours == 72


def test_hours_of_day_follow_the_time_zone():
    # T0 is in May: the 09:00 UTC hour is 11:00 in Berlin (CEST) and 05:00 in New York (EDT)
    frame = _uniform_log(T0 + 9 * 3_600_000, 0.75, every_s=300)
    berlin = traffic_from_frame(frame, "x", "Europe/Berlin")
    ny = traffic_from_frame(frame, "x", "America/New_York")
    assert [h for h in range(24) if berlin.hourly_tokens[h]] == [11]
    assert [h for h in range(24) if ny.hourly_tokens[h]] == [5]
    assert berlin.tz == "Europe/Berlin"


def test_the_slope_day_by_day_gives_the_endpoints_speed_spread(engine):
    """Three days of probes at 20,000, 16,000 and 25,000 tokens/s: the day-to-day spread is what a what-if candidate
    on this endpoint takes as speed_sd; a day with one prompt length cannot be fitted and is left out."""
    day0 = 1_764_460_800_000
    with session(engine) as s:
        ep = EndpointRow(
            name="hosted", base_url="http://127.0.0.1:9/v1", model="m", created_at_ms=day0, updated_at_ms=day0
        )
        s.add(ep)
        s.flush()
        ep_id = ep.id
    rows = []
    for day, rate in enumerate((20_000, 16_000, 25_000)):
        for i, tokens in enumerate((1000, 4000, 8000)):
            t = day0 + day * 86_400_000 + i * 60_000
            rows.append(slot_row(ep_id, t, 40 + tokens * 1000 / rate, prompt_tokens=tokens))
    t = day0 + 3 * 86_400_000  # a fourth day with one length only
    rows.append(slot_row(ep_id, t, 90, prompt_tokens=1000))
    insert_samples(engine, rows)
    (slope,) = measured_slopes(engine)
    assert slope.daily_tokens_per_s == pytest.approx((20_000, 16_000, 25_000))
    assert slope.speed_sd == pytest.approx(speed_sd_of((20_000, 16_000, 25_000)))
    assert slope.speed_sd > 0.2  # ±20 % day to day, widened for three days
    assert "over 3 days" in slope.describe_spread() and f"speed_sd={slope.speed_sd:.3f}" in slope.describe_spread()
